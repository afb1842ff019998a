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
			/* A give that died before the holder's link went, or a holder gone. */
			if (r->path[0])
				warm_unlink_path(r, false);
			warm_returned(r, warm_check(ctx, r));
			info->returned += r->warm == PREALLOC_WARM_DIRTY;
			err = store_save(ctx, s);
		}
		/* Only a dead fill's: a live one (another pass, now) is still clearing it. */
		if (err == 0 && r->warm == PREALLOC_WARM_CLEARING && !owner_alive(ctx, &r->owner)) {
			r->warm = PREALLOC_WARM_DIRTY;
			memset(&r->owner, 0, sizeof(r->owner));
			err = store_save(ctx, s);
		}
		if (err == 0 && r->warm == PREALLOC_WARM_QUARANTINED) {
			size_t before = s->nr;

			err = record_settle(ctx, s, i, true, &rel);
			/* Else its pages are still someone's: settled again by a later pass. */
			if (s->nr < before) {
				info->dropped++;
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
 * by the clear). -EEXIST when the holder resized it; the verify's verdict.
 */
static int warm_clear(struct prealloc_ctx *ctx, const struct record *r, unsigned int threads,
		      struct prealloc_report *report)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_CLEAR,
		.flags = PREALLOC_JOB_VERIFY,
		.threads = threads,
	};
	struct prealloc_region *region;
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
	err = prealloc_run(region, &jo, report);
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
		} else {
			err = record_settle(ctx, &s, (size_t)i, true, &rel);
			info->dropped++;
		}
	}
	store_close(&s, lock);
	return err;
}

/* Every DIRTY file, one at a time: CLEARING, cleared and verified, then READY or removed. */
static int fill_clears(struct prealloc_ctx *ctx, const struct prealloc_warm_fill_opts *o,
		       struct prealloc_warm_fill_info *info)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct record c;
	int found, err, result;

	while ((found = next_dirty(ctx, o->lock_timeout_ms, &c)) > 0) {
		result = warm_clear(ctx, &c, o->threads, &rep);
		if (result < 0)
			fill_note(info, "warm file %s could not be cleared (%s): removed", c.tmp,
				  strerror(-result));
		err = clear_done(ctx, o->lock_timeout_ms, &c, result, rep.seconds, info);
		if (err < 0)
			return err;
		if (result == 0) {
			info->cleared++;
			info->cleared_bytes += c.size;
			info->clear_seconds += rep.seconds;
		}
	}
	return found;
}

/* Bytes of files (not quarantined) of target t, and the id of a READY one to drop. */
static uint64_t target_held(const struct store *s, const struct warm_target *t, uint64_t dev,
			    long *ret_ready)
{
	uint64_t sum = 0;

	*ret_ready = -1;
	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (!warm_is(r, t->node, t->page_size, dev) || r->warm == PREALLOC_WARM_QUARANTINED)
			continue;
		sum += r->size;
		if (r->warm == PREALLOC_WARM_READY)
			*ret_ready = (long)i;
	}
	return sum;
}

/*
 * Target t, one step: 1 when a file was made or removed (look again), 0
 * when it holds what it should, a negative errno.
 */
static int target_step(struct prealloc_ctx *ctx, const struct prealloc_warm_fill_opts *o,
		       const struct warm_target *t, struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };
	const char *mount = warm_mount(ctx, t->mount, t->page_size);
	char why[512];
	struct stat ms;
	struct store s;
	uint64_t held;
	long ready;
	int lock, err;

	if (!mount || stat(mount, &ms) < 0) {
		fill_note(info, "no mount for node%d.%s (line %u)", t->node,
			  prealloc_page_name(t->page_size), t->line);
		return -ENOENT;
	}
	err = store_open(ctx, o->lock_timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	held = target_held(&s, t, (uint64_t)ms.st_dev, &ready);
	if (held > t->bytes && ready >= 0) {
		err = record_settle(ctx, &s, (size_t)ready, true, &rel);
		info->dropped++;
	}
	store_close(&s, lock);
	if (err < 0 || (held > t->bytes && ready >= 0))
		return err < 0 ? err : 1;
	if (!t->file_bytes || held + t->file_bytes > t->bytes)
		return 0;
	err = warm_create(ctx, t->node, t->page_size, mount, t->file_bytes, o->threads, why,
			  sizeof(why));
	if (err < 0) {
		fill_note(info, "node%d.%s: %s", t->node, prealloc_page_name(t->page_size), why);
		return err;
	}
	info->created++;
	return 1;
}

EXPORT int prealloc_warm_fill(struct prealloc_ctx *ctx, const struct prealloc_warm_fill_opts *opts,
			      struct prealloc_warm_fill_info *ret_info)
{
	struct prealloc_warm_fill_info info = { .size = sizeof(info) };
	struct prealloc_warm_fill_opts o = { .size = sizeof(o) };
	struct warm_target *t = NULL;
	unsigned int nr = 0;
	struct store s;
	int lock, err, first = 0;

	if (!ctx || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	err = opts ? copy_sized_in(&o, sizeof(o), opts) : 0;
	if (!o.lock_timeout_ms)
		o.lock_timeout_ms = ADMIT_LOCK_TIMEOUT_MS;
	if (err == 0)
		err = warm_conf_load(o.conf_path, &t, &nr, info.message, sizeof(info.message));
	if (err == 0)
		err = store_open(ctx, o.lock_timeout_ms, &s, &lock);
	if (err == 0) {
		err = fill_returns(ctx, &s, &info);
		store_close(&s, lock);
	}
	if (err == 0)
		err = fill_clears(ctx, &o, &info);
	for (unsigned int i = 0; err >= 0 && i < nr; i++) {
		int r;

		/* Bounded: a target needs at most its files made, or its excess dropped. */
		for (unsigned int n = 0; (r = target_step(ctx, &o, &t[i], &info)) > 0; n++)
			if (n > t[i].files + 4096)
				break;
		if (r < 0 && !first)
			first = r;	/* the other targets still get theirs */
	}
	free(t);
	if (err < 0)
		first = err;
	if (ret_info)
		copy_sized_out(ret_info, &info, sizeof(info));
	return first;
}
