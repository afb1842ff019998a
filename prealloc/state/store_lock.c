/* SPDX-License-Identifier: MIT */
/*
 * The store under its lock: every change to the store or to a pool happens
 * between store_open() and store_close(). Opening also finishes what a
 * holder of the lock that died left half done: a pool growth written ahead
 * (its share still marked growing) is settled against what the pool says,
 * before anyone writes a pool again. Growth only ever happens under the
 * lock and clears the mark before it is released, so any mark seen here is
 * stale, and the pool's size is still the one that run left.
 */
#include <string.h>

#include "state.h"

/* 1 when a stale growing share was resolved (the store needs saving). */
static int resolve_growing(struct prealloc_ctx *ctx, struct store *s)
{
	int changed = 0;

	for (size_t i = 0; i < s->nr; i++) {
		for (unsigned int k = 0; k < s->r[i].nr_pools; k++) {
			struct rec_pool *p = &s->r[i].pools[k];
			uint64_t nr = 0;

			if (!p->growing)
				continue;
			/* Unreadable pool: believe nothing grew (never claim pages we did not add). */
			if (hugetlb_read(ctx, p->node, p->page_size, &nr, NULL, NULL) < 0)
				nr = p->grow_from;
			p->added = MIN(p->added, nr > p->grow_from ? nr - p->grow_from : 0);
			p->growing = false;
			changed = 1;
		}
	}
	return changed;
}

int store_open_cancel(struct prealloc_ctx *ctx, unsigned int timeout_ms, int cancel_fd,
		      struct store *s, int *ret_fd)
{
	int r;

	*ret_fd = -1;
	memset(s, 0, sizeof(*s));
	r = statedir_lock(ctx, timeout_ms, cancel_fd, ret_fd);
	if (r < 0)
		return r;
	r = store_load(ctx, s);
	if (r == 0 && resolve_growing(ctx, s))
		r = store_save(ctx, s);
	if (r < 0) {
		store_close(s, *ret_fd);
		*ret_fd = -1;
	}
	return r;
}

int store_open(struct prealloc_ctx *ctx, unsigned int timeout_ms, struct store *s, int *ret_fd)
{
	return store_open_cancel(ctx, timeout_ms, -1, s, ret_fd);
}

void store_close(struct store *s, int fd)
{
	store_free(s);
	statedir_unlock(fd);
}

int store_update(struct prealloc_ctx *ctx, unsigned int timeout_ms, uint64_t id,
		 int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg),
		 void *arg)
{
	struct store s;
	long ri;
	int fd, r;

	r = store_open(ctx, timeout_ms, &s, &fd);
	if (r < 0)
		return r;
	ri = store_find(&s, id);
	r = ri < 0 ? -ENOENT : fn(ctx, &s, (size_t)ri, arg);
	store_close(&s, fd);
	return r;
}
