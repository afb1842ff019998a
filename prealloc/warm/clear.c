/* SPDX-License-Identifier: MIT */
/*
 * The pass's clears (fill.c, docs/warm.md): each DIRTY file is marked
 * CLEARING (this pass's), then cleared in place or renewed (renew.c). A
 * file its tenant gave back to itself, or of a target declared
 * single-tenant, is cleared in place, by its node's workers, under a write
 * lease, and verified (every byte zero, every page present on its node),
 * then READY for that tenant. Any other, or one whose lease is refused,
 * is renewed: a holder may keep references to its file that no /proc file
 * shows (an fd in flight, pipe buffers, pins), and only fresh pages never
 * reach the next holder. A file whose clear or verify fails, or that its
 * holder resized, is removed; one whose clear was stopped is DIRTY again.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

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
	if (err == -EWOULDBLOCK)
		return -EBUSY;	/* its holder's lease, broken now: renewed, never waited on */
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
		err = warm_job_finish(job, pace);
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
				counter_clear_rate(ctx, c, (double)c->size / seconds / 1e9);
			if (err == 0)
				counter_add(ctx, c->dev, c->warm_node, c->page_size, COUNTER_CLEARS, 1);
		} else if (result == -ECANCELED) {
			/* Stopped, not failed: cleared again from the start by the next pass. */
			err = warm_move(ctx, &s, &s.r[i], PREALLOC_WARM_DIRTY);
		} else {
			info->dropped++;
			info->dropped_bytes += s.r[i].size;
			warm_release_if_sole(c);	/* resized by a holder: nothing left to an O_PATH fd */
			err = record_settle(ctx, &s, (size_t)i, true, &rel);
		}
	}
	store_close(&s, lock);
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
