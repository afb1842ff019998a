/* SPDX-License-Identifier: MIT */
/*
 * `prealloc qemu`'s session (qemu.c parses and describes the guest): the
 * memory claimed and made ready through the front-end layer, QEMU run with
 * SIGINT, SIGTERM and SIGHUP passed on to it, and the memory given back
 * however QEMU ends; and the command line as a shell would read it back.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest.h"
#include "cli.h"

/* One word of a command line as a shell reads it back: quoted unless plain. */
static void print_word(FILE *f, const char *w)
{
	if (w[0] && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			      "-_./=,:+@%") == strlen(w)) {
		fputs(w, f);
		return;
	}
	fputc('\'', f);
	for (; *w; w++)
		fputs(*w == '\'' ? "'\\''" : (char[2]){ *w, 0 }, f);
	fputc('\'', f);
}

/* The command line on one line of standard output, as a shell would take it back. */
void qemu_print(char **argv)
{
	for (unsigned int i = 0; argv[i]; i++) {
		if (i)
			putchar(' ');
		print_word(stdout, argv[i]);
	}
	putchar('\n');
	fflush(stdout);
}

/* A signal that came (SIGINT, SIGTERM, SIGHUP), read from sfd; 0 none. */
static int signal_came(int sfd)
{
	struct pollfd pfd = { .fd = sfd, .events = POLLIN };
	struct signalfd_siginfo si;

	while (poll(&pfd, 1, 0) > 0 && read(sfd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo != SIGCHLD)
			return (int)si.ssi_signo;
	return 0;
}

/*
 * DIR opened step by step (prealloc_dir_open), the memory claimed, then
 * linked warm or pre-faulted at DIR/ID (the front-end layer's calls, as
 * the hook's prepare and start begin); on a failure or a signal, all of it
 * given back. 0, or the exit status.
 */
static int qemu_prepare(struct guest *g, int sfd)
{
	char why[512];
	int dir_fd, sig, r;

	/* Opened as a take opens its directory: no link, root's or this user's. */
	dir_fd = r = prealloc_dir_open(AT_FDCWD, g->mount, (unsigned int)geteuid(), why,
				       sizeof(why));
	if (r < 0)
		snprintf(g->msg, sizeof(g->msg), "--dir %.400s: %.500s", g->mount, why);
	else
		r = guest_claim(g);
	if (r == 0)
		r = guest_start(g, dir_fd, g->mount);
	if (dir_fd >= 0)
		close(dir_fd);
	sig = signal_came(sfd);
	if (r == 0 && !sig)
		return 0;
	guest_release(g, &(uint64_t){ 0 });
	if (sig)
		return 128 + sig;
	cli_error("qemu: %s", g->msg[0] ? g->msg : strerror(-r));
	return qemu_exit_status(r);
}

/*
 * Runs QEMU, forwarding SIGINT, SIGTERM and SIGHUP to it: its exit status,
 * 128 + the signal that ended it, or 128 + the signal forwarded when QEMU
 * shut down cleanly on it.
 */
static int qemu_run(char **argv, int sfd, const sigset_t *old)
{
	struct signalfd_siginfo si;
	pid_t parent = getpid(), pid;
	int status = 0, forwarded = 0;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		cli_error("qemu: fork: %s", strerror(errno));
		return EXIT_FAILURE_RUN;
	}
	if (pid == 0) {
		/* QEMU goes when this command goes, even by SIGKILL: no mapping outlives it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGIO, SIG_DFL);
		sigprocmask(SIG_SETMASK, old, NULL);
		execvp(argv[0], argv);
		fprintf(stderr, "%s qemu: cannot run %s: %s\n", program_name, argv[0],
			strerror(errno));
		_exit(127);
	}
	for (;;) {
		ssize_t n = read(sfd, &si, sizeof(si));

		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(si)) {
			waitpid(pid, &status, 0);
			break;
		}
		if (si.ssi_signo != SIGCHLD) {
			forwarded = (int)si.ssi_signo;
			kill(pid, forwarded);
		} else if (waitpid(pid, &status, WNOHANG) == pid) {
			break;
		}
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status) == 0 && forwarded ? 128 + forwarded : WEXITSTATUS(status);
}

/* Prepared, run, given back; rc is QEMU's unless the release fails after a clean exit. */
int qemu_session(struct guest *g, char **args, bool print)
{
	uint64_t returned = 0;
	sigset_t mask, old;
	int sfd, rc, r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		cli_error("qemu: signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return EXIT_FAILURE_RUN;
	}
	g->cancel_fd = sfd;
	rc = qemu_prepare(g, sfd);
	if (rc == 0) {
		if (print)
			qemu_print(args);
		rc = qemu_run(args, sfd, &old);
		r = guest_release(g, &returned);
		if (r < 0)
			cli_error("qemu: giving back %s: %s ('prealloc gc' finishes it)",
				  g->name, strerror(-r));
		else
			guest_log(g, 6, "%s: gave back %llu hugepages", g->name,
				  (unsigned long long)returned);
		rc = rc == 0 && r < 0 ? EXIT_FAILURE_RUN : rc;
	}
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}
