/* SPDX-License-Identifier: MIT */
/*
 * `prealloc warm serve`: the warm pool's daemon over prealloc_warm_serve_*
 * (docs/warm.md). SIGTERM/SIGINT stop it and SIGHUP reads warm.conf again,
 * through signalfds (blocked first: every thread, the workers too, inherits
 * the mask); READY=1 and STOPPING=1 go to the service manager. --metrics
 * FILE: the warm pool's metrics rewritten there after each pass (metrics.c).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "metrics.h"

/*
 * sd_notify(3)'s protocol without libsystemd: one datagram to the
 * AF_UNIX socket $NOTIFY_SOCKET names ('@': the abstract namespace).
 * Nothing to do without it; -errno when it cannot be sent.
 */
int notify_service(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	int fd, r = 0;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* serve's log: every level to stderr, with the priority prefix journald reads. */
static void serve_log(void *userdata, int level, const char *msg)
{
	(void)userdata;
	if (getenv("JOURNAL_STREAM"))
		fprintf(stderr, "<%d>%s\n", level, msg);
	else
		fprintf(stderr, "%s: %s\n", program_name, msg);
}

/* A signalfd for the signals of set (blocked first, so that they queue for it). */
static int signal_fd(int a, int b)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, a);
	if (b)
		sigaddset(&set, b);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -1;
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

const char warm_serve_synopsis[] = "prealloc warm serve [--conf FILE] [--metrics FILE]\n";

/* What the pass hook needs: the serve's context and conf, and where to write. */
struct serve_metrics {
	struct prealloc_ctx *ctx;
	const char *conf, *path;
	bool failed;	/* the last write failed: said once, until one succeeds */
};

/* After each pass: the metrics file rewritten whole (a failure logged, serve goes on). */
static void serve_metrics(void *userdata)
{
	struct serve_metrics *m = userdata;
	char why[512] = "";
	int r = metrics_write(m->ctx, m->conf, m->path, why, sizeof(why));

	if (r < 0 && !m->failed)
		cli_error("warm serve: metrics not written: %s", why);
	m->failed = r < 0;
}

/*
 * --metrics FILE as serve writes it: a relative one in the working
 * directory of its start, whatever serve does later; NULL (said) when the
 * directory cannot be named.
 */
static const char *metrics_absolute(const char *path)
{
	static char abs[PATH_MAX];
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return path;
	errno = 0;
	if (!getcwd(cwd, sizeof(cwd)) ||
	    (size_t)snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= sizeof(abs)) {
		cli_error("warm serve: --metrics %s: %s", path,
			  strerror(errno ? errno : ENAMETOOLONG));
		return NULL;
	}
	return abs;
}

/* serve's command line into o and *ret_metrics: 0, -1 after --help (done), or the exit status. */
static int serve_args(int argc, char **argv, struct prealloc_warm_serve_opts *o,
		      const char **ret_metrics)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--conf") && i + 1 < argc) {
			o->conf_path = argv[++i];
		} else if (!strcmp(argv[i], "--metrics") && i + 1 < argc) {
			*ret_metrics = metrics_absolute(argv[++i]);
			if (!*ret_metrics)
				return EXIT_ENVIRONMENT;
		} else if (!strcmp(argv[i], "--help")) {
			printf("Usage: %sThe warm pool's daemon: fill's pass when there may be work,\n"
			       "files given back under memory pressure; SIGHUP reads warm.conf again,\n"
			       "SIGTERM stops it; --metrics FILE: Prometheus metrics rewritten there\n"
			       "after each pass (see prealloc(1), docs/warm.md, docs/operations.md).\n",
			       warm_serve_synopsis);
			return -1;
		} else {
			cli_error("warm serve: unknown argument '%s' (--conf FILE, --metrics FILE)",
				  argv[i]);
			return EXIT_USAGE;
		}
	}
	return 0;
}

int cmd_warm_serve(int argc, char **argv)
{
	struct prealloc_warm_serve_opts o = { .size = sizeof(o) };
	struct prealloc_warm_serve_info info = { .size = sizeof(info) };
	struct prealloc_warm_serve *srv = NULL;
	struct serve_metrics m = {};
	struct prealloc_ctx *ctx;
	int r = serve_args(argc, argv, &o, &m.path);

	if (r)
		return r < 0 ? EXIT_OK : r;
	o.flags = PREALLOC_WARM_SERVE_STOP_FD | PREALLOC_WARM_SERVE_RELOAD_FD;
	o.stop_fd = signal_fd(SIGTERM, SIGINT);
	o.reload_fd = signal_fd(SIGHUP, 0);
	if (o.stop_fd < 0 || o.reload_fd < 0) {
		cli_error("warm serve: cannot take its signals: %s", strerror(errno));
		return EXIT_ENVIRONMENT;
	}
	ctx = cli_context();
	if (!ctx)
		return EXIT_ENVIRONMENT;
	prealloc_ctx_set_log(ctx, serve_log, NULL);
	m = (struct serve_metrics){ .ctx = ctx, .conf = o.conf_path, .path = m.path };
	if (m.path) {
		o.pass_done = serve_metrics;
		o.userdata = &m;
	}
	r = prealloc_warm_serve_new(ctx, &o, &srv, &info);
	if (r < 0) {
		cli_error("warm serve: %s", info.message[0] ? info.message : strerror(-r));
		prealloc_ctx_free(ctx);
		return r == -EINVAL ? EXIT_USAGE : EXIT_ENVIRONMENT;
	}
	/* Up once warm.conf is read and pressure armed: the first pass may take long. */
	r = notify_service("READY=1\nSTATUS=serving the warm pool");
	if (r < 0)
		cli_error("warm serve: cannot tell the service manager it is ready: %s",
			  strerror(-r));
	r = prealloc_warm_serve_run(srv, &info);
	notify_service("STOPPING=1");
	prealloc_warm_serve_free(srv);
	prealloc_ctx_free(ctx);
	fprintf(stderr,
		"%s: warm serve: stopped after %u passes: %u cleared, %u made, %u given back "
		"(%llu MiB, %llu MiB of it under %llu pressure events)\n",
		program_name, info.passes, info.cleared, info.created, info.dropped,
		(unsigned long long)(info.dropped_bytes >> 20),
		(unsigned long long)(info.pressure_dropped_bytes >> 20),
		(unsigned long long)info.pressure_events);
	if (r < 0) {
		cli_error("warm serve: %s", strerror(-r));
		return EXIT_ENVIRONMENT;
	}
	return EXIT_OK;
}
