/* SPDX-License-Identifier: MIT */
/*
 * Prepare: from a request to a populated, verified, recorded file.
 *
 *   locate -> admit + record (PREPARING) -> create under a hidden name ->
 *   populate (workers) -> verify -> commit: rename to the final name,
 *   record READY
 *
 * The record is written before the file exists and names the hidden name,
 * which is unique to the record, so a run killed at any instruction leaves
 * something gc can finish: the file is removed (it never held a guest's
 * data), the growth given back. A file appears at its final path only when
 * it is ready. Commit and rollback run in the job's finish, before its
 * completion is posted: a caller that sees the job done sees it settled.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flows.h"

/* Runs fn on the record of req under the lock, then saves. */
static int record_update(struct prepare_req *req,
			 int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg))
{
	return store_update(req->ctx, req->o.lock_timeout_ms, req->id, fn, req);
}

/* ---- commit and rollback (the job's finish) ----------------------------- */

static int set_ready(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	struct prepare_req *req = arg;
	struct record *r = &s->r[ri];
	int err = record_commit(r, &req->owner);

	if (err < 0)
		return err;	/* no longer PREPARING: not this run's to commit */
	if (req->more.stay_staged)
		snprintf(r->tmp, sizeof(r->tmp), "%s", req->tmp);	/* its only link */
	else
		snprintf(r->path, sizeof(r->path), "%s", req->final);
	if (req->more.committed)
		return req->more.committed(ctx, s, r, req->more.arg);
	return store_save(ctx, s);
}

/* What QEMU needs to map the file where it was prepared; one host-nodes= per range. */
static void qemu_option(struct prepare_req *req)
{
	char *buf = req->info.qemu_option, sz[32], ranges[256], *save = NULL, *tok;
	size_t len = sizeof(req->info.qemu_option), off;

	size_token(req->length, sz, sizeof(sz));
	off = (size_t)snprintf(buf, len,
			       "-object memory-backend-file,id=mem0,mem-path=%s,size=%s,share=on,"
			       "prealloc=off", req->final, sz);
	prealloc_format_list(req->nodes, req->nr_nodes, ranges, sizeof(ranges));
	for (tok = strtok_r(ranges, ",", &save); tok && off < len; tok = strtok_r(NULL, ",", &save))
		off += (size_t)snprintf(buf + off, len - off, ",host-nodes=%s", tok);
	if (off < len)
		snprintf(buf + off, len - off, ",policy=bind");
}

static const char *final_name(const struct prepare_req *req)
{
	return strrchr(req->final, '/') + 1;
}

/* The final name, if it is still our file: never one put there by someone else. */
static void unlink_final(struct prepare_req *req)
{
	struct stat mine, there;

	if (fstat(prealloc_region_fd(req->region), &mine) == 0 &&
	    fstatat(req->dir_fd, final_name(req), &there, AT_SYMLINK_NOFOLLOW) == 0 &&
	    mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
		unlinkat(req->dir_fd, final_name(req), 0);
}

/*
 * The staged file, ready, takes its place: its owner (CHOWN), then a link
 * at the final name, checked to be ours, then its staging name goes. Until
 * now it sat where only we could reach it: nobody could swap it or write
 * to it before it was ready.
 */
static int place_file(struct prepare_req *req)
{
	int fd = prealloc_region_fd(req->region), r;
	struct stat mine, there;

	if ((req->o.flags & PREALLOC_PREPARE_CHOWN) && fchown(fd, req->o.uid, req->o.gid) < 0) {
		r = -errno;
		prepare_fail(req, PREALLOC_STEP_COMMIT, "cannot give %s to %u:%u: %s", req->final,
			     req->o.uid, req->o.gid, strerror(-r));
		return r;
	}
	req->placed = true;	/* from here on, the final name may be in the VMM's hands */
	if (linkat(req->stage_fd, req->stage_name, req->dir_fd, final_name(req), 0) < 0) {
		r = -errno;
		prepare_fail(req, PREALLOC_STEP_COMMIT, "cannot give %s its name: %s%s", req->final,
			     strerror(-r),
			     r == -EEXIST ? " (a file appeared there meanwhile)" : "");
		return r;
	}
	if (fstat(fd, &mine) < 0 ||
	    fstatat(req->dir_fd, final_name(req), &there, AT_SYMLINK_NOFOLLOW) < 0 ||
	    mine.st_dev != there.st_dev || mine.st_ino != there.st_ino) {
		prepare_fail(req, PREALLOC_STEP_COMMIT, "%s was replaced as soon as it was linked",
			     req->final);
		return -ESTALE;
	}
	if (unlinkat(req->stage_fd, req->stage_name, 0) < 0) {
		r = -errno;
		unlink_final(req);
		prepare_fail(req, PREALLOC_STEP_COMMIT, "cannot remove the staged %s: %s", req->tmp,
			     strerror(-r));
		return r;
	}
	return 0;
}

static int prepare_commit(struct prepare_req *req)
{
	int r;

	test_pause("before-commit");
	if (req->info.created && !req->more.stay_staged && (r = place_file(req)) < 0)
		return r;
	r = record_update(req, set_ready);
	if (r < 0) {
		prepare_fail(req, PREALLOC_STEP_COMMIT, "cannot record %s as ready in %s: %s",
			     req->final, prealloc_ctx_state_dir(req->ctx), strerror(-r));
		/* Its only name goes: the pages go with the region. */
		if (req->info.created && !req->more.stay_staged)
			unlink_final(req);
		return r;
	}
	req->recorded = false;	/* the record is the file's now, not this run's to settle */
	if (req->more.stay_staged)
		snprintf(req->info.path, sizeof(req->info.path), "%s", req->tmp);
	else
		qemu_option(req);
	test_pause("after-commit");
	prealloc_region_free(req->region);	/* the file stays for the VMM */
	req->region = NULL;
	return 0;
}

static int rollback_fn(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	const struct prepare_req *req = arg;

	/*
	 * A file that never left its staging directory (root's, 0700: this
	 * run's alone) and that the discard removed had no other user: its
	 * pages are free. One linked at its final name may be mapped by now.
	 */
	return record_settle_as(ctx, s, ri, false, req->info.created && !req->placed, &info);
}

/* Everything this run made goes: the file (never a reused one), then its growth, its record. */
static void prepare_rollback(struct prepare_req *req)
{
	if (req->region) {
		if (req->info.created)
			prealloc_region_discard(req->region);
		else
			prealloc_region_free(req->region);
		req->region = NULL;
	}
	/* Unsettled (no lock, no store): the record stays ours; gc settles it once we are gone. */
	if (req->recorded && record_update(req, rollback_fn) >= 0)
		req->recorded = false;
}

/* THP: how much of the memory huge pages really map, for the honest report. */
static void count_huge(struct prepare_req *req, struct prealloc_job *job)
{
	struct prealloc_node_report n = { .size = sizeof(n) };

	req->info.huge_bytes = 0;
	for (unsigned int i = 0; job_fill_node_report(job, i, &n) == 0; i++)
		req->info.huge_bytes += n.huge_bytes;
}

static int prepare_finish(struct prealloc_job *job, int status, void *arg)
{
	struct prepare_req *req = arg;

	count_huge(req, job);
	if (status == -EBADMSG || status == -EXDEV)
		prepare_fail(req, PREALLOC_STEP_VERIFY, "verification failed: %s",
			     status == -EBADMSG ? "memory is not zero"
						: "pages are missing or on the wrong node");
	else if (status < 0 && status != -ECANCELED && !req->info.step)
		prepare_fail(req, PREALLOC_STEP_POPULATE, "populating %s failed: %s", req->final,
			     strerror(-status));
	if (status == 0)
		status = prepare_commit(req);
	if (status < 0)
		prepare_rollback(req);
	req->info.error = status;
	return status;
}

static void prepare_req_free(struct prepare_req *req)
{
	if (req->dir_fd >= 0)
		close(req->dir_fd);
	if (req->stage_fd >= 0)
		close(req->stage_fd);
	free(req);
}

static void prepare_destroy(void *arg)
{
	struct prepare_req *req = arg;

	prepare_rollback(req);	/* only what is left: nothing after a commit */
	prepare_req_free(req);
}

/* ---- before the workers ------------------------------------------------- */

static int set_identity(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	struct prepare_req *req = arg;
	struct statx stx;
	int r;

	r = file_statx(prealloc_region_fd(req->region), "", AT_EMPTY_PATH, &stx);
	if (r < 0)
		return r;
	record_set_identity(&s->r[ri], &stx);
	return store_save(ctx, s);
}

/* The file in the staging directory (or the reused one), bound to its nodes. */
static int prepare_create(struct prepare_req *req)
{
	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_FILE,
		.flags = (req->exists ? PREALLOC_REGION_REUSE : 0) |
			 (req->page == PREALLOC_PAGE_THP ? PREALLOC_REGION_THP : 0),
		.length = req->length,
		.path = req->exists ? req->final : req->stage_name,
		.nr_nodes = req->nr_nodes,
		.nodes = req->nodes,
		.node_bytes = req->node_bytes,
	};
	int fd, r;

	r = region_new_at(req->ctx, &ro, req->exists ? AT_FDCWD : req->stage_fd, &req->region);
	if (r < 0) {
		prepare_fail(req, PREALLOC_STEP_CREATE,
			     r == -EEXIST && req->exists
				 ? "%s exists with a different size; --reuse needs the exact size"
				 : "cannot create %s: %s",
			     req->final, strerror(-r));
		req->region = NULL;
		return r;
	}
	fd = prealloc_region_fd(req->region);
	/* Its owner comes at commit (place_file): until then it is ours alone. */
	if (req->info.created && fchmod(fd, req->o.mode ? req->o.mode & 07777 : 0600) < 0) {
		r = -errno;
		prepare_fail(req, PREALLOC_STEP_CREATE, "cannot set the mode of %s: %s", req->final,
			     strerror(-r));
		return r;
	}
	if (req->info.created) {
		r = record_update(req, set_identity);
		if (r < 0) {
			prepare_fail(req, PREALLOC_STEP_RECORD, "cannot record %s in %s: %s",
				     req->final, prealloc_ctx_state_dir(req->ctx), strerror(-r));
			return r;
		}
	}
	test_pause("after-create");
	return 0;
}

static int prepare_start_job(struct prepare_req *req, struct prealloc_job **ret_job)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_POPULATE,
		.flags = ((req->o.flags & PREALLOC_PREPARE_VERIFY) ? PREALLOC_JOB_VERIFY : 0) |
			 ((req->o.flags & PREALLOC_PREPARE_TOUCH) ? PREALLOC_JOB_TOUCH : 0),
		.threads = req->o.threads,
		.completion = req->o.completion,	/* read by the start only */
		.max_rate = req->more.max_rate,
	};
	struct job_flow flow = { .finish = prepare_finish, .destroy = prepare_destroy, .arg = req };
	struct job_spec spec = { .flow = &flow };
	int r;

	if (req->more.idle)
		jo.flags |= PREALLOC_JOB_IDLE;
	r = job_start_spec(req->region, &jo, &spec, ret_job);
	if (r < 0)
		prepare_fail(req, PREALLOC_STEP_POPULATE, "cannot start workers: %s", strerror(-r));
	return r;
}

int prepare_start(struct prealloc_ctx *ctx, const struct prealloc_prepare_opts *opts,
		  const struct prepare_more *more, struct prealloc_job **ret_job,
		  struct prealloc_prepare_info *ret_info)
{
	struct prepare_req *req;
	int r;

	if (!ctx || !opts || !ret_job)
		return -EINVAL;
	req = calloc(1, sizeof(*req));
	if (!req)
		return -ENOMEM;
	req->magic = PREPARE_MAGIC;
	req->ctx = ctx;
	if (more)
		req->more = *more;
	req->dir_fd = req->stage_fd = -1;
	req->info.size = sizeof(req->info);
	r = copy_sized_in(&req->o, sizeof(req->o), opts);
	if (r == 0)
		r = prepare_request(req);
	if (r == 0)
		r = prepare_admit(req);
	if (r == 0)
		r = prepare_create(req);
	/* Copied before the workers start: from then on finish may write req->info. */
	req->info.error = r;
	if (ret_info && ret_info->size >= sizeof(size_t))
		copy_sized_out(ret_info, &req->info, sizeof(req->info));
	if (r == 0) {
		r = prepare_start_job(req, ret_job);
		if (r < 0 && ret_info && ret_info->size >= sizeof(size_t)) {
			req->info.error = r;
			copy_sized_out(ret_info, &req->info, sizeof(req->info));
		}
	}
	if (r < 0) {
		prepare_rollback(req);
		prepare_req_free(req);
	}
	return r;
}

EXPORT int prealloc_prepare_start(struct prealloc_ctx *ctx,
				  const struct prealloc_prepare_opts *opts,
				  struct prealloc_job **ret_job,
				  struct prealloc_prepare_info *ret_info)
{
	return prepare_start(ctx, opts, NULL, ret_job, ret_info);
}

EXPORT int prealloc_prepare_info(struct prealloc_job *job, struct prealloc_prepare_info *ret_info)
{
	struct prepare_req *req;

	if (!job || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	req = job_flow_arg(job);
	if (!req || req->magic != PREPARE_MAGIC)
		return -EINVAL;	/* not a prepare job */
	prealloc_job_wait(job);	/* as prealloc_clear_file_info: the outcome, once settled */
	copy_sized_out(ret_info, &req->info, sizeof(req->info));
	return 0;
}

static int prepare_info_any(struct prealloc_job *job, void *ret_info)
{
	return prealloc_prepare_info(job, ret_info);
}

EXPORT int prealloc_prepare(struct prealloc_ctx *ctx, const struct prealloc_prepare_opts *opts,
			    struct prealloc_prepare_info *ret_info,
			    struct prealloc_report *ret_report)
{
	struct prealloc_job *job;
	int r;

	r = prealloc_prepare_start(ctx, opts, &job, ret_info);
	return r < 0 ? r : job_sync(job, prepare_info_any, ret_info, ret_report);
}
