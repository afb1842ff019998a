/* SPDX-License-Identifier: MIT */
/* Shared between the library's files; never installed. */
#ifndef PREALLOC_INTERNAL_H
#define PREALLOC_INTERNAL_H

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>

#include "prealloc.h"
#include "cpu.h"

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
	prealloc_log_fn log_fn;
	void *log_userdata;
	/* Where the record store lives, and the roots sysfs and procfs are read under. */
	char state_dir[PATH_MAX];
	char sys_root[PATH_MAX];	/* "" for "/": tests point it at a tree of their own */
	char proc_root[PATH_MAX];
	prealloc_holder_fn holder_fn;	/* liveness of named holders, NULL: the record's check */
	void *holder_userdata;
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

/*
 * "<sys root>/<rel>" and "<proc root>/<rel>" (rel starts with '/'): every
 * sysfs and procfs path goes through these so tests can inject a tree.
 * -ENAMETOOLONG when it does not fit.
 */
int sys_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int proc_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "1.5 GiB"-style sizes for messages. */
const char *format_bytes(uint64_t bytes, char *buf, size_t len);
/*
 * Stops the process with SIGSTOP when $PREALLOC_TEST_PAUSE names point: the
 * crash tests kill a run at named points this way (docs/testing.md).
 */
void test_pause(const char *point);

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

/* The engine's hooks for flows (engine.h after the engine split). */
struct job_range {
	int node;		/* -1: spread over the job's node pools */
	uint64_t offset, length;
};
struct job_flow {
	/*
	 * Runs once, on the last worker to finish (or the starting thread
	 * when there are none), after the op and the check phase and before
	 * completion is posted; status is the outcome so far (0, negative
	 * errno, -ECANCELED); the return value is the job's result.
	 */
	int (*finish)(struct prealloc_job *job, int status, void *arg);
	void (*destroy)(void *arg);	/* at prealloc_job_free */
	void *arg;
};
struct job_spec {
	const struct job_flow *flow;
	const struct job_range *extra;
	size_t nr_extra;
	unsigned int passes;
};
int job_start_spec(struct prealloc_region *region, const struct prealloc_job_opts *opts,
		   const struct job_spec *spec, struct prealloc_job **ret_job);
void *job_flow_arg(struct prealloc_job *job);
/* The report functions without the joined check, for a flow's finish. */
int job_fill_report(struct prealloc_job *job, struct prealloc_report *ret_report);
int job_fill_node_report(struct prealloc_job *job, unsigned int index,
			 struct prealloc_node_report *ret_report);

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
