/* SPDX-License-Identifier: MIT */
/* Limits the caller's cgroups put on hugepages. Never installed. */
#ifndef PREALLOC_CGROUP_H
#define PREALLOC_CGROUP_H

#include "internal.h"

/*
 * Pages of page_size the calling process may still fault under its cgroup
 * v2 hugetlb limits (its cgroup and every ancestor; max and rsvd.max);
 * UINT64_MAX when unlimited. where gets the tightest limit file.
 */
uint64_t cgroup_hugetlb_left(const struct prealloc_ctx *ctx, uint64_t page_size, char *where,
			     size_t where_len);

#endif
