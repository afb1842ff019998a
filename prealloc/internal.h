/* SPDX-License-Identifier: MIT */
/* Shared between the library's files; never installed. */
#ifndef PREALLOC_INTERNAL_H
#define PREALLOC_INTERNAL_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prealloc.h"
#include "cpu.h"
#include "clear.h"

#define EXPORT __attribute__((visibility("default")))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define ALIGN_DOWN(x, a) ((x) / (a) * (a))
#define ALIGN_UP(x, a) (((x) + (a)-1) / (a) * (a))

struct topo_node {
	int node;
	int cpu_node;		/* node whose CPUs serve this one */
	bool has_memory;
	uint64_t mem_total, mem_free;
	uint64_t hp2m_total, hp2m_free;
	uint64_t hp1g_total, hp1g_free;
	cpu_set_t cpus;		/* own CPUs intersected with the allowed set */
	unsigned int nr_cpus;
};

struct prealloc_ctx {
	/* Where ctx_log() sends messages; set before jobs start (not locked). */
	prealloc_log_fn log_fn;
	void *log_userdata;
	/*
	 * The calibration automatic selection uses (calibrate.c), under its
	 * lock: cal_settled once the default file was looked at or a caller
	 * loaded, saved or unloaded one; cal_active when cal applies.
	 */
	bool cal_settled;
	bool cal_active;
	struct clear_calibration cal;
	unsigned int nr_nodes;	/* online nodes with memory */
	struct topo_node *nodes;
	int max_node;		/* highest online node number */
	cpu_set_t allowed;	/* sched_getaffinity at context creation */
	char hugetlbfs_2m[256];
	char hugetlbfs_1g[256];
	struct cpu_id cpu;
};

struct prealloc_region {
	struct prealloc_ctx *ctx;
	int backing;
	uint8_t *addr;
	uint64_t length;
	uint64_t page_size;
	int fd;
	bool owns_mapping;
	bool created_file;
	char *path;
	unsigned int nr_extents;
	struct prealloc_extent *extents;
};

/* log.c-ish helpers (util.c) */
void ctx_log(struct prealloc_ctx *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Copies a caller's size-prefixed struct into ours: zero-extends, or -E2BIG. */
int copy_sized_in(void *dst, size_t dst_size, const void *src);
/* Copies our struct out to a caller's, truncated to its size field. */
void copy_sized_out(void *dst, const void *src, size_t src_size);
int read_file_u64(const char *path, uint64_t *ret);
int read_file_str(const char *path, char *buf, size_t len);
int parse_cpulist(const char *s, cpu_set_t *ret);
double now_seconds(void);

/* topology.c */
const struct topo_node *topo_node(const struct prealloc_ctx *ctx, int node);

/* plan.c: pure; cut extents into page-aligned chunks. */
struct plan_chunk {
	uint64_t offset;
	uint64_t length;
	unsigned int extent;	/* index into the extent array */
};
uint64_t plan_chunk_size(uint64_t extent_len, uint64_t page_size, unsigned int threads);
/* Returns the number of chunks written (call with ret NULL to count). */
size_t plan_chunks(const struct prealloc_extent *extents, unsigned int nr_extents,
		   uint64_t page_size, uint64_t chunk_size, struct plan_chunk *ret);
/* Splits length over nr nodes: explicit sizes or even in page units. */
int plan_extents(uint64_t length, uint64_t page_size, const int *nodes,
		 const uint64_t *node_bytes, unsigned int nr, struct prealloc_extent *ret);

/* populate.c */
int populate_chunk(uint8_t *addr, uint64_t len, uint64_t page_size, bool touch);
int touch_guard_install(void);
void touch_guard_remove(void);

/* placement.c */
/* Counts pages of [addr, addr+len) on node, elsewhere and missing. */
int placement_query(uint8_t *addr, uint64_t len, uint64_t page_size, int node,
		    uint64_t *ret_on, uint64_t *ret_off, uint64_t *ret_missing);
/*
 * Calls fn once per mapping of [addr, addr+len) with its per-node page
 * counts (counts[node], in pages of unit bytes) from /proc/self/numa_maps.
 * -ENOTSUP when the range is not made of whole mappings, -EAGAIN when the
 * mappings changed while reading: then ask move_pages instead.
 */
typedef int (*placement_fn)(void *arg, uint64_t start, uint64_t end, uint64_t unit,
			    const uint64_t *counts);
int placement_scan(uint8_t *addr, uint64_t len, placement_fn fn, void *arg);
/* Offset of the first non-zero byte, or len when all zero. */
uint64_t zero_check(const uint8_t *addr, uint64_t len);

#endif
