/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: the hugepage pools, per node and page size, as prealloc sees them.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_HUGEPAGES_H
#define LIBPREALLOC_HUGEPAGES_H

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A node's pool of hugepages of one size: the kernel's counts, and what
 * admission promised to prealloc's runs and its records say they added.
 */
struct prealloc_pool_status {
	size_t size;		/* sizeof(struct prealloc_pool_status) */
	int node;
	uint64_t page_size;
	uint64_t total;		/* nr_hugepages */
	uint64_t free;		/* free_hugepages */
	uint64_t surplus;	/* surplus_hugepages */
	/* Promised to prealloc runs, not faulted yet (0.1: reserved). */
	__extension__ union {
		uint64_t promised;
		uint64_t reserved;
	};
	uint64_t added;		/* pages prealloc added, per the record store */
	unsigned int owners;	/* records with a share of this node and size */
};
int prealloc_pool_status(struct prealloc_ctx *ctx, int node, uint64_t page_size,
			 struct prealloc_pool_status *ret_status);

#ifdef __cplusplus
}
#endif
#endif
