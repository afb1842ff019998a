/* SPDX-License-Identifier: MIT */
/*
 * vm_qemu_start TIMEOUT_S QEMU [ARG...]: start QEMU (which must be given
 * `-qmp stdio -S`) and time it from just before exec to QEMU's answer to
 * QMP `query-status`: QEMU reads QMP only from its main loop, which it
 * enters after every device is realized; a vfio-pci device has by then
 * opened its container and called MAP_DMA for all guest RAM (its memory
 * listener maps every RAM section at realize). Then reads the process's
 * VmLck (what type1 charged for the pin, kB), sends `quit` and reaps it.
 *
 * Prints one line: "start_ms MS vmlck_kb KB status STATUS"; exits 0.
 * On an error, a timeout or an exit of QEMU before it answers: the lines
 * QEMU wrote to QMP, "vm_qemu_start: WHY" on stderr, exit 1 (QEMU's own
 * stderr is left to the caller).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static long vmlck_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void on_alarm(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	static const char cmds[] = "{\"execute\":\"qmp_capabilities\"}\n"
				   "{\"execute\":\"query-status\"}\n";
	static const char quit[] = "{\"execute\":\"quit\"}\n";
	struct sigaction sa = {.sa_handler = on_alarm};
	int in[2], out[2], st, timeout;
	char line[4096], status[64] = "?";
	double t0, t1 = -1;
	pid_t pid;
	FILE *qmp;
	long kb;

	if (argc < 3) {
		fprintf(stderr, "usage: %s TIMEOUT_S QEMU [ARG...]\n", argv[0]);
		return 2;
	}
	timeout = atoi(argv[1]);
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART: a blocked read returns EINTR */
	if (pipe(in) < 0 || pipe(out) < 0) {
		perror("vm_qemu_start: pipe");
		return 1;
	}
	t0 = now_ms();
	pid = fork();
	if (pid < 0) {
		perror("vm_qemu_start: fork");
		return 1;
	}
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]);
		close(in[1]);
		close(out[0]);
		close(out[1]);
		execv(argv[2], argv + 2);
		perror(argv[2]);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	/* The commands wait in the pipe until QEMU's main loop reads them. */
	if (write(in[1], cmds, sizeof(cmds) - 1) != (ssize_t)(sizeof(cmds) - 1)) {
		perror("vm_qemu_start: write");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 1;
	}
	qmp = fdopen(out[0], "r");
	alarm((unsigned)timeout);
	while (qmp && fgets(line, sizeof(line), qmp)) {
		char *s = strstr(line, "\"status\": \"");

		if (strstr(line, "\"return\"") && s) {
			t1 = now_ms();
			sscanf(s + 11, "%63[^\"]", status);
			break;
		}
		if (strstr(line, "\"error\""))
			fputs(line, stderr);
	}
	alarm(0);
	if (t1 < 0) {
		fprintf(stderr, "vm_qemu_start: %s before QEMU answered query-status\n",
			errno == EINTR ? "timeout" : "QMP closed");
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		if (WIFEXITED(st))
			fprintf(stderr, "vm_qemu_start: QEMU exited %d\n", WEXITSTATUS(st));
		return 1;
	}
	kb = vmlck_kb(pid);
	if (write(in[1], quit, sizeof(quit) - 1) < 0)
		kill(pid, SIGTERM);
	alarm((unsigned)timeout);
	if (waitpid(pid, &st, 0) < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
	}
	printf("start_ms %.1f vmlck_kb %ld status %s\n", t1 - t0, kb, status);
	return 0;
}
