/* SPDX-License-Identifier: MIT */
/*
 * prealloc_warm_fill: one pass over the warm pool (docs/warm.md). Files
 * given back become DIRTY once nothing maps or holds them; each DIRTY file
 * is marked CLEARING, cleared by its node's workers and verified (every
 * byte zero, every page present on its node), and only then READY. A file
 * whose clear or verify fails, or that its holder resized, is removed.
 * Then each target gets the new files it lacks (prepare's flow, warm), and
 * loses READY files beyond it.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flows.h"

#define WARM_CLEARS_LEAF "warm-clears"

__attribute__((format(printf, 2, 3))) static void fill_note(struct prealloc_warm_fill_info *info,
							   const char *fmt, ...)
{
	va_list ap;

	if (info->message[0])
		return;		/* the first failure */
	va_start(ap, fmt);
	vsnprintf(info->message, sizeof(info->message), fmt, ap);
	va_end(ap);
}

/* A handed file whose holder is gone: its holder's dead, or (none) its path and users gone. */
static bool handed_free(struct prealloc_ctx *ctx, const struct record *r)
{
	unsigned int unreadable = 0;
	struct statx stx;

	if (r->owner.kind == PREALLOC_OWNER_HOLDER)
		return !owner_alive(ctx, &r->owner);
	if (file_statx(AT_FDCWD, r->path, AT_SYMLINK_NOFOLLOW, &stx) == 0 && record_is_file(r, &stx))
		return false;
	/* As give's check: processes procfs does not show us (another pid namespace's) aside. */
	return file_user(ctx, r->dev, r->ino, getpid(), &unreadable) == 0;
}

/*
 * Under the lock: files back from their holders (RETURNING, or HANDED to a
 * holder that is gone) checked again; CLEARING left by a fill that died is
 * DIRTY again; QUARANTINED files removed with their growth.
 */
static int fill_returns(struct prealloc_ctx *ctx, struct store *s,
			struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };
	int err = 0;

	for (size_t i = 0; i < s->nr; i++) {
		struct record *r = &s->r[i];

		if (r->warm == PREALLOC_WARM_HANDED && handed_free(ctx, r)) {
			r->warm = PREALLOC_WARM_RETURNING;
			err = store_save(ctx, s);
		}
		if (err == 0 && r->warm == PREALLOC_WARM_RETURNING) {
			bool had_path = r->path[0];

			/* A give that died before the holder's link went, or a holder gone. */
			if (r->path[0])
				warm_unlink_path(r, false);
			warm_returned(r, warm_check(ctx, r));
			info->returned += r->warm == PREALLOC_WARM_DIRTY;
			/* Still mapped, as it was: nothing to write (serve would wake itself). */
			if (r->warm != PREALLOC_WARM_RETURNING || had_path)
				err = store_save(ctx, s);
		}
		/* Only a dead fill's: a live one (another pass, now) is still clearing it. */
		if (err == 0 && r->warm == PREALLOC_WARM_CLEARING && !owner_alive(ctx, &r->owner)) {
			r->warm = PREALLOC_WARM_DIRTY;
			memset(&r->owner, 0, sizeof(r->owner));
			err = store_save(ctx, s);
		}
		/* A new file whose run died (a serve stopped by SIGKILL): its file and growth go. */
		if (err == 0 && r->warm == PREALLOC_WARM_POPULATING && !owner_alive(ctx, &r->owner)) {
			size_t before = s->nr;

			err = record_settle(ctx, s, i, true, &rel);
			if (s->nr < before) {
				i--;
				continue;
			}
		}
		if (err == 0 && r->warm == PREALLOC_WARM_QUARANTINED) {
			size_t before = s->nr;
			uint64_t bytes = r->size;

			err = record_settle(ctx, s, i, true, &rel);
			/* Else its pages are still someone's: settled again by a later pass. */
			if (s->nr < before) {
				info->dropped++;
				info->dropped_bytes += bytes;
				i--;	/* the record left the store */
			}
		}
		if (err < 0)
			return err;
	}
	return 0;
}

/* The next DIRTY file, marked CLEARING under the lock: its copy in *ret; 0 none. */
static int next_dirty(struct prealloc_ctx *ctx, unsigned int timeout_ms, struct record *ret)
{
	struct store s;
	int lock, err, found = 0;

	err = store_open(ctx, timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	for (size_t i = 0; i < s.nr && !found; i++) {
		if (s.r[i].warm != PREALLOC_WARM_DIRTY)
			continue;
		s.r[i].warm = PREALLOC_WARM_CLEARING;
		owner_self(ctx, &s.r[i].owner);	/* this pass clears it; another leaves it */
		err = store_save(ctx, &s);
		*ret = s.r[i];
		ret->pools = NULL;	/* the copy does not own them */
		ret->nr_pools = 0;
		found = err == 0;
	}
	store_close(&s, lock);
	test_pause("warm-fill-clearing");
	return err < 0 ? err : found;
}

/*
 * Clears the file of r on its node and verifies it: every byte zero, every
 * page present and on the node (holes its holder punched are faulted there
 * by the clear). -EEXIST when its holder resized it, -ESTALE when it is not
 * the record's file or has another link, -ECANCELED when pace's stop_fd
 * stopped it; else the verify's verdict.
 */
static int warm_clear(struct prealloc_ctx *ctx, const struct record *r,
		      const struct warm_pace *pace, struct prealloc_report *report)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_CLEAR,
		.flags = PREALLOC_JOB_VERIFY | (pace->idle ? PREALLOC_JOB_IDLE : 0),
		.threads = pace->threads,
		.max_rate = pace->max_rate,
	};
	struct prealloc_region *region;
	struct prealloc_job *job;
	struct statx stx;
	int err;

	err = warm_region(ctx, r, r->size, &region);
	if (err < 0)
		return err;
	if (file_statx(prealloc_region_fd(region), "", AT_EMPTY_PATH, &stx) < 0 ||
	    !record_is_file(r, &stx) || stx.stx_nlink != 1) {
		prealloc_region_free(region);
		return -ESTALE;
	}
	test_pause("warm-fill-before-clear");
	err = prealloc_job_start(region, &jo, &job);
	if (err == 0) {
		err = warm_job_finish(job, pace->stop_fd);
		prealloc_job_report(job, report);
		prealloc_job_free(job);
	}
	prealloc_region_free(region);
	test_pause("warm-fill-after-verify");
	return err;
}

/* The clear's rate here, for status: "<dev> <node> <page size> <GB/s>" lines. */
static void note_rate(struct prealloc_ctx *ctx, const struct record *r, double gbps)
{
	char *old = NULL, *text = NULL, *line, *save = NULL;
	size_t len = 0, cap = 0;
	FILE *f;

	statedir_read(ctx, WARM_CLEARS_LEAF, &old, &len);
	f = open_memstream(&text, &cap);
	if (!f) {
		free(old);
		return;
	}
	for (line = old ? strtok_r(old, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long dev, ps;
		int node;

		if (sscanf(line, "%llu %d %llu", &dev, &node, &ps) == 3 &&
		    (dev != r->dev || node != r->warm_node || ps != r->page_size))
			fprintf(f, "%s\n", line);
	}
	fprintf(f, "%llu %d %llu %.3f\n", (unsigned long long)r->dev, r->warm_node,
		(unsigned long long)r->page_size, gbps);
	fclose(f);
	statedir_write(ctx, WARM_CLEARS_LEAF, text, cap);
	free(text);
	free(old);
}

/* The cleared file's end: READY, or removed (with its growth) when it failed. */
static int clear_done(struct prealloc_ctx *ctx, unsigned int timeout_ms, const struct record *c,
		      int result, double seconds, struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };
	struct store s;
	int lock, err;
	long i;

	err = store_open(ctx, timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	i = store_find(&s, c->id);
	/* Still ours to finish: CLEARING, by this pass (owner_self as next_dirty wrote it). */
	if (i >= 0 && s.r[i].warm == PREALLOC_WARM_CLEARING && s.r[i].owner.kind == c->owner.kind &&
	    s.r[i].owner.pid == c->owner.pid && s.r[i].owner.start == c->owner.start) {
		memset(&s.r[i].owner, 0, sizeof(s.r[i].owner));
		if (result == 0) {
			s.r[i].warm = PREALLOC_WARM_READY;
			err = store_save(ctx, &s);
			/* Under the lock: two passes never lose each other's rates. */
			if (err == 0 && seconds > 0)
				note_rate(ctx, c, (double)c->size / seconds / 1e9);
		} else if (result == -ECANCELED) {
			/* Stopped, not failed: cleared again from the start by the next pass. */
			s.r[i].warm = PREALLOC_WARM_DIRTY;
			err = store_save(ctx, &s);
		} else {
			info->dropped++;
			info->dropped_bytes += s.r[i].size;
			err = record_settle(ctx, &s, (size_t)i, true, &rel);
		}
	}
	store_close(&s, lock);
	return err;
}

/* Whether fd (-1: none) is readable now: serve was asked to stop. */
static bool stop_asked(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&p, 1, 0) > 0;
}

/* Every DIRTY file, one at a time: CLEARING, cleared and verified, then READY or removed. */
static int fill_clears(struct prealloc_ctx *ctx, const struct warm_pass *p,
		       struct prealloc_warm_fill_info *info)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct record c;
	int found = 0, err, result;

	while (!stop_asked(p->pace.stop_fd) &&
	       (found = next_dirty(ctx, p->lock_timeout_ms, &c)) > 0) {
		result = warm_clear(ctx, &c, &p->pace, &rep);
		if (result < 0 && result != -ECANCELED)
			fill_note(info, "warm file %s could not be cleared (%s): removed", c.tmp,
				  strerror(-result));
		err = clear_done(ctx, p->lock_timeout_ms, &c, result, rep.seconds, info);
		if (err < 0)
			return err;
		if (result == 0) {
			info->cleared++;
			info->cleared_bytes += c.size;
			info->clear_seconds += rep.seconds;
		}
	}
	return found < 0 ? found : 0;
}

/* The device of target t's mount (-ENOENT: none), its path in *ret_mount. */
static int target_dev(struct prealloc_ctx *ctx, const struct warm_target *t, uint64_t *ret_dev,
		      const char **ret_mount)
{
	const char *mount = warm_mount(ctx, t->mount, t->page_size);
	struct stat ms;

	if (!mount || stat(mount, &ms) < 0)
		return -ENOENT;
	*ret_dev = (uint64_t)ms.st_dev;
	*ret_mount = mount;
	return 0;
}

/* The target of warm file r, or -1: none wants it. devs: each target's mount, 0 none. */
static long record_target(const struct warm_conf *conf, const uint64_t *devs,
			  const struct record *r)
{
	for (unsigned int i = 0; i < conf->nr; i++)
		if (devs[i] && warm_is(r, conf->t[i].node, conf->t[i].page_size, devs[i]))
			return i;
	return -1;
}

/*
 * The file to give back first of those of target want (-1: of no target),
 * DIRTY before READY (a dirty one saves its clear), or -1: none can go now.
 */
static long drop_pick(const struct store *s, const struct warm_conf *conf, const uint64_t *devs,
		      long want)
{
	long ready = -1;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (r->warm == WARM_NONE || record_target(conf, devs, r) != want)
			continue;
		if (r->warm == PREALLOC_WARM_DIRTY)
			return (long)i;
		if (r->warm == PREALLOC_WARM_READY)
			ready = (long)i;
	}
	return ready;
}

/* Bytes of warm files (not quarantined) of target want (-1: of none). */
static uint64_t target_held(const struct store *s, const struct warm_conf *conf,
			    const uint64_t *devs, long want)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (r->warm != WARM_NONE && r->warm != PREALLOC_WARM_QUARANTINED &&
		    record_target(conf, devs, r) == want)
			sum += r->size;
	}
	return sum;
}

/* Under the lock: file i removed, its pages (and the pool's growth for it) given back. */
static int drop_one(struct prealloc_ctx *ctx, struct store *s, long i,
		    struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };

	info->dropped++;
	info->dropped_bytes += s->r[i].size;
	test_pause("warm-drop");
	return record_settle(ctx, s, (size_t)i, true, &rel);
}

/*
 * Files over each target's limit given back, DIRTY first, then READY; with
 * drop_untargeted, those of no target too. Files handed out, returning or
 * being cleared count but stay: they go once they are DIRTY or READY.
 */
static int fill_trims(struct prealloc_ctx *ctx, const struct warm_pass *p, const uint64_t *devs,
		      struct prealloc_warm_fill_info *info)
{
	struct store s;
	int lock, err;

	err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	for (long want = p->drop_untargeted ? -1 : 0; err == 0 && want < (long)p->conf->nr;
	     want++) {
		uint64_t limit = want < 0 ? 0 : p->limit[want];
		long i;

		if (want >= 0 && !devs[want])
			continue;
		for (size_t before = SIZE_MAX; err == 0 && s.nr < before &&
					       target_held(&s, p->conf, devs, want) > limit &&
					       (i = drop_pick(&s, p->conf, devs, want)) >= 0;) {
			before = s.nr;	/* a file that stays (still in use) ends the loop */
			err = drop_one(ctx, &s, i, info);
		}
	}
	store_close(&s, lock);
	return err;
}

/*
 * Target i, one step: 1 when a file was made (look again), 0 when it holds
 * what its limit allows, a negative errno.
 */
static int target_grow(struct prealloc_ctx *ctx, const struct warm_pass *p, unsigned int i,
		       const uint64_t *devs, struct prealloc_warm_fill_info *info)
{
	const struct warm_target *t = &p->conf->t[i];
	const char *mount = warm_mount(ctx, t->mount, t->page_size);
	char why[512];
	struct store s;
	uint64_t held;
	int lock, err;

	if (!t->file_bytes || stop_asked(p->pace.stop_fd))
		return 0;
	err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	held = target_held(&s, p->conf, devs, i);
	store_close(&s, lock);
	if (held + t->file_bytes > p->limit[i])
		return 0;
	err = warm_create(ctx, t->node, t->page_size, mount, t->file_bytes, &p->pace, why,
			  sizeof(why));
	if (err < 0) {
		fill_note(info, "node%d.%s: %s", t->node, prealloc_page_name(t->page_size), why);
		return err;
	}
	info->created++;
	return 1;
}

void warm_limits(struct prealloc_ctx *ctx, const struct warm_conf *conf, const uint64_t *cut,
		 uint64_t *ret_limit)
{
	uint64_t share = warm_setting(conf->set.max_share, WARM_MAX_SHARE);

	for (unsigned int i = 0; i < conf->nr; i++) {
		const struct warm_target *t = &conf->t[i];
		struct prealloc_node_info ni = { .size = sizeof(ni) };
		uint64_t cap = UINT64_MAX, before = 0;

		/* The node's share, less what the targets before this one on it take. */
		if (prealloc_node_info(ctx, t->node, &ni) == 0 && ni.mem_total)
			cap = ALIGN_DOWN(ni.mem_total / 100 * share, t->page_size);
		for (unsigned int j = 0; j < i; j++)
			if (conf->t[j].node == t->node)
				before += ret_limit[j];
		ret_limit[i] = MIN(t->bytes, cap > before ? cap - before : 0);
	}
	/* The cuts last: a target cut under pressure gives no room to the next one. */
	for (unsigned int i = 0; cut && i < conf->nr; i++)
		ret_limit[i] = ret_limit[i] > cut[i] ? ret_limit[i] - cut[i] : 0;
}

int warm_pass_run(struct prealloc_ctx *ctx, const struct warm_pass *p,
		  struct prealloc_warm_fill_info *info)
{
	uint64_t *devs = calloc(p->conf->nr + 1, sizeof(*devs));
	const char *mount;
	struct store s;
	int lock, err, first = 0;

	if (!devs)
		return -ENOMEM;
	for (unsigned int i = 0; i < p->conf->nr; i++)
		if (target_dev(ctx, &p->conf->t[i], &devs[i], &mount) < 0) {
			fill_note(info, "no mount for node%d.%s (line %u)", p->conf->t[i].node,
				  prealloc_page_name(p->conf->t[i].page_size), p->conf->t[i].line);
			first = -ENOENT;	/* the other targets still get theirs */
		}
	err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err == 0) {
		err = fill_returns(ctx, &s, info);
		store_close(&s, lock);
	}
	/* Before the clears: a file over its target is not cleared to be dropped. */
	if (err == 0)
		err = fill_trims(ctx, p, devs, info);
	if (err == 0)
		err = fill_clears(ctx, p, info);
	for (unsigned int i = 0; err == 0 && i < p->conf->nr; i++) {
		int r = 0;

		/* Bounded: a target needs at most its files made. */
		for (unsigned int n = 0; devs[i] && n <= p->conf->t[i].files &&
					 (r = target_grow(ctx, p, i, devs, info)) > 0;
		     n++)
			;
		if (r < 0 && !first)
			first = r;
	}
	free(devs);
	return err < 0 ? err : first;
}

int warm_pass_shrink(struct prealloc_ctx *ctx, const struct warm_pass *p, uint64_t bytes,
		     uint64_t *cut, struct prealloc_warm_fill_info *info)
{
	uint64_t *devs = calloc(p->conf->nr + 1, sizeof(*devs)), done = 0, size;
	const char *mount;
	struct store s;
	size_t before;
	int lock, err;

	if (!devs)
		return -ENOMEM;
	for (unsigned int i = 0; i < p->conf->nr; i++)
		target_dev(ctx, &p->conf->t[i], &devs[i], &mount);
	err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err < 0) {
		free(devs);
		return err;
	}
	while (err == 0 && done < bytes) {
		long i = -1, from = -1;
		uint64_t most = 0;

		/* Files no target wants, then a DIRTY one anywhere, then the fullest target's. */
		if (p->drop_untargeted)
			i = drop_pick(&s, p->conf, devs, -1);
		for (long t = 0; i < 0 && t < (long)p->conf->nr; t++) {
			long d = drop_pick(&s, p->conf, devs, t);

			if (d >= 0 && s.r[d].warm == PREALLOC_WARM_DIRTY) {
				i = d;
				from = t;
			}
		}
		for (long t = 0; i < 0 && t < (long)p->conf->nr; t++) {
			uint64_t held = target_held(&s, p->conf, devs, t);

			if (held > most && drop_pick(&s, p->conf, devs, t) >= 0) {
				most = held;
				from = t;
			}
		}
		if (i < 0 && from >= 0)
			i = drop_pick(&s, p->conf, devs, from);
		if (i < 0)
			break;	/* nothing can go now: handed out, returning or being cleared */
		size = s.r[i].size;
		before = s.nr;
		err = drop_one(ctx, &s, i, info);
		if (s.nr == before)
			break;	/* it stayed (still in use): not given back */
		done += size;
		if (from >= 0)
			cut[from] += size;
	}
	store_close(&s, lock);
	free(devs);
	return err;
}

EXPORT int prealloc_warm_fill(struct prealloc_ctx *ctx, const struct prealloc_warm_fill_opts *opts,
			      struct prealloc_warm_fill_info *ret_info)
{
	struct prealloc_warm_fill_info info = { .size = sizeof(info) };
	struct prealloc_warm_fill_opts o = { .size = sizeof(o) };
	struct warm_conf conf = { 0 };
	struct warm_pass p = { .conf = &conf };
	uint64_t *limit = NULL;
	int err;

	if (!ctx || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	err = opts ? copy_sized_in(&o, sizeof(o), opts) : 0;
	if (err == 0)
		err = warm_conf_load(o.conf_path, &conf, info.message, sizeof(info.message));
	if (err == 0) {
		/* A one-shot pass runs as fast as it may, unless told (options, then warm.conf). */
		p.pace = (struct warm_pace){
			.threads = o.threads ? o.threads
					     : (unsigned int)warm_setting(conf.set.clear_threads, 0),
			.max_rate = o.clear_rate ? o.clear_rate : warm_setting(conf.set.clear_rate, 0),
			.idle = o.flags & PREALLOC_WARM_FILL_IDLE,
			.stop_fd = -1,
		};
		p.lock_timeout_ms = o.lock_timeout_ms ? o.lock_timeout_ms : ADMIT_LOCK_TIMEOUT_MS;
		p.drop_untargeted = conf.found;
		p.limit = limit = calloc(conf.nr + 1, sizeof(*limit));
		err = limit ? 0 : -ENOMEM;
	}
	if (err == 0) {
		warm_limits(ctx, &conf, NULL, limit);
		err = warm_pass_run(ctx, &p, &info);
	}
	free(limit);
	warm_conf_free(&conf);
	if (ret_info)
		copy_sized_out(ret_info, &info, sizeof(info));
	return err;
}
