/* SPDX-License-Identifier: MIT */
/*
 * prealloc_store_gc: every record whose owner is gone is settled (a run that
 * died, a holder whose check failed or expired, a ready file removed by
 * hand, a release a crash interrupted), a warm take or give that died is
 * left for the warm pool's next pass to finish, and growth whose file has
 * no name left goes back once no process holds it.
 */
#include "flows.h"

/* What gc does with a record: keep it, or settle it (and whether a ready file goes too). */
static bool gc_wants(struct prealloc_ctx *ctx, const struct record *r, bool *ret_remove_ready)
{
	bool alive = owner_alive(ctx, &r->owner);

	*ret_remove_ready = false;
	/*
	 * A warm file past populating is the warm pool's (warm/fill.c gives back
	 * what its holder left and removes what is quarantined): gc settles
	 * one only once no name of it is left.
	 */
	if (r->warm != WARM_NONE && r->state != PREALLOC_RECORD_PREPARING) {
		*ret_remove_ready = true;
		return record_file_where(r) == 0;
	}
	switch (r->state) {
	case PREALLOC_RECORD_PREPARING:
		return !alive;
	case PREALLOC_RECORD_READY:
		if (r->owner.kind == PREALLOC_OWNER_HOLDER) {
			/* The holder's files go with it: it was the only reason they existed. */
			*ret_remove_ready = !alive;
			return !alive;
		}
		/* Held by its file: settled once the file is gone. */
		return r->has_file && record_file_where(r) != 1;
	case PREALLOC_RECORD_RELEASING:
		*ret_remove_ready = true;
		return true;
	default:
		return true;
	}
}

static bool pick_stale(struct prealloc_ctx *ctx, const struct record *r, const void *arg,
		       bool *ret_remove_ready)
{
	(void)arg;
	return gc_wants(ctx, r, ret_remove_ready);
}

EXPORT int prealloc_store_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned,
			     unsigned int *ret_entries)
{
	struct prealloc_release_info info = { 0 };
	unsigned int matched = 0;
	int r;

	struct store s;
	int lock;

	if (!ctx)
		return -EINVAL;
	/* A warm take or give whose run died: the warm pool's next pass gives its file back. */
	r = store_open(ctx, ADMIT_LOCK_TIMEOUT_MS, &s, &lock);
	if (r == 0) {
		r = warm_busy_settle(ctx, &s);
		store_close(&s, lock);
	}
	/* Growth whose file has no name left goes once no process holds it (a walk, unlocked). */
	if (r == 0)
		r = settle_matching(ctx, ADMIT_LOCK_TIMEOUT_MS, pick_stale, NULL, &info, &matched);
	if (ret_returned)
		*ret_returned = info.returned;
	if (ret_entries)
		*ret_entries = matched;
	return r;
}

/* 0.1's name, still exported at PREALLOC_0.1 (docs/abi.md). */
#undef prealloc_pool_gc
EXPORT_ALIAS(prealloc_pool_gc, prealloc_store_gc);
