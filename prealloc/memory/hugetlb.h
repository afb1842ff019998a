/* SPDX-License-Identifier: MIT */
/* Each node's hugepage pools in sysfs: read, grow, shrink. Never installed. */
#ifndef PREALLOC_HUGETLB_H
#define PREALLOC_HUGETLB_H

#include "internal.h"

/* nr_hugepages, free_hugepages and surplus_hugepages of node's pool (each may be NULL). */
int hugetlb_read(const struct prealloc_ctx *ctx, int node, uint64_t page_size,
		 uint64_t *ret_total, uint64_t *ret_free, uint64_t *ret_surplus);
/* The system-wide free and reserved (mapped, not yet faulted) counts. */
int hugetlb_global(const struct prealloc_ctx *ctx, uint64_t page_size, uint64_t *ret_free,
		   uint64_t *ret_resv);

struct grow_result {
	uint64_t before;	/* nr_hugepages before */
	uint64_t requested;	/* nr_hugepages written */
	uint64_t got;		/* nr_hugepages read back at the end */
	uint64_t added;		/* pages kept (0 when the growth was undone) */
	double seconds;
};
/*
 * Grows node's pool by pages in steps of max(1 GiB, 5% of the node): each
 * an absolute write read back; a short step compacts the node and retries
 * until deadline (now_seconds() clock). All or nothing: a short pool is put
 * back as it was and -ENOMEM returned. cancel_fd (-1: none) is polled
 * before every write; readable: put back, -ECANCELED. Test point
 * "grow-step" between steps. Call under the lock.
 */
int hugetlb_grow(const struct prealloc_ctx *ctx, int node, uint64_t page_size, uint64_t pages,
		 double deadline, int cancel_fd, struct grow_result *ret);
/* Shrinks node's pool by up to pages; ret_returned: what the kernel let go. */
int hugetlb_shrink(const struct prealloc_ctx *ctx, int node, uint64_t page_size, uint64_t pages,
		   uint64_t *ret_returned);

#endif
