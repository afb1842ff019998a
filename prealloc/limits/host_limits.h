/* SPDX-License-Identifier: MIT */
/*
 * What the host allows, private to the library: the hugepage pools per
 * node (read, grown, shrunk), the cgroup limits on hugepages and memory,
 * and what a node could still give a pool. Admission and the store settle
 * against these; they call only the root (tests/tree/test-layers.sh).
 * Never installed.
 */
#ifndef PREALLOC_HOST_LIMITS_H
#define PREALLOC_HOST_LIMITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* ---- hugepage pools (hugetlb.c) ---------------------------------------- */

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

/* ---- cgroup limits (cgroup.c) -------------------------------------------- */

/*
 * Pages of page_size the calling process may still fault under its cgroup
 * hugetlb limits (its cgroup and every ancestor; v2 max and rsvd.max, v1
 * limit_in_bytes where that hierarchy is mounted); UINT64_MAX when
 * unlimited. where gets the tightest limit file.
 */
uint64_t cgroup_hugetlb_left(const struct prealloc_ctx *ctx, uint64_t page_size, char *where,
			     size_t where_len);

/*
 * Bytes the calling process may still charge under its memory cgroup limits
 * (v2 memory.max, v1 memory.limit_in_bytes; its cgroup and every ancestor),
 * counting the file cache those cgroups could reclaim as room; UINT64_MAX
 * when unlimited. where gets the tightest limit file.
 */
uint64_t cgroup_memory_left(const struct prealloc_ctx *ctx, char *where, size_t where_len);

/* Pure parsers, fuzzed (tests/fuzz/fuzz-cgroup.c). */
/* A mountinfo line: 1 and mnt when it mounts controller's hierarchy (NULL: v2), else 0. */
int cgroup_mountinfo_line(const char *line, const char *controller, char *mnt, size_t len);
/* A /proc/self/cgroup line: 1 and rel ("" for the root) when it is controller's, else 0. */
int cgroup_self_line(const char *line, const char *controller, char *rel, size_t len);
/* A limit file's text: "max" (UINT64_MAX) or a decimal number; -EINVAL otherwise. */
int cgroup_parse_limit(const char *text, uint64_t *ret);
/* key's value in a memory.stat text, 0 when absent. */
uint64_t cgroup_stat_value(const char *text, const char *key);

/* ---- node capacity (capacity.c) ------------------------------------------ */

/* capacity.c: what node could still give a hugepage pool, in bytes. */
struct node_capacity {
	uint64_t mem_total, mem_free;
	uint64_t file;		/* Active(file) + Inactive(file) */
	uint64_t slab;		/* SReclaimable */
	uint64_t estimate;	/* free + file + slab (one node: at least MemAvailable) */
	uint64_t margin;	/* what stays with the host */
};
int node_capacity(const struct prealloc_ctx *ctx, int node, struct node_capacity *ret);

#endif
