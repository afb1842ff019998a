/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's files coming back and cleared, for the pass (warm_fill.c,
 * docs/warm.md): files given back become DIRTY once nothing maps or holds
 * them; each DIRTY file is marked CLEARING, cleared by its node's workers
 * and verified (every byte zero, every page present on its node), and only
 * then READY. A file whose clear or verify fails, or that its holder
 * resized, is removed; one whose clear was stopped is DIRTY again.
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

void warm_note(struct prealloc_warm_fill_info *info, const char *fmt, ...)
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
int warm_returns(struct prealloc_ctx *ctx, struct store *s,
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
bool warm_stop_asked(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&p, 1, 0) > 0;
}

/* Every DIRTY file, one at a time: CLEARING, cleared and verified, then READY or removed. */
int warm_clears(struct prealloc_ctx *ctx, const struct warm_pass *p,
		       struct prealloc_warm_fill_info *info)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct record c;
	int found = 0, err, result;

	while (!warm_stop_asked(p->pace.stop_fd) &&
	       (found = next_dirty(ctx, p->lock_timeout_ms, &c)) > 0) {
		result = warm_clear(ctx, &c, &p->pace, &rep);
		if (result < 0 && result != -ECANCELED)
			warm_note(info, "warm file %s could not be cleared (%s): removed", c.tmp,
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
