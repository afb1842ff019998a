/* SPDX-License-Identifier: MIT */
/*
 * prealloc_warm_serve_*: the daemon's loop (docs/warm.md). It runs fill's
 * pass (fill.c) whenever there may be work: the store changed (a give,
 * a take; inotify on the state directory), check_interval passed (a holder
 * may have died: the liveness checks are fill's own), warm.conf was read
 * again (reload_fd, SIGHUP in the CLI). Clears and new files run in the
 * background: SCHED_IDLE workers, clear_threads per node, clear_rate.
 *
 * Pressure: a PSI trigger on /proc/pressure/memory (psi(7)) where it
 * exists, else MemAvailable below available_floor. Each event gives back
 * pressure_step of warm files (DIRTY first, then READY, the fullest target
 * first) and lowers that target's limit by as much, so that the pass does
 * not make them again; pressure_quiet after the last event the targets
 * hold again.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

#define SERVE_CLEAR_THREADS 1
#define SERVE_CLEAR_RATE UINT64_C(2000000000)	/* bytes per second per node */
#define SERVE_PSI_STALL_US 150000
#define SERVE_PSI_WINDOW_US 2000000
/* psi(7): without CAP_SYS_RESOURCE a trigger's window must be a multiple of 2 s. */
#define PSI_UNPRIV_WINDOW_US 2000000
#define SERVE_AVAILABLE_FLOOR (UINT64_C(1) << 30)
#define SERVE_PRESSURE_QUIET_S 60
#define SERVE_CHECK_INTERVAL_S 5
#define SERVE_FLOOR_POLL_MS 1000

struct prealloc_warm_serve {
	struct prealloc_ctx *ctx;
	struct prealloc_warm_serve_opts o;
	char conf_path[PATH_MAX];	/* "" : the default */
	struct warm_conf conf;
	uint64_t *cut;			/* per target: given back under pressure */
	uint64_t *limit;
	int inotify_fd;
	int psi_fd;			/* -1: none (floor, or off) */
	uint64_t floor;			/* without PSI: MemAvailable floor; 0 off */
	double last_pressure;		/* 0: none since the targets last held */
	double next_floor;		/* when MemAvailable is read next (floor) */
	uint64_t store_ino;		/* the store as serve last left it */
	bool dirty;			/* a pass is due */
};

/* Reads what is readable from fd without blocking (a signalfd's, an eventfd's, a pipe's). */
static void drain(int fd)
{
	char buf[4096] __attribute__((aligned(8)));

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
}

static uint64_t set_or(uint64_t v, uint64_t def)
{
	return warm_setting(v, def);
}

/*
 * The pressure source of the settings: a PSI trigger (psi_fd), else the
 * floor. The trigger is written as psi(7) says: "some|full STALL WINDOW",
 * in microseconds, and lives as long as the fd.
 */
static void pressure_arm(struct prealloc_warm_serve *srv)
{
	const struct warm_settings *set = &srv->conf.set;
	uint64_t stall = set_or(set->psi_stall_us, SERVE_PSI_STALL_US);
	uint64_t window = set_or(set->psi_window_us, SERVE_PSI_WINDOW_US);
	char path[PATH_MAX], trig[64];
	int fd, err;

	if (srv->psi_fd >= 0)
		close(srv->psi_fd);
	srv->psi_fd = -1;
	srv->floor = 0;
	if (stall == 0)
		return;		/* pressure = off */
	fd = -1;
	err = ENOENT;
	if (proc_path(srv->ctx, path, sizeof(path), "/pressure/memory") == 0 &&
	    (fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
		err = errno;
	/* A refused write arms nothing: the same fd takes the second try. */
	for (int tries = 0; fd >= 0 && tries < 2; tries++) {
		int n = snprintf(trig, sizeof(trig), "%s %llu %llu",
				 set->psi_full == 1 ? "full" : "some", (unsigned long long)stall,
				 (unsigned long long)window);

		if (write(fd, trig, (size_t)n + 1) == n + 1) {
			srv->psi_fd = fd;
			ctx_log(srv->ctx, PREALLOC_LOG_INFO, "warm serve: pressure from PSI (%s)",
				trig);
			return;
		}
		err = errno;
		/*
		 * Refused for want of CAP_SYS_RESOURCE (a container's root): the
		 * window rounded up to 2 s, the stall kept in proportion.
		 */
		if (err != EINVAL || window % PSI_UNPRIV_WINDOW_US == 0)
			break;
		stall = stall * ALIGN_UP(window, PSI_UNPRIV_WINDOW_US) / window;
		window = ALIGN_UP(window, PSI_UNPRIV_WINDOW_US);
		ctx_log(srv->ctx, PREALLOC_LOG_INFO,
			"warm serve: PSI refused the window (no CAP_SYS_RESOURCE?): %llu us in %llu us",
			(unsigned long long)stall, (unsigned long long)window);
	}
	if (fd >= 0)
		close(fd);
	srv->floor = set_or(set->available_floor, SERVE_AVAILABLE_FLOOR);
	ctx_log(srv->ctx, PREALLOC_LOG_INFO,
		"warm serve: no PSI trigger (%s): pressure is MemAvailable under %llu MiB",
		strerror(err), (unsigned long long)(srv->floor >> 20));
}

/* MemAvailable in bytes, or UINT64_MAX when it cannot be read. */
static uint64_t mem_available(struct prealloc_ctx *ctx)
{
	char path[PATH_MAX], line[256];
	unsigned long long kb;
	uint64_t r = UINT64_MAX;
	FILE *f;

	if (proc_path(ctx, path, sizeof(path), "/meminfo") < 0 || !(f = fopen(path, "re")))
		return r;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
			r = (uint64_t)kb << 10;
			break;
		}
	fclose(f);
	return r;
}

/* Without PSI: MemAvailable under the floor, read once a second at most. */
static bool floor_crossed(struct prealloc_warm_serve *srv)
{
	double now = now_seconds();

	if (!srv->floor || now < srv->next_floor)
		return false;
	srv->next_floor = now + SERVE_FLOOR_POLL_MS / 1000.0;
	return mem_available(srv->ctx) < srv->floor;
}

/* warm.conf (again): on success the new targets replace the old and the cuts start over. */
static int serve_load(struct prealloc_warm_serve *srv, char *err, size_t len)
{
	struct warm_conf conf;
	uint64_t *cut, *limit;
	int r;

	r = warm_conf_load(srv->conf_path[0] ? srv->conf_path : NULL, &conf, err, len);
	if (r < 0)
		return r;
	cut = calloc(conf.nr + 1, sizeof(*cut));
	limit = calloc(conf.nr + 1, sizeof(*limit));
	if (!cut || !limit) {
		free(cut);
		free(limit);
		warm_conf_free(&conf);
		return -ENOMEM;
	}
	warm_conf_free(&srv->conf);
	free(srv->cut);
	free(srv->limit);
	srv->conf = conf;
	srv->cut = cut;
	srv->limit = limit;
	srv->last_pressure = 0;
	srv->dirty = true;
	pressure_arm(srv);
	return 0;
}

static void serve_pass_opts(struct prealloc_warm_serve *srv, struct warm_pass *p)
{
	const struct warm_settings *set = &srv->conf.set;

	warm_limits(srv->ctx, &srv->conf, srv->cut, srv->limit);
	*p = (struct warm_pass){
		.conf = &srv->conf,
		.limit = srv->limit,
		.pace = {
			.threads = (unsigned int)set_or(set->clear_threads, SERVE_CLEAR_THREADS),
			.max_rate = set_or(set->clear_rate, SERVE_CLEAR_RATE),
			.idle = true,
			.stop_fd = srv->o.stop_fd,
		},
		.lock_timeout_ms = srv->o.lock_timeout_ms,
		.drop_untargeted = srv->conf.found,
	};
}

static void fill_add(struct prealloc_warm_serve_info *info,
		     const struct prealloc_warm_fill_info *f)
{
	info->returned += f->returned;
	info->cleared += f->cleared;
	info->created += f->created;
	info->dropped += f->dropped;
	info->cleared_bytes += f->cleared_bytes;
	info->dropped_bytes += f->dropped_bytes;
	info->renewed += f->renewed;
	info->renewed_bytes += f->renewed_bytes;
}

/* One pass, logged when it did something; whether it did. */
static bool serve_pass(struct prealloc_warm_serve *srv, struct prealloc_warm_serve_info *info)
{
	struct prealloc_warm_fill_info f = { .size = sizeof(f) };
	struct warm_pass p;
	int r;

	serve_pass_opts(srv, &p);
	r = warm_pass_run(srv->ctx, &p, &f);
	info->passes++;
	fill_add(info, &f);
	if (f.returned || f.renewed || f.cleared || f.created || f.dropped)
		ctx_log(srv->ctx, PREALLOC_LOG_INFO,
			"warm serve: %u returned, %u renewed (%llu MiB, %.2f GB/s), %u cleared "
			"(%llu MiB, %.2f GB/s), %u made, %u given back (%llu MiB)",
			f.returned, f.renewed, (unsigned long long)(f.renewed_bytes >> 20),
			f.renew_seconds > 0 ? (double)f.renewed_bytes / f.renew_seconds / 1e9 : 0.0,
			f.cleared, (unsigned long long)(f.cleared_bytes >> 20),
			f.clear_seconds > 0 ? (double)f.cleared_bytes / f.clear_seconds / 1e9 : 0.0,
			f.created, f.dropped, (unsigned long long)(f.dropped_bytes >> 20));
	if (r < 0 || f.message[0])
		ctx_log(srv->ctx, PREALLOC_LOG_WARNING, "warm serve: %s",
			f.message[0] ? f.message : strerror(-r));
	return f.returned || f.renewed || f.cleared || f.created || f.dropped;
}

/* A pressure event: pressure_step of warm files given back, their targets' limits cut. */
static void serve_pressure(struct prealloc_warm_serve *srv, struct prealloc_warm_serve_info *info)
{
	struct prealloc_warm_fill_info f = { .size = sizeof(f) };
	uint64_t step = warm_policy_of(srv->ctx)->pressure_step(&srv->conf);
	struct warm_pass p;
	int r;

	serve_pass_opts(srv, &p);
	r = warm_pass_shrink(srv->ctx, &p, step, srv->cut, &f);
	info->pressure_events++;
	info->pressure_dropped_bytes += f.dropped_bytes;
	fill_add(info, &f);
	srv->last_pressure = now_seconds();
	ctx_log(srv->ctx, r < 0 ? PREALLOC_LOG_WARNING : PREALLOC_LOG_INFO,
		"warm serve: memory pressure: %u files given back (%llu MiB)%s%s", f.dropped,
		(unsigned long long)(f.dropped_bytes >> 20), r < 0 ? ": " : "",
		r < 0 ? strerror(-r) : "");
}

/*
 * The clears serve runs are large: the kernel ranking they use is measured
 * now (once per CPU model and microcode, docs/kernels.md), not at the
 * first clear after a guest stops.
 */
static void serve_rank(struct prealloc_ctx *ctx)
{
	struct clear_rank rank;
	char how[96];

	if (ctx_ranking(ctx, "by warm serve at start", &rank, how, sizeof(how)))
		ctx_log(ctx, PREALLOC_LOG_INFO, "warm serve: large clears use %s (%.1f GB/s; %s)",
			rank.k[0].kernel, rank.k[0].gbps, how);
}

EXPORT int prealloc_warm_serve_new(struct prealloc_ctx *ctx,
				   const struct prealloc_warm_serve_opts *opts,
				   struct prealloc_warm_serve **ret_serve,
				   struct prealloc_warm_serve_info *ret_info)
{
	struct prealloc_warm_serve_info info = { .size = sizeof(info) };
	struct prealloc_warm_serve *srv;
	int r;

	if (!ctx || !ret_serve || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->ctx = ctx;
	srv->psi_fd = srv->inotify_fd = -1;
	srv->o = (struct prealloc_warm_serve_opts){ .size = sizeof(srv->o) };
	r = opts ? copy_sized_in(&srv->o, sizeof(srv->o), opts) : 0;
	/* The fds the flags name; none else (a zeroed struct's 0 is stdin, not a stop). */
	if (!(srv->o.flags & PREALLOC_WARM_SERVE_STOP_FD))
		srv->o.stop_fd = -1;
	if (!(srv->o.flags & PREALLOC_WARM_SERVE_RELOAD_FD))
		srv->o.reload_fd = -1;
	if (!srv->o.lock_timeout_ms)
		srv->o.lock_timeout_ms = ADMIT_LOCK_TIMEOUT_MS;
	if (r == 0 && srv->o.conf_path &&
	    snprintf(srv->conf_path, sizeof(srv->conf_path), "%s", srv->o.conf_path) >=
		    (int)sizeof(srv->conf_path))
		r = -ENAMETOOLONG;
	srv->o.conf_path = NULL;	/* the copy is ours */
	if (r == 0)
		r = serve_load(srv, info.message, sizeof(info.message));
	/* Every save of the store is a rename onto "store": one event per change. */
	if (r == 0)
		r = statedir_ensure(ctx);
	if (r == 0) {
		srv->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (srv->inotify_fd < 0 ||
		    inotify_add_watch(srv->inotify_fd, ctx->state_dir, IN_MOVED_TO) < 0)
			r = -errno;
	}
	if (r < 0 && !info.message[0])
		snprintf(info.message, sizeof(info.message), "%s", strerror(-r));
	if (r == 0)
		serve_rank(ctx);
	if (ret_info)
		copy_sized_out(ret_info, &info, sizeof(info));
	if (r < 0) {
		prealloc_warm_serve_free(srv);
		return r;
	}
	*ret_serve = srv;
	return 0;
}

/* The store's inode now: every save renames a new file onto it. 0: none. */
static uint64_t store_inode(const struct prealloc_warm_serve *srv)
{
	char path[PATH_MAX];
	struct stat st;

	if (statedir_path(srv->ctx, path, sizeof(path), STORE_LEAF) < 0 || stat(path, &st) < 0)
		return 0;
	return (uint64_t)st.st_ino;
}

/*
 * After serve's own work: the events its saves queued are dropped, and the
 * store as it is now is serve's. A save by anyone else after this is a
 * store serve has not seen: without this, each pass that saved (a file
 * still mapped looked at again, a target refused) woke the next at once.
 */
static void store_seen(struct prealloc_warm_serve *srv)
{
	drain(srv->inotify_fd);
	srv->store_ino = store_inode(srv);
	if (srv->o.pass_done)
		srv->o.pass_done(srv->o.userdata);
}

/* Woken by the directory: whether someone else saved the store since store_seen. */
static bool store_changed(struct prealloc_warm_serve *srv)
{
	drain(srv->inotify_fd);
	return store_inode(srv) != srv->store_ino;
}

/* How long to wait for the next event, in ms. */
static int serve_timeout(const struct prealloc_warm_serve *srv, double last_pass)
{
	double wait = (double)set_or(srv->conf.set.check_interval_s, SERVE_CHECK_INTERVAL_S);
	double quiet = (double)set_or(srv->conf.set.pressure_quiet_s, SERVE_PRESSURE_QUIET_S);
	double now = now_seconds();

	if (srv->dirty)
		return 0;	/* another pass at once, after what is already there */
	wait = last_pass + wait - now;
	if (srv->last_pressure > 0)
		wait = MIN(wait, srv->last_pressure + quiet - now);
	if (srv->floor)
		wait = MIN(wait, srv->next_floor - now);
	return wait <= 0 ? 0 : (int)(wait * 1000) + 1;
}

/* pressure_quiet after the last event: the cuts end, the targets hold again. */
static void serve_quiet(struct prealloc_warm_serve *srv, double now)
{
	double quiet = (double)set_or(srv->conf.set.pressure_quiet_s, SERVE_PRESSURE_QUIET_S);

	if (srv->last_pressure <= 0 || now < srv->last_pressure + quiet)
		return;
	memset(srv->cut, 0, (srv->conf.nr + 1) * sizeof(*srv->cut));
	srv->last_pressure = 0;
	srv->dirty = true;
	ctx_log(srv->ctx, PREALLOC_LOG_INFO,
		"warm serve: no pressure for %.0f s: the targets hold again", quiet);
}

/* reload_fd (SIGHUP): warm.conf again; a bad one is logged and changes nothing. */
static void serve_reload(struct prealloc_warm_serve *srv)
{
	char err[512];

	drain(srv->o.reload_fd);
	if (serve_load(srv, err, sizeof(err)) < 0)
		ctx_log(srv->ctx, PREALLOC_LOG_ERR, "warm serve: %s: the targets stay as they were",
			err);
	else
		ctx_log(srv->ctx, PREALLOC_LOG_INFO, "warm serve: warm.conf read again: %u targets",
			srv->conf.nr);
}

/* The PSI trigger failed (POLLERR): the floor from now on. */
static void serve_psi_failed(struct prealloc_warm_serve *srv)
{
	close(srv->psi_fd);
	srv->psi_fd = -1;
	srv->floor = set_or(srv->conf.set.available_floor, SERVE_AVAILABLE_FLOOR);
	ctx_log(srv->ctx, PREALLOC_LOG_WARNING,
		"warm serve: the PSI trigger failed: pressure is MemAvailable under %llu MiB now",
		(unsigned long long)(srv->floor >> 20));
}

EXPORT int prealloc_warm_serve_run(struct prealloc_warm_serve *srv,
				   struct prealloc_warm_serve_info *ret_info)
{
	struct prealloc_warm_serve_info info = { .size = sizeof(info) };
	double last_pass = 0;
	int r = 0;

	if (!srv || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	for (;;) {
		struct pollfd p[4] = {
			{ .fd = srv->o.stop_fd, .events = POLLIN },
			{ .fd = srv->o.reload_fd, .events = POLLIN },
			{ .fd = srv->inotify_fd, .events = POLLIN },
			{ .fd = srv->psi_fd, .events = POLLPRI },
		};
		double now = now_seconds();

		serve_quiet(srv, now);
		if (srv->dirty || now >= last_pass + (double)set_or(srv->conf.set.check_interval_s,
								    SERVE_CHECK_INTERVAL_S)) {
			/*
			 * What failed is logged (the next pass tries again). A pass
			 * that did something looks once more: a give saved while it
			 * cleared is not told from its own saves. One that did
			 * nothing wrote nothing: from now on, only news wakes it.
			 */
			srv->dirty = serve_pass(srv, &info);
			store_seen(srv);
			last_pass = now_seconds();
			test_pause("warm-serve-pass");
		}
		if (poll(p, ARRAY_SIZE(p), serve_timeout(srv, last_pass)) < 0 && errno != EINTR) {
			r = -errno;
			break;
		}
		if (p[0].revents)
			break;
		if (p[1].revents)
			serve_reload(srv);
		if (p[2].revents && store_changed(srv))
			srv->dirty = true;
		if ((p[3].revents & POLLPRI) || floor_crossed(srv)) {
			serve_pressure(srv, &info);
			store_seen(srv);
		}
		if (p[3].revents & (POLLERR | POLLNVAL))
			serve_psi_failed(srv);
	}
	if (ret_info)
		copy_sized_out(ret_info, &info, sizeof(info));
	return r;
}

EXPORT void prealloc_warm_serve_free(struct prealloc_warm_serve *srv)
{
	if (!srv)
		return;
	if (srv->inotify_fd >= 0)
		close(srv->inotify_fd);
	if (srv->psi_fd >= 0)
		close(srv->psi_fd);
	warm_conf_free(&srv->conf);
	free(srv->cut);
	free(srv->limit);
	free(srv);
}
