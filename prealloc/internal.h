/* SPDX-License-Identifier: MIT */
/* Shared between the library's files; never installed. */
#ifndef PREALLOC_INTERNAL_H
#define PREALLOC_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <limits.h>
#include <stdint.h>
#include <stdatomic.h>

#include "prealloc.h"
#include "cpu.h"
#include "engine.h"
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
	/* Where the record store lives, and the roots sysfs and procfs are read under. */
	char state_dir[PATH_MAX];
	char sys_root[PATH_MAX];	/* "" for "/": tests point it at a tree of their own */
	char proc_root[PATH_MAX];
	prealloc_holder_fn holder_fn;	/* liveness of named holders, NULL: the record's check */
	void *holder_userdata;
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
	/*
	 * prealloc_record's copy of the store (state/pool.c), under its lock,
	 * and what drops it when the ctx is freed (set with the copy).
	 */
	pthread_mutex_t records_lock;
	struct record_list *records;
	void (*records_drop)(struct prealloc_ctx *ctx);
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
	char *path;		/* FILE: relative to dir_fd */
	int dir_fd;		/* FILE: AT_FDCWD, or region_new_at's directory (our dup) */
	unsigned int nr_extents;
	struct prealloc_extent *extents;
	/* Jobs still working on it (until their finish): free waits for them. */
	pthread_mutex_t jobs_lock;
	pthread_cond_t jobs_done;
	unsigned int jobs;
};

/* backing.c: r's memory made and mapped as o says (r->addr, fd, page_size, path). */
int backing_map(struct prealloc_region *r, const struct prealloc_region_opts *o);
/*
 * prealloc_region_new with a FILE's path taken relative to dir_fd (kept,
 * duplicated, for discard's unlink): the file is made in a directory the
 * caller opened, whatever its path names meanwhile.
 */
int region_new_at(struct prealloc_ctx *ctx, const struct prealloc_region_opts *opts, int dir_fd,
		  struct prealloc_region **ret_region);

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

/* topology.c: read into a new ctx, once. */
int topology_read(struct prealloc_ctx *ctx);
const struct topo_node *topo_node(const struct prealloc_ctx *ctx, int node);
/* Adds each key's value of <sys>/devices/system/node/nodeN/meminfo, in bytes, to its slot. */
int node_meminfo_sum(const struct prealloc_ctx *ctx, int node, const char *const *keys,
		     uint64_t *const *slots, size_t nr);

/* memory/chunks.c: pure; split a length into extents, cut extents into page-aligned chunks. */
struct chunk {
	uint64_t offset;
	uint64_t length;
	unsigned int extent;	/* index into the extent array */
};
uint64_t chunk_size_for(uint64_t extent_len, uint64_t page_size, unsigned int threads);
/* Returns the number of chunks written (call with ret NULL to count). */
size_t chunks_cut(const struct prealloc_extent *extents, unsigned int nr_extents,
		   uint64_t page_size, uint64_t chunk_size, struct chunk *ret);
/* Splits length over nr nodes: explicit sizes or even in page units. */
int extents_split(uint64_t length, uint64_t page_size, const int *nodes,
		 const uint64_t *node_bytes, unsigned int nr, struct prealloc_extent *ret);

/* engine.c: a job's per-node pool and its chunks (engine.h has the API). */
struct job_chunk {
	uint64_t offset;
	uint64_t length;
	bool placed;		/* from the region's extents: counted for placement */
};

struct node_pool {
	const struct topo_node *topo;
	int node;
	unsigned int threads;
	uint64_t bytes;			/* extents and extra ranges, one pass */
	uint64_t placed_bytes;		/* extents only */
	struct job_chunk *chunks;
	size_t nr_chunks;
	atomic_size_t next;		/* op queue, over the chunks */
	atomic_size_t next_check;	/* check queue */
	atomic_uint finished;		/* workers past the check phase */
	atomic_uint_fast64_t bytes_done;
	atomic_uint_fast64_t on, off, missing;
	atomic_uint_fast64_t huge_bytes;
	atomic_uint_fast64_t cpu_samples_off;
	atomic_uint_fast64_t cpus_seen[PREALLOC_MAX_CPUS / 64];
	atomic_uint_fast64_t nonzero;	/* lowest non-zero region offset + 1, 0 none */
	double end;			/* latest worker end, under job->lock */
};

struct job_op;
struct job_sink;
struct job_flow;

struct job_worker {
	struct prealloc_job *job;
	struct node_pool *pool;
	unsigned int index;		/* within its pool */
	pthread_t tid;
};

#define JOB_MAGIC 0x6a6f6221u	/* "job!"; poisoned by prealloc_job_free */
#define JOB_FREED 0x66726565u	/* "free" */

struct prealloc_job {
	atomic_uint magic;
	struct prealloc_region *region;	/* not touched after the flow's finish */
	bool region_held;		/* counted in region->jobs */
	uint8_t *addr;			/* region->addr, for the workers */
	uint64_t page_size;		/* copied at start for the report */
	int backing;
	bool adopted;			/* extents with node -1: placement is no verdict */
	struct prealloc_job_opts opts;
	const struct job_op *op, *serial;
	void *op_state, *serial_state;
	unsigned int rounds;		/* 1 for the op, + 1 with a serial op */
	bool fixed_workers;		/* job_spec.fixed_workers */
	struct job_flow flow;		/* finish NULL: none */
	struct job_sink sinks[3];	/* [0] the eventfd; [1] the spec's; [2] io_uring completion */
	struct node_pool *pools;
	unsigned int nr_pools;
	struct job_worker *workers;
	unsigned int nr_workers;
	pthread_cond_t gate;		/* workers wait here until all exist */
	bool gate_open, gate_abandon;	/* under lock */
	pthread_barrier_t barrier;	/* before and after the check phase */
	bool barrier_ready;
	pthread_mutex_t lock;
	atomic_int cancel;
	atomic_uint finished;
	atomic_int done;		/* finish ran; result is set */
	int result;
	int error, error_node;
	uint64_t error_offset;
	double t_start, t_op_end, t_check_start, t_check_end;
	int efd;
	pthread_mutex_t join_lock;	/* one joiner; later waiters wait for it */
	atomic_bool joined;
	bool placement_scanned;	/* counts came from numa_maps; skip move_pages */
	bool start_failed;	/* workers released cancelled: no finish, no sinks */
};

/* engine.c */
/* Records the job's first error and cancels the rest. */
void job_fail(struct prealloc_job *job, int err, int node, uint64_t offset);
void job_free(struct prealloc_job *job);
/* pools.c: one pool per node from the extents and extra ranges. */
int pools_build(struct prealloc_job *job, const struct job_range *extra, size_t nr_extra);
/*
 * Where worker t of pool runs (set in attr): the node's CPUs, the one CPU
 * t picks (wrapping) when the job's workers are fixed, or anywhere allowed.
 */
void worker_affinity(const struct prealloc_job *job, const struct node_pool *pool, unsigned int t,
		     pthread_attr_t *attr);
/* check.c: the check phase. Once per job (one thread), then per chunk. */
void check_scan_job(struct prealloc_job *job);
/* 0, or the first error and where (region offset) into *ret_at: the caller fails the job. */
int check_chunk(struct prealloc_job *job, struct node_pool *pool, const struct job_chunk *c,
		uint64_t *ret_at);

/* populate.c */
int populate_chunk(uint8_t *addr, uint64_t len, uint64_t page_size, bool touch);

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
/*
 * Calls fn once per mapping of [addr, addr+len) in /proc/self/smaps with
 * the bytes huge pages map there (AnonHugePages + ShmemPmdMapped +
 * FilePmdMapped) and whether it is MADV_HUGEPAGE (VmFlags hg).
 */
typedef int (*huge_fn)(void *arg, uint64_t start, uint64_t end, uint64_t huge_bytes,
		       bool madv_huge);
int huge_scan(uint8_t *addr, uint64_t len, huge_fn fn, void *arg);
/* Offset of the first non-zero byte, or len when all zero. */
uint64_t zero_check(const uint8_t *addr, uint64_t len);

/* calibrate_figures.c: what the calibration's figures say, pure (the probe takes its median). */
/* The median of v[0..n) (n > 0); sorts v. */
double calibrate_median(double *v, unsigned int n);
/* Per kernel k < nk, the median of s[k][0..rep) into gbps; -EIO if a sample failed (<= 0). */
int calibrate_medians(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
		      unsigned int rep, double *gbps);
/*
 * The paired ratio of kernel chosen to kernel best in samples s (rep each,
 * GB/s, sample i of every kernel from the same repetition): the median of
 * s[chosen][i] / s[best][i]. *ret_error (may be NULL): that median's
 * standard error relative to it, estimated from the ratios' interquartile
 * range (1, unknown, with fewer than 4 repetitions). Pure.
 */
double calibrate_paired_ratio(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int rep,
			      unsigned int chosen, unsigned int best, double *ret_error);
/* The kernel with the highest figure among gbps[0..nk). */
unsigned int calibrate_best(unsigned int nk, const double *gbps);
/*
 * Whether rep repetitions of nk columns (the last auto's) are enough: rep
 * >= max; or rep >= min and auto's paired ratio to the best kernel (by the
 * medians) known to PREALLOC_CALIBRATE_PRECISION. Pure.
 */
bool calibrate_enough(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
		      unsigned int rep, unsigned int min, unsigned int max);
/* order[] gets 0..n-1 shuffled, the same for the same seed: one repetition's kernel order. */
void calibrate_order(unsigned int *order, unsigned int n, unsigned int seed);
/*
 * res->calibration from res's medians: per measured size the fastest kernel
 * (the last column, auto, is not one), or the probe auto ran there
 * (res->size_auto) where it came within 0.95 of it; for anything larger
 * the kernel never far behind over the thread counts.
 */
void calibrate_build(struct prealloc_calibrate_result *res);

#endif
