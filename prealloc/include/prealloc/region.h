/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: regions: the memory a job works on, bound node by node.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_REGION_H
#define LIBPREALLOC_REGION_H

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- regions ------------------------------------------------------------ */

enum prealloc_backing {
	PREALLOC_BACKING_ANON = 0,	/* anonymous private, 4K (THP off) */
	PREALLOC_BACKING_ANON_THP,	/* anonymous private, transparent hugepages */
	PREALLOC_BACKING_MEMFD,		/* memfd; page_size picks 4K, 2M or 1G hugetlb */
	PREALLOC_BACKING_FILE,		/* a file on hugetlbfs or tmpfs, mapped shared */
	PREALLOC_BACKING_MAPPED,	/* a range the caller already mapped */
};

enum prealloc_region_flags {
	PREALLOC_REGION_REUSE = 1u << 0,  /* FILE: accept an existing file of the exact size */
	PREALLOC_REGION_NO_BIND = 1u << 1, /* do not mbind (MAPPED: caller set policy) */
	PREALLOC_REGION_THP = 1u << 2,	  /* FILE/MEMFD on tmpfs: MADV_HUGEPAGE (shmem THP) */
	/*
	 * Existing memory (FILE with REUSE, MAPPED): extents follow where the
	 * pages already are (move_pages query); pages not resident form
	 * extents with node -1, which jobs skip. Implies NO_BIND; nr_nodes
	 * must be 0. This is how `clear` finds each page's node.
	 */
	PREALLOC_REGION_ADOPT_PLACEMENT = 1u << 3,
	/*
	 * FILE: open only a file that exists, never create one (-ENOENT);
	 * implies REUSE. For a caller that checked the file first: one
	 * removed since is not made anew and left behind. An existing file
	 * (REUSE too) is opened without waiting on a lease another process
	 * holds on it: -EWOULDBLOCK, not fs.lease-break-time.
	 */
	PREALLOC_REGION_EXISTING = 1u << 4,
};

struct prealloc_region_opts {
	size_t size;		/* sizeof(struct prealloc_region_opts) */
	int backing;		/* enum prealloc_backing */
	unsigned int flags;	/* enum prealloc_region_flags */
	uint64_t page_size;	/* 0: the backing's natural size (FILE: the fs's) */
	uint64_t length;	/* bytes; a multiple of page_size */
	const char *path;	/* FILE: path to create (or reuse) */
	void *addr;		/* MAPPED: start, page aligned */
	/*
	 * Placement: nr_nodes nodes; node_bytes NULL splits length evenly in
	 * page units (the first nodes take the remainder), else node_bytes[i]
	 * bytes go to nodes[i] in order and must add up to length.
	 * nr_nodes 0 places the region on the nodes of the current policy.
	 */
	unsigned int nr_nodes;
	const int *nodes;
	const uint64_t *node_bytes;
};

/* Creates (or adopts) the memory and binds each extent; touches nothing. */
int prealloc_region_new(struct prealloc_ctx *ctx, const struct prealloc_region_opts *opts,
			struct prealloc_region **ret_region);
/*
 * Unmaps (unless MAPPED) and closes; a FILE stays on disk. A job still
 * running on the region is a caller's bug: rather than unmap memory under
 * its workers (a crash) or abort the caller, free and discard wait until
 * every such job has finished with the region, and say so once through
 * the ctx's log (PREALLOC_LOG_WARNING). Do not free a region from a job's
 * own callbacks while it runs: that wait would never end.
 */
void prealloc_region_free(struct prealloc_region *region);
/* Unmaps, and unlinks the file if this region created it (waits for jobs as free does). */
int prealloc_region_discard(struct prealloc_region *region);
void *prealloc_region_addr(const struct prealloc_region *region);
uint64_t prealloc_region_length(const struct prealloc_region *region);
uint64_t prealloc_region_page_size(const struct prealloc_region *region);
int prealloc_region_fd(const struct prealloc_region *region); /* -1 if none */
/* 1 if prealloc_region_new created the FILE (discard would unlink it), else 0. */
int prealloc_region_created_file(const struct prealloc_region *region);
/* Extents: node and byte range of each; returns the count (may exceed max). */
struct prealloc_extent {
	int node;		/* -1: pages not resident (ADOPT_PLACEMENT) */
	uint64_t offset;
	uint64_t length;
};
int prealloc_region_extents(const struct prealloc_region *region, struct prealloc_extent *ret,
			    unsigned int max);

#ifdef __cplusplus
}
#endif
#endif
