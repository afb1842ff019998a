/* SPDX-License-Identifier: MIT */
/*
 * A file renewed (clear.c's choice for a file given back by another tenant,
 * or whose lease was refused): it leaves the warm pool, and a new file of
 * its node, page size, mount and size takes its place, made through
 * prepare's own flow (populated on the node, verified), with the growth the
 * old one had added. The old file's pages go back when the last reference
 * to them goes.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

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
 * c's file leaves the warm pool and a new one of its node, page size, mount and
 * size takes its place: made through prepare's own flow (populated on the
 * node, verified, READY; the pool grows for it where c's pages are not
 * free, as prepare's admission grows it), then c's pages released (with a
 * lease) and c retired. A holder may still reach c's
 * pages by ways no /proc file shows; the new file's pages are the kernel's
 * fresh ones. Returns what clear_done would: 0, -ECANCELED, or the failure.
 */
int warm_renew(struct prealloc_ctx *ctx, const struct warm_pass *p, const struct record *c,
		      struct prealloc_warm_fill_info *info)
{
	char mount[PATH_MAX], why[512];
	uint64_t new_id = 0;
	double t0 = now_seconds(), t1;
	int err, retired;

	warm_record_mount(c, mount, sizeof(mount));
	test_pause("warm-renew-before-create");
	/*
	 * The new file first, while the old one still holds its pages: what
	 * the pool grows for it is its own growth, and a kill anywhere leaves
	 * every record's growth backed by its own file's pages (the old file's
	 * go back, with what it had added, at its retirement).
	 */
	err = warm_create(ctx, c->warm_node, c->page_size, mount, c->size, &p->pace, why,
			  sizeof(why), &new_id, info);
	if (err == -ECANCELED)
		return err;	/* DIRTY again: renewed by the next pass */
	if (err < 0)
		warm_note(info, "warm file %s: no new file took its place (%s): removed", c->tmp,
			  why);
	t1 = now_seconds();
	warm_release_if_sole(c);	/* with a lease: its pages go back now (holder.c) */
	test_pause("warm-renew-before-retire");
	retired = retire(ctx, p->lock_timeout_ms, c, err == 0 ? new_id : 0, info);
	info->retire_seconds += now_seconds() - t1;
	if (retired == 0 && err == 0) {
		double seconds = now_seconds() - t0;

		info->renewed++;
		counter_add(ctx, c->dev, c->warm_node, c->page_size, COUNTER_RENEWALS, 1);
		info->renewed_bytes += c->size;
		info->renew_seconds += seconds;
		counter_clear_rate(ctx, c, (double)c->size / seconds / 1e9);
	}
	return err;
}

