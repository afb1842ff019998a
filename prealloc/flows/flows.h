/* SPDX-License-Identifier: MIT */
/*
 * The flows, private to the library: prepare (its request as it is
 * resolved), clear a file, and what their files share. Each flow is one
 * public call over the state and engine layers (tests/unit/test-layers.sh).
 * Never installed.
 */
#ifndef PREALLOC_FLOWS_H
#define PREALLOC_FLOWS_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "counters.h"
#include "engine.h"
#include "state.h"

/* ---- prepare (prepare.c, prepare_req.c, locate.c) ------------------------ */

/* How a warm file's job runs: in the background, or as fast as it goes. */
struct warm_pace {
	unsigned int threads;	/* per node; 0: every allowed CPU of the node */
	uint64_t max_rate;	/* bytes per second per node; 0: no cap */
	bool idle;		/* workers SCHED_IDLE */
	int stop_fd;		/* -1, or readable: stop (a clear is cancelled, the file DIRTY again) */
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
	struct prealloc_region *region;
	struct rec_owner owner;
	/*
	 * A warm file (warm.c): recorded POPULATING, then READY in the pool, and
	 * left at its staged name (the pool's own link) instead of being linked
	 * at a path of its own.
	 */
	bool warm;
	struct warm_pace pace;	/* warm: how its populate runs */
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
/* prepare.c: prealloc_prepare_start, or (warm not NULL) a new warm file of the pool. */
int prepare_start(struct prealloc_ctx *ctx, const struct prealloc_prepare_opts *opts,
		  const struct warm_pace *warm, struct prealloc_job **ret_job,
		  struct prealloc_prepare_info *ret_info);
/* "512M", "1G", or bytes when no binary suffix is exact. */
void size_token(uint64_t bytes, char *buf, size_t len);
int prepare_admit(struct prepare_req *req);
/* admit_message.c: the admission failure in one line. */
void admit_message(const struct prealloc_admit_result *res, int err, bool reserve, char *buf,
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

/* ---- the warm pool's targets (warm_conf.c) ---------------------------------- */

/* One target of /etc/prealloc/warm.conf: bytes of warm files to keep. */
struct warm_target {
	int node;
	uint64_t page_size;	/* 4K, 2M or 1G */
	uint64_t bytes;		/* files x file_bytes */
	uint64_t file_bytes;
	unsigned int files;
	char mount[PATH_MAX];	/* "": the mount prealloc picks for page_size */
	unsigned int line;	/* where it was set */
	/* Declared so: every holder of its files is one tenant (cleared in place, never renewed). */
	bool single_tenant;
};
/*
 * The settings of warm.conf (docs/warm.md), for serve and fill. A value
 * of WARM_UNSET was not given: each user picks its own default.
 */
#define WARM_UNSET UINT64_MAX
struct warm_settings {
	uint64_t clear_threads;		/* per node */
	uint64_t clear_rate;		/* bytes per second per node; 0: no cap */
	uint64_t max_share;		/* percent of a node's memory the pool may hold */
	uint64_t psi_stall_us;		/* pressure = some STALL WINDOW; 0: off */
	uint64_t psi_window_us;
	uint64_t psi_full;		/* 1: "full", 0: "some" */
	uint64_t pressure_step;		/* bytes given back per pressure event */
	uint64_t available_floor;	/* without PSI: MemAvailable below it is pressure */
	uint64_t pressure_quiet_s;	/* no pressure this long: the targets hold again */
	uint64_t check_interval_s;	/* how often serve looks for holders gone */
};

struct warm_conf {
	struct warm_target *t;		/* in the file's order */
	unsigned int nr;
	struct warm_settings set;
	bool found;			/* a file was read (else: no targets, no settings) */
};
/*
 * The targets and settings in text (a warm.conf). -EINVAL with err saying
 * which line and why: nothing is returned of a file with a bad line.
 */
int warm_conf_parse(const char *text, struct warm_conf *ret, char *err, size_t err_len);
/* The conf at path (NULL: $PREALLOC_WARM_CONF, else /etc/prealloc/warm.conf); empty if absent. */
int warm_conf_load(const char *path, struct warm_conf *ret, char *err, size_t err_len);
void warm_conf_free(struct warm_conf *conf);
/* A setting, or def when unset. */
static inline uint64_t warm_setting(uint64_t value, uint64_t def)
{
	return value == WARM_UNSET ? def : value;
}

/* ---- the warm pool (warm_file.c; warm.c, warm_fill.c, warm_status.c) ---- */

/* The latest holder expiry a take accepts: 9999-12-31T23:59:59Z. */
#define WARM_EXPIRES_MAX INT64_C(253402300799)

/*
 * A caller's tenant label: 1 to TENANT_MAX - 1 printable ASCII bytes, not
 * starting with '@', which the pool keeps for its own labels.
 */
static inline bool tenant_valid(const char *t)
{
	size_t n = 0;

	for (; t[n]; n++)
		if (t[n] <= ' ' || t[n] > '~')
			return false;
	return n > 0 && n < TENANT_MAX && t[0] != '@';
}
/*
 * The label of a file cleared in place because its target says
 * single-tenant: any take may have it while the target still says so;
 * fill renews it once it does not (a reload withdrew the declaration).
 */
#define WARM_TENANT_SINGLE "@single-tenant"

/* The mount of warm files of page_size: mount, else prealloc's pick (NULL: none). */
const char *warm_mount(struct prealloc_ctx *ctx, const char *mount, uint64_t page_size);
/* Whether r is a warm file of node and page_size on device dev. */
bool warm_is(const struct record *r, int node, uint64_t page_size, uint64_t dev);
/* A warm file's mount: its pool link is <mount root>/<staging directory>/<name>. */
void warm_record_mount(const struct record *r, char *buf, size_t len);
/* The target of warm file r, or -1: none wants it. devs: each target's mount, 0 none. */
long warm_target_of(const struct warm_conf *conf, const uint64_t *devs, const struct record *r);
/* Whether r's target is declared single-tenant. */
bool warm_single_tenant(const struct warm_conf *conf, const uint64_t *devs, const struct record *r);
/* The pool's link of r opened O_RDWR and checked to be r's file; -ESTALE if not. */
int warm_open(const struct record *r, struct stat *ret_st);
/*
 * Removes the holder's link at r->path if it is still r's file (must: or
 * fail, e.g. -ESTALE when another file is there; else 0 then).
 */
int warm_unlink_path(const struct record *r, bool must);
/*
 * Whether r's file (fd: the pool's link, this process's only descriptor
 * of it) may be open elsewhere: a write lease refused, or (no lease on
 * this filesystem) procfs shows a user or cannot be read. Fail closed.
 */
bool warm_in_use(struct prealloc_ctx *ctx, const struct record *r, int fd);
/* r's file made root's, mode 0600, by its name in the staging directory. */
void warm_seize(const struct record *r);
/*
 * A given-back file made root's (0600), then: 0 free, -EBUSY open or
 * mapped elsewhere (or not provably not), -EMLINK it has a link besides
 * the pool's.
 */
int warm_check(struct prealloc_ctx *ctx, struct record *r);
/* r's file at length as a region bound to its node (EXISTING: -EEXIST if resized). */
int warm_region(struct prealloc_ctx *ctx, const struct record *r, uint64_t length,
		struct prealloc_region **ret);
/*
 * Grows r's file (fd) to length, the new pages populated on its node and
 * the whole verified; r->size follows. On failure the file is cut back.
 */
int warm_grow(struct prealloc_ctx *ctx, struct record *r, int fd, uint64_t length);
/* job to its end; a readable stop_fd (-1: none) cancels it first (-ECANCELED). */
int warm_job_finish(struct prealloc_job *job, int stop_fd);
/* r's state after warm_check said check: DIRTY or QUARANTINED; no holder, no path. */
void warm_returned(struct record *r, int check);
/*
 * warm_pick.c: the one pick of a take and a find. The request o checked,
 * its mount's device in *ret_dev, and (ret_dir not NULL: a take) the
 * directory of o->path opened in *ret_dir (-1: RESERVE, no path); on
 * failure why in msg.
 */
int warm_take_check(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o, char *msg,
		    size_t len, uint64_t *ret_dev, int *ret_dir);
/*
 * The index in s of the file a take with o gets on the mount of device
 * dev, or -1: exactly its size, else the smallest larger one (cut), else
 * (unless NO_GROW) the largest smaller one (grown); RESERVED: the one its
 * holder reserved. ret_files (NULL: not wanted): how many it chose among.
 */
long warm_pick(const struct store *s, const struct prealloc_warm_take_opts *o, uint64_t dev,
	       unsigned int *ret_files);
/* A pick that found none: -ENOENT, why in msg. */
int warm_pick_miss(const struct prealloc_warm_take_opts *o, char *msg, size_t len);
/* The enum prealloc_warm_hit of a file of file_bytes handed over as length. */
int warm_hit_of(uint64_t file_bytes, uint64_t length);
/* err, with fmt's text in msg. */
__attribute__((format(printf, 4, 5))) int warm_fail(char *msg, size_t len, int err,
						    const char *fmt, ...);
/*
 * A new warm file of length on node and mount, populated, verified zero
 * and on its node, recorded READY (synchronous; prepare's flow, warm).
 */
int warm_create(struct prealloc_ctx *ctx, int node, uint64_t page_size, const char *mount,
		uint64_t length, const struct warm_pace *pace, char *why, size_t why_len,
		uint64_t *ret_id);


/* ---- a pass over the pool (warm_fill.c), for fill and serve ---------------- */

#define WARM_MAX_SHARE 50	/* percent of a node's memory, when warm.conf sets none */

struct warm_pass {
	const struct warm_conf *conf;
	const uint64_t *limit;		/* per target: the bytes it may hold now */
	struct warm_pace pace;		/* clears and new files */
	unsigned int lock_timeout_ms;
	bool drop_untargeted;		/* files no target wants are given back */
};
/*
 * Each target's limit now: its bytes, within max_share of its node's memory
 * (the targets before it on the node first), less cut (NULL: none).
 */
void warm_limits(struct prealloc_ctx *ctx, const struct warm_conf *conf, const uint64_t *cut,
		 uint64_t *ret_limit);
/*
 * One pass: returns checked, files over a limit given back (DIRTY first,
 * then READY), DIRTY files cleared, targets grown to their limits. Stops
 * early (0) once pace.stop_fd is readable.
 */
int warm_pass_run(struct prealloc_ctx *ctx, const struct warm_pass *p,
		  struct prealloc_warm_fill_info *info);
/* warm_fill.c, for the pass: the first failure into info->message. */
__attribute__((format(printf, 2, 3))) void warm_note(struct prealloc_warm_fill_info *info,
						     const char *fmt, ...);
/* Whether fd (-1: none) is readable now: serve was asked to stop. */
bool warm_stop_asked(int fd);
/* Under the lock: files back from holders checked, dead fills' and runs' leftovers settled. */
int warm_returns(struct prealloc_ctx *ctx, struct store *s, struct prealloc_warm_fill_info *info);
/* Every DIRTY file: CLEARING, cleared and verified, then READY (or removed, or DIRTY if stopped). */
int warm_clears(struct prealloc_ctx *ctx, const struct warm_pass *p, const uint64_t *devs,
		struct prealloc_warm_fill_info *info);

/*
 * Memory pressure: warm files given back until bytes are (or none can go
 * now): files no target wants, then DIRTY ones, then READY ones of the
 * fullest target. What each target gave is added to cut[target].
 */
int warm_pass_shrink(struct prealloc_ctx *ctx, const struct warm_pass *p, uint64_t bytes,
		     uint64_t *cut, struct prealloc_warm_fill_info *info);

#endif
