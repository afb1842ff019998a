/* SPDX-License-Identifier: MIT */
/*
 * The state layer, private to the library: the record store (its records,
 * format and owners), the state directory and its one lock, admission,
 * reservations and how a record ends. Calls only the memory layer and the
 * root (tests/tree/test-layers.sh). Never installed.
 */
#ifndef PREALLOC_STATE_H
#define PREALLOC_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "host_limits.h"
#include "memory.h"

/* ---- records and the store (store.c, records.c, owners.c, store_v1.c) ---- */

#define STORE_LEAF "store"
#define STORE_VERSION 2
/*
 * A store with a warm file in it (docs/warm.md) is written as version 3, a
 * "warm" line after its rec line; one without stays version 2, so that a
 * prealloc that knows no warm pool still reads it.
 */
#define STORE_VERSION_WARM 3
/*
 * A warm file recycled for one tenant (docs/warm.md) names it on its warm
 * line: "warm <state> <node> <tenant>", version 4, written only when a
 * record has one, so that stores without tenants stay readable by 0.2.
 */
#define STORE_VERSION_TENANT 4
/*
 * A warm file with a move under way outside the lock, the uid a take gave
 * it to, or the warm.conf its in-place clear was declared by (docs/records.md)
 * has "busy", "uid" and "declared" lines after its warm line: version 5,
 * written only when a record has one, so that other stores stay readable
 * by the releases before it.
 */
#define STORE_VERSION_HELD 5
#define TENANT_MAX 64	/* a tenant label's bytes, its NUL included */

/* record.warm of a record that is no warm file (else enum prealloc_warm_state). */
#define WARM_NONE 0

/* One node's share of one page size's pool, for one record. */
struct rec_pool {
	int node;
	uint64_t page_size;
	uint64_t pages;		/* pages the record needs on the node */
	uint64_t added;		/* pages added to the node's pool for it */
	uint64_t base;		/* the file's resident pages when it was named (PREPARING) */
	/*
	 * A growth in flight: added names the pages asked for, written before
	 * the pool write; grow_from is the pool's nr_hugepages before it. If
	 * the run dies before recording what the kernel gave, the pool itself
	 * says how much it grew, so the record never claims pages it did not add.
	 */
	bool growing;
	uint64_t grow_from;
};

struct rec_owner {
	int kind;		/* enum prealloc_record_owner */
	int pid;		/* RUN */
	uint64_t start;		/* RUN: start time in clock ticks, against pid reuse */
	char holder[256];	/* HOLDER */
	char check[PATH_MAX];	/* HOLDER: exists while it lives, "" none */
	int64_t expires;	/* HOLDER: realtime seconds, 0 never */
};

struct record {
	uint64_t id;
	int state;		/* enum prealloc_record_state */
	struct rec_owner owner;
	bool has_file;
	bool created;		/* made by prealloc, so it may be removed; else adopted */
	uint64_t dev, ino;	/* 0 until the file exists; kept once it is unlinked */
	/*
	 * The file's birth time, where its filesystem keeps one (tmpfs; not
	 * hugetlbfs): with dev and ino, it tells our file from a new one that
	 * reuses the inode number after ours was deleted by hand, and nothing
	 * a VMM does to its memory changes it (holes punched, fallocate,
	 * writes, chmod, utimes). Stores written before it kept an mtime that
	 * prealloc had set here instead, which such changes moved.
	 * 0: none (no birth time, adopted, or converted from 0.1).
	 */
	int64_t tag_sec;
	long tag_nsec;
	uint64_t size;		/* file size */
	uint64_t page_size;	/* the file's page size (PREALLOC_PAGE_THP for thp) */
	char path[PATH_MAX];	/* final path */
	char tmp[PATH_MAX];	/* created files: the hidden name it is populated under */
	unsigned int nr_pools;
	struct rec_pool *pools;
	int warm;		/* WARM_NONE, or enum prealloc_warm_state */
	int warm_node;		/* a warm file's node */
	/*
	 * A warm file's tenant: given at take; kept at give only when the give
	 * names the same one; then the file may be cleared in place for that
	 * tenant's next take, else it leaves the warm pool. "" none.
	 */
	char tenant[TENANT_MAX];
	/*
	 * A take or a give of this warm file under way outside the store's
	 * lock (its holder's directory, its checks): the process doing it, by
	 * pid and start time. While it lives nobody else moves the record;
	 * once it is gone the next pass finishes or undoes what it left.
	 * pid 0: none.
	 */
	int busy_pid;
	uint64_t busy_start;
	/* The uid:gid a take gave the file to (has_uid), for the shared-uid warning. */
	bool has_uid;
	uint32_t uid, gid;
	/*
	 * A file cleared in place because its target was declared single-tenant:
	 * the warm.conf that declared it and the FNV-1a 64 of the text read.
	 * A take hands it out only while that declaration still stands. "" none.
	 */
	char declared[PATH_MAX];
	uint64_t declared_sum;
};

struct store {
	struct record *r;
	size_t nr, cap;
	bool legacy;		/* read from 0.1's files, not converted: a save converts them */
	/*
	 * The state directory, resolved once by store_open() (an fd checked
	 * ours alone) and closed by store_close(): the open's reads and saves
	 * go through it. Without one (a store made in memory, or read by
	 * store_load()), a save resolves the directory for itself.
	 */
	bool has_dir;
	int dir;
	/* What store_note queued: logged by store_close once the lock is dropped. */
	struct store_note *notes;
	unsigned int nr_notes;
	struct prealloc_ctx *note_ctx;
};

/*
 * The store's one way in (store_lock.c): every caller reads and writes the
 * store through these.
 *
 *   store_open()   the lock, then the store read. At the first open that
 *                  finds 0.1's files and no store, they are converted: the
 *                  store is written, they go (store_v1.c); a store once
 *                  written is all any open reads from then on, and an open
 *                  finding one never looks for 0.1's files. Shares a dead
 *                  run left marked growing are settled (and saved).
 *   store_load()   the store read without the lock (a snapshot, for status);
 *                  missing is empty, 0.1's files are read, not converted;
 *                  a copy of what this ctx read last while the file is the
 *                  same and this process saved none since (store_cache.c).
 *   store_save()   the store written whole and atomically, ahead of the
 *                  change it describes; under the lock.
 *   store_close()  the store freed, the directory closed, the lock dropped.
 *
 * -EBADMSG: the store is corrupt (refused, never reset).
 */
int store_open(struct prealloc_ctx *ctx, unsigned int timeout_ms, struct store *s, int *ret_fd);
/* store_open() whose lock wait cancel_fd ends (-ECANCELED; -1: none, as store_open). */
int store_open_cancel(struct prealloc_ctx *ctx, unsigned int timeout_ms, int cancel_fd,
		      struct store *s, int *ret_fd);
int store_load(struct prealloc_ctx *ctx, struct store *s);
int store_save(const struct prealloc_ctx *ctx, const struct store *s);
void store_close(struct store *s, int fd);
/*
 * A line for ctx's log about s: never written under the store's lock (the
 * log callback may call back into the library), so queued while s holds
 * it and logged by store_close after the unlock; at once for a store read
 * without the lock.
 */
void store_note(struct prealloc_ctx *ctx, struct store *s, int level, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * store_load() for a caller that keeps what it read (store_cache.c). known
 * (NULL: none) is what it read before: while the store's file is still the
 * one known names and known is settled (written long enough before it was
 * read that no later file can share its identity), or while the file
 * still holds the text known read, 1 and nothing parsed; else 0, s
 * loaded, *ret_text (NULL: not wanted) the text it came from, the caller's
 * to free (NULL when there was none), and *ret_id the file's identity.
 */
struct store_known {
	const char *text;
	size_t len;
	struct statx id;
	bool settled;
};
int store_load_since(struct prealloc_ctx *ctx, struct store *s, const struct store_known *known,
		     char **ret_text, size_t *ret_len, struct statx *ret_id);
/*
 * store_cache.c: the store as store_load() reads it, not copied: *ret held
 * (ctx's records lock) until store_cache_release(); for a caller that only
 * looks.
 */
int store_cache_hold(struct prealloc_ctx *ctx, const struct store **ret);
void store_cache_release(struct prealloc_ctx *ctx);
/* Runs fn on record id between store_open() and store_close() (fn saves); -ENOENT: none. */
int store_update(struct prealloc_ctx *ctx, unsigned int timeout_ms, uint64_t id,
		 int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg),
		 void *arg);
void store_free(struct store *s);
/* Parses/formats the text of a store (records.c): pure, for tests and the fuzzer. */
int store_parse(const char *text, struct store *s);
int store_format(const struct store *s, char **ret_text, size_t *ret_len);
/*
 * 0.1's files (store_v1.c), in the state directory dir: whether any is
 * there (a stat each, nothing read); read into s (s->legacy set when any
 * was); converted: text written as the store under 0.1's lock, then they go.
 */
bool legacy_present(int dir);
int legacy_load(int dir, struct store *s);
int legacy_convert(int dir, const char *text, size_t len);
/* Parses the version-1 ledger text and registry records. */
int legacy_parse_ledger(const char *text, struct store *s);
int legacy_parse_registry(const char *text, uint64_t dev, uint64_t ino, struct store *s);

/*
 * The store's text encoding (store_text.c): a growable text (t->err the
 * first failure: -ENOMEM, or -EINVAL), strings percent-encoded ("-" when
 * empty; space, ':', '%', '-', control and non-ASCII bytes escaped),
 * decoded back (-EBADMSG on a bad escape or overflow), a decimal number
 * of the whole token (-EBADMSG), FNV-1a 64 of the text before the end line.
 */
struct text {
	char *buf;
	size_t len, cap;
	int err;
};
__attribute__((format(printf, 2, 3))) void text_add(struct text *t, const char *fmt, ...);
void text_str(struct text *t, const char *s);
bool needs_escape(unsigned char c);
int str_decode(const char *tok, char *out, size_t len);
int parse_u64(const char *tok, uint64_t *ret);
uint64_t fnv1a(const char *p, size_t len);

/* A new record at the end (zeroed but for id); NULL on ENOMEM. Pointers into s move. */
struct record *store_add(struct store *s, uint64_t id);
void store_del(struct store *s, size_t i);
/* Index of the record with id, or -1. */
long store_find(const struct store *s, uint64_t id);
int record_add_pool(struct record *r, const struct rec_pool *p);
uint64_t record_new_id(void);
/* The version s is written as: STORE_VERSION_WARM with a warm file in it. */
int store_version(const struct store *s);

/* Process start time from <proc>/<pid>/stat, 0 if gone. */
uint64_t process_start_time(const struct prealloc_ctx *ctx, int pid);
/* This process as an owner. */
void owner_self(const struct prealloc_ctx *ctx, struct rec_owner *o);
/* r's move marked as this process's (busy_pid, busy_start), or cleared (busy false). */
void record_set_busy(const struct prealloc_ctx *ctx, struct record *r, bool busy);
/* Whether r has a move under way by a process that still runs (the same one: start time). */
bool record_busy(const struct prealloc_ctx *ctx, const struct record *r);
/* Whether r has a move under way by another process that still runs. */
bool record_busy_elsewhere(const struct prealloc_ctx *ctx, const struct record *r);
/* A named holder as an owner (check NULL: none; expires 0: never). */
void owner_holder(struct rec_owner *o, const char *holder, const char *check, int64_t expires);
/* Runs: the same process still runs; holders: the ctx's check, else the record's. */
bool owner_alive(const struct prealloc_ctx *ctx, const struct rec_owner *o);
/* A holder's claim (no file) its guest has not taken up yet: see owners.c. */
bool holder_claim_pending(const struct prealloc_ctx *ctx, const struct record *r);
/*
 * Where the record's file is now: 1 at its final path, 2 at its hidden
 * name (tmp), 0 gone; identity by dev/ino (and the tag) once recorded.
 */
int record_file_where(const struct record *r);
/*
 * Every name the record's file has now: RECORD_AT_PATH, RECORD_AT_TMP
 * (both for a run killed between linking its file into place and removing
 * the hidden name). A file never known by identity is known by its hidden
 * name, which is unique to the record. A warm file's only name of the warm
 * pool's own is its staging link (RECORD_AT_TMP): its path is in its
 * holder's directory, never looked up here (this runs under the lock).
 */
#define RECORD_AT_PATH 1u
#define RECORD_AT_TMP 2u
unsigned int record_file_names(const struct record *r);
/*
 * A file's identity: statx of path in dirfd (AT_FDCWD; "" with AT_EMPTY_PATH
 * in flags for dirfd itself), never following a final link, with the
 * birth time where the filesystem has one.
 */
int file_statx(int dirfd, const char *path, int flags, struct statx *ret);
/* The file is the record's: a regular file, dev, ino and (when set) the tag match. */
bool record_is_file(const struct record *r, const struct statx *stx);
/* Names the record's file: dev, ino and its birth time as the tag. */
void record_set_identity(struct record *r, const struct statx *stx);
/* Pages pool p of a live PREPARING record has still to fault (0 otherwise). */
uint64_t record_outstanding(const struct prealloc_ctx *ctx, const struct record *r,
			    const struct rec_pool *p);
/* Sum over every record's pool on node/page_size, skipping record skip_id. */
uint64_t store_node_outstanding(const struct prealloc_ctx *ctx, const struct store *s, int node,
				uint64_t page_size, uint64_t skip_id);

/* ---- the state directory (statedir.c) ------------------------------------ */

/* "<state dir>/<leaf>". */
int statedir_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *leaf);
/*
 * The state directory, resolved once: an fd on it (O_DIRECTORY, no final
 * link followed), made first (0700, and every missing directory on the
 * way) where create says and it is missing. -EPERM unless a directory of
 * ours nobody else may write; -ENOENT missing (create false).
 */
int statedir_open(const struct prealloc_ctx *ctx, bool create, int *ret_dfd);
/* Creates it (0700) if missing; -EPERM unless a directory of ours nobody else may write. */
int statedir_ensure(const struct prealloc_ctx *ctx);
/* Whether the state directory is ours alone: 0, -EPERM, -ENOENT (not made yet). */
int statedir_check(const struct prealloc_ctx *ctx);
/*
 * Lock file leaf of the state directory dfd, taken; waits up to timeout_ms,
 * then -ETIMEDOUT, or until cancel_fd (-1: none; polled, never read) turns
 * readable, then -ECANCELED.
 */
int statedir_lock_at(int dfd, const char *leaf, unsigned int timeout_ms, int cancel_fd,
		     int *ret_fd);
/*
 * Lock file leaf, by the state directory's path (statedir_open, then
 * statedir_lock_at). The store's lock ("lock") is store_open()'s alone.
 */
int statedir_lock_leaf(const struct prealloc_ctx *ctx, const char *leaf, unsigned int timeout_ms,
		       int cancel_fd, int *ret_fd);
void statedir_unlock(int fd);
/* Replaces leaf of dfd whole: temp file, fsync, rename, fsync of the directory. */
int statedir_write_at(int dfd, const char *leaf, const char *buf, size_t len);
int statedir_write(const struct prealloc_ctx *ctx, const char *leaf, const char *buf, size_t len);
/*
 * All of leaf of dfd, NUL-terminated (*ret_buf to free), when it is a file
 * of ours nobody else may write (else -EPERM); -ENOENT when missing.
 * ret_id (NULL: not wanted): the file read, as file_statx says.
 */
int statedir_read_at(int dfd, const char *leaf, char **ret_buf, size_t *ret_len,
		     struct statx *ret_id);
int statedir_read(const struct prealloc_ctx *ctx, const char *leaf, char **ret_buf,
		  size_t *ret_len);

/* ---- admission, reservations, settling (admit*.c, reservation.c, settle.c) -- */

#define ADMIT_RESERVE_TIMEOUT_MS 5000
#define ADMIT_LOCK_TIMEOUT_MS 30000

/* Copies and checks a caller's admission options, filling in the defaults. */
int admit_check_opts(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *opts,
		     struct prealloc_admit_opts *o);
/* The reason for err: the store or a pool not writable (ACCESS), else reason. */
int admit_reason(int err, int reason);
/* A refused admission's record goes too (under the lock). */
void admit_forget(struct prealloc_ctx *ctx, struct store *s, uint64_t id);
/* o's cancel fd where its flag says there is one, else -1. */
static inline int admit_cancel_fd(const struct prealloc_admit_opts *o)
{
	return (o->flags & PREALLOC_ADMIT_CANCEL_FD) ? o->cancel_fd : -1;
}
/*
 * Takes the store's lock (waiting up to o's lock timeout) and loads it; res
 * says why not. o's cancel fd ends the wait: -ECANCELED, reason CANCELED.
 */
int admit_lock_load(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
		    struct store *s, int *ret_fd, struct prealloc_admit_result *res);
/*
 * Under the lock, for record id (already in s): appends one share per node
 * and saves s. Hugetlb: checks pools and cgroups, grows short pools with
 * RESERVE (each share saved before its growth). 4K/THP: checks memory
 * cgroups and each node's free memory less other runs' 4K shares. On
 * failure the shares are dropped and their growth given back; res says why.
 */
int admit_locked(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o, struct store *s,
		 uint64_t id, struct prealloc_admit_result *res);
/*
 * A new record admitted, the whole of it under the lock: make adds record
 * id to s, admit_locked admits it, admitted (may be NULL) finishes it; if
 * any fails, the record goes (admit_forget). prepare's and a reservation's
 * one way in.
 */
struct admit_new_ops {
	int (*make)(struct prealloc_ctx *ctx, struct store *s, void *arg);
	int (*admitted)(struct prealloc_ctx *ctx, struct store *s, void *arg);
};
int admit_new(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o, uint64_t id,
	      const struct admit_new_ops *ops, void *arg, struct prealloc_admit_result *res);

/*
 * Gives back pool line k of record ri's growth as far as the node has free
 * pages nobody else was promised; written ahead (the store forgets the
 * pages before they go back). ret_left: growth still owed.
 */
int record_return_growth(struct prealloc_ctx *ctx, struct store *s, size_t ri, unsigned int k,
			 uint64_t *ret_returned, uint64_t *ret_vanished);
/*
 * admit.c, admit_warm.c: one node of a request, decided before anything is
 * changed (admission plans every node, then grows pools, then takes).
 */
struct admit_plan {
	uint64_t avail;		/* usable now: pages, or bytes for 4K */
	uint64_t take;		/* pages to take from READY warm files of the node */
	uint64_t grow;		/* pages to grow its pool by (RESERVE) */
};
/*
 * admit_warm.c: pages of READY warm files on node i of o, of its page size,
 * that a take could cut now, less what plan takes there for nodes before i.
 */
uint64_t admit_warm_left(const struct store *s, const struct prealloc_admit_opts *o,
			 const struct admit_plan *plan, unsigned int i);
/*
 * admit_warm.c: plan's takes, for record id (node i's line: first_line + i):
 * READY warm files cut or removed, each file's record (and the growth it
 * moves to the line) saved before its file changes. Only once the whole
 * request is admitted and grown: a cut is not undone. -ENOMEM (res says
 * why; res->warm_pages what was cut) when a node is short after all.
 */
int admit_warm_take(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
		    struct store *s, uint64_t id, unsigned int first_line,
		    const struct admit_plan *plan, struct prealloc_admit_result *res);
/*
 * Settles record ri whose owner is gone or which is being released: the
 * file goes if prealloc created it and (unless ready) it never became
 * ready, then the growth is given back. The record leaves the store, or
 * stays ORPHAN with the growth still in use: a write lease held across the
 * unlink was refused or broken, or no name is left to lease (then
 * settle_orphans decides). Never walks /proc: it runs under the lock.
 * Saves s. Adds to info's returned, in_use (growth still owed) and
 * vanished; sets removed.
 */
int record_settle(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		  struct prealloc_release_info *info);
/*
 * record_settle, for a caller that knows whether the file, with no name
 * left, has any user (unnamed_free: none, so its growth goes back): a
 * run's own file it removed before anyone else could open it.
 */
int record_settle_as(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		     bool unnamed_free, struct prealloc_release_info *info);
/*
 * The growth of records whose file has no name left (settled while a
 * process still held it) given back once none does: /proc walked over a
 * snapshot WITHOUT the store's lock (its cost is every other user's
 * processes and descriptors), then each record still as it was settled
 * under the lock (timeout_ms). Adds to info. Walks nothing when there is
 * no such record.
 */
int settle_orphans(struct prealloc_ctx *ctx, unsigned int timeout_ms,
		   struct prealloc_release_info *info);
/*
 * settle.c. Commit: READY, held by its holder or file; lines that added
 * nothing go. -EINVAL, nothing changed, when r may not become READY.
 */
int record_commit(struct record *r, const struct rec_owner *owner);
/* Whether settle_matching settles r, and whether a READY file goes with it. */
typedef bool (*settle_pick_fn)(struct prealloc_ctx *ctx, const struct record *r, const void *arg,
			       bool *ret_remove_ready);
/*
 * Settles every record pick selects, under the store's lock (timeout_ms),
 * the growth of one whose file has no name left given back if a walk of
 * /proc, done first WITHOUT the lock, found no process holding it;
 * adds to info what went back, *ret_matched the records that left the
 * store. Says what it removed through the ctx's log once unlocked. The
 * first error, after trying every record.
 */
int settle_matching(struct prealloc_ctx *ctx, unsigned int timeout_ms, settle_pick_fn pick,
		    const void *arg, struct prealloc_release_info *info, unsigned int *ret_matched);
/* queries.c: a record's file path, its holder's name, or "-". */
const char *owner_label(const struct record *r);

/*
 * record_move.c: the one table of a record's state moves (PREPARING,
 * READY, RELEASING, ORPHAN; docs/records.md) and the call that makes them:
 * record_move() sets r's state to `to` if the table holds the move, then
 * (s not NULL) writes the store; -EINVAL, nothing changed, for a move it
 * refuses. record_begin() adds record id to s, PREPARING: the only way a
 * record enters. RECORD_NEW is the state of none yet (never stored).
 */
#define RECORD_NEW (PREALLOC_RECORD_ORPHAN + 1)
bool record_move_allowed(int from, int to);
int record_move(const struct prealloc_ctx *ctx, struct store *s, struct record *r, int to);
struct record *record_begin(struct store *s, uint64_t id);

/*
 * warm_move.c: the one table of warm state moves (docs/warm.md) and the
 * calls that make them. warm_move() sets r's state to `to` if the table
 * holds the move, then (s not NULL) writes the store: the state before
 * the step it names; s NULL: the caller's next save writes it with the
 * rest of the record. -EINVAL, nothing changed, for a move the table
 * refuses. warm_move_back() makes only the table's BACK moves: a state
 * written ahead of a step that did not happen, or left the file as it was.
 */
enum warm_move_kind {
	WARM_MOVE_NO = 0,
	WARM_MOVE_ON,		/* a move of the diagram */
	WARM_MOVE_BACK,		/* a write-ahead taken back */
};
int warm_move_kind(int from, int to);
/*
 * A READY warm file that may be handed out or cut: its record READY too,
 * not one whose removal began (RELEASING, its write-ahead, which leaves
 * the warm state as it was: a drop killed there is finished by the pass).
 */
static inline bool warm_ready(const struct record *r)
{
	return r->warm == PREALLOC_WARM_READY && r->state == PREALLOC_RECORD_READY;
}
int warm_move(const struct prealloc_ctx *ctx, struct store *s, struct record *r, int to);
int warm_move_back(const struct prealloc_ctx *ctx, struct store *s, struct record *r, int to);
/*
 * Under the lock: what a take or a give left busy when its process died,
 * made the next pass's to finish: a take's HANDED file RETURNING (its
 * holder may have opened it: given back, never READY as it is), its busy
 * mark cleared; a give's RETURNING the same. Saves s when it changed one.
 */
int warm_busy_settle(const struct prealloc_ctx *ctx, struct store *s);

#endif
