/* SPDX-License-Identifier: MIT */
/*
 * Admission takes from the warm pool (docs/warm.md): a node short of free
 * pages (4k: of free memory) cuts or removes READY warm files of its node
 * and page size, once every node of the request is admitted and its pools
 * grown, and the growth those files had added moves to the request. Each
 * file's record is written before its file changes.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

/* The warm pool link of READY warm file w opened, checked to be its file with no other link. */
static int warm_link_open(const struct record *w)
{
	struct statx stx;
	/* Never a wait on a lease (-EWOULDBLOCK: not cut now), least of all under the lock. */
	int fd = open_no_lease_wait(AT_FDCWD, w->tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return fd;
	if (file_statx(fd, "", AT_EMPTY_PATH, &stx) < 0 || !record_is_file(w, &stx) ||
	    stx.stx_nlink != 1) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * Pages of READY warm files of node and page size ps that a take could cut
 * now (their warm pool link is theirs alone): what a short node may count on.
 */
static uint64_t warm_ready_pages(const struct store *s, int node, uint64_t ps)
{
	uint64_t n = 0;
	int fd;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *w = &s->r[i];

		if (!warm_ready(w) || w->warm_node != node || w->page_size != ps ||
		    (fd = warm_link_open(w)) < 0)
			continue;
		close(fd);
		n += w->size / ps;
	}
	return n;
}

/*
 * Warm file w gives cut pages of node's pool to line mine: what its lines
 * had added moves there (given back with the request, not now), and its
 * lines need as much less.
 */
static void warm_move_growth(struct record *w, struct rec_pool *mine, uint64_t cut)
{
	for (unsigned int k = 0; k < w->nr_pools; k++) {
		struct rec_pool *p = &w->pools[k];
		uint64_t moved = MIN(p->added, cut);

		if (p->node != w->warm_node || p->page_size != w->page_size)
			continue;
		p->added -= moved;
		p->pages -= MIN(p->pages, cut);
		mine->added += moved;
	}
}

/*
 * Cuts cut pages off warm file i (fd: its warm pool link, closed here) for line
 * of record id, written ahead: first its record at the new size, DIRTY
 * (QUARANTINED when the whole file goes), with its growth on id's line,
 * then the file. A kill between leaves nothing READY: fill takes a DIRTY
 * file as one given back (zero again, or removed when its size is not the
 * record's) and removes a QUARANTINED one. Then READY again, or the record
 * goes. 1: the file could not be cut; record and line are as they were.
 */
static int warm_cut(struct prealloc_ctx *ctx, struct store *s, size_t i, int fd, uint64_t id,
		    unsigned int line, uint64_t cut)
{
	struct record *w = &s->r[i];
	struct rec_pool *mine = &s->r[store_find(s, id)].pools[line];
	size_t n = w->nr_pools * sizeof(*w->pools);
	struct rec_pool *lines = malloc(n + 1);
	uint64_t ps = w->page_size, size_was = w->size, mine_was = mine->added;
	bool whole = cut == w->size / ps;
	int r = -ENOMEM;

	if (lines) {
		if (n)
			memcpy(lines, w->pools, n);
		warm_move_growth(w, mine, cut);
		w->size -= cut * ps;
		r = warm_move(ctx, s, w, whole ? PREALLOC_WARM_QUARANTINED : PREALLOC_WARM_DIRTY);
	}
	if (r == 0) {
		test_pause("admit-warm-recorded");
		if ((whole ? unlink(w->tmp) : ftruncate(fd, (off_t)w->size)) < 0)
			r = 1;	/* not ours to take after all */
	}
	close(fd);
	if (r != 0 && lines) {
		/* The file as it was, and so its record (on disk too, where it was saved). */
		if (n)
			memcpy(w->pools, lines, n);
		w->size = size_was;
		mine->added = mine_was;
		/* Written only where the cut's state was (r < 0: the save failed). */
		if (w->warm != PREALLOC_WARM_READY)
			warm_move_back(ctx, r > 0 ? s : NULL, w, PREALLOC_WARM_READY);
	}
	free(lines);
	if (r != 0)
		return r;
	test_pause("admit-warm-taken");
	/* A failed save here: the end of admission saves it, or undoes. */
	if (whole) {
		store_del(s, i);
		store_save(ctx, s);
	} else {
		warm_move_back(ctx, s, w, PREALLOC_WARM_READY);
	}
	return 0;
}

/*
 * Pages of READY warm files on node i of the request freed for record id
 * (line: its line for the node): each file cut by what is still short, or
 * removed when it has no more (warm_cut). The pages go back to the pool's
 * free list at the cut (nothing maps a READY file). *ret_freed: the pages
 * freed, also on failure (a store that cannot be written).
 */
static int take_warm(struct prealloc_ctx *ctx, struct store *s, uint64_t id, unsigned int line,
		     int node, uint64_t ps, uint64_t short_pages,
		     struct prealloc_admit_result *res, uint64_t *ret_freed)
{
	*ret_freed = 0;
	for (size_t i = 0; i < s->nr && *ret_freed < short_pages; i++) {
		struct record *w = &s->r[i];
		uint64_t pages = w->size / ps, cut = MIN(pages, short_pages - *ret_freed);
		int fd, r;

		if (!warm_ready(w) || w->warm_node != node || w->page_size != ps || !pages ||
		    (fd = warm_link_open(w)) < 0)
			continue;
		r = warm_cut(ctx, s, i, fd, id, line, cut);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		*ret_freed += cut;
		res->warm_pages += cut;
		if (cut == pages) {
			res->warm_removed++;
			i--;	/* the record left the store */
		} else {
			res->warm_cut++;
		}
	}
	return 0;
}

uint64_t admit_warm_left(const struct store *s, const struct prealloc_admit_opts *o,
			 const struct admit_plan *plan, unsigned int i)
{
	uint64_t warm = warm_ready_pages(s, o->nodes[i], o->page_size);

	for (unsigned int j = 0; j < i; j++)
		if (o->nodes[j] == o->nodes[i])
			warm -= MIN(warm, plan[j].take);
	return warm;
}

int admit_warm_take(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
		    struct store *s, uint64_t id, unsigned int first_line,
		    const struct admit_plan *plan, struct prealloc_admit_result *res)
{
	uint64_t ps = o->page_size, freed;
	bool k4 = ps == PREALLOC_PAGE_4K;
	int r;

	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		if (!plan[i].take)
			continue;
		r = take_warm(ctx, s, id, first_line + i, o->nodes[i], ps, plan[i].take, res,
			      &freed);
		if (r < 0)
			return r;
		if (freed == plan[i].take)
			continue;
		/* Short after all: refused, with what was cut already in res->warm_pages. */
		res->reason = k4 ? PREALLOC_ADMIT_MEMORY : PREALLOC_ADMIT_POOL;
		res->node = o->nodes[i];
		res->needed = k4 ? o->node_bytes[i] : plan[i].avail + plan[i].take + plan[i].grow;
		res->available = plan[i].avail + freed * (k4 ? ps : 1);
		return -ENOMEM;
	}
	return 0;
}
