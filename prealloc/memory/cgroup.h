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

/* Pure parsers, fuzzed (tests/fuzz/fuzz-cgroup.c). */
/* A mountinfo line: 1 and mnt when it mounts controller's hierarchy (NULL: v2), else 0. */
int cgroup_mountinfo_line(const char *line, const char *controller, char *mnt, size_t len);
/* A /proc/self/cgroup line: 1 and rel ("" for the root) when it is controller's, else 0. */
int cgroup_self_line(const char *line, const char *controller, char *rel, size_t len);
/* A limit file's text: "max" (UINT64_MAX) or a decimal number; -EINVAL otherwise. */
int cgroup_parse_limit(const char *text, uint64_t *ret);
/* key's value in a memory.stat text, 0 when absent. */
uint64_t cgroup_stat_value(const char *text, const char *key);

#endif
