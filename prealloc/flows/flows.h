/* SPDX-License-Identifier: MIT */
/*
 * The flows, private to the library: prepare (its request as it is
 * resolved, and what a caller inside the library may ask of it beyond the
 * public options), clear a file, and what their files share (the warm
 * pool, a component over these, has its own: warm/warm.h). Each flow is one
 * public call over the state and engine layers (tests/tree/test-layers.sh).
 * Never installed.
 */
#ifndef PREALLOC_FLOWS_H
#define PREALLOC_FLOWS_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "clear.h"
#include "engine.h"
#include "state.h"

/* ---- prepare (prepare.c, prepare_req.c, locate.c) ------------------------ */

/*
 * What a caller inside the library may ask of prepare beyond the public
 * options (prepare_start): how its workers run, more of admission, and how
 * its record is made and committed. Zeroed: as prealloc_prepare_start.
 */
struct prepare_more {
	uint64_t max_rate;	/* bytes per second per node; 0: no cap */
	bool idle;		/* workers SCHED_IDLE */
	unsigned int admit_flags; /* PREALLOC_ADMIT_* added to its admission's */
	/*
	 * Committed where it was made: left at its staged name, linked at no
	 * path of its own (the record's path stays empty, its staged name its
	 * link); info.path says where it is.
	 */
	bool stay_staged;
	/* The record as it is first written, by admission's save (NULL: as it is). */
	void (*record_made)(struct record *r, void *arg);
	/* At commit, under the lock, r READY: saves s (NULL: store_save). */
	int (*committed)(const struct prealloc_ctx *ctx, struct store *s, struct record *r,
			 void *arg);
	void *arg;
};

#define PREPARE_MAGIC 0x70726570u	/* "prep": a job's flow arg is a prepare_req */

struct prepare_req {
	uint32_t magic;
	struct prealloc_ctx *ctx;
	struct prealloc_prepare_opts o;
	struct prealloc_prepare_info info;
	/* The request, resolved. */
	uint64_t length;
	unsigned int nr_nodes;
	int nodes[PREALLOC_MAX_NODES];
	uint64_t node_bytes[PREALLOC_MAX_NODES];
	bool sized;		/* node_bytes given by the caller, not split */
	const char *path;	/* o.path or NULL */
	char dir[PATH_MAX];
	int dir_fd;		/* the final directory, opened once located */
	int stage_fd;		/* the staging directory (staging.c) */
	char stage_name[24];	/* the file's name in it: the record id in hex */
	unsigned long fs_magic;
	uint64_t fs_page;	/* hugetlbfs: its page size */
	uint64_t page;		/* resolved: 4K, 2M, 1G or PREALLOC_PAGE_THP */
	bool exists;		/* REUSE: the file was there */
	/* What the run made, for commit and rollback. */
	char final[PATH_MAX];
	char tmp[PATH_MAX];	/* the staged file: the staging dir's path and stage_name */
	uint64_t id;
	bool recorded;
	bool placed;		/* linked at its final name: others may have opened it */
	struct prealloc_region *region;
	struct rec_owner owner;
	struct prepare_more more;	/* the library's own asks (prepare_start) */
};

/* Fills info.step and info.message (inline: every prepare file fails the request). */
static inline __attribute__((format(printf, 3, 4))) void
prepare_fail(struct prepare_req *req, int step, const char *fmt, ...)
{
	va_list ap;

	req->info.step = step;
	va_start(ap, fmt);
	vsnprintf(req->info.message, sizeof(req->info.message), fmt, ap);
	va_end(ap);
}

/* locate.c: where the file goes and the page size (req->dir, req->page, req->exists). */
int prepare_locate(struct prepare_req *req);
/* prepare_req.c: the request checked and resolved; admission and the record. */
int prepare_request(struct prepare_req *req);
/* prepare.c: prealloc_prepare_start, with more (NULL: none) asked beyond its options. */
int prepare_start(struct prealloc_ctx *ctx, const struct prealloc_prepare_opts *opts,
		  const struct prepare_more *more, struct prealloc_job **ret_job,
		  struct prealloc_prepare_info *ret_info);
/* "512M", "1G", or bytes when no binary suffix is exact. */
void size_token(uint64_t bytes, char *buf, size_t len);
int prepare_admit(struct prepare_req *req);
/* admit_message.c: the admission failure in one line. */
void admit_message(const struct prealloc_admit_result *res, int err, bool grow_pools, char *buf,
		   size_t len);

/* ---- clear a file (clear_file.c, clear_checks.c) ------------------------- */

#define CLEAR_FLOW_MAGIC 0x636c7266u	/* "clrf": a job's flow arg is a clear_flow */

/*
 * What the flow opened and mapped; the job's once it has started (its
 * destroy frees it at prealloc_job_free), else freed by the start call.
 */
struct clear_flow {
	uint32_t magic;			/* first, as in every flow's arg */
	struct prealloc_ctx *ctx;
	struct prealloc_clear_file_opts opts;
	struct prealloc_clear_file_info info;
	struct stat st;
	bool in_memory;			/* hugetlbfs or tmpfs */
	int fd;
	void *map;			/* our own mapping (partial last page, disk), or NULL */
	uint64_t map_len;
	struct prealloc_region *region;
	struct clear_choice choice;	/* name NULL until chosen */
	struct job_range *swapped;	/* swapped-out tmpfs pages: the job's extra ranges */
	size_t nr_swapped;
	int result;			/* set by the job's finish */
	double t_job;			/* now_seconds() at the job's start */
};

static inline int flow_fail(struct clear_flow *flow, int step, int err)
{
	flow->info.error_step = step;
	return err;
}

/*
 * clear_checks.c: that it is the file the caller meant. Each returns 0 or
 * a negative errno with info.error_step set.
 */
/* The kernel: the one named, or (once the region exists) the one auto picks. */
int clear_check_kernel(struct clear_flow *flow);
/* Before opening: not a link, a regular file, the filesystem, other mappers. */
int clear_check_file(struct clear_flow *flow, const char *path);
/* Opens the file checked into flow->fd; -ESTALE when another took its place. */
int clear_open_checked(struct clear_flow *flow, const char *path);

#endif
