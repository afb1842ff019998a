/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: make virtual-machine memory ready before the guest starts.
 *
 * Conventions:
 *  - every function returns 0 (or a count) on success and a negative errno on
 *    failure; nothing here prints, exits or raises signals;
 *  - handles are opaque; options and result structs start with their own
 *    size so the ABI can grow (a smaller, older struct is zero-extended; a
 *    larger, newer one must have an all-zero tail or the call fails -E2BIG);
 *  - output parameters are named ret_* and come last.
 */
#ifndef PREALLOC_H
#define PREALLOC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PREALLOC_VERSION_MAJOR 0
#define PREALLOC_VERSION_MINOR 1

#define PREALLOC_PAGE_4K (UINT64_C(4) << 10)
#define PREALLOC_PAGE_2M (UINT64_C(2) << 20)
#define PREALLOC_PAGE_1G (UINT64_C(1) << 30)

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
 * tell (the record is then kept). See prealloc_ctx_set_holder_check().
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
 * How prealloc_pool_gc() learns whether a named holder still lives. Without
 * one, a holder is alive while its record's check path exists (when it has
 * one) and until its expiry time (when it has one); with neither, forever.
 */
void prealloc_ctx_set_holder_check(struct prealloc_ctx *ctx, prealloc_holder_fn fn,
				   void *userdata);

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
	char vendor[16];	/* "GenuineIntel", "AuthenticAMD", ... */
	char model_name[64];	/* from /proc/cpuinfo, may be empty */
	unsigned int family;	/* display family */
	unsigned int model;	/* display model */
	unsigned int stepping;
	uint64_t features;	/* PREALLOC_CPU_* bits usable by this process */
	uint64_t llc_bytes;	/* size of one last-level cache, 0 if unknown */
};

#define PREALLOC_CPU_SSE2 (UINT64_C(1) << 0)
#define PREALLOC_CPU_ERMS (UINT64_C(1) << 1)   /* enhanced REP MOVSB/STOSB */
#define PREALLOC_CPU_FSRM (UINT64_C(1) << 2)   /* fast short REP MOV */
#define PREALLOC_CPU_AVX2 (UINT64_C(1) << 3)   /* with OS ymm state */
#define PREALLOC_CPU_AVX512F (UINT64_C(1) << 4) /* with OS zmm state */
#define PREALLOC_CPU_CLZERO (UINT64_C(1) << 5)
#define PREALLOC_CPU_MOVDIR64B (UINT64_C(1) << 6)

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
	 * removed since is not made anew and left behind.
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

/* ---- jobs --------------------------------------------------------------- */

enum prealloc_op {
	PREALLOC_OP_POPULATE = 0, /* first fault-in: the kernel zeroes */
	PREALLOC_OP_CLEAR,	  /* re-zero resident memory with a store kernel */
	PREALLOC_OP_VERIFY,	  /* read back zeroes and placement only */
	PREALLOC_OP_NONE,	  /* nothing in parallel: a DMA map of memory as it is */
};

enum prealloc_job_flags {
	PREALLOC_JOB_VERIFY = 1u << 0,	   /* after the op, check zeroes and placement: a verdict */
	PREALLOC_JOB_NO_PLACEMENT = 1u << 1, /* skip the move_pages placement query */
	PREALLOC_JOB_TOUCH = 1u << 2,	   /* force the touch fallback (tests) */
	PREALLOC_JOB_NO_PIN = 1u << 3,	   /* do not pin workers to node CPUs */
	PREALLOC_JOB_IDLE = 1u << 4,	   /* workers run SCHED_IDLE (else nice 19): background */
};

enum prealloc_method {
	PREALLOC_METHOD_POPULATE_WRITE = 0, /* MADV_POPULATE_WRITE */
	PREALLOC_METHOD_TOUCH,		    /* one write per page, SIGBUS guarded */
	PREALLOC_METHOD_CLEAR,		    /* a clear kernel, named in clear_kernel */
	PREALLOC_METHOD_NONE,		    /* VERIFY */
};

struct prealloc_job_opts {
	size_t size;		    /* sizeof(struct prealloc_job_opts) */
	int op;			    /* enum prealloc_op */
	unsigned int flags;	    /* enum prealloc_job_flags */
	unsigned int threads;	    /* per node; 0: every allowed CPU of the node */
	uint64_t chunk_size;	    /* 0: automatic */
	const char *clear_kernel;   /* CLEAR: kernel name, NULL or "auto" to select */
	/*
	 * Where completion goes besides the eventfd: the caller's io_uring
	 * (see "completion" below). NULL: the eventfd alone. Read at start only.
	 */
	const struct prealloc_completion *completion;
	/*
	 * Bytes per second per node, the op's writes and the check's reads
	 * together; 0: as fast as the memory goes. Workers sleep between steps
	 * to stay under it, so that a background job leaves bandwidth to others.
	 */
	uint64_t max_rate;
};

struct prealloc_node_report {
	size_t size;		/* sizeof(struct prealloc_node_report) */
	int node;
	unsigned int threads;
	uint64_t bytes;		/* bytes of this node's extents */
	uint64_t bytes_done;
	double seconds;		/* this node's workers: release to last chunk done */
	uint64_t pages_on_node;
	uint64_t pages_off_node;   /* resident elsewhere */
	uint64_t pages_missing;	   /* not resident at all */
	uint64_t cpu_samples_off;  /* worker chunk starts seen on a CPU outside the node's set */
	uint64_t cpus_seen[PREALLOC_MAX_CPUS / 64]; /* CPUs this node's workers ran on */
	/*
	 * Bytes of this node's extents mapped by huge pages after the op: all
	 * of them for hugetlb; for anonymous THP and FILE/MEMFD regions made
	 * with PREALLOC_REGION_THP, what /proc/self/smaps counts
	 * (AnonHugePages, ShmemPmdMapped, FilePmdMapped); 0 for 4K pages.
	 */
	uint64_t huge_bytes;
};

struct prealloc_report {
	size_t size;		/* sizeof(struct prealloc_report) */
	int op;
	int method;		/* enum prealloc_method */
	char clear_kernel[24];	/* CLEAR: kernel used, or a probe's pair ("c/avx2_nt") */
	uint64_t bytes;
	uint64_t bytes_done;
	uint64_t page_size;
	double seconds;		/* wall time of the op (release to last worker) */
	double verify_seconds;	/* placement query + zero check */
	unsigned int nr_nodes;
	unsigned int threads;	/* all nodes */
	int error;		/* first error, negative errno, 0 if none */
	int error_node;
	uint64_t error_offset;	/* region offset of the first error */
	uint64_t nonzero_offset; /* VERIFY: first non-zero byte, UINT64_MAX if none */
	int cancelled;
	int notify;		/* enum prealloc_notify: the path the job's events took */
	/*
	 * Why io_uring was not used, or stopped being used mid-job (the path
	 * then fell back to EVENTFD): negative errno; 0 when it was used or
	 * never asked for. -EOPNOTSUPP: built without liburing, or no path allowed.
	 */
	int notify_error;
	/*
	 * CLEAR: bytes cleared with cached stores; the rest of bytes_done had
	 * NT stores. With a probe's pair, how each piece went.
	 */
	uint64_t clear_cached_bytes;
};

/* ---- completion ----------------------------------------------------------
 *
 * A job signals through its eventfd (readable once done) and, when
 * prealloc_job_opts.completion names the caller's io_uring, by posting CQEs
 * into that ring with IORING_OP_MSG_RING: the caller's event loop needs no
 * thread and no extra fd. docs/completion.md has the details. Each CQE is
 *
 *   what        cqe->user_data        cqe->res
 *   node done   user_data_node        the node number (>= 0)    (COMPLETION_NODES)
 *   progress    user_data_progress    MiB done so far, all nodes (progress_step)
 *   end         user_data_end         0, or the job's negative errno; -ECANCELED
 *
 * cqe->flags is 0. Exactly one end CQE is posted, last, after the flow
 * settled (prealloc_job_done() is 1 then; prealloc_job_wait() returns at
 * once with res). Node-done CQEs come once per node; progress CQEs at most
 * once per progress_step bytes, res ascending. A node's failure comes with
 * the end CQE (the report's error_node says where).
 *
 * Paths (enum prealloc_notify), chosen at start, first allowed first:
 * the ringless send (io_uring_register(-1, IORING_REGISTER_SEND_MSG_RING),
 * Linux 6.13+), then a small ring the job owns, else the eventfd. Where
 * io_uring cannot be used (no kernel support, a seccomp filter, the
 * kernel.io_uring_disabled sysctl, a build without liburing) the same
 * (user_data, res) events queue in the job: its eventfd turns readable at
 * each, and prealloc_job_event() returns them in order. A post that fails
 * mid-job (the ring went away, a sandbox applied since) moves the rest of
 * the job's events to that queue. The report's notify / notify_error say
 * which path was used and why not io_uring.
 *
 * The job keeps a duplicate of ring_fd until prealloc_job_free: a ring the
 * caller closes early stays alive until then, its CQEs unseen (the
 * eventfd still fires at the end). Rings made with IORING_SETUP_SINGLE_ISSUER
 * and IORING_SETUP_DEFER_TASKRUN are supported: a DEFER_TASKRUN ring sees
 * the CQE only when its owner enters the kernel to wait or get events
 * (io_uring_wait_cqe, io_uring_get_events), not by peeking; a full CQ ring
 * keeps it on the kernel's overflow list until the owner makes room.
 */
enum prealloc_notify {
	PREALLOC_NOTIFY_EVENTFD = 0,	   /* the eventfd and prealloc_job_event() */
	PREALLOC_NOTIFY_URING_PRIVATE_RING, /* MSG_RING submitted on a ring the job owns */
	PREALLOC_NOTIFY_URING_REGISTERED,  /* MSG_RING by io_uring_register, no ring of ours */
};

enum prealloc_completion_flags {
	PREALLOC_COMPLETION_NODES = 1u << 0,	     /* a CQE per node done */
	PREALLOC_COMPLETION_NO_REGISTERED = 1u << 1,  /* never the ringless send */
	PREALLOC_COMPLETION_NO_PRIVATE_RING = 1u << 2, /* never a ring of the job's own */
	PREALLOC_COMPLETION_EVENTFD = 1u << 3,	     /* no io_uring at all: events queue */
};

struct prealloc_completion {
	size_t size;		/* sizeof(struct prealloc_completion) */
	int ring_fd;		/* the caller's io_uring; -1: events queue (eventfd path) */
	unsigned int flags;	/* enum prealloc_completion_flags */
	uint64_t user_data_end;
	uint64_t user_data_node;	/* with PREALLOC_COMPLETION_NODES */
	uint64_t user_data_progress;	/* with progress_step */
	uint64_t progress_step;		/* bytes between progress CQEs; 0: none */
};

/*
 * Verify (PREALLOC_JOB_VERIFY, or PREALLOC_OP_VERIFY) is a verdict: a job
 * that reads a non-zero byte fails with -EBADMSG (report error -EBADMSG,
 * error_offset and nonzero_offset the first non-zero byte's region offset,
 * error_node its node); else one that finds pages off their node or not
 * resident fails with -EXDEV (error_node the first such node), unless the
 * region was made with PREALLOC_REGION_ADOPT_PLACEMENT (extents of node -1
 * never count) or the job has PREALLOC_JOB_NO_PLACEMENT.
 *
 * opts->chunk_size, when not 0, must be a multiple of the region's page
 * size and at most its length (-EINVAL otherwise).
 *
 * Starts workers and returns at once. The region must outlive the job.
 * Completion: prealloc_job_wait(), poll prealloc_job_eventfd(), or a CQE in
 * the caller's io_uring (opts->completion; -EBADF: ring_fd is not open).
 */
int prealloc_job_start(struct prealloc_region *region, const struct prealloc_job_opts *opts,
		       struct prealloc_job **ret_job);
/* Bytes done so far, in total and (optionally) for one node. */
int prealloc_job_progress(struct prealloc_job *job, uint64_t *ret_done, uint64_t *ret_total);
int prealloc_job_node_progress(struct prealloc_job *job, int node, uint64_t *ret_done,
			       uint64_t *ret_total);
/* Nodes the job works on, in report order; returns the count (may exceed max). */
int prealloc_job_node_count(struct prealloc_job *job, int *ret_nodes, unsigned int max);
/*
 * Workers stop within one step (16 MiB, or one page when pages are larger)
 * of where they are; wait still must be called.
 */
int prealloc_job_cancel(struct prealloc_job *job);
/*
 * An eventfd that turns readable when the job is done (and, on the
 * EVENTFD path with a completion given, at each queued event). Owned by
 * the job.
 */
int prealloc_job_eventfd(struct prealloc_job *job);
/*
 * The next queued event of the EVENTFD path (see "completion"), as its CQE
 * would have carried it: returns 1 with *ret_user_data and *ret_res set, 0
 * when none is queued. Progress events not yet taken are merged into one.
 */
int prealloc_job_event(struct prealloc_job *job, uint64_t *ret_user_data, int *ret_res);
/*
 * The path the job's events take now (enum prealloc_notify); EVENTFD once
 * a post failed mid-job.
 */
int prealloc_job_notify(struct prealloc_job *job);
/* 1 when done, 0 while running. */
int prealloc_job_done(struct prealloc_job *job);
/*
 * Joins the workers; returns the job's error (0 or negative errno). Safe
 * from several threads at once: one joins, the others return when it has.
 */
int prealloc_job_wait(struct prealloc_job *job);
int prealloc_job_report(struct prealloc_job *job, struct prealloc_report *ret_report);
int prealloc_job_node_report(struct prealloc_job *job, unsigned int index,
			     struct prealloc_node_report *ret_report);
/*
 * Cancels and waits if still running, then frees. Call it exactly once,
 * after every other thread is done with the job: a second call that still
 * finds the job's memory (two threads freeing at once) sees the poisoned
 * handle and does nothing, but a call after the memory is gone cannot be
 * detected.
 */
void prealloc_job_free(struct prealloc_job *job);

/* Synchronous wrapper: start + wait + report. ret_report may be NULL. */
int prealloc_run(struct prealloc_region *region, const struct prealloc_job_opts *opts,
		 struct prealloc_report *ret_report);

/* ---- helpers ------------------------------------------------------------ */

/*
 * Parses "512M", "1G", "4GiB", "4096"; K/M/G/T are binary (1024) multiples.
 * -EINVAL on garbage, -ERANGE on overflow.
 */
int prealloc_parse_size(const char *s, uint64_t *ret_bytes);

/* ---- clear kernels ------------------------------------------------------ */

/*
 * Kernels: "avx2_nt", "avx512_nt", "clzero", "movnti" (non-temporal stores),
 * "rep_stosb", "c" (cached stores). Automatic selection ("auto" or NULL)
 * uses, in order: the ctx's calibration if it was measured on this CPU
 * model; cached stores where NT stores are known not to be faster; cached
 * stores (memset) when the footprint (bytes per worker x workers) is at
 * most the cached limit (half the last-level cache, at most 8 MiB); a
 * probe up to the probe limit (twice the LLC, at most 128 MiB): each piece
 * is cleared by whichever of memset and the best NT kernel is faster on
 * that memory at that moment, named "c/avx2_nt" and so on (such a name can
 * also be given as a kernel); else the best NT kernel this CPU has
 * (docs/kernels.md says why).
 */

/* Kernels usable on this CPU, best first; returns the count (may exceed max). */
int prealloc_clear_kernels(struct prealloc_ctx *ctx, const char **ret_names, unsigned int max);
/*
 * The kernel (or probe pair) automatic selection picks for size bytes per
 * worker and threads workers; ret_why (may be NULL when why_len is 0) gets
 * a short reason. *ret_name is a static string.
 */
int prealloc_clear_choose(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads,
			  const char **ret_name, char *ret_why, size_t why_len);
/*
 * Zeroes [addr, addr + len) on the calling thread; any alignment. kernel
 * NULL or "auto" selects by the built-in rules only (there is no ctx, so no
 * calibration); -ENOENT unknown name, -EOPNOTSUPP not on this CPU (or not
 * built). Thread-safe.
 */
int prealloc_clear_range(void *addr, size_t len, const char *kernel);

/*
 * Calibration: per size class, the kernel measured fastest here (prealloc
 * bench). A class covers footprints up to max_bytes; classes ascend and the
 * last also covers anything larger. Each ctx has its own: the first
 * automatic selection on a ctx that has not loaded, saved or unloaded one
 * reads the default file, if present; one measured on another CPU (or
 * unreadable) is ignored and said once through the ctx's log at
 * PREALLOC_LOG_INFO.
 */
#define PREALLOC_CALIBRATION_CLASSES 8

struct prealloc_calibration_class {
	uint64_t max_bytes;
	char kernel[24];	/* a kernel, or a probe's pair ("c/avx2_nt") */
	double gbps;		/* measured, informational */
};

struct prealloc_calibration {
	size_t size;		/* sizeof(struct prealloc_calibration) */
	unsigned int nr_classes;
	struct prealloc_calibration_class classes[PREALLOC_CALIBRATION_CLASSES];
};

/*
 * The default file: $PREALLOC_CALIBRATION (an absolute path) if set, else
 * /var/lib/prealloc/calibration as root, else the user's cache dir.
 */
int prealloc_calibration_path(char *ret_path, size_t len);
/*
 * Stores cal as measured on this CPU at path (NULL: the default file, its
 * directory created) and makes it the ctx's. -EINVAL: unknown kernel, classes
 * not ascending.
 */
int prealloc_calibration_save(struct prealloc_ctx *ctx, const struct prealloc_calibration *cal,
			      const char *path);
/*
 * Loads path (NULL: the default file) and makes it the ctx's; ret_cal may be
 * NULL. -ENOENT: no file; -ESTALE: measured on another CPU, not used;
 * -EINVAL: malformed.
 */
int prealloc_calibration_load(struct prealloc_ctx *ctx, const char *path,
			      struct prealloc_calibration *ret_cal);
/* Drops the ctx's calibration: its automatic selection uses the built-in rules. */
int prealloc_calibration_unload(struct prealloc_ctx *ctx);

/*
 * Measuring the clear kernels (`prealloc bench`): each kernel single-
 * threaded at each size, and at a large size for each thread count, through
 * the job engine (a MAPPED region over one anonymous THP buffer, written
 * once before timing; a sample's time is the job's, from the gate opening
 * to the last worker, so creating threads is not timed; small sizes are
 * cleared repeatedly so each sample clears at least 64 MiB; every timed
 * pass follows an untimed pass of ordinary stores over the same bytes on
 * the same CPU, worker i on the node's i-th CPU). Kernels are
 * interleaved within each repetition; each figure is the median. The
 * calibration built from it takes, per measured size, the winner up to
 * the geometric middle with the next size (the probe's pair where auto
 * ran one and came within 0.95 of the fastest kernel), and for anything
 * larger the kernel whose worst ratio to the best over the thread counts
 * is highest.
 */
#define PREALLOC_CALIBRATE_SIZES 7
#define PREALLOC_CALIBRATE_THREADS 16
#define PREALLOC_CALIBRATE_KERNELS 8
#define PREALLOC_CALIBRATE_REPEAT_MAX 101
/*
 * repeat 0: each point takes at least MIN repetitions, then more until
 * auto's paired ratio to the best kernel is known to PRECISION (its
 * median's standard error, estimated from the ratios' spread), at most MAX.
 */
#define PREALLOC_CALIBRATE_REPEAT_AUTO_MIN 7
#define PREALLOC_CALIBRATE_REPEAT_AUTO_MAX 31
#define PREALLOC_CALIBRATE_PRECISION 0.01
#define PREALLOC_CALIBRATE_WRITES_MAX 4

enum prealloc_calibrate_flags {
	PREALLOC_CALIBRATE_SAVE = 1u << 0, /* save the calibration (path) and make it the ctx's */
};

struct prealloc_calibrate_opts {
	size_t size;		/* sizeof(struct prealloc_calibrate_opts) */
	unsigned int flags;	/* enum prealloc_calibrate_flags */
	/*
	 * 0: from LLC/4 or half the cached limit (the cached limit: half the
	 * LLC, at most 8 MiB), whichever is smaller, doubling up to 8x LLC
	 * (at most 6, half the free memory)
	 */
	unsigned int nr_sizes;
	uint64_t sizes[PREALLOC_CALIBRATE_SIZES];	/* single-threaded, at least 4 KiB */
	unsigned int nr_threads; /* 0: 1, 2, 4, ... and every allowed CPU */
	unsigned int threads[PREALLOC_CALIBRATE_THREADS];
	uint64_t large_size;	/* the by-threads size; 0: 1 GiB or the largest size */
	unsigned int nr_kernels; /* 0: every kernel usable here; at most KERNELS - 1 */
	const char *kernels[PREALLOC_CALIBRATE_KERNELS];
	unsigned int repeat;	/* samples per figure; 0: as each point needs (REPEAT_AUTO_*) */
	const char *path;	/* SAVE: NULL for the default file */
	/*
	 * The state every timed pass meets: the buffer drained from the caches
	 * by NT stores, then written this many times by ordinary stores
	 * (0: 1, written once; 2: written again, which CPUs keep in the cache
	 * as reused data). At most PREALLOC_CALIBRATE_WRITES_MAX.
	 */
	unsigned int writes;
};

struct prealloc_calibrate_result {
	size_t size;		/* sizeof(struct prealloc_calibrate_result) */
	int bad_kernel;		/* -ENOENT/-EOPNOTSUPP: index into opts.kernels, else -1 */
	uint64_t buffer_bytes;	/* memory the measurement needs (-ENOMEM: more than ...) */
	uint64_t buffer_limit;	/* ... half the memory available */
	unsigned int repeat;	/* opts.repeat, or REPEAT_AUTO_MIN: the fewest a point took */
	unsigned int repeat_max; /* opts.repeat, or REPEAT_AUTO_MAX */
	/* The kernels measured, then "auto": what the built-in rules run at each point. */
	unsigned int nr_kernels;
	char kernels[PREALLOC_CALIBRATE_KERNELS][24];
	unsigned int nr_sizes;	/* ascending */
	uint64_t sizes[PREALLOC_CALIBRATE_SIZES];
	double size_gbps[PREALLOC_CALIBRATE_SIZES][PREALLOC_CALIBRATE_KERNELS];
	char size_auto[PREALLOC_CALIBRATE_SIZES][24];	/* built-in rules' pick (the auto column) */
	char size_calibrated[PREALLOC_CALIBRATE_SIZES][24]; /* the pick under calibration */
	unsigned int nr_threads; /* ascending */
	unsigned int threads[PREALLOC_CALIBRATE_THREADS];
	uint64_t large_size;
	double threads_gbps[PREALLOC_CALIBRATE_THREADS][PREALLOC_CALIBRATE_KERNELS];
	char threads_auto[PREALLOC_CALIBRATE_THREADS][24];
	char threads_calibrated[PREALLOC_CALIBRATE_THREADS][24];
	struct prealloc_calibration calibration; /* built from the figures above */
	int saved;		/* SAVE: 1 when stored */
	/*
	 * How close each pick comes to the best kernel (the highest median):
	 * the median over the repetitions of the pick's speed divided by the
	 * best's in the same repetition (above 1: the pick beat it, as a
	 * probe mixing two kernels can; 0: the pick was not among the kernels
	 * measured). Within a repetition the kernels run back to back, so the
	 * machine's drift between repetitions cancels, which a ratio of
	 * medians keeps.
	 */
	double size_auto_ratio[PREALLOC_CALIBRATE_SIZES];
	double size_calibrated_ratio[PREALLOC_CALIBRATE_SIZES];
	double threads_auto_ratio[PREALLOC_CALIBRATE_THREADS];
	double threads_calibrated_ratio[PREALLOC_CALIBRATE_THREADS];
	/*
	 * How noisy the machine was while measuring: per point and kernel, the
	 * interquartile range of the samples over their median; the median of
	 * those (0.1: samples of one kernel spread by 10 %). Ratios closer to
	 * 1 than this are within the noise.
	 */
	double spread;
	unsigned int writes;	/* opts.writes as used */
	/*
	 * The share of auto's timed bytes cleared by cached stores (1: all by
	 * memset or another cached kernel, 0: all by NT stores): where auto
	 * is a probe, how its pieces went.
	 */
	double size_auto_cached[PREALLOC_CALIBRATE_SIZES];
	double threads_auto_cached[PREALLOC_CALIBRATE_THREADS];
	/* The repetitions each point took (repeat to repeat_max). */
	unsigned int size_repeat[PREALLOC_CALIBRATE_SIZES];
	unsigned int threads_repeat[PREALLOC_CALIBRATE_THREADS];
};

/*
 * Measures as described above and builds ret->calibration; with SAVE also
 * stores it (prealloc_calibration_save). -EINVAL bad options; -ENOENT /
 * -EOPNOTSUPP a kernel unknown / not usable here (bad_kernel); -ENOMEM the
 * buffer exceeds half the available memory; a save error is returned with
 * the measurements in ret complete. Runs for seconds; uses every CPU asked.
 */
int prealloc_calibrate(struct prealloc_ctx *ctx, const struct prealloc_calibrate_opts *opts,
		       struct prealloc_calibrate_result *ret);

/* ---- clearing a file (`prealloc clear`) ---------------------------------- */

enum prealloc_clear_file_flags {
	PREALLOC_CLEAR_VERIFY = 1u << 0, /* read every byte back; -EBADMSG when one is not zero */
	PREALLOC_CLEAR_FORCE = 1u << 1,	 /* clear a file not on hugetlbfs/tmpfs, or one mapped */
};

/* The check or step that failed: prealloc_clear_file_info.error_step. */
enum prealloc_clear_file_step {
	PREALLOC_CLEAR_STEP_NONE = 0,
	PREALLOC_CLEAR_STEP_KERNEL,	/* opts.kernel: -ENOENT unknown, -EOPNOTSUPP not here */
	PREALLOC_CLEAR_STEP_LOOKUP,	/* lstat or statfs failed: their errno (-ENOENT, ...) */
	PREALLOC_CLEAR_STEP_SYMLINK,	/* -ELOOP: a symbolic link, refused even with FORCE */
	PREALLOC_CLEAR_STEP_TYPE,	/* -EINVAL: not a regular file */
	PREALLOC_CLEAR_STEP_FILESYSTEM, /* -EMEDIUMTYPE: not on hugetlbfs or tmpfs (no FORCE) */
	PREALLOC_CLEAR_STEP_MAPPERS,	/* -EBUSY: mapper_pid maps it (no FORCE); or /proc unreadable */
	PREALLOC_CLEAR_STEP_OPEN,	/* open failed; -ESTALE: another file took its place */
	PREALLOC_CLEAR_STEP_MAP,	/* mapping: -ENOMEM (hugetlbfs: holes cannot be backed), -ESTALE */
	PREALLOC_CLEAR_STEP_START,	/* the workers could not start */
	PREALLOC_CLEAR_STEP_CLEAR,	/* a worker failed (the job's report says where), -ECANCELED;
					 * -ENXIO: the file shrank under the clear (truncated) */
	PREALLOC_CLEAR_STEP_SWAPPED,	/* clearing swapped-out tmpfs pages */
	PREALLOC_CLEAR_STEP_TAIL,	/* writing the partial last page; -ENXIO: it was cut away */
	PREALLOC_CLEAR_STEP_SYNC,	/* msync/fsync of a file not in memory */
	PREALLOC_CLEAR_STEP_VERIFY,	/* -EBADMSG: not zero at nonzero_offset */
};

struct prealloc_clear_file_opts {
	size_t size;		/* sizeof(struct prealloc_clear_file_opts) */
	unsigned int flags;	/* enum prealloc_clear_file_flags */
	unsigned int threads;	/* per node; 0: every allowed CPU of the node */
	const char *kernel;	/* clear kernel; NULL or "auto": chosen under the ctx's calibration */
	/* Completion of the job into the caller's io_uring, as in prealloc_job_opts. */
	const struct prealloc_completion *completion;
};

struct prealloc_clear_file_info {
	size_t size;		/* sizeof(struct prealloc_clear_file_info) */
	int error_step;		/* enum prealloc_clear_file_step; 0 on success */
	pid_t mapper_pid;	/* another process mapping the file (-EBUSY, or FORCE), 0 none */
	char mapper_comm[64];
	unsigned int unreadable; /* processes whose mappings could not be checked */
	unsigned long fs_magic;	/* statfs f_type: HUGETLBFS_MAGIC, TMPFS_MAGIC, ... */
	uint64_t page_size;	/* the file's page size (hugetlbfs), else 4 KiB */
	uint64_t length;	/* file size, bytes */
	uint64_t tail_bytes;	/* a partial last page, written with pwrite */
	uint64_t unbacked_bytes; /* hugetlbfs holes that got pages the kernel zeroed */
	uint64_t hole_bytes;	/* tmpfs holes: not resident, read as zero, skipped */
	uint64_t swapped_bytes;	/* tmpfs pages swapped out, read back in and cleared */
	uint64_t nonzero_offset; /* VERIFY: first non-zero byte of the file, UINT64_MAX none */
	char kernel[24];	/* the kernel used; "" when only write(2) ran */
	char kernel_why[160];	/* why automatic selection chose it; "" when named */
};

/*
 * Re-zeroes the file at path in place: each resident page by workers on
 * the node it sits on, after checking it is the file meant (see the steps
 * above), then swapped-out tmpfs pages, the partial last page (pwrite), and
 * msync + fsync for a file not in memory. Returns at once with the job;
 * *ret_job is NULL (and the work done) when the file has no whole page.
 * The job owns the mapping, descriptor and region it made. ret_info (may
 * be NULL) says what was found, and on failure which check failed; errors
 * are negative errno as listed with the steps. Clearing is idempotent: an
 * interrupted (cancelled) file is finished by clearing it again.
 */
int prealloc_clear_file_start(struct prealloc_ctx *ctx, const char *path,
			      const struct prealloc_clear_file_opts *opts,
			      struct prealloc_job **ret_job,
			      struct prealloc_clear_file_info *ret_info);
/*
 * The flow's result and info, once the job is done (waits for it): 0, or
 * the negative errno of the step that failed (-EBADMSG: VERIFY found a
 * non-zero byte, in the pages, the swapped ones or the tail).
 */
int prealloc_clear_file_info(struct prealloc_job *job, struct prealloc_clear_file_info *ret_info);
/* Synchronous: start + wait + info + report + free. ret_info, ret_report may be NULL. */
int prealloc_clear_file(struct prealloc_ctx *ctx, const char *path,
			const struct prealloc_clear_file_opts *opts,
			struct prealloc_clear_file_info *ret_info, struct prealloc_report *ret_report);

/* ---- admission and pools ----------------------------------------------- */

/*
 * Admission proves a request fits before any page is touched: per node, the
 * free hugepages of the size minus what other prealloc runs reserved but
 * have not faulted yet (and, on one node, reservations of other programs),
 * the caller's hugetlb cgroup limit (v2 hugetlb.<size>.max), and for 4K/THP
 * the node's free memory. With PREALLOC_ADMIT_RESERVE it grows a short
 * node's pool instead of failing, in steps of max(1 GiB, 5% of the node),
 * after refusing at once what the node could never supply (CAPACITY).
 * Pool changes happen under the record
 * store's lock (<state dir>/lock) and are recorded in the store (see
 * "records" below) before they happen, so that concurrent runs never lose
 * an update and the growth can be given back exactly.
 */
struct prealloc_reservation;

enum prealloc_admit_flags {
	PREALLOC_ADMIT_RESERVE = 1u << 0,  /* grow short node pools to fit */
	PREALLOC_ADMIT_NO_CHECK = 1u << 1, /* tests only: reserve without checking capacity */
	PREALLOC_ADMIT_CANCEL_FD = 1u << 2, /* cancel_fd is set (0 is a valid fd, so a flag) */
	/*
	 * A node short of free pages takes none from READY warm files (which
	 * it otherwise cuts or removes first, before growing or refusing).
	 */
	PREALLOC_ADMIT_KEEP_WARM = 1u << 3,
};

enum prealloc_admit_reason {
	PREALLOC_ADMIT_OK = 0,
	PREALLOC_ADMIT_POOL,	/* the node's pool has too few free pages */
	PREALLOC_ADMIT_GLOBAL,	/* system-wide free pages minus reservations too few */
	PREALLOC_ADMIT_CGROUP,	/* the hugetlb cgroup limit leaves too few pages */
	PREALLOC_ADMIT_MEMORY,	/* 4K/THP: the node's free memory is too small */
	PREALLOC_ADMIT_GROW,	/* RESERVE: the kernel allocated fewer pages than asked */
	PREALLOC_ADMIT_LOCK,	/* the pool lock was not obtained in time */
	PREALLOC_ADMIT_ACCESS,	/* the pool or the state dir is not writable */
	PREALLOC_ADMIT_MEMCG,	/* 4K/THP: a memory cgroup limit leaves too little room */
	PREALLOC_ADMIT_FS,	/* the filesystem (a tmpfs or hugetlbfs size=) has too little room */
	/*
	 * RESERVE: the node cannot supply the pages at all: its free pool
	 * pages plus what its free and reclaimable memory could become, less a
	 * margin the host keeps (capacity_estimate, capacity_margin). Refused
	 * before any pool write.
	 */
	PREALLOC_ADMIT_CAPACITY,
	PREALLOC_ADMIT_CANCELED, /* cancel_fd turned readable waiting for the lock (node -1) or during growth (given back): -ECANCELED */
};

struct prealloc_admit_opts {
	size_t size;		/* sizeof(struct prealloc_admit_opts) */
	unsigned int flags;	/* enum prealloc_admit_flags */
	uint64_t page_size;	/* PREALLOC_PAGE_4K (also for THP), _2M or _1G */
	unsigned int nr_nodes;
	const int *nodes;
	const uint64_t *node_bytes; /* bytes still to fault on nodes[i] */
	unsigned int reserve_timeout_ms; /* RESERVE: compaction deadline; 0: 5000 */
	unsigned int lock_timeout_ms;	  /* 0: 30000 */
	const char *owner;	/* the file the pages are for, or a tag; NULL: set later */
	/*
	 * A named holder that outlives this process (e.g. "libvirt:UUID" for
	 * a domain whose hook reserves at prepare and exits): commit records
	 * the growth for it, and gc returns it only once the holder is gone
	 * (prealloc_ctx_set_holder_check, holder_check, holder_expires).
	 * NULL: the growth is held by the owner file.
	 */
	const char *holder;
	const char *holder_check;	/* a path that exists while the holder lives, or NULL */
	int64_t holder_expires;		/* CLOCK_REALTIME seconds after which it is gone, 0: never */
	/*
	 * With both: the holder lives while the path exists or until the
	 * expiry (a guest that has not started yet), and a claim with no file
	 * counts as reserved against other admissions until the path appears
	 * (the guest has mapped its pages).
	 */
	/*
	 * With PREALLOC_ADMIT_CANCEL_FD: polled (never read) while waiting for
	 * the store's lock and between growth steps; once readable (e.g. a
	 * signalfd with SIGINT pending) the wait ends, or the growth made so far
	 * is given back, and admission fails with -ECANCELED. The store's lock
	 * is held during growth, as for every pool change.
	 */
	int cancel_fd;
};

/* Why admission failed, with the numbers a message needs. Pages, or bytes for MEMORY, MEMCG, FS. */
struct prealloc_admit_result {
	size_t size;		/* sizeof(struct prealloc_admit_result) */
	int reason;		/* enum prealloc_admit_reason */
	int node;		/* the node that failed, -1 for a system-wide limit */
	uint64_t page_size;
	uint64_t needed;
	uint64_t available;	/* usable for this request */
	uint64_t pool_total;	/* the node's nr_hugepages */
	uint64_t pool_free;	/* the node's free_hugepages */
	uint64_t reserved_others; /* reserved by other runs, not faulted yet */
	uint64_t grow_requested;  /* GROW: nr_hugepages written */
	uint64_t grow_got;	  /* GROW: nr_hugepages read back */
	double grow_seconds;
	uint64_t added;		/* success: pages added to the pools for this request */
	char cgroup[256];	/* CGROUP, MEMCG: the limiting limit file; FS: the mount */
	/*
	 * CAPACITY, bytes: the node's estimated free memory (MemFree,
	 * Active(file), Inactive(file), SReclaimable of its meminfo; on one
	 * node at least MemAvailable) plus its usable free pool pages, and the
	 * margin kept for the host: max(256 MiB, 2% of the node's MemTotal,
	 * its share of vm.min_free_kbytes). available is in pages.
	 */
	uint64_t capacity_estimate;
	uint64_t capacity_margin;
	/*
	 * Pages taken from READY warm files of the node (prepared ahead for
	 * other guests) because its free pages were short, before any growth:
	 * warm_cut files cut to a smaller size, warm_removed removed. Their
	 * growth of the pool moved to this request (in added).
	 */
	uint64_t warm_pages;
	unsigned int warm_cut, warm_removed;
};

/*
 * Checks (and with RESERVE grows) every node of the request under the pool
 * lock and records an in-flight reservation. 4K requests are checked but
 * take no record. Errors: -ENOMEM short (pool, memory, node capacity,
 * growth), -ECANCELED cancel_fd turned readable waiting for the lock or during growth, -EDQUOT cgroup limit, -ETIMEDOUT lock, -EACCES/-EPERM pool not writable,
 * -ENODEV unknown node, -EBADMSG a corrupt record store; ret_result (may be NULL) says why.
 */
int prealloc_admit(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *opts,
		   struct prealloc_reservation **ret_resv, struct prealloc_admit_result *ret_result);
/* Names the file (or tag) holding the pages, once it exists. */
int prealloc_reservation_set_owner(struct prealloc_reservation *resv, const char *owner);
/*
 * The pages are faulted and held by the owner file (or the holder): the
 * record keeps only the growth, or the holder's claim. -EINVAL when the
 * reservation grew a pool but names neither a file (an absolute path) nor
 * a holder: nothing could ever give that growth back.
 */
int prealloc_reservation_commit(struct prealloc_reservation *resv);
/*
 * Drops the reservation and gives back the growth it made; call after the
 * owner's pages are freed. ret_returned (may be NULL): pages given back.
 */
int prealloc_reservation_rollback(struct prealloc_reservation *resv, uint64_t *ret_returned);
/* Rolls back unless committed, then frees the handle. */
void prealloc_reservation_free(struct prealloc_reservation *resv);
/*
 * Frees the handle and leaves its record as it is: for a caller whose
 * commit failed but who keeps the memory (a rollback would shrink the pool
 * under it). Once this process is gone, `prealloc_pool_gc` gives back the
 * growth of the record as far as its pages are free.
 */
void prealloc_reservation_abandon(struct prealloc_reservation *resv);

struct prealloc_pool_status {
	size_t size;		/* sizeof(struct prealloc_pool_status) */
	int node;
	uint64_t page_size;
	uint64_t total;		/* nr_hugepages */
	uint64_t free;		/* free_hugepages */
	uint64_t surplus;	/* surplus_hugepages */
	uint64_t reserved;	/* reserved by prealloc runs, not faulted yet */
	uint64_t added;		/* pages prealloc added, per the record store */
	unsigned int owners;	/* records with a share of this node and size */
};
int prealloc_pool_status(struct prealloc_ctx *ctx, int node, uint64_t page_size,
			 struct prealloc_pool_status *ret_status);

enum prealloc_ledger_state {
	PREALLOC_LEDGER_IN_FLIGHT = 0, /* a run is populating for the owner */
	PREALLOC_LEDGER_HELD,	       /* the owner holds the pages */
	PREALLOC_LEDGER_ORPHAN,	       /* owner gone; growth not yet given back */
};

struct prealloc_ledger_entry {
	size_t size;		/* sizeof(struct prealloc_ledger_entry) */
	int state;		/* enum prealloc_ledger_state */
	int node;
	uint64_t page_size;
	uint64_t pages;		/* pages the owner needs on the node */
	uint64_t added;		/* pages added to the pool for it */
	uint64_t outstanding;	/* IN_FLIGHT: pages not faulted yet */
	int pid;		/* IN_FLIGHT: the run */
	uint64_t dev, ino;	/* owner file identity, 0 if none */
	char owner[4096];
};
/*
 * The store's pool shares one by one (one per record and node), as the
 * ledger of version 0.1 listed them; -ENOENT past the end.
 */
int prealloc_ledger_entry(struct prealloc_ctx *ctx, unsigned int index,
			  struct prealloc_ledger_entry *ret_entry);
/*
 * Settles every record whose owner is gone: a run that died before its
 * file was ready (the file it created is removed: it never held a guest's
 * data; a file it adopted keeps its data), a file removed by hand, a named
 * holder that is gone (with its files), a release cut short. Their growth
 * goes back as far as the pages are free; the rest stays as ORPHAN. Ready
 * files and live owners are never touched. ret_entries: records settled.
 */
int prealloc_pool_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned, unsigned int *ret_entries);


/* ---- records ------------------------------------------------------------ */

/*
 * One store under the state directory holds everything prealloc owns: each
 * reservation (pool growth per node and page size, pages promised but not
 * yet faulted) and each file it prepares, with its state. A record is
 * written BEFORE the change it describes (before a pool grows, before the
 * file's first page is faulted), under one lock that is held only while the
 * store or a pool changes, never during populate. The store is one
 * versioned file rewritten whole (temp, fsync, rename, fsync of the
 * directory); a corrupt store is refused (-EBADMSG), never reset.
 */
enum prealloc_record_state {
	PREALLOC_RECORD_PREPARING = 0, /* a run is admitting or populating */
	PREALLOC_RECORD_READY,	       /* committed: the file (or holder) holds the pages */
	PREALLOC_RECORD_RELEASING,     /* a release began: the file goes, then the growth */
	PREALLOC_RECORD_ORPHAN,	       /* owner gone; growth not yet given back */
};

enum prealloc_record_owner {
	PREALLOC_OWNER_NONE = 0,	/* held by its file alone */
	PREALLOC_OWNER_RUN,	/* a process: pid + start time */
	PREALLOC_OWNER_HOLDER,	/* a named holder that outlives processes */
};

struct prealloc_record_info {
	size_t size;		/* sizeof(struct prealloc_record_info) */
	uint64_t id;
	int state;		/* enum prealloc_record_state */
	int owner;		/* enum prealloc_record_owner */
	int alive;		/* the owner lives (runs and holders), 1 or 0 */
	int pid;		/* RUN */
	char holder[256];	/* HOLDER */
	int has_file;
	int created;		/* the file was created by prealloc (else adopted, --reuse) */
	uint64_t file_size;
	uint64_t page_size;
	uint64_t pages;		/* hugepages the record needs, all nodes */
	uint64_t added;		/* hugepages added to pools for it, all nodes */
	uint64_t outstanding;	/* PREPARING: hugepages not faulted yet */
	char path[4096];	/* the file's final path, or "" */
	uint64_t dev, ino;	/* the file's identity as recorded (st_dev, st_ino); 0: not yet */
};
/* Record index of the store as it is now; -ENOENT past the end, -EBADMSG corrupt. */
int prealloc_record(struct prealloc_ctx *ctx, unsigned int index,
		    struct prealloc_record_info *ret_info);

/* ---- flows: prepare, release ------------------------------------------- */

#define PREALLOC_PAGE_AUTO UINT64_C(0)	/* 2M when it fits, else 4k: the reason is reported */
#define PREALLOC_PAGE_THP UINT64_C(1)	/* tmpfs with transparent hugepages */

/* "auto", "thp", "4k", "2M", "1G" for those page sizes, "?" for any other. */
const char *prealloc_page_name(uint64_t page_size);

enum prealloc_prepare_flags {
	PREALLOC_PREPARE_REUSE = 1u << 0,   /* adopt an existing file of the exact size */
	PREALLOC_PREPARE_RESERVE = 1u << 1, /* grow short hugepage pools (admission) */
	PREALLOC_PREPARE_VERIFY = 1u << 2,  /* fail unless every byte is zero and every page on its node */
	PREALLOC_PREPARE_CHOWN = 1u << 3,   /* give the file to uid:gid */
	PREALLOC_PREPARE_TOUCH = 1u << 4,   /* tests: the touch fallback */
	PREALLOC_PREPARE_NO_CHECK = 1u << 5, /* tests: admit without checking capacity */
	/*
	 * REUSE a file that fails the trust checks: owned by someone other
	 * than the caller, root or the CHOWN uid; readable or writable by group
	 * or others; more than one hard link; mapped or held open by another
	 * process (a guest's RAM would be shared with it).
	 */
	PREALLOC_PREPARE_FORCE = 1u << 6,
	PREALLOC_PREPARE_CANCEL_FD = 1u << 7, /* cancel_fd is set */
	PREALLOC_PREPARE_DIR_FD = 1u << 8,   /* dir_fd is path's directory (not with REUSE) */
};

struct prealloc_prepare_opts {
	size_t size;		/* sizeof(struct prealloc_prepare_opts) */
	unsigned int flags;	/* enum prealloc_prepare_flags */
	uint64_t page_size;	/* PREALLOC_PAGE_AUTO, _THP, _4K, _2M or _1G */
	uint64_t length;	/* bytes; 0 with node_bytes: their sum */
	/* Placement as in prealloc_region_opts; nr_nodes 0: the current policy's nodes. */
	unsigned int nr_nodes;
	const int *nodes;
	const uint64_t *node_bytes;
	/*
	 * The file. NULL: a new name "prealloc-node<N>-<size>-<random>" in dir,
	 * or (dir NULL) in the hugetlbfs mount of the page size or /dev/shm.
	 * The file is made and populated in the caller's private staging
	 * directory on the same mount (<mount root>/.prealloc, mode 0700;
	 * .prealloc-<uid> for a user other than root), given the CHOWN owner
	 * and linked at path only once it is ready (REUSE: in place).
	 */
	const char *path;
	const char *dir;
	unsigned int threads;	/* per node; 0: every allowed CPU of the node */
	unsigned int reserve_timeout_ms; /* 0: 5000 */
	unsigned int lock_timeout_ms;	  /* 0: 30000 */
	unsigned int uid, gid;	/* CHOWN */
	unsigned int mode;	/* permission bits of a created file; 0: 0600 */
	const char *holder;	/* as in prealloc_admit_opts; NULL: the file holds its growth */
	const char *holder_check;
	int64_t holder_expires;
	/* Completion of the job into the caller's io_uring, as in prealloc_job_opts. */
	const struct prealloc_completion *completion;
	/*
	 * With PREALLOC_PREPARE_CANCEL_FD: admission polls it while waiting for
	 * the store's lock and between pool growth steps
	 * (prealloc_admit_opts.cancel_fd); readable: the wait ends or the
	 * growth is given back, and prealloc_prepare_start fails with
	 * -ECANCELED at step ADMISSION (admit.reason CANCELED). The fd is never
	 * read: a signalfd keeps its signal for the caller.
	 */
	int cancel_fd;
	/*
	 * With PREALLOC_PREPARE_DIR_FD: the directory of path (absolute), as
	 * the caller opened it, e.g. without following a link at any step
	 * another user controls. The file is linked there, relative to this
	 * descriptor, whatever path's directories name meanwhile; path stays
	 * the name that is reported and recorded. Not with REUSE. The
	 * descriptor is duplicated: the caller may close it on return.
	 */
	int dir_fd;
};

/* The step of a flow that failed. */
enum prealloc_step {
	PREALLOC_STEP_NONE = 0,
	PREALLOC_STEP_REQUEST,	 /* the request itself: sizes, nodes, page size */
	PREALLOC_STEP_LOCATION,	 /* where the file goes: mounts, filesystem, existing file */
	PREALLOC_STEP_ADMISSION, /* capacity (details in admit) */
	PREALLOC_STEP_RECORD,	 /* the record store */
	PREALLOC_STEP_CREATE,	 /* the file and its mapping */
	PREALLOC_STEP_POPULATE,	 /* the workers (error_node, error_offset in the report) */
	PREALLOC_STEP_VERIFY,	 /* not zero (-EBADMSG) or pages off their node (-EXDEV) */
	PREALLOC_STEP_COMMIT,	 /* the file could not take its name, or the record its state */
};

struct prealloc_prepare_info {
	size_t size;		/* sizeof(struct prealloc_prepare_info) */
	int step;		/* enum prealloc_step that failed, NONE on success */
	int error;		/* negative errno, 0 */
	char path[4096];	/* the file */
	uint64_t page_size;	/* resolved: _4K, _2M, _1G or _THP */
	char page_reason[256];	/* why AUTO chose this size (or THP fell back), "" if nothing to say */
	int created;		/* 1: created by this run; 0: adopted (REUSE) */
	uint64_t resident_before; /* REUSE: bytes the file held before */
	uint64_t added;		/* hugepages this run added to pools */
	uint64_t record_id;
	char message[1024];	/* the failure in one line, for people ("" on success) */
	/* THP: bytes mapped by huge pages after populate, all nodes (per node: the job's node reports). */
	uint64_t huge_bytes;
	/* Success: the QEMU option that maps the file on its nodes (share=on, policy=bind). */
	char qemu_option[4608];
	/*
	 * ADMISSION: why, with its numbers. Last, so that if the admission
	 * result grows (it is sized too), nothing above moves.
	 */
	struct prealloc_admit_result admit;
};

/*
 * Prepares guest memory: resolves the page size and location, admits the
 * request (growing pools with RESERVE), records it (state PREPARING, this
 * process as owner), creates the file, then starts the workers and returns.
 * When the job finishes, before its completion is posted, it verifies
 * (VERIFY), commits (the file takes its name; the record turns READY) or
 * rolls back everything it made (file, pool growth, record) on failure or
 * cancel. A failure before the job starts returns its negative errno with
 * ret_info saying which step; ret_info may be NULL.
 */
int prealloc_prepare_start(struct prealloc_ctx *ctx, const struct prealloc_prepare_opts *opts,
			   struct prealloc_job **ret_job, struct prealloc_prepare_info *ret_info);
/* The outcome of a prepare job: waits for it (as prealloc_job_wait) if it still runs. */
int prealloc_prepare_info(struct prealloc_job *job, struct prealloc_prepare_info *ret_info);
/* Synchronous: start, wait, info and report (either may be NULL). */
int prealloc_prepare(struct prealloc_ctx *ctx, const struct prealloc_prepare_opts *opts,
		     struct prealloc_prepare_info *ret_info, struct prealloc_report *ret_report);

struct prealloc_release_info {
	size_t size;		/* sizeof(struct prealloc_release_info) */
	int removed;		/* the file was removed */
	uint64_t returned;	/* hugepages given back to the pools */
	uint64_t in_use;	/* hugepages kept as orphan growth: pages still in use */
	int pid;		/* -EBUSY: the run still preparing the file, or pinning it */
	int pinned;		/* -EBUSY: 1 when pid holds it DMA-mapped (prealloc_vfio_map) */
	/*
	 * Growth the record still claimed that its pool no longer held (an
	 * administrator wrote nr_hugepages down by hand): settled, not owed.
	 */
	uint64_t vanished;
	int warm;		/* -EBUSY: a warm file of the pool (prealloc_warm_give returns it) */
};

/*
 * Removes a file prealloc created, and gives back its pool growth; also a
 * file whose run died before it was ready. -ENOENT: not made by prealloc
 * (no record; adopted files are never removed); -ESTALE: its size changed
 * since; -EBUSY: a live run is still preparing it; -ELOOP: a symbolic link.
 */
int prealloc_release(struct prealloc_ctx *ctx, const char *path,
		     struct prealloc_release_info *ret_info);
/* Gives back what a named holder holds (its records); -ENOENT when none. */
int prealloc_release_holder(struct prealloc_ctx *ctx, const char *holder,
			    struct prealloc_release_info *ret_info);

/* ---- VFIO: DMA-map (pin) a region for a device (vfio/) -------------------
 *
 * A device passed through to a guest may DMA to any guest page, so all of
 * guest memory is pinned and mapped into the device's IOMMU before the guest
 * runs. Pinning memory that is not populated faults and zeroes every page
 * inside the pin, on one thread, under the container's lock; pinning memory
 * prealloc populated (or cleared) only walks present pages. Here the map is
 * the serial phase of one job after the parallel populate (or clear): "fault
 * every node in parallel, then pin" with one progress, cancel and completion.
 * docs/vfio.md says what is pinned when.
 *
 * Backends: a VFIO type1 container (the library opens one for a group or a
 * PCI device, or maps into the caller's). An iommufd IOAS is reserved in the
 * API (PREALLOC_VFIO_IOMMUFD) but not built: -EOPNOTSUPP (no kernel this
 * project tests on has CONFIG_IOMMUFD; see docs/vfio.md).
 *
 * A handle is used by one thread at a time, one map job at a time.
 */
struct prealloc_vfio;

enum prealloc_vfio_backend {
	PREALLOC_VFIO_TYPE1 = 0,	/* VFIO container, TYPE1v2 IOMMU (TYPE1 where v2 is missing) */
	PREALLOC_VFIO_IOMMUFD,		/* iommufd IOAS: reserved, -EOPNOTSUPP */
};

enum prealloc_vfio_flags {
	/* fd is the caller's container, its IOMMU already set; never closed here. */
	PREALLOC_VFIO_CALLER_FD = 1u << 0,
};

struct prealloc_vfio_opts {
	size_t size;		/* sizeof(struct prealloc_vfio_opts) */
	int backend;		/* enum prealloc_vfio_backend */
	unsigned int flags;	/* enum prealloc_vfio_flags */
	/* A PCI address ("0000:00:03.0"): its IOMMU group; it must be bound to vfio-pci. */
	const char *device;
	const char *group;	/* or the group's node, "/dev/vfio/N" */
	int fd;			/* CALLER_FD: the container */
};

/* The check or step that failed: info.step. */
enum prealloc_vfio_step {
	PREALLOC_VFIO_STEP_NONE = 0,
	PREALLOC_VFIO_STEP_BACKEND,	/* -EOPNOTSUPP: iommufd; -EINVAL: bad options */
	PREALLOC_VFIO_STEP_DEVICE,	/* -ENOENT: no such PCI device; -ENODEV: it has no IOMMU group */
	PREALLOC_VFIO_STEP_DRIVER,	/* -EBUSY: bound to driver (not vfio-pci; "" none) */
	PREALLOC_VFIO_STEP_GROUP,	/* opening the group: -ENOENT, -EACCES, -EBUSY (open elsewhere) */
	PREALLOC_VFIO_STEP_VIABLE,	/* -EBUSY: a device of the group (blocker) is held by a host driver */
	PREALLOC_VFIO_STEP_CONTAINER,	/* /dev/vfio/vfio, API version, TYPE1 extension, SET_IOMMU */
	PREALLOC_VFIO_STEP_INFO,	/* VFIO_IOMMU_GET_INFO */
	PREALLOC_VFIO_STEP_FIT,		/* map: -ERANGE/-ENOSPC no usable IOVA room or mappings left; -EINVAL alignment */
	PREALLOC_VFIO_STEP_MEMLOCK,	/* map: -ENOMEM RLIMIT_MEMLOCK is below what the pin needs */
	PREALLOC_VFIO_STEP_MAP,		/* map: VFIO_IOMMU_MAP_DMA failed (the job's report says where) */
};

#define PREALLOC_VFIO_MAX_RANGES 16

/* Usable IOVA, inclusive bounds as the kernel reports them. */
struct prealloc_iova_range {
	uint64_t start;
	uint64_t last;
};

struct prealloc_vfio_info {
	size_t size;		/* sizeof(struct prealloc_vfio_info) */
	int step;		/* enum prealloc_vfio_step that failed, NONE */
	int error;		/* negative errno, 0 */
	int backend;
	int iommu_type;		/* VFIO_TYPE1v2_IOMMU (3), VFIO_TYPE1_IOMMU (1); 0 caller's */
	int group;		/* N of /dev/vfio/N; -1 for the caller's container */
	unsigned int group_devices; /* devices in the group (sysfs) */
	char driver[64];	/* the device's driver, "" none */
	char blocker[256];	/* VIABLE: a device of the group bound to another driver */
	char blocker_driver[64];
	uint64_t pgsize_bitmap;	/* IOMMU page sizes */
	uint32_t dma_avail;	/* mappings the container still allows; UINT32_MAX: not reported */
	unsigned int nr_ranges;	/* usable IOVA ranges, ascending (0: not reported: all of it) */
	struct prealloc_iova_range ranges[PREALLOC_VFIO_MAX_RANGES];
	char message[512];	/* the failure in one line, "" on success */
};

/*
 * Opens the device's (or group's) group into a new type1 container, after
 * checking the device is bound to vfio-pci and the group is viable; or takes
 * the caller's container (CALLER_FD). Reads the IOMMU's page sizes, usable
 * IOVA ranges and dma_avail (VFIO_IOMMU_GET_INFO and its capabilities).
 * ret_info (may be NULL) says what was found, or which step failed.
 */
int prealloc_vfio_open(struct prealloc_ctx *ctx, const struct prealloc_vfio_opts *opts,
		       struct prealloc_vfio **ret_vfio, struct prealloc_vfio_info *ret_info);
/* The container's info now (dma_avail shrinks as mappings are made). */
int prealloc_vfio_info(struct prealloc_vfio *vfio, struct prealloc_vfio_info *ret_info);
/* The container fd (type1); owned by the handle unless it was the caller's. */
int prealloc_vfio_container_fd(const struct prealloc_vfio *vfio);
/* The group fd the handle opened (VFIO_GROUP_GET_DEVICE_FD); -1 with CALLER_FD. */
int prealloc_vfio_group_fd(const struct prealloc_vfio *vfio);
/* Unmaps every mapping the handle still holds, closes what it opened, frees. */
void prealloc_vfio_close(struct prealloc_vfio *vfio);

enum prealloc_vfio_map_flags {
	PREALLOC_VFIO_MAP_FIXED = 1u << 0,    /* at opts.iova exactly; else placed at or above it */
	PREALLOC_VFIO_MAP_READONLY = 1u << 1, /* the device may read, not write */
	/* Tests: skip the RLIMIT_MEMLOCK check; the kernel refuses mid-map instead. */
	PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK = 1u << 2,
};

struct prealloc_vfio_map_opts {
	size_t size;		/* sizeof(struct prealloc_vfio_map_opts) */
	unsigned int flags;	/* enum prealloc_vfio_map_flags */
	/*
	 * FIXED: the IOVA of the region's first byte, aligned to the IOMMU's
	 * smallest page; the region must fit one usable range. Else the lowest
	 * IOVA to use: the region is placed in the usable ranges from there,
	 * split around reserved ones (the x86 MSI window at 0xfee00000), each
	 * piece aligned to the region's page size.
	 */
	uint64_t iova;
};

#define PREALLOC_VFIO_MAX_SEGMENTS 8
#define PREALLOC_VFIO_MAX_NODES 64

/* A piece of the region at a contiguous IOVA. */
struct prealloc_vfio_segment {
	uint64_t iova;
	uint64_t offset;	/* in the region */
	uint64_t length;
};

/* What mapping one node's memory cost. */
struct prealloc_vfio_node_map {
	int node;		/* -1: pages that were not resident (ADOPT_PLACEMENT) */
	uint64_t bytes;
	double seconds;		/* in VFIO_IOMMU_MAP_DMA */
};

struct prealloc_vfio_map_info {
	size_t size;		/* sizeof(struct prealloc_vfio_map_info) */
	int step;		/* enum prealloc_vfio_step that failed, NONE */
	int error;		/* negative errno, 0 */
	uint64_t bytes;		/* mapped (and still mapped after success) */
	double seconds;		/* in VFIO_IOMMU_MAP_DMA, all nodes */
	unsigned int mappings;	/* MAP_DMA calls: kernel mappings used */
	uint64_t locked_now;	/* MEMLOCK check: VmLck before the map */
	uint64_t locked_needed;	/* ... VmLck the pin would reach */
	uint64_t locked_limit;	/* ... RLIMIT_MEMLOCK, UINT64_MAX unlimited */
	int cap_ipc_lock;	/* 1: the caller may lock past the limit */
	unsigned int nr_segments;
	struct prealloc_vfio_segment segments[PREALLOC_VFIO_MAX_SEGMENTS];
	unsigned int nr_nodes;	/* in the region's extent order */
	struct prealloc_vfio_node_map nodes[PREALLOC_VFIO_MAX_NODES];
	char message[512];	/* the failure in one line, "" on success */
};

/*
 * Maps region into the container as one job: job_opts' op runs on every
 * node in parallel (POPULATE, CLEAR, VERIFY, or NONE; job_opts NULL: NONE),
 * then one thread maps the region node extent by node extent with
 * VFIO_IOMMU_MAP_DMA, 1 GiB (or one page, if larger) per call, cancel
 * checked between calls. Before the job starts: the IOVA placement (FIT)
 * and, for a caller without CAP_IPC_LOCK, RLIMIT_MEMLOCK against what the
 * pin needs (MEMLOCK), each refused with its numbers in ret_info. A job that
 * fails or is cancelled unmaps what it mapped before it completes; one that
 * succeeds leaves the region mapped until prealloc_vfio_unmap (or close).
 * A FILE or MEMFD region is flock(LOCK_SH)ed while mapped: prealloc_release
 * of the file is refused meanwhile. The region must outlive the mapping.
 */
int prealloc_vfio_map_start(struct prealloc_vfio *vfio, struct prealloc_region *region,
			    const struct prealloc_job_opts *job_opts,
			    const struct prealloc_vfio_map_opts *opts, struct prealloc_job **ret_job,
			    struct prealloc_vfio_map_info *ret_info);
/* The map job's outcome (waits for it): per node bytes and seconds, segments. */
int prealloc_vfio_map_info(struct prealloc_job *job, struct prealloc_vfio_map_info *ret_info);
/* Synchronous: start, wait, info and report (either may be NULL). */
int prealloc_vfio_map(struct prealloc_vfio *vfio, struct prealloc_region *region,
		      const struct prealloc_job_opts *job_opts,
		      const struct prealloc_vfio_map_opts *opts,
		      struct prealloc_vfio_map_info *ret_info, struct prealloc_report *ret_report);
/* Unmaps region (every segment); -ENOENT when the handle has not mapped it. */
int prealloc_vfio_unmap(struct prealloc_vfio *vfio, struct prealloc_region *region);

/* ---- the warm pool (docs/warm.md) -----------------------------------------
 * Files populated on their node and proven zero ahead of time, kept in the
 * root-only staging directory of their mount, handed to a guest by a link
 * in O(1), taken back when it stops and cleared again by prealloc_warm_fill.
 * A holder never sees a byte another holder wrote: a file is handed out
 * only READY (cleared and verified since its last holder), and a file with
 * a link the pool did not make is never handed out again.
 */
enum prealloc_warm_state {
	PREALLOC_WARM_POPULATING = 1,	/* being made and populated on its node */
	PREALLOC_WARM_READY,		/* every byte zero, every page on its node */
	PREALLOC_WARM_HANDED,		/* linked at a holder's path */
	PREALLOC_WARM_RETURNING,	/* given back, still mapped or held */
	PREALLOC_WARM_DIRTY,		/* back, the pool's link alone: to be cleared */
	PREALLOC_WARM_CLEARING,		/* being cleared and verified */
	PREALLOC_WARM_QUARANTINED,	/* never handed out again; removed by the next fill */
};

enum prealloc_warm_take_flags {
	PREALLOC_WARM_TAKE_CHOWN = 1 << 0,	/* give the file uid:gid */
	PREALLOC_WARM_TAKE_FALLBACK = 1 << 1,	/* no READY file: prepare one cold */
};

struct prealloc_warm_take_opts {
	size_t size;		/* sizeof(struct prealloc_warm_take_opts) */
	unsigned int flags;	/* enum prealloc_warm_take_flags */
	int node;
	uint64_t page_size;	/* PREALLOC_PAGE_4K, _2M or _1G */
	uint64_t length;	/* bytes, a whole number of pages */
	/*
	 * Where the file is linked (mode 0600): a new name on the mount of the
	 * warm files (mount: NULL for the one prealloc picks for page_size).
	 */
	const char *path;
	const char *mount;
	unsigned int uid, gid;	/* CHOWN */
	/* NULL: held while path exists or a process maps the file. */
	const char *holder;
	unsigned int lock_timeout_ms;	/* 0: 30000 */
};

enum prealloc_warm_hit {
	PREALLOC_WARM_HIT = 1,		/* a READY file of exactly the size */
	PREALLOC_WARM_HIT_CUT,		/* a larger one, cut to size (the rest given back) */
	PREALLOC_WARM_HIT_GROWN,	/* a partial hit: a smaller one, the rest populated */
	PREALLOC_WARM_COLD,		/* none: prepared cold (FALLBACK) */
};

struct prealloc_warm_take_info {
	size_t size;		/* sizeof(struct prealloc_warm_take_info) */
	int hit;		/* enum prealloc_warm_hit; 0 on failure */
	int fd;			/* the file, O_RDWR | O_CLOEXEC, the caller's to close */
	uint64_t id;		/* its record */
	uint64_t file_bytes;	/* its size before a cut */
	double seconds;		/* the take, lock to link */
	char path[4096];
	char message[512];	/* why it failed */
};

/*
 * Links a READY warm file of node and page size at path, gives it its owner
 * and records it HANDED to holder, in that order (the record first: a file
 * at path is never READY for another take). The file is exactly length, or
 * the smallest larger one cut to size, or (a partial hit) the largest
 * smaller one grown, the rest populated on its node and verified. -ENOENT
 * (nothing touched) when no READY file is on that node and mount, unless
 * FALLBACK; -EXDEV when path is on another mount; -EEXIST when path exists.
 */
int prealloc_warm_take(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *opts,
		       struct prealloc_warm_take_info *ret_info);

struct prealloc_warm_give_info {
	size_t size;		/* sizeof(struct prealloc_warm_give_info) */
	unsigned int files;	/* files given back */
	unsigned int returning;	/* of them, still mapped or held: RETURNING */
	unsigned int quarantined; /* of them, with a link the pool did not make */
	char message[512];
};

/*
 * Takes files back: the one linked at path (which must be the link its take
 * made: the record's inode), or every file handed to holder (path NULL).
 * Each is removed from path, given to root with mode 0600, then DIRTY if no
 * process maps or holds it and the pool's link is its only one, RETURNING
 * while one does (a later fill looks again; the caller never waits), and
 * QUARANTINED if it has another link.
 */
int prealloc_warm_give(struct prealloc_ctx *ctx, const char *path, const char *holder,
		       struct prealloc_warm_give_info *ret_info);

enum prealloc_warm_fill_flags {
	PREALLOC_WARM_FILL_IDLE = 1 << 0,	/* workers SCHED_IDLE (else nice 19) */
};

struct prealloc_warm_fill_opts {
	size_t size;		/* sizeof(struct prealloc_warm_fill_opts) */
	unsigned int flags;	/* enum prealloc_warm_fill_flags */
	/* The targets; NULL: /etc/prealloc/warm.conf ($PREALLOC_WARM_CONF). */
	const char *conf_path;
	/* Per node; 0: warm.conf's clear_threads, else every allowed CPU of the node. */
	unsigned int threads;
	unsigned int lock_timeout_ms;	/* 0: 30000 */
	/* Bytes per second per node; 0: warm.conf's clear_rate, else no cap. */
	uint64_t clear_rate;
};

struct prealloc_warm_fill_info {
	size_t size;		/* sizeof(struct prealloc_warm_fill_info) */
	unsigned int returned;	/* RETURNING files found free: DIRTY */
	unsigned int cleared;	/* DIRTY files cleared and verified: READY */
	unsigned int created;	/* new files populated: READY */
	unsigned int dropped;	/* files removed: quarantined, damaged or over target */
	uint64_t cleared_bytes;
	double clear_seconds;	/* the clears' own time */
	char message[512];	/* the first failure, if any */
	uint64_t dropped_bytes;	/* of the files removed */
};

/*
 * One pass over the pool, then returns: RETURNING files that are free
 * become DIRTY; each DIRTY file is cleared by its node's workers (the auto
 * kernel), every byte verified zero and every page on its node, then READY
 * (a file its holder truncated or resized is removed); QUARANTINED files
 * are removed and their pages given back; each target is filled with new
 * files. Every state is written before the step it names.
 */
int prealloc_warm_fill(struct prealloc_ctx *ctx, const struct prealloc_warm_fill_opts *opts,
		       struct prealloc_warm_fill_info *ret_info);

/*
 * The daemon's loop (prealloc warm serve): fill's pass whenever there may
 * be work (a give or take changed the store, check_interval passed and a
 * holder may be gone, warm.conf was read again), its clears and new files
 * in the background (SCHED_IDLE workers, warm.conf's clear_threads and
 * clear_rate), and warm files given back under memory pressure (a PSI
 * trigger, else a MemAvailable floor). docs/warm.md.
 */
struct prealloc_warm_serve;

struct prealloc_warm_serve_opts {
	size_t size;		/* sizeof(struct prealloc_warm_serve_opts) */
	unsigned int flags;	/* none yet */
	const char *conf_path;	/* NULL: /etc/prealloc/warm.conf ($PREALLOC_WARM_CONF) */
	/*
	 * Readable: prealloc_warm_serve_run returns (a clear under way is
	 * cancelled, its file DIRTY again). Not read: the caller's to drain.
	 */
	int stop_fd;
	/*
	 * Readable: warm.conf is read again (what is readable is read and
	 * dropped: a signalfd, eventfd or pipe); a bad one is logged and the
	 * targets stay. -1: none.
	 */
	int reload_fd;
	unsigned int lock_timeout_ms;	/* 0: 30000 */
};

struct prealloc_warm_serve_info {
	size_t size;		/* sizeof(struct prealloc_warm_serve_info) */
	unsigned int passes;
	unsigned int returned, cleared, created, dropped;	/* as prealloc_warm_fill's */
	uint64_t cleared_bytes, dropped_bytes;
	uint64_t pressure_events;	/* PSI events, or MemAvailable under the floor */
	uint64_t pressure_dropped_bytes; /* of dropped_bytes, given back under pressure */
	char message[512];	/* why _new failed: a bad line of warm.conf, named */
};

/* Reads warm.conf and arms the pressure trigger; -EINVAL with info->message for a bad conf. */
int prealloc_warm_serve_new(struct prealloc_ctx *ctx, const struct prealloc_warm_serve_opts *opts,
			    struct prealloc_warm_serve **ret_serve,
			    struct prealloc_warm_serve_info *ret_info);
/* Serves until stop_fd is readable: 0, or a negative errno if it cannot wait. */
int prealloc_warm_serve_run(struct prealloc_warm_serve *serve,
			    struct prealloc_warm_serve_info *ret_info);
void prealloc_warm_serve_free(struct prealloc_warm_serve *serve);

struct prealloc_warm_status {
	size_t size;		/* sizeof(struct prealloc_warm_status) */
	int node;
	uint64_t page_size;
	char mount[4096];
	uint64_t target_bytes;	/* from warm.conf; 0: none */
	/* Bytes and files per state, [enum prealloc_warm_state]. */
	uint64_t bytes[PREALLOC_WARM_QUARANTINED + 1];
	unsigned int files[PREALLOC_WARM_QUARANTINED + 1];
	double last_clear_gbps;	/* the last fill's clears here; 0 none yet */
	char message[512];	/* on failure, why: a bad line of the conf, named */
};

/*
 * The pool by mount, node and page size: entry index of them (sorted), or
 * -ENOENT past the last; -EINVAL with ret_status->message for a bad conf. Targets of conf_path (NULL: the default) appear
 * even with no file yet.
 */
int prealloc_warm_status(struct prealloc_ctx *ctx, const char *conf_path, unsigned int index,
			 struct prealloc_warm_status *ret_status);

#ifdef __cplusplus
}
#endif
#endif
