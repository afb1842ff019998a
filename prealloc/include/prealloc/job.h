/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: jobs (populate, clear, verify) on a region, their completion (eventfd, io_uring) and reports.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_JOB_H
#define LIBPREALLOC_JOB_H

#include "region.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
