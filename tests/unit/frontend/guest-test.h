/* SPDX-License-Identifier: MIT */
/*
 * A guest of the front-end layer (guest.h) for the unit tests over a fake
 * tree (fakeroot.h): its words, a log the test reads back, and backends
 * built in one line each.
 */
#ifndef PREALLOC_TEST_GUEST_TEST_H
#define PREALLOC_TEST_GUEST_TEST_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <prealloc.h>

#include "guest.h"

#define K4 PREALLOC_PAGE_4K
#define MB2 PREALLOC_PAGE_2M
#define GB1 PREALLOC_PAGE_1G
#define MIB (UINT64_C(1) << 20)

static const struct guest_words test_words = {
	.noun = "domain",
	.dir = "memory_backing_dir",
	.grow_off = "set grow_pools = yes to grow the pool",
	.warm_off = "warm is off here",
	.vmm = "QEMU",
	.shared_how = "<access mode='shared'/>",
	.private_why = "its cell's memAccess or the domain's access",
	.private_opt = "share=off",
};

/*
 * Every message the layer logged since test_log_clear(), each followed by
 * " | ": one line, so that a check's description that quotes it stays TAP.
 */
static char test_log[16384];

static void test_vlog(int level, const char *fmt, va_list ap)
{
	size_t used = strlen(test_log);

	(void)level;
	if (used + 4 >= sizeof(test_log))
		return;
	vsnprintf(test_log + used, sizeof(test_log) - used - 3, fmt, ap);
	strcat(test_log, " | ");
}

static inline void test_log_clear(void)
{
	test_log[0] = '\0';
}

/*
 * A guest named name over ctx, held by holder while check exists or for ten
 * minutes (a guest not started yet: its claim counts against others until
 * check appears), with a minute of deadline, no pre-fault, warm and reserve
 * off: the test sets what it needs.
 */
static inline void test_guest(struct guest *g, struct prealloc_ctx *ctx, const char *name,
			      const char *holder, const char *check)
{
	*g = (struct guest){ .ctx = ctx, .words = &test_words, .log = test_vlog,
			     .cancel_fd = -1, .deadline_s = 60 };
	snprintf(g->name, sizeof(g->name), "%s", name);
	snprintf(g->holder, sizeof(g->holder), "%s", holder);
	snprintf(g->check, sizeof(g->check), "%s", check);
	g->deadline = now_seconds() + 60;
	g->expires = (int64_t)time(NULL) + 600;
}

/*
 * Backend alias of bytes on page size ps, bound to nr nodes (spread over
 * them as the front ends do); file and shared as given.
 */
static inline struct guest_backend *test_backend(struct guest *g, const char *alias,
						 uint64_t bytes, uint64_t ps, bool file,
						 unsigned int nr, const int *nodes)
{
	struct guest_backend *be = &g->demand.backends[g->demand.nr_backends++];

	*be = (struct guest_backend){ .bytes = bytes, .page_size = ps, .file = file,
				      .shared = file, .policy = GUEST_POLICY_BIND,
				      .nr_nodes = nr };
	snprintf(be->alias, sizeof(be->alias), "%s", alias);
	memcpy(be->nodes, nodes, nr * sizeof(*nodes));
	guest_spread(be);
	return be;
}

/* The holder's shares in the store on node, of page size ps (HELD or not). */
static inline uint64_t held_pages(struct prealloc_ctx *ctx, const char *holder, int node,
				  uint64_t ps)
{
	struct prealloc_store_entry e = { .size = sizeof(e) };
	uint64_t pages = 0;

	for (unsigned int i = 0; prealloc_store_entry(ctx, i, &e) == 0; i++)
		if (!strcmp(e.tag, holder) && e.node == node && e.page_size == ps)
			pages += e.pages;
	return pages;
}

#endif
