/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: the context (log, holder checks), the topology it reads, and
 * what every header shares: limits, the opaque handles, and the page sizes
 * (<prealloc/sizes.h>, included here).
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_CTX_H
#define LIBPREALLOC_CTX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sizes.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PREALLOC_VERSION_MAJOR 0
#define PREALLOC_VERSION_MINOR 1

/* Largest node number this library handles (Linux's default MAX_NUMNODES). */
#define PREALLOC_MAX_NODES 1024
/* CPUs tracked per node report (bitmap size in 64-bit words * 64). */
#define PREALLOC_MAX_CPUS 1024

struct prealloc_ctx;
struct prealloc_region;
struct prealloc_job;
struct prealloc_completion;

const char *prealloc_version(void);

/* ---- context ------------------------------------------------------------ */

enum prealloc_log_level {
	PREALLOC_LOG_ERR = 3,
	PREALLOC_LOG_WARNING = 4,
	PREALLOC_LOG_INFO = 6,
	PREALLOC_LOG_DEBUG = 7,
};

typedef void (*prealloc_log_fn)(void *userdata, int level, const char *msg);

/*
 * Threads and lifetimes:
 *  - a ctx may be shared by threads for read-only queries (topology, node
 *    and CPU info, clear_kernels, clear_choose) and for starting jobs and
 *    flows; prealloc_ctx_set_log, prealloc_calibration_load/save/unload and
 *    prealloc_ctx_free must not race with jobs being started on that ctx
 *    (the calibration itself is locked; the log callback pointer is not);
 *  - a ctx outlives its regions and jobs; a region outlives its job
 *    (prealloc_job_free before prealloc_region_free); a flow's job
 *    (prealloc_clear_file_start) owns what it made and frees it in
 *    prealloc_job_free;
 *  - the log callback may be called from any thread that calls into the
 *    library with this ctx, never from a worker, never with a lock held;
 *  - a job whose memory can raise SIGBUS under its workers installs a
 *    process-wide SIGBUS handler for its lifetime, passing any SIGBUS not
 *    its workers' to the previous handler: the touch fallback
 *    (PREALLOC_JOB_TOUCH, or kernels before 5.14 without
 *    MADV_POPULATE_WRITE), and a clear or a VERIFY read-back over a file, a
 *    memfd or the caller's mapping (its owner may truncate it under the
 *    job). Such a SIGBUS fails the job with -EFAULT (-EHWPOISON for a
 *    memory error) at that piece.
 */

/*
 * Liveness of a named holder (a record owned by, say, a libvirt domain
 * rather than a process): 1 alive, 0 gone, negative errno when it cannot
 * tell (the record is then kept). See prealloc_ctx_set_holder_alive().
 */
typedef int (*prealloc_holder_fn)(void *userdata, const char *holder);

struct prealloc_ctx_opts {
	size_t size;		/* sizeof(struct prealloc_ctx_opts) */
	/*
	 * The record store's directory. NULL: $PREALLOC_STATE_DIR, else
	 * /run/prealloc as root, else $XDG_RUNTIME_DIR/prealloc, else
	 * /tmp/prealloc-UID. It must be a directory owned by the caller and
	 * writable by nobody else, or the store refuses it (-EPERM).
	 */
	const char *state_dir;
	/* Roots sysfs and procfs are read under; NULL: "/sys", "/proc" (tests, containers). */
	const char *sys_root;
	const char *proc_root;
};

/* Reads the topology once (nodes, CPUs, pools, mounts, CPU identity). */
int prealloc_ctx_new(struct prealloc_ctx **ret_ctx);
/* The same with options; opts NULL is prealloc_ctx_new(). */
int prealloc_ctx_new_opts(const struct prealloc_ctx_opts *opts, struct prealloc_ctx **ret_ctx);
void prealloc_ctx_free(struct prealloc_ctx *ctx);
/*
 * Every message the library has for a caller reaches fn (e.g. a calibration
 * file ignored, at PREALLOC_LOG_INFO); NULL silences. Not locked: set it
 * before sharing the ctx.
 */
void prealloc_ctx_set_log(struct prealloc_ctx *ctx, prealloc_log_fn fn, void *userdata);
/* The record store's directory, as resolved at creation. */
const char *prealloc_ctx_state_dir(struct prealloc_ctx *ctx);
/*
 * How prealloc_store_gc() learns whether a named holder still lives: the
 * holder-alive callback. Without one, a holder is alive while its record's
 * check path (holder_check) exists (when it has one) and until its expiry
 * time (when it has one); with neither, forever.
 */
void prealloc_ctx_set_holder_alive(struct prealloc_ctx *ctx, prealloc_holder_fn fn,
				   void *userdata);
/*
 * A named holder that is process pid (0: the caller), and not the next
 * process to get its pid: its name "PREFIX:PID:START" (START the process's
 * start time, field 22 of /proc/PID/stat) to ret_holder and its check path
 * /proc/PID (under the ctx's procfs root) to ret_check, for a record's
 * holder and holder_check. Such a holder lives while that process runs,
 * whatever else then has its pid (an older prealloc, which knows only the
 * check path, keeps it while /proc/PID exists). 0; -ESRCH without such a
 * process; -ENAMETOOLONG when a buffer or the record's 255 bytes are short.
 */
int prealloc_holder_process(struct prealloc_ctx *ctx, const char *prefix, int pid,
			    char *ret_holder, size_t holder_len, char *ret_check,
			    size_t check_len);

/* ---- topology ----------------------------------------------------------- */

struct prealloc_node_info {
	size_t size;		/* sizeof(struct prealloc_node_info) */
	int node;
	int cpu_node;		/* node whose CPUs serve this one: itself unless borrowed */
	unsigned int nr_cpus;	/* allowed CPUs used for this node's workers */
	uint64_t mem_total;	/* bytes */
	uint64_t mem_free;	/* bytes */
	uint64_t hp2m_total;	/* 2 MiB hugepages in the node's pool */
	uint64_t hp2m_free;
	uint64_t hp1g_total;	/* 1 GiB hugepages in the node's pool */
	uint64_t hp1g_free;
};

struct prealloc_cpu_info {
	size_t size;		/* sizeof(struct prealloc_cpu_info) */
	/* x86: "GenuineIntel", "AuthenticAMD", ...; arm64: the implementer, "ARM", "Ampere", ... */
	char vendor[16];
	char model_name[64];	/* x86: from /proc/cpuinfo; arm64: from MIDR; may be empty */
	unsigned int family;	/* x86: display family; arm64: MIDR's implementer code */
	unsigned int model;	/* x86: display model; arm64: MIDR's part number */
	unsigned int stepping;	/* arm64: MIDR's variant << 4 | revision */
	uint64_t features;	/* PREALLOC_CPU_* bits usable by this process */
	uint64_t llc_bytes;	/* size of one last-level cache, 0 if unknown */
	/*
	 * Where llc_bytes came from: "sysfs", "cpuid leaf 4", "cpuid
	 * 0x8000001d", "family 0x1a's per-CCX L3" (a VM that hides the cache
	 * leaves), or "none (assumed 32 MiB)".
	 */
	char llc_source[48];
};

#define PREALLOC_CPU_SSE2 (UINT64_C(1) << 0)
#define PREALLOC_CPU_ERMS (UINT64_C(1) << 1)   /* enhanced REP MOVSB/STOSB */
#define PREALLOC_CPU_FSRM (UINT64_C(1) << 2)   /* fast short REP MOV */
#define PREALLOC_CPU_AVX2 (UINT64_C(1) << 3)   /* with OS ymm state */
#define PREALLOC_CPU_AVX512F (UINT64_C(1) << 4) /* with OS zmm state */
#define PREALLOC_CPU_CLZERO (UINT64_C(1) << 5)
#define PREALLOC_CPU_MOVDIR64B (UINT64_C(1) << 6)
#define PREALLOC_CPU_DCZVA (UINT64_C(1) << 7)  /* arm64: DC ZVA allowed (DCZID_EL0.DZP clear) */
#define PREALLOC_CPU_MOPS (UINT64_C(1) << 8)   /* arm64: FEAT_MOPS, SETP/SETM/SETE (HWCAP2) */

/* Online nodes with memory, ascending; returns the count (may exceed max). */
int prealloc_nodes(struct prealloc_ctx *ctx, int *ret_nodes, unsigned int max);
int prealloc_node_info(struct prealloc_ctx *ctx, int node, struct prealloc_node_info *ret_info);
/*
 * The nodes a region with nr_nodes 0 is placed on: those of the calling
 * thread's memory policy (bind, preferred, preferred-many, interleave, as
 * numactl sets), else every node with memory. Returns the count.
 */
int prealloc_default_nodes(struct prealloc_ctx *ctx, int *ret_nodes, unsigned int max);
/* CPUs the workers for node use; returns the count (may exceed max). */
int prealloc_node_cpus(struct prealloc_ctx *ctx, int node, int *ret_cpus, unsigned int max);
int prealloc_cpu_info(struct prealloc_ctx *ctx, struct prealloc_cpu_info *ret_info);
/* hugetlbfs mount point for page_size, NULL when none is mounted. */
const char *prealloc_hugetlbfs_mount(struct prealloc_ctx *ctx, uint64_t page_size);

/*
 * ---- 0.1's names (docs/abi.md: a renamed symbol) ---------------------------
 *
 * 0.1 set the holder-alive callback with prealloc_ctx_set_holder_check, the
 * name of a record's check path (holder_check). Code written against 0.1
 * builds unchanged, and the library exports the old name at PREALLOC_0.1 as
 * an alias of the same code.
 */
#define prealloc_ctx_set_holder_check prealloc_ctx_set_holder_alive
void prealloc_ctx_set_holder_check(struct prealloc_ctx *ctx, prealloc_holder_fn fn,
				   void *userdata);

#ifdef __cplusplus
}
#endif
#endif
