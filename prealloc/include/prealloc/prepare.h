/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: prepare guest memory in a file, release it.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_PREPARE_H
#define LIBPREALLOC_PREPARE_H

#include "admit.h"
#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- prepare, release ------------------------------------------------------ */

enum prealloc_prepare_flags {
	PREALLOC_PREPARE_REUSE = 1u << 0,   /* adopt an existing file of the exact size */
	PREALLOC_PREPARE_GROW_POOLS = 1u << 1, /* grow short hugepage pools (admission) */
	PREALLOC_PREPARE_VERIFY = 1u << 2,  /* fail unless every byte is zero and every page on its node */
	PREALLOC_PREPARE_CHOWN = 1u << 3,   /* give the file to uid:gid (its file owner) */
	PREALLOC_PREPARE_TOUCH = 1u << 4,   /* tests: the touch fallback */
	PREALLOC_PREPARE_NO_CHECK = 1u << 5, /* tests: admit without checking capacity */
	/*
	 * REUSE a file that fails the trust checks: its file owner other
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
	 * .prealloc-<uid> for a user other than root), given the CHOWN uid:gid
	 * and linked at path only once it is ready (REUSE: in place).
	 */
	const char *path;
	const char *dir;
	unsigned int threads;	/* per node; 0: every allowed CPU of the node */
	/* GROW_POOLS: compaction deadline; 0: 5000 (0.1: reserve_timeout_ms) */
	__extension__ union {
		unsigned int grow_timeout_ms;
		unsigned int reserve_timeout_ms;
	};
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
	 * another user controls (prealloc_dir_open). The file is linked there, relative to this
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
 * request (growing pools with GROW_POOLS), records it (state PREPARING, this
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
	int warm;		/* -EBUSY: a file of the warm pool (prealloc_warm_give returns it) */
};

/*
 * Removes a file prealloc created, and gives back its pool growth; also a
 * file whose run died before it was ready. -ENOENT: not made by prealloc
 * (no record; adopted files are never removed); -ESTALE: its size changed
 * since; -EBUSY: a live run is still preparing it (info's pid), holds it
 * DMA-mapped (pinned) or it is a warm file of the pool (warm); -ELOOP: a
 * symbolic link.
 */
int prealloc_release(struct prealloc_ctx *ctx, const char *path,
		     struct prealloc_release_info *ret_info);
/* Gives back what a named holder holds (its records); -ENOENT when none. */
int prealloc_release_holder(struct prealloc_ctx *ctx, const char *holder,
			    struct prealloc_release_info *ret_info);

/*
 * ---- 0.1's names (docs/abi.md: a renamed symbol) ---------------------------
 *
 * 0.1 called growing the pools RESERVE; the warm pool alone now reserves
 * (docs/design.md, Words). Code written against 0.1 builds unchanged.
 */
#define PREALLOC_PREPARE_RESERVE PREALLOC_PREPARE_GROW_POOLS

#ifdef __cplusplus
}
#endif
#endif
