/* SPDX-License-Identifier: MIT */
/*
 * A wrapper front end's session (`prealloc qemu`: cli/qemu.c parses and
 * describes the guest; any VMM run the same way): the memory claimed and
 * made ready in the guest's memory directory, the VMM run with SIGINT,
 * SIGTERM and SIGHUP passed on to it, and the memory given back however
 * the VMM ends; and the command line as a shell would read it back.
 * Messages go through the guest's log: errors at LOG_ERR (3).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <prealloc.h>

#include "guest.h"

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

void guest_print_argv(FILE *f, char **argv)
{
	for (unsigned int i = 0; argv[i]; i++) {
		if (i)
			fputc(' ', f);
		print_word(f, argv[i]);
	}
	fputc('\n', f);
	fflush(f);
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
 * The memory directory opened step by step (prealloc_dir_open), the
 * memory claimed, then each file linked warm or pre-faulted in it (as the
 * hook's prepare and start begin); on a failure or a signal, all of it
 * given back. 0, or the exit status.
 */
static int session_prepare(struct guest *g, int sfd, const struct guest_wrapper *w)
{
	char why[512];
	int dir_fd, sig, r;

	/* Opened as a take opens its directory: no link, root's or this user's. */
	dir_fd = r = prealloc_dir_open(AT_FDCWD, g->mount, (unsigned int)geteuid(), why,
				       sizeof(why));
	if (r < 0)
		snprintf(g->msg, sizeof(g->msg), "%s %.400s: %.500s", g->words->dir, g->mount, why);
	else
		r = guest_claim(g);
	if (r == 0)
		r = guest_start(g, dir_fd, g->mount);
	if (dir_fd >= 0)
		close(dir_fd);
	/*
	 * Tests stop here (the front end has no test_pause of the library's):
	 * a signal sent now comes once everything is prepared, after the
	 * prepare stopped watching for one.
	 */
	if (getenv("PREALLOC_TEST_PAUSE") && !strcmp(getenv("PREALLOC_TEST_PAUSE"), "session-prepared"))
		raise(SIGSTOP);
	sig = signal_came(sfd);
	if (r == 0 && !sig)
		return 0;
	guest_release(g, &(uint64_t){ 0 });
	if (sig)
		return 128 + sig;
	guest_log(g, 3, "%s", g->msg[0] ? g->msg : strerror(-r));
	return w->exit_status(r);
}

/*
 * Runs the VMM, forwarding SIGINT, SIGTERM and SIGHUP to it: its exit
 * status, 128 + the signal that ended it, or 128 + the signal forwarded
 * when it shut down cleanly on it.
 */
static int session_run(struct guest *g, char **argv, int sfd, const sigset_t *old,
		       const struct guest_wrapper *w)
{
	struct signalfd_siginfo si;
	pid_t parent = getpid(), pid;
	int status = 0, forwarded = 0;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		guest_log(g, 3, "fork: %s", strerror(errno));
		return w->run_failure;
	}
	if (pid == 0) {
		/* The VMM goes when this command goes, even by SIGKILL: no mapping outlives it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGIO, SIG_DFL);
		sigprocmask(SIG_SETMASK, old, NULL);
		execvp(argv[0], argv);
		guest_log(g, 4, "cannot run %s: %s", argv[0], strerror(errno));
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

int guest_session(struct guest *g, char **args, const struct guest_wrapper *w)
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
		guest_log(g, 3, "signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return w->run_failure;
	}
	g->cancel_fd = sfd;
	rc = session_prepare(g, sfd, w);
	if (rc == 0) {
		if (w->print)
			guest_print_argv(stdout, args);
		rc = session_run(g, args, sfd, &old, w);
		r = guest_release(g, &returned);
		if (r < 0)
			guest_log(g, 3, "giving back %s: %s ('prealloc gc' finishes it)",
				  g->name, strerror(-r));
		else
			guest_log(g, 6, "%s: gave back %llu hugepages", g->name,
				  (unsigned long long)returned);
		rc = rc == 0 && r < 0 ? w->run_failure : rc;
	}
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}
