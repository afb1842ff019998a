/* SPDX-License-Identifier: MIT */
/*
 * Admission takes from the warm pool (docs/warm.md): a node short of free
 * pages (4k: of free memory) cuts or removes READY warm files of its node
 * and page size, once every node of the request is admitted and its pools
 * grown, and the growth those files had added moves to the request.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

/* The pool link of READY warm file w opened, checked to be its file with no other link. */
static int warm_link_open(const struct record *w)
{
	struct statx stx;
	int fd = open(w->tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (file_statx(fd, "", AT_EMPTY_PATH, &stx) < 0 || !record_is_file(w, &stx) ||
	    stx.stx_nlink != 1) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * Pages of READY warm files of node and page size ps that a take could cut
 * now (their pool link is theirs alone): what a short node may count on.
 */
static uint64_t warm_ready_pages(const struct store *s, int node, uint64_t ps)
{
	uint64_t n = 0;
	int fd;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *w = &s->r[i];

		if (w->warm != PREALLOC_WARM_READY || w->warm_node != node ||
		    w->page_size != ps || (fd = warm_link_open(w)) < 0)
			continue;
		close(fd);
		n += w->size / ps;
	}
	return n;
}

/*
 * Pages of READY warm files on node i of the request freed for record id
 * (line: its line for the node): each file cut by what is still short, or
 * removed when it has no more. What a file's lines added to the pool moves
 * to id's line, so that it is given back with id's own growth, not now
 * (the pages are this request's). The pages go back to the pool's free
 * list at the cut (nothing maps a READY file). *ret_freed: the pages freed.
 */
static int take_warm(struct prealloc_ctx *ctx, struct store *s, uint64_t id, unsigned int line,
		     int node, uint64_t ps, uint64_t short_pages,
		     struct prealloc_admit_result *res, uint64_t *ret_freed)
{
	uint64_t freed = 0;

	for (size_t i = 0; i < s->nr && freed < short_pages; i++) {
		struct record *w = &s->r[i];
		uint64_t pages = w->size / ps, cut = MIN(pages, short_pages - freed);
		char link[PATH_MAX];
		struct rec_pool *mine;
		int fd, r;

		if (w->warm != PREALLOC_WARM_READY || w->warm_node != node || w->page_size != ps ||
		    !pages || (fd = warm_link_open(w)) < 0)
			continue;
		snprintf(link, sizeof(link), "%s", w->tmp);
		/*
		 * The file first, then its record: a run killed between leaves a
		 * record that claims more than its file has (settled by the next
		 * pass or gc), never a file that no record names.
		 */
		r = cut == pages ? unlink(link) : ftruncate(fd, (off_t)((pages - cut) * ps));
		close(fd);
		if (r < 0)
			continue;	/* not ours to take after all */
		test_pause("admit-warm-taken");
		mine = &s->r[store_find(s, id)].pools[line];
		for (unsigned int k = 0; k < w->nr_pools; k++) {
			struct rec_pool *p = &w->pools[k];
			uint64_t moved = MIN(p->added, cut);

			if (p->node != node || p->page_size != ps)
				continue;
			p->added -= moved;
			p->pages -= MIN(p->pages, cut);
			mine->added += moved;
		}
		freed += cut;
		res->warm_pages += cut;
		if (cut == pages) {
			res->warm_removed++;
			store_del(s, i--);
		} else {
			res->warm_cut++;
			w->size -= cut * ps;
		}
		store_save(ctx, s);	/* else the end of admission saves it, or undoes */
	}
	*ret_freed = freed;
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
