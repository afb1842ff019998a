/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's files coming back, for the pass (fill.c,
 * docs/warm.md): files given back are DIRTY; each DIRTY file is marked
 * CLEARING (this pass's), then renewed: it leaves the warm pool and a new file,
 * populated on its node and verified, takes its place, with the growth it
 * had added. A holder may keep references to its file that no /proc file
 * shows (an fd in flight, pipe buffers, pins): only fresh pages never
 * reach the next holder. A file its tenant gave back to itself is cleared
 * in place instead, by its node's workers, under a write lease, and
 * verified (every byte zero, every page present on its node), then READY
 * for that tenant. A file whose clear or verify fails, or that its holder
 * resized, is removed; one whose clear was stopped is DIRTY again.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

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

/*
 * Under the lock: CLEARING left by a fill that died is DIRTY again; a new
 * file whose run died goes; QUARANTINED files removed with their growth.
 * (Files back from their holders: warm_returns_pass, before it, with the
 * holders' side done outside the lock.)
 */
int warm_returns(struct prealloc_ctx *ctx, struct store *s,
			struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };
	int err = 0;

	for (size_t i = 0; i < s->nr; i++) {
		struct record *r = &s->r[i];

		/*
		 * Only a dead fill's, or this process's own left by a step that
		 * failed (a pass here starts none before this): a live one (another
		 * pass, now) is still clearing it.
		 */
		if (err == 0 && r->warm == PREALLOC_WARM_CLEARING &&
		    (!owner_alive(ctx, &r->owner) || r->owner.pid == getpid())) {
			memset(&r->owner, 0, sizeof(r->owner));
			err = warm_move(ctx, s, r, PREALLOC_WARM_DIRTY);
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
		owner_self(ctx, &s.r[i].owner);	/* this pass clears it; another leaves it */
		err = warm_move(ctx, &s, &s.r[i], PREALLOC_WARM_CLEARING);
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
 * Clears the file of r in place on its node and verifies it: every byte
 * zero, every page present and on the node (holes its holder punched are
 * faulted there by the clear), under a write lease held from before the
 * first store to after the verify. -EBUSY when the lease is refused or was
 * broken (something else may open the file: it is renewed instead),
 * -EEXIST when its holder resized it, -ESTALE when it is not the record's
 * file or has another link, -ECANCELED when pace's stop_fd stopped it;
 * else the verify's verdict.
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
	int err, fd;

	err = warm_region(ctx, r, r->size, &region);
	if (err < 0)
		return err;
	fd = prealloc_region_fd(region);
	if (file_statx(fd, "", AT_EMPTY_PATH, &stx) < 0 || !record_is_file(r, &stx) ||
	    stx.stx_nlink != 1) {
		prealloc_region_free(region);
		return -ESTALE;
	}
	/* The region's descriptor is this process's only one: the lease proves the rest. */
	if (file_lease_take(fd) < 0) {
		prealloc_region_free(region);
		return -EBUSY;
	}
	test_pause("warm-fill-before-clear");
	err = prealloc_job_start(region, &jo, &job);
	if (err == 0) {
		err = warm_job_finish(job, pace->stop_fd);
		prealloc_job_report(job, report);
		prealloc_job_free(job);
	}
	if (err == 0 && !file_lease_held(fd))
		err = -EBUSY;	/* opened while it was cleared: not proven the tenant's alone */
	file_lease_drop(fd);
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
			err = warm_move(ctx, &s, &s.r[i], PREALLOC_WARM_READY);
			/* Under the lock: two passes never lose each other's rates. */
			if (err == 0 && seconds > 0)
				note_rate(ctx, c, (double)c->size / seconds / 1e9);
		} else if (result == -ECANCELED) {
			/* Stopped, not failed: cleared again from the start by the next pass. */
			err = warm_move(ctx, &s, &s.r[i], PREALLOC_WARM_DIRTY);
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

/*
 * Under the lock: c (CLEARING, this pass's) leaves the warm pool. The growth its
 * file had added moves to the record of its replacement (new_id; 0: none)
 * as far as the replacement used pages it did not grow the pool for; the
 * rest goes back as far as the pool has free pages. Written before its
 * file is unlinked; its pages go back when the last reference to them goes.
 */
static int retire(struct prealloc_ctx *ctx, unsigned int timeout_ms, const struct record *c,
		  uint64_t new_id, struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };
	uint64_t room = 0;
	struct store s;
	long i, n;
	int lock, err;

	err = store_open(ctx, timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	i = store_find(&s, c->id);
	n = new_id ? store_find(&s, new_id) : -1;
	if (i < 0 || s.r[i].warm != PREALLOC_WARM_CLEARING || s.r[i].owner.pid != c->owner.pid ||
	    s.r[i].owner.start != c->owner.start)
		goto out;	/* no longer this pass's to finish */
	/*
	 * Only as much as the new file took of the pool without growing it
	 * itself: where the old pages were still held when it was populated,
	 * its own admission grew the pool, and the old growth goes back (as
	 * far as pages are free) with the old record instead of being counted
	 * twice.
	 */
	if (n >= 0) {
		uint64_t added = 0;

		for (unsigned int k = 0; k < s.r[n].nr_pools; k++)
			if (s.r[n].pools[k].node == c->warm_node &&
			    s.r[n].pools[k].page_size == c->page_size)
				added += s.r[n].pools[k].added;
		room = s.r[n].size / s.r[n].page_size;
		room = room > added ? room - added : 0;
	}
	for (unsigned int k = 0; n >= 0 && err == 0 && k < s.r[i].nr_pools; k++) {
		struct rec_pool moved = s.r[i].pools[k];

		moved.pages = 0;	/* the growth alone: the new file names its own pages */
		moved.base = 0;
		moved.added = MIN(moved.added, room);
		if (moved.added && (err = record_add_pool(&s.r[n], &moved)) == 0) {
			s.r[i].pools[k].added -= moved.added;
			room -= moved.added;
		}
	}
	if (err == 0)
		err = record_settle(ctx, &s, (size_t)i, true, &rel);
	if (err == 0 && !new_id) {
		info->dropped++;
		info->dropped_bytes += c->size;
	}
out:
	store_close(&s, lock);
	return err;
}

/*
 * With a write lease proving no open file of it is left, c's pages go back
 * to the kernel now (holes punched): what an O_PATH descriptor kept alive
 * then holds no memory. Without one, nothing is touched: whatever still
 * maps it (a VMM that gave back early) keeps its bytes.
 */
static void release_pages_if_sole(const struct record *c)
{
	struct stat st;
	int fd = warm_open(c, &st);

	if (fd < 0)
		return;
	if (st.st_nlink == 1 && file_lease_take(fd) == 0) {
		(void)!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, (off_t)c->size);
		file_lease_drop(fd);
	}
	close(fd);
}

/*
 * c's file leaves the warm pool and a new one of its node, page size, mount and
 * size takes its place: made through prepare's own flow (populated on the
 * node, verified, READY; the pool grows for it where c's pages are not
 * free, as prepare's admission grows it), then c's pages released (with a
 * lease) and c retired. A holder may still reach c's
 * pages by ways no /proc file shows; the new file's pages are the kernel's
 * fresh ones. Returns what clear_done would: 0, -ECANCELED, or the failure.
 */
static int warm_renew(struct prealloc_ctx *ctx, const struct warm_pass *p, const struct record *c,
		      struct prealloc_warm_fill_info *info)
{
	char mount[PATH_MAX], why[512];
	uint64_t new_id = 0;
	double t0 = now_seconds();
	int err;

	warm_record_mount(c, mount, sizeof(mount));
	test_pause("warm-renew-before-create");
	/*
	 * The new file first, while the old one still holds its pages: what
	 * the pool grows for it is its own growth, and a kill anywhere leaves
	 * every record's growth backed by its own file's pages (the old file's
	 * go back, with what it had added, at its retirement).
	 */
	err = warm_create(ctx, c->warm_node, c->page_size, mount, c->size, &p->pace, why,
			  sizeof(why), &new_id);
	if (err == -ECANCELED)
		return err;	/* DIRTY again: renewed by the next pass */
	if (err < 0)
		warm_note(info, "warm file %s: no new file took its place (%s): removed", c->tmp,
			  why);
	release_pages_if_sole(c);
	test_pause("warm-renew-before-retire");
	if (retire(ctx, p->lock_timeout_ms, c, err == 0 ? new_id : 0, info) == 0 && err == 0) {
		double seconds = now_seconds() - t0;

		info->renewed++;
		counter_add(ctx, c->dev, c->warm_node, c->page_size, COUNTER_RENEWALS, 1);
		info->renewed_bytes += c->size;
		info->renew_seconds += seconds;
		note_rate(ctx, c, (double)c->size / seconds / 1e9);
	}
	return err;
}

/*
 * Under the lock: c's label (its tenant) as it goes on: WARM_TENANT_SINGLE
 * for an in-place clear its target's declaration allows, with the conf that
 * declared it (decl; NULL: none), "" for a renewal (so that its target
 * counts the new file, not both). 0, or c no longer this pass's (-ESTALE).
 */
static int set_label(struct prealloc_ctx *ctx, unsigned int timeout_ms, struct record *c,
		     const char *label, const struct warm_conf *decl)
{
	struct store s;
	int lock, err;
	long i;

	if (!strcmp(c->tenant, label) && !strcmp(c->declared, decl ? decl->path : "") &&
	    c->declared_sum == (decl ? decl->sum : 0))
		return 0;
	err = store_open(ctx, timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	i = store_find(&s, c->id);
	if (i < 0 || s.r[i].warm != PREALLOC_WARM_CLEARING || s.r[i].owner.pid != c->owner.pid ||
	    s.r[i].owner.start != c->owner.start) {
		err = -ESTALE;
	} else {
		snprintf(s.r[i].tenant, sizeof(s.r[i].tenant), "%s", label);
		warm_declared_set(&s.r[i], decl);	/* the same save: a take checks it */
		err = store_save(ctx, &s);
	}
	store_close(&s, lock);
	if (err == 0) {
		snprintf(c->tenant, sizeof(c->tenant), "%s", label);
		warm_declared_set(c, decl);
	}
	return err;
}

/*
 * Every DIRTY file, one at a time, CLEARING first: one given back by its
 * tenant to itself, or of a target declared single-tenant, is cleared in
 * place under a lease and READY again (for that tenant); any other, or one
 * whose lease is refused, is renewed.
 */
int warm_clears(struct prealloc_ctx *ctx, const struct warm_pass *p, const uint64_t *devs,
		struct prealloc_warm_fill_info *info)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct record c;
	int found = 0, err, result;

	while (!warm_stop_asked(p->pace.stop_fd) &&
	       (found = next_dirty(ctx, p->lock_timeout_ms, &c)) > 0) {
		/* Declared by the pass's conf, and still by the file it came from. */
		bool single = warm_single_tenant(p->conf, devs, &c) &&
			      warm_declared_stands(ctx, p->conf, &c);

		rep.seconds = 0;
		/* A caller's tenant, or the target's declaration (its label goes with it). */
		if (single)
			result = set_label(ctx, p->lock_timeout_ms, &c, WARM_TENANT_SINGLE, p->conf);
		else
			result = c.tenant[0] && strcmp(c.tenant, WARM_TENANT_SINGLE) ? 0 : -EBUSY;
		if (result == 0)
			result = warm_clear(ctx, &c, &p->pace, &rep);
		if (result == -EBUSY && set_label(ctx, p->lock_timeout_ms, &c, "", NULL) == 0) {
			result = warm_renew(ctx, p, &c, info);
			if (result != -ECANCELED)
				continue;	/* retired: nothing of c is left to finish */
		}
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
