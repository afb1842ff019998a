/* SPDX-License-Identifier: MIT */
/*
 * The root of the library, shared by every layer: the ctx (ctx.c) and what
 * it holds (the topology, the CPU, the clear layer's state by pointer),
 * util.c and topology.c.
 * Each layer adds its own private header in its folder (memory.h,
 * host_limits.h, clear.h, engine.h, state.h, flows.h). Never installed.
 */
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
#include "clock.h"
#include "cpu_id.h"

#define EXPORT __attribute__((visibility("default")))
/*
 * A renamed public function's old name, exported as an alias of the new
 * one's code (docs/abi.md): #undef the header's old-name macro first, and
 * list the old name under its release's node in libprealloc.map.
 */
#define EXPORT_ALIAS(old, new) \
	extern __typeof__(new) old __attribute__((visibility("default"), alias(#new)))
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

/* The clear layer's choices for a ctx (clear/clear.h): only a pointer here. */
struct clear_ctx;

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
	 * The calibration and the ranking the clear layer settled for this
	 * ctx (clear/calibration.c makes it at first use; NULL before). Plain
	 * memory, no pointer inside: freed with the ctx.
	 */
	struct clear_ctx *clear;
	unsigned int nr_nodes;	/* online nodes with memory */
	struct topo_node *nodes;
	int max_node;		/* highest online node number */
	cpu_set_t allowed;	/* sched_getaffinity at context creation */
	char hugetlbfs_2m[256];
	char hugetlbfs_1g[256];
	struct cpu_id cpu;
	/*
	 * prealloc_record's copy of the store (state/queries.c), under its lock,
	 * and what drops it when the ctx is freed (set with the copy).
	 */
	pthread_mutex_t records_lock;
	struct record_list *records;
	void (*records_drop)(struct prealloc_ctx *ctx);
	/* The store's file read and parsed (state/store_lock.c): what the tests count. */
	unsigned long store_reads;
};

/* util.c */
void ctx_log(struct prealloc_ctx *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Copies a caller's size-prefixed struct into ours: zero-extends, or -E2BIG. */
int copy_sized_in(void *dst, size_t dst_size, const void *src);
/* Copies our struct out to a caller's, truncated to its size field. */
void copy_sized_out(void *dst, const void *src, size_t src_size);
int read_file_u64(const char *path, uint64_t *ret);
int read_file_str(const char *path, char *buf, size_t len);
/* All of buf to fd (EINTR retried): 0 or -errno. */
int fd_write_all(int fd, const char *buf, size_t len);
/*
 * openat() of a file that exists, never waiting on a lease someone holds
 * on it (an open that would break one is -EWOULDBLOCK at once, not a wait
 * of fs.lease-break-time); the descriptor returned blocks as any other.
 */
int open_no_lease_wait(int dir_fd, const char *path, int flags);
int parse_cpulist(const char *s, cpu_set_t *ret);

/*
 * "<sys root>/<rel>" and "<proc root>/<rel>" (rel starts with '/'): every
 * sysfs and procfs path goes through these so tests can inject a tree.
 * A NULL ctx: the host's own roots (a call that has no ctx, cpu_get).
 * -ENAMETOOLONG when it does not fit.
 */
#define HOST_SYS_ROOT "/sys"
#define HOST_PROC_ROOT "/proc"
int sys_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int proc_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* "1.5 GiB"-style sizes for messages. */
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

#endif
