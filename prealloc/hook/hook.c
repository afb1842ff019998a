/* SPDX-License-Identifier: MIT */
/*
 * prealloc-libvirt-hook: libvirt's qemu hook (installed as
 * /etc/libvirt/hooks/qemu.d/prealloc), argv `<domain> <op> <subop> -`, the
 * domain XML on stdin.
 *
 *   prepare begin  claim the domain's hugepages per host node (growing the
 *                  pools under the record store's lock), or refuse;
 *   start begin    pre-fault shared file backing where the domain opts in;
 *                  warn when guests of its uid hold warm files and it has no
 *                  dynamic MAC label (sharing.c);
 *   stopped end,   give back everything the domain's holder holds;
 *   release end
 *   anything else  nothing.
 *
 * Run by a person with --install or --uninstall, it installs itself (install.c).
 * It never writes to stdout (libvirt reads it as replacement XML at restore
 * and migrate), never calls libvirt, and is bounded in time. Messages go to
 * stderr (virsh shows them when a start is refused) and syslog.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "install.h"
#include "run.h"

#define XML_MAX (64u << 20)

static const char *log_domain = "-";

/* Warnings and errors to stderr (virsh shows them), everything to syslog. */
static void hook_vlog(int level, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (level <= LOG_WARNING)
		fprintf(stderr, "prealloc-libvirt-hook: %s\n", msg);
	syslog(level, "%s: %s", log_domain, msg);
}

static void hook_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hook_log(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	hook_vlog(level, fmt, ap);
	va_end(ap);
}

/* All of stdin: libvirt writes the whole XML and may block if we stop reading. */
static char *read_all(size_t *ret_len)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap + 1);
	ssize_t n;

	while (buf) {
		if (len == cap) {
			char *b = cap < XML_MAX ? realloc(buf, cap * 2 + 1) : NULL;

			if (!b) {	/* too large: keep draining, keep nothing more */
				char sink[4096];

				while ((n = read(0, sink, sizeof(sink))) > 0 ||
				       (n < 0 && errno == EINTR))
					;
				break;
			}
			buf = b;
			cap *= 2;
		}
		n = read(0, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (buf)
		buf[len] = '\0';
	*ret_len = len;
	return buf;
}

/* Stdout is /dev/null from the first instruction: nothing can reach libvirt there. */
static void silence_stdout(void)
{
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (fd >= 0) {
		dup2(fd, STDOUT_FILENO);
		if (fd != STDOUT_FILENO)
			close(fd);
	}
}

static void on_alarm(int sig)
{
	static const char msg[] = "prealloc-libvirt-hook: deadline passed, giving up\n";

	(void)sig;
	(void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
	_exit(1);
}

static int stage(struct hook_run *run, const char *op, const char *sub, char *xml, size_t len)
{
	bool prepare = !strcmp(op, "prepare") && !strcmp(sub, "begin");
	bool start = !strcmp(op, "start") && !strcmp(sub, "begin");
	uint64_t returned = 0;
	int r;

	r = run_init(run, hook_vlog, xml, len);
	if (r < 0) {
		/* Releasing never fails a domain; a refusal names what was wrong. */
		hook_log(prepare || start ? LOG_ERR : LOG_WARNING, "%s", run->g.msg);
		return prepare || start ? 1 : 0;
	}
	if (prepare) {
		alarm(run->set.deadline_s + 5);
		r = guest_claim(&run->g);
	} else if (start) {
		/* Guests of one uid: said, never refused (a cold guest is as open). */
		run_sharing_check(run);
		/* run_start sets a deadline that grows with the guest, and its own alarm. */
		alarm(0);
		r = run_start(run);
	} else {
		alarm(run->set.deadline_s + 5);
		r = guest_release(&run->g, &returned);
		if (returned)
			hook_log(LOG_INFO, "%s: gave back %llu hugepages", run->g.name,
				 (unsigned long long)returned);
		if (r < 0)
			hook_log(LOG_WARNING, "%s: release: %s (prealloc gc finishes it)",
				 run->g.name, strerror(-r));
		return 0;
	}
	if (r < 0) {
		hook_log(LOG_ERR, "%s", run->g.msg[0] ? run->g.msg : strerror(-r));
		return 1;
	}
	return 0;
}

/* --help on a line that is not libvirt's (which ends in "-"): the installer prints the usage. */
static bool help_asked(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[4], "-"))
		return false;	/* whatever the domain's name */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help"))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct hook_run *run;
	size_t len = 0;
	char *xml;
	int rc = 0;

	signal(SIGIO, SIG_IGN);	/* a warm file's lease broken early (file_lease_take) */
	if (hook_install_args(argc, argv) || help_asked(argc, argv))
		return hook_install_main(argc, argv);
	silence_stdout();
	signal(SIGALRM, on_alarm);
	alarm(60);	/* reading stdin and parsing: a generous bound */
	openlog("prealloc-libvirt-hook", LOG_PID, LOG_DAEMON);
	xml = read_all(&len);
	if (argc < 4) {
		fprintf(stderr, "usage: %s DOMAIN OP SUBOP - < domain.xml (libvirt's qemu hook)\n",
			argv[0]);
		free(xml);
		return 2;
	}
	log_domain = argv[1];
	run = calloc(1, sizeof(*run));
	if (xml && run &&
	    ((!strcmp(argv[2], "prepare") && !strcmp(argv[3], "begin")) ||
	     (!strcmp(argv[2], "start") && !strcmp(argv[3], "begin")) ||
	     (!strcmp(argv[2], "stopped") && !strcmp(argv[3], "end")) ||
	     (!strcmp(argv[2], "release") && !strcmp(argv[3], "end"))))
		rc = stage(run, argv[2], argv[3], xml, len);
	else if (!xml || !run)
		rc = !strcmp(argv[2], "prepare") || !strcmp(argv[2], "start");
	if (run)
		run_free(run);
	free(run);
	free(xml);
	closelog();
	return rc;
}
