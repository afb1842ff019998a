/* SPDX-License-Identifier: MIT */
/* A few lines of TAP for test programs: ok/not ok per case, plan at the end. */
#ifndef PREALLOC_TAP_H
#define PREALLOC_TAP_H

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned int tap_count, tap_failed;

__attribute__((format(printf, 2, 3))) static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %u - ", cond ? "" : "not ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	return cond;
}

__attribute__((format(printf, 1, 2))) static inline void tap_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %u # SKIP ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/*
 * The whole program skipped, for a cause it proved: TAP's own plan with a
 * SKIP directive, and exit 0. (Under meson's protocol 'tap' an exit of 77
 * is an error, not a skip.) Returns what main() returns.
 */
__attribute__((format(printf, 1, 2))) static inline int tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return EXIT_SUCCESS;
}

/*
 * Paths a test made (files, or directories of files) are removed when it
 * exits, and when SIGTERM, SIGINT or SIGHUP stops it half-way (a CI
 * timeout, ^C, meson's own timeout): a test leaves nothing behind. Only
 * the process that registered them removes them, not a forked child.
 */
struct tap_cleanup {
	char paths[8][256];
	unsigned int nr;
	pid_t pid;
};

static inline struct tap_cleanup *tap_cleanup(void)
{
	static struct tap_cleanup c;

	return &c;
}

static inline int tap_remove_one(const char *path, const struct stat *st, int type,
				 struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return (type == FTW_DP ? rmdir(path) : unlink(path)), 0;
}

static inline void tap_remove_paths(void)
{
	struct tap_cleanup *c = tap_cleanup();

	if (getpid() != c->pid)
		return;
	/* Depth first, never through a link or into another mount. */
	for (unsigned int i = 0; i < c->nr; i++)
		nftw(c->paths[i], tap_remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static inline void tap_on_signal(int sig)
{
	tap_remove_paths();
	signal(sig, SIG_DFL);
	raise(sig);
}

static inline void tap_remove_at_exit(const char *path)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP };
	struct tap_cleanup *c = tap_cleanup();

	if (!c->nr) {
		c->pid = getpid();
		atexit(tap_remove_paths);
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], tap_on_signal);
	}
	if (c->nr < sizeof(c->paths) / sizeof(c->paths[0]))
		snprintf(c->paths[c->nr++], sizeof(c->paths[0]), "%s", path);
}

static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	return tap_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
