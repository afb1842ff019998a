/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: the warm pool: take, give, fill, serve, status.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_WARM_H
#define LIBPREALLOC_WARM_H

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the warm pool (docs/warm.md) -----------------------------------------
 * Files populated on their node and proven zero ahead of time, kept in the
 * root-only staging directory of their mount, handed to a guest by a link
 * in O(1), taken back when it stops and cleared again by prealloc_warm_fill.
 * A holder never sees a byte another holder wrote: a file given back
 * leaves the warm pool and a new one, made and verified on its node, takes its
 * place (a holder may keep references to its file that no /proc file
 * shows: fds in flight, pipe buffers, pins). Only a file given back by a
 * tenant to the same tenant (a label named at take and at give), with a
 * write lease proving no open file of it is left, is cleared in place for
 * that tenant. A file with a link the warm pool did not make is never handed
 * out again.
 */
enum prealloc_warm_state {
	PREALLOC_WARM_POPULATING = 1,	/* being made and populated on its node */
	PREALLOC_WARM_READY,		/* every byte zero, every page on its node */
	PREALLOC_WARM_HANDED,		/* linked at a holder's path */
	PREALLOC_WARM_RETURNING,	/* being given back (written before the holder's link goes) */
	PREALLOC_WARM_DIRTY,		/* back, root's, the warm pool's link alone: renewed, or cleared for its tenant */
	PREALLOC_WARM_CLEARING,		/* being cleared and verified */
	PREALLOC_WARM_QUARANTINED,	/* never handed out again; removed by the next fill */
};

enum prealloc_warm_take_flags {
	PREALLOC_WARM_TAKE_CHOWN = 1u << 0,	/* give the file uid:gid */
	PREALLOC_WARM_TAKE_FALLBACK = 1u << 1,	/* no READY file: prepare one cold */
	/*
	 * Reserve, do not link: a READY file of the size (cut or grown now)
	 * recorded HANDED to holder with no path, so that nothing else takes,
	 * cuts or gives it back (admission, pressure, another take) until a
	 * take with RESERVED links it. path is not used. The holder's check
	 * and expiry say how long it is kept for a guest that never starts.
	 */
	PREALLOC_WARM_TAKE_RESERVE = 1u << 2,
	/* Link the file holder reserved (of exactly length) at path, file owner and all. */
	PREALLOC_WARM_TAKE_RESERVED = 1u << 3,
	/*
	 * Link at path's last component in dir_fd, a directory the caller
	 * opened (path's directory, checked step by step, as
	 * prealloc_dir_open does: a start hook in a directory the guest's
	 * user may write), never by resolving path. Without it the take opens
	 * path's directory with prealloc_dir_open itself.
	 */
	PREALLOC_WARM_TAKE_DIR_FD = 1u << 4,
	/* No partial hit: a smaller file is not grown (-ENOENT, nothing touched). */
	PREALLOC_WARM_TAKE_NO_GROW = 1u << 5,
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
	/*
	 * The holder lives while holder_check exists, or (before it does)
	 * until holder_expires (seconds since the epoch); neither: for ever,
	 * unless the ctx's holder check says otherwise.
	 */
	const char *holder_check;
	int64_t holder_expires;
	int dir_fd;		/* DIR_FD: where the link goes (not closed) */
	/*
	 * The holder's tenant (NULL: none; 1-63 printable bytes, not starting
	 * with '@', the warm pool's own labels): a file
	 * given back with the same tenant may be cleared in place and handed
	 * to this tenant only; a READY file of another tenant is never taken.
	 */
	const char *tenant;
	/*
	 * Records never to take (nor count, in prealloc_warm_find): ids a
	 * caller has counted already, e.g. the file found for one backend
	 * when it asks for the next of the same size. NULL, 0: none.
	 */
	const uint64_t *skip_ids;
	unsigned int nr_skip_ids;
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
	/*
	 * CHOWN: HANDED warm files other holders' takes gave the same uid,
	 * of no tenant of this take's (prealloc_warm_shared_uid): a process
	 * of that uid opens them by path, and they this one.
	 */
	unsigned int shared_uid_files;
	char shared_uid_with[512];	/* the first one's holder, else its path */
};

/*
 * Records a READY warm file of node and page size HANDED to holder, gives
 * it its file owner, then links it at path, in that order (the record first: a
 * file at path is never READY for another take). The file is exactly length, or
 * the smallest larger one cut to size, or (a partial hit) the largest
 * smaller one grown, the rest populated on its node and verified. -ENOENT
 * (nothing touched) when no READY file is on that node and mount, unless
 * FALLBACK; -EXDEV when path is on another mount; -EEXIST when path exists.
 * path's directory (dir_fd's with DIR_FD) must be root's or the
 * file owner's (uid with CHOWN, else the caller's): -EPERM otherwise; without
 * DIR_FD, -ELOOP when a step of it is a symbolic link (prealloc_dir_open).
 */
int prealloc_warm_take(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *opts,
		       struct prealloc_warm_take_info *ret_info);

/* Who else holds warm files of one uid: prealloc_warm_shared_uid. */
struct prealloc_warm_shared_info {
	size_t size;		/* sizeof(struct prealloc_warm_shared_info) */
	unsigned int files;	/* such files */
	char with[512];		/* the first one's holder, else its path; "" none */
};

/*
 * Counts the HANDED warm files that a take gave to uid (CHOWN) and that
 * are linked at a path, but for holder's own (NULL: a holder of none) and
 * for files of a tenant the caller shares: tenant (NULL: none) or the
 * tenant of a file holder holds. Mode 0600 keeps other uids out, never
 * the same uid: a process of uid opens each of them by path. The warm
 * pool cannot make isolation the host lacks; holders are apart only under
 * distinct uids or MAC confinement (docs/warm.md, threat model). Over the
 * store as it is (no lock), changing nothing.
 */
int prealloc_warm_shared_uid(struct prealloc_ctx *ctx, unsigned int uid, const char *holder,
			     const char *tenant, struct prealloc_warm_shared_info *ret_info);

/*
 * Opens a directory a file for uid is to be linked in, one step at a time:
 * path absolute, from "/"; or relative, below at, a directory the caller
 * opened and trusts (every step then on at's filesystem: -EXDEV). No step
 * may be a symbolic link (-ELOOP: a link sends the file where its maker
 * chose) or belong to another user than root and uid (-EPERM: that user
 * could swap what lies below it); '..' is refused (-EINVAL). Returns the
 * directory's descriptor (O_RDONLY | O_CLOEXEC), the caller's to close, for
 * PREALLOC_WARM_TAKE_DIR_FD or PREALLOC_PREPARE_DIR_FD; or a negative errno,
 * with why (len bytes, NULL: none) naming the step and the reason.
 */
int prealloc_dir_open(int at, const char *path, unsigned int uid, char *why, size_t len);

struct prealloc_warm_find_info {
	size_t size;		/* sizeof(struct prealloc_warm_find_info) */
	int hit;		/* enum prealloc_warm_hit a take would report; 0: none */
	unsigned int reserved;	/* 1: the file is the holder's reservation (RESERVED) */
	uint64_t id;		/* its record */
	uint64_t file_bytes;	/* its size now (before a cut or growth) */
	/*
	 * Files the pick chose among: READY ones of the node, page size,
	 * mount and tenant, of length or more and (unless NO_GROW) smaller;
	 * RESERVED: the holder's reserved ones of exactly length.
	 */
	unsigned int files;
	char message[512];	/* why none, or why the request is refused */
};

/*
 * Which file prealloc_warm_take with opts would get, and how many could
 * serve, changing nothing (no lock taken, no file opened): the take's own
 * pick over the store as it is now. -ENOENT (message says why) when a take
 * would find none (FALLBACK is not followed); the request is checked as
 * the take checks it, but for path, which is not used. A take later may
 * still get another file: the store may change between, and a take skips
 * a file it finds not the pool's alone.
 */
int prealloc_warm_find(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *opts,
		       struct prealloc_warm_find_info *ret_info);

struct prealloc_warm_give_info {
	size_t size;		/* sizeof(struct prealloc_warm_give_info) */
	unsigned int files;	/* files given back */
	unsigned int returning;	/* of them, still open or mapped elsewhere (never cleared in place) */
	unsigned int quarantined; /* of them, with a link the warm pool did not make */
	char message[512];
};

/*
 * Takes files back: the one linked at path (which must be the link its take
 * made: the record's inode), or every file handed to holder (path NULL).
 * Each is RETURNING (written first), removed from path, given to root with
 * mode 0600, then DIRTY, or QUARANTINED if it has another link. A DIRTY file
 * leaves the warm pool at the next fill (a new file takes its place); its pages
 * are never cleared or punched while anything may still open or map it (a
 * VMM that gives back early keeps its memory until it unmaps). info's
 * returning counts files still open or mapped elsewhere now. The caller
 * never waits. No tenant: see prealloc_warm_give_with.
 */
int prealloc_warm_give(struct prealloc_ctx *ctx, const char *path, const char *holder,
		       struct prealloc_warm_give_info *ret_info);

struct prealloc_warm_give_opts {
	size_t size;		/* sizeof(struct prealloc_warm_give_opts) */
	unsigned int flags;	/* none yet: 0 */
	const char *path;	/* one of path and holder, as prealloc_warm_give */
	const char *holder;
	/*
	 * The tenant giving it back: the file may be cleared in place for
	 * its tenant's next take only when this names the tenant its take
	 * named (and a write lease then proves no open file of it is left);
	 * NULL, or another tenant: it leaves the warm pool for a new file.
	 */
	const char *tenant;
};

/* prealloc_warm_give, with the tenant that gives the files back. */
int prealloc_warm_give_with(struct prealloc_ctx *ctx, const struct prealloc_warm_give_opts *opts,
			    struct prealloc_warm_give_info *ret_info);

enum prealloc_warm_fill_flags {
	PREALLOC_WARM_FILL_IDLE = 1u << 0,	/* workers SCHED_IDLE (else nice 19) */
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
	/*
	 * Called in the caller's thread about every 100 ms while a file is
	 * cleared or made, with its job (prealloc_job_node_progress reads its
	 * bytes done and total); NULL: none.
	 */
	void (*progress)(void *userdata, struct prealloc_job *job);
	void *userdata;
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
	/* Files given back that left the warm pool, each for a new file made and verified. */
	unsigned int renewed;
	uint64_t renewed_bytes;
	double renew_seconds;	/* the new files' own time */
	/*
	 * Targets that cannot be met: their node's share (max_share, less the
	 * targets before them on the node) holds fewer whole files than they
	 * ask for; the bytes short, and the first one's why.
	 */
	unsigned int unmet;
	uint64_t unmet_bytes;
	char unmet_message[512];
	/* Bytes of the files created (not renewed) to grow the targets. */
	uint64_t created_bytes;
	/*
	 * Where the new files' time went (those renewed and created), summed,
	 * seconds: admission (the store, the pool grown, the file made),
	 * populate (faulted in on the node, each step read back for zeroes as
	 * it went), verify (every page counted on its node), commit (the rest
	 * of a new file's making: its record READY, its name, its mapping let
	 * go); retire: the old files of renewals
	 * let go and their records settled.
	 */
	double admit_seconds, populate_seconds, verify_seconds, commit_seconds, retire_seconds;
};

/*
 * One pass over the warm pool, then returns: RETURNING files that are free
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

/* Which fds are set (0 is a valid fd, so flags, as PREALLOC_ADMIT_CANCEL_FD). */
enum prealloc_warm_serve_flags {
	PREALLOC_WARM_SERVE_STOP_FD = 1u << 0,
	PREALLOC_WARM_SERVE_RELOAD_FD = 1u << 1,
};

struct prealloc_warm_serve_opts {
	size_t size;		/* sizeof(struct prealloc_warm_serve_opts) */
	unsigned int flags;	/* enum prealloc_warm_serve_flags */
	const char *conf_path;	/* NULL: /etc/prealloc/warm.conf ($PREALLOC_WARM_CONF) */
	/*
	 * STOP_FD, readable: prealloc_warm_serve_run returns (a clear or a new
	 * file under way is cancelled). Not read: the caller's to drain.
	 * Without it the run ends only with the process.
	 */
	int stop_fd;
	/*
	 * RELOAD_FD, readable: warm.conf is read again (what is readable is
	 * read and dropped: a signalfd, eventfd or pipe); a bad one is logged
	 * and the targets stay.
	 */
	int reload_fd;
	unsigned int lock_timeout_ms;	/* 0: 30000 */
	/*
	 * Called in serve's thread after each pass and each pressure event,
	 * the store as the pass left it (the CLI's --metrics file is written
	 * there); NULL: none.
	 */
	void (*pass_done)(void *userdata);
	void *userdata;
};

struct prealloc_warm_serve_info {
	size_t size;		/* sizeof(struct prealloc_warm_serve_info) */
	unsigned int passes;
	unsigned int returned, cleared, created, dropped;	/* as prealloc_warm_fill's */
	uint64_t cleared_bytes, dropped_bytes;
	uint64_t pressure_events;	/* PSI events, or MemAvailable under the floor */
	uint64_t pressure_dropped_bytes; /* of dropped_bytes, given back under pressure */
	char message[512];	/* why _new failed: a bad line of warm.conf, named */
	unsigned int renewed;	/* as prealloc_warm_fill's */
	uint64_t renewed_bytes;
};

/* Reads warm.conf and arms the pressure trigger; -EINVAL with info->message for a bad conf. */
int prealloc_warm_serve_new(struct prealloc_ctx *ctx, const struct prealloc_warm_serve_opts *opts,
			    struct prealloc_warm_serve **ret_serve,
			    struct prealloc_warm_serve_info *ret_info);
/* Serves until stop_fd is readable: 0, or a negative errno if it cannot wait. */
int prealloc_warm_serve_run(struct prealloc_warm_serve *serve,
			    struct prealloc_warm_serve_info *ret_info);
void prealloc_warm_serve_free(struct prealloc_warm_serve *serve);

/* The take-duration histogram's upper bounds, in seconds (prealloc_warm_status). */
#define PREALLOC_WARM_TAKE_BOUNDS 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0
#define PREALLOC_WARM_TAKE_BUCKETS 10	/* the bounds, and one bucket over the last */

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
	/*
	 * Hugetlb pages of the node and page size in use (the pool less its
	 * free pages) that no record accounts for: neither a warm file nor a
	 * record's pool line. A holder that left the warm pool may still hold its
	 * file's pages by references the kernel keeps (a pipe, a pin, an fd
	 * in flight): they show here until it lets go, as do another
	 * program's. Admission never promises them (they are not free). 0 for 4k.
	 */
	uint64_t unrecorded_pages;
	/*
	 * Counted by every process that takes or gives, since the state
	 * directory was made (/run: since boot). takes[hit] by enum
	 * prealloc_warm_hit; takes[0]: misses (no READY file, nothing touched).
	 */
	uint64_t takes[PREALLOC_WARM_COLD + 1];
	uint64_t take_refusals;	/* a file found, the take refused (no pages to grow it, ...) */
	uint64_t renewals;	/* files renewed: a new file in a given-back one's place */
	uint64_t pressure_files, pressure_bytes;	/* given back under memory pressure */
	double last_fill_gbps;	/* the last new file's populate and verify; 0 none yet */
	/*
	 * Files quarantined (a link besides the warm pool's, a size not their
	 * record's, ...), each once; counted as takes are.
	 */
	uint64_t quarantines;
	/*
	 * The memory the QUARANTINED files hold now (their blocks, 4k
	 * included): a holder's link keeps a quarantined file, and its record,
	 * until it goes.
	 */
	uint64_t quarantined_held_bytes;
	/*
	 * Bytes holders added past their files' records (grown, allocated
	 * past the end, hugetlb pages a mapping past it set aside: HugePages_Rsvd), cut when
	 * the file came back; counted as takes are (reservations: best effort).
	 */
	uint64_t trimmed_bytes;
	/*
	 * Counted as takes are: files given back by their holders, new files
	 * made (for a target, a renewal or a cold take), files cleared in
	 * place for their tenant.
	 */
	uint64_t gives, created, inplace_clears;
	/*
	 * The takes counted full, cut, partial or cold by their seconds
	 * (prealloc_warm_take_info's): take_buckets[i] those over bound i - 1
	 * and at most bound i of PREALLOC_WARM_TAKE_BOUNDS, the last those
	 * over every bound (not cumulative); take_seconds_sum their sum.
	 */
	uint64_t take_buckets[PREALLOC_WARM_TAKE_BUCKETS];
	double take_seconds_sum;
	/* When a pass last ended without failure for this target (seconds since the epoch); 0 none. */
	int64_t last_pass;
	/*
	 * Bytes of the target that its node's share (warm.conf's max_share,
	 * less the targets before it on the node) cannot hold in whole
	 * files, as the last pass found: a target that cannot be met.
	 */
	uint64_t unmet_bytes;
};

/*
 * The warm pool by mount, node and page size: entry index of them (sorted), or
 * -ENOENT past the last; -EINVAL with ret_status->message for a bad conf. Targets of conf_path (NULL: the default) appear
 * even with no file yet.
 */
int prealloc_warm_status(struct prealloc_ctx *ctx, const char *conf_path, unsigned int index,
			 struct prealloc_warm_status *ret_status);

#ifdef __cplusplus
}
#endif
#endif
