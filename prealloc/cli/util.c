/* SPDX-License-Identifier: MIT */
/* Messages: one line, prefixed with the program name, on stderr. */
#include <stdarg.h>
#include <errno.h>
#include <json-c/json.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "clock.h"

const char *program_name = "prealloc";
double cli_main_start, cli_ctx_seconds;

/* Before main, once the loader is done with the libraries. */
__attribute__((constructor)) static void cli_started(void)
{
	cli_main_start = now_seconds();
}

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", program_name, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("error: ", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

const char *store_hint(int err)
{
	switch (err) {
	case -EBADMSG:
		return " (it is corrupt; it was left as it is)";
	case -EPERM:
		return geteuid() ? " (not this user's alone, or run as root)"
				 : " (the state directory or its store is not root's alone: another "
				   "owner, or writable by others; not trusted)";
	case -EACCES:
		return " (run as root)";
	case -ETIMEDOUT:
		return " (another prealloc run holds its lock)";
	default:
		return "";
	}
}

void cli_log(void *userdata, int level, const char *msg)
{
	(void)userdata;
	if (level <= PREALLOC_LOG_WARNING)
		fprintf(stderr, "%s: %s\n", program_name, msg);
}

double gbps(uint64_t bytes, double seconds)
{
	return seconds > 0 ? (double)bytes / seconds / 1e9 : 0;
}

struct json_object *json_double(double v)
{
	char text[48];

	/* Microseconds and kB/s are plenty; print them as such, not as %.17g. */
	snprintf(text, sizeof(text), "%.6f", v);
	return json_object_new_double_s(v, text);
}

int read_sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int signals_catch(sigset_t *ret_old)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);	/* the terminal went away: roll back too */
	pthread_sigmask(SIG_BLOCK, &mask, ret_old);
	return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

void signals_release(int sfd, const sigset_t *old)
{
	struct signalfd_siginfo si;

	/*
	 * A signal still pending came after the outcome was settled (kept or
	 * rolled back): consume it rather than die with the work done.
	 */
	while (sfd >= 0 && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		;
	if (sfd >= 0)
		close(sfd);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

int signal_pending(int sfd)
{
	struct pollfd pfd = { .fd = sfd, .events = POLLIN };
	struct signalfd_siginfo si;

	if (sfd < 0 || poll(&pfd, 1, 0) <= 0)
		return 0;
	if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

int option_error(const char *cmd, char *const argv[], const char *optstring,
		 const struct option *longopts)
{
	const char *tok = optind > 0 && argv[optind - 1] ? argv[optind - 1] : "?";
	bool known = false;
	char name[64];

	/* getopt leaves optopt 0 for an unknown long option, the value otherwise. */
	if (optopt) {
		known = optopt < 256 && strchr(optstring, optopt);
		for (const struct option *o = longopts; !known && o && o->name; o++)
			known = o->val == optopt;
	}
	if (!strncmp(tok, "--", 2) || known)
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(tok, "="), tok);
	else
		snprintf(name, sizeof(name), "-%c", optopt);
	if (known && strchr(tok, '=') && !strncmp(tok, "--", 2))
		cli_error("option '%s' takes no argument (see 'prealloc%s%s --help')", name,
			  cmd ? " " : "", cmd ? cmd : "");
	else if (known)
		cli_error("option '%s' needs an argument (see 'prealloc%s%s --help')", name,
			  cmd ? " " : "", cmd ? cmd : "");
	else
		cli_error("unknown option '%s' (see 'prealloc%s%s --help')", name, cmd ? " " : "",
			  cmd ? cmd : "");
	return EXIT_USAGE;
}

struct prealloc_ctx *cli_context(void)
{
	struct prealloc_ctx *ctx;
	double t0 = now_seconds();
	int r = prealloc_ctx_new(&ctx);

	cli_ctx_seconds = now_seconds() - t0;
	if (r < 0) {
		cli_error("cannot read the system topology: %s", strerror(-r));
		return NULL;
	}
	prealloc_ctx_set_log(ctx, cli_log, NULL);
	return ctx;
}

/* Whether path is a regular file this process may execute: 0, -EACCES, or -ENOENT. */
static int program_at(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -errno;
	return S_ISREG(st.st_mode) && access(path, X_OK) == 0 ? 0 : -EACCES;
}

int program_find(const char *name)
{
	const char *path = getenv("PATH"), *dir;
	char def[256], file[PATH_MAX];
	int r = -ENOENT;

	if (!name || !*name)
		return -ENOENT;
	if (strchr(name, '/'))
		return program_at(name);
	/* execvp's search: $PATH, else the system's default; an empty entry is ".". */
	if (!path && confstr(_CS_PATH, def, sizeof(def)) > 0)
		path = def;
	for (dir = path ? path : "/bin:/usr/bin"; dir;) {
		int n = (int)strcspn(dir, ":"), k;

		k = snprintf(file, sizeof(file), "%.*s%s%s", n, dir, n ? "/" : "", name);
		k = k >= 0 && (size_t)k < sizeof(file) ? program_at(file) : -ENOENT;
		if (k == 0)
			return 0;
		if (k == -EACCES)
			r = k;	/* execvp says EACCES when nothing later runs */
		dir = dir[n] ? dir + n + 1 : NULL;
	}
	return r;
}
