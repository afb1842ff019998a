/* SPDX-License-Identifier: MIT */
/* Limits the caller's cgroups put on hugepages. Never installed. */
#ifndef PREALLOC_CGROUP_H
#define PREALLOC_CGROUP_H

#include "internal.h"

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

#endif
