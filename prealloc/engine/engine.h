/* SPDX-License-Identifier: MIT */
/*
 * The job engine's internal API: per-node crews of workers that run one op over
 * the chunks of a region (engine.c), the ops they run (ops.c), and what a
 * flow (create, clear, calibration, DMA mapping) plugs in around them.
 * Never installed. docs/engine.md says how the pieces fit.
 */
#ifndef PREALLOC_ENGINE_H
#define PREALLOC_ENGINE_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "memory.h"

/*
 * Workers do a chunk in steps of at most max(page size, JOB_STEP) bytes,
 * checking cancel and adding to progress after each: cancel takes effect
 * within one step (plus one page's fault) whatever the chunk size.
 */
#define JOB_STEP (UINT64_C(16) << 20)
/*
 * A populate that VERIFY checks reads each piece back as soon as it is
 * faulted in, this many bytes at a time (or one page where pages are
 * larger), while what the kernel just zeroed may still be in the caches;
 * the check phase then counts placement only. docs/warm.md ("Renewal's speed").
 */
#define JOB_FUSED_STEP (UINT64_C(2) << 20)
/* With max_rate, chunks no larger than this: the check phase is paced per chunk. */
#define JOB_PACED_CHUNK (UINT64_C(64) << 20)

/* ---- ops (ops.c) --------------------------------------------------------- */

/* What an op's setup may look at. */
struct job_op_args {
	struct prealloc_region *region;
	const struct prealloc_job_opts *opts;
	void *arg;		/* the serial op's: job_spec.serial_arg; else NULL */
};

/*
 * One entry of the op table: what a worker does to one piece of a chunk.
 * piece() gets [p, p + len) inside one chunk, page aligned, at most one step
 * long; it returns 0 or a negative errno (the job fails at that offset).
 * A serial op runs on one thread over every chunk in order, after the
 * parallel op (VFIO type1 serialises MAP_DMA); a parallel op may not be
 * serial and the other way round. Adding an op touches only ops.c (or the
 * flow that owns it): the engine knows ops only through this table.
 */
struct job_op {
	const char *name;
	int op;			/* enum prealloc_op in reports; -1: internal only */
	bool serial;
	/*
	 * Bytes per piece; 0: JOB_STEP. Never below the page size. A DMA map
	 * takes larger pieces: each piece is one kernel mapping, and type1
	 * allows 65535 of them per container by default.
	 */
	uint64_t step;
	/* Per-job state (kernel choice, touch guard); may be NULL. */
	int (*setup)(const struct job_op_args *args, void **ret_state);
	int (*piece)(void *state, uint8_t *p, uint64_t len);
	int (*method)(const void *state);		/* enum prealloc_method */
	const char *(*kernel)(const void *state);	/* clear kernel name, may be NULL */
	uint64_t (*cached_bytes)(const void *state);	/* bytes cleared with cached stores, may be NULL */
	void (*teardown)(void *state);			/* may be NULL */
};

/* The table entry for a public enum prealloc_op; NULL if unknown. */
const struct job_op *job_op_find(int op);

/* ---- completion sinks ---------------------------------------------------- */

/*
 * Completion is posted through sinks: node_done once per node, when that
 * node's workers have all finished (res: 0, or the job's error when it
 * happened on that node in a worker; a verify verdict, decided once every
 * node has finished, comes with job_done only), then job_done once with the job's result, after
 * the flow's finish and after prealloc_job_done() turned 1. progress runs
 * after every step a worker finishes (bytes: that step's length), so it
 * must be cheap: an atomic add, a post only when a threshold is crossed.
 * All run on worker threads (or the starting thread when there are no
 * workers) and must not block; a sink's error is ignored (the job's result
 * stands).
 *
 * sinks[0] is the eventfd (prealloc_job_eventfd), which always posts on
 * job_done; sinks[1] comes with job_spec.sink; sinks[2] is the io_uring
 * completion of prealloc_job_opts.completion (notify.c), opened by
 * the engine once the eventfd exists: it posts IORING_OP_MSG_RING CQEs into
 * the caller's ring, or queues the events and writes the eventfd where
 * io_uring cannot be used.
 */
struct job_sink_ops {
	int (*node_done)(void *data, int node, int res);	/* may be NULL */
	int (*job_done)(void *data, int res);			/* may be NULL */
	void (*release)(void *data);	/* at prealloc_job_free, may be NULL */
	void (*progress)(void *data, uint64_t bytes);		/* may be NULL */
};

struct job_sink {
	const struct job_sink_ops *ops;
	void *data;
};

/* ---- io_uring completion (notify.c) -------------------------------------- */

/*
 * The completion sink for c (a caller's struct, copied; NULL: none, and
 * *ret_sink stays empty). efd is the job's eventfd, written at each event
 * on the EVENTFD path. The path is chosen here, once. -EBADF: ring_fd is
 * not open; -EINVAL: unknown flags; -E2BIG: c is from a newer library.
 */
int notify_open(const struct prealloc_completion *c, int efd, unsigned int nr_nodes,
		struct job_sink *ret_sink);
/* The path now (enum prealloc_notify) and why not io_uring (negative errno, 0). */
int notify_path(const struct job_sink *sink, int *ret_error);
/* The next queued event (EVENTFD path): 1 with it, 0 none. */
int notify_event(const struct job_sink *sink, uint64_t *ret_user_data, int *ret_res);

/* ---- flows --------------------------------------------------------------- */

/* A range of the region that a node's workers take, beyond the region's own extents. */
struct job_range {
	int node;	/* -1: spread over the job's node crews round-robin by chunk */
	uint64_t offset, length;	/* page aligned, inside the region */
};

struct job_flow {
	/*
	 * Runs once, on the last worker to finish (or on the starting thread when the
	 * job has no workers), after the op and the check phase, BEFORE completion is
	 * posted (eventfd) and before prealloc_job_done() turns 1. status is the job's
	 * outcome so far (0, negative errno, -ECANCELED); the return value becomes the
	 * job's result returned by prealloc_job_wait(). It may read the job's report
	 * with job_fill_report() / job_fill_node_report().
	 */
	int (*finish)(struct prealloc_job *job, int status, void *arg);
	void (*destroy)(void *arg);	/* at prealloc_job_free, may be NULL */
	void *arg;
};

struct job_spec {
	const struct job_flow *flow;	/* NULL: none */
	const struct job_range *extra;	/* extra ranges (e.g. swapped-out file pages), may be NULL */
	size_t nr_extra;
	/* After the parallel op: a serial op (serial = true), NULL for none. */
	const struct job_op *serial;
	void *serial_arg;		/* given to the serial op's setup (job_op_args.arg) */
	const struct job_sink *sink;	/* a second completion sink, NULL for none */
	/* The parallel op, when a flow owns one outside ops.c's table; NULL: opts->op's. */
	const struct job_op *op;
	/*
	 * Worker i of a node runs on the node's i-th CPU alone (wrapping) and
	 * takes chunks i, i + threads, ... in order, instead of whichever is
	 * next: the same CPU meets the same bytes in every such job over the
	 * same region (the calibration's untimed and timed passes).
	 */
	bool fixed_workers;
};

/*
 * prealloc_job_start is job_start_spec(region, opts, NULL, ret_job). Extra
 * ranges (node -1 or not) are cut into page-aligned chunks by chunks_cut
 * like the extents; they are worked and zero-checked, never counted for
 * placement. The job copies what its report needs (page size, backing) at
 * start and does not touch region->addr after finish: a flow may free the
 * region in finish.
 */
/*
 * The end of a flow's synchronous call (prealloc_prepare, _clear_file,
 * _vfio_map), once its start succeeded: waits, reads the flow's info with
 * info (into ret_info, when both are given) and the report, frees the job.
 * Returns the job's result (start.c).
 */
int job_sync(struct prealloc_job *job, int (*info)(struct prealloc_job *job, void *ret_info),
	     void *ret_info, struct prealloc_report *ret_report);
int job_start_spec(struct prealloc_region *region, const struct prealloc_job_opts *opts,
		   const struct job_spec *spec, struct prealloc_job **ret_job);
void *job_flow_arg(struct prealloc_job *job);
/* The report as prealloc_job_report would give it, also before the join. */
void job_fill_report(struct prealloc_job *job, struct prealloc_report *ret_report);
/* -ENOENT past the last node. */
int job_fill_node_report(struct prealloc_job *job, unsigned int index,
			 struct prealloc_node_report *ret_report);

/* ---- the job: its per-node crews and their chunks (engine.c) ------------- */

struct job_chunk {
	uint64_t offset;
	uint64_t length;
	bool placed;		/* from the region's extents: counted for placement */
};

struct node_crew {
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
	atomic_uint_fast64_t paced;	/* max_rate: bytes written and read so far */
	double end;			/* latest worker end, under job->lock */
};

struct job_op;
struct job_sink;
struct job_flow;

struct job_worker {
	struct prealloc_job *job;
	struct node_crew *crew;
	unsigned int index;		/* within its crew */
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
	bool worker_policy;		/* the region unbound while its workers bind themselves */
	struct prealloc_job_opts opts;
	const struct job_op *op, *serial;
	void *op_state, *serial_state;
	unsigned int rounds;		/* 1 for the op, + 1 with a serial op */
	bool fixed_workers;		/* job_spec.fixed_workers */
	struct job_flow flow;		/* finish NULL: none */
	struct job_sink sinks[3];	/* [0] the eventfd; [1] the spec's; [2] io_uring completion */
	struct node_crew *crews;
	unsigned int nr_crews;
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
	bool zero_fused;	/* POPULATE + VERIFY: the workers read back as they go */
	bool placement_scanned;	/* counts came from numa_maps; skip move_pages */
	bool placement_pagemap;	/* 4K: each worker reads its chunks' frames (pagemap.c) */
	bool start_failed;	/* workers released cancelled: no finish, no sinks */
};

/* engine.c */
void job_free(struct prealloc_job *job);
/* complete.c: the job works on its region from start until its end (free waits meanwhile). */
void region_hold(struct prealloc_job *job);
void region_unhold(struct prealloc_job *job);
/* complete.c: a crew's last worker out: the node's done, to the sinks. */
void node_complete(struct prealloc_job *job, struct node_crew *crew);
/*
 * complete.c: once, when every worker is out: the verdict, the flow's
 * finish, then done, then the sinks. Nothing touches the region after finish.
 */
void job_complete(struct prealloc_job *job);
/* job.c: the job's first error kept (where it happened), and every worker told to stop. */
void job_fail(struct prealloc_job *job, int err, int node, uint64_t offset);
/* job.c: joins the workers; several threads may wait: one joins, the others wait for it. */
int job_join(struct prealloc_job *job);
/* crews.c: one crew per node from the extents and extra ranges. */
int crews_build(struct prealloc_job *job, const struct job_range *extra, size_t nr_extra);
/*
 * Where worker t of crew runs (set in attr): the node's CPUs, the one CPU
 * t picks (wrapping) when the job's workers are fixed, or anywhere allowed.
 */
void worker_affinity(const struct prealloc_job *job, const struct node_crew *crew, unsigned int t,
		     pthread_attr_t *attr);
/* A populate of bound 4K shmem: the workers bind themselves (crews.c). */
void crews_policy_begin(struct prealloc_job *job);
void crews_policy_worker(struct prealloc_job *job, const struct node_crew *crew);
void crews_policy_end(struct prealloc_job *job);
/* check.c: the check phase. Once per job (one thread), then per chunk. */
void check_scan_job(struct prealloc_job *job);
/*
 * check.c, for a zero_fused job: op's piece over [offset, offset + len),
 * JOB_FUSED_STEP at a time, each read back for zeroes right after; the
 * region offset of a failure in *ret_at.
 */
int check_fused_piece(struct prealloc_job *job, struct node_crew *crew, const struct job_op *op,
		      void *state, uint64_t offset, uint64_t len, uint64_t *ret_at);
/* 0, or the first error and where (region offset) into *ret_at: the caller fails the job. */
/* pace.c: max_rate's nap after bytes more of crew's; 0 max_rate: none. */
void job_pace(struct prealloc_job *job, struct node_crew *crew, uint64_t bytes);
/* pace.c: SCHED_IDLE (idle true, the thread's policy and nice kept), or back. */
void worker_idle(bool idle, int *policy, struct sched_param *param, int *nice);
int check_chunk(struct prealloc_job *job, struct node_crew *crew, const struct job_chunk *c,
		uint64_t *ret_at);

#endif
