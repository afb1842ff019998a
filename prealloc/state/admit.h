/* SPDX-License-Identifier: MIT */
/* Admission and the records it leaves; shared by the flows. Never installed. */
#ifndef PREALLOC_ADMIT_H
#define PREALLOC_ADMIT_H

#include "internal.h"
#include "records.h"

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
 * Gives back pool line k of record ri's growth as far as the node has free
 * pages nobody else was promised; written ahead (the store forgets the
 * pages before they go back). ret_left: growth still owed.
 */
int record_return_growth(struct prealloc_ctx *ctx, struct store *s, size_t ri, unsigned int k,
			 uint64_t *ret_returned, uint64_t *ret_vanished);
/*
 * Settles record ri whose owner is gone or which is being released: the
 * file goes if prealloc created it and (unless ready) it never became
 * ready, then the growth is given back. The record leaves the store, or
 * stays ORPHAN with the growth still in use. Saves s. Adds to info's
 * returned, in_use (growth still owed) and vanished; sets removed.
 */
int record_settle(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		  struct prealloc_release_info *info);
/* capacity.c: what node could still give a hugepage pool, in bytes. */
struct node_capacity {
	uint64_t mem_total, mem_free;
	uint64_t file;		/* Active(file) + Inactive(file) */
	uint64_t slab;		/* SReclaimable */
	uint64_t estimate;	/* free + file + slab (one node: at least MemAvailable) */
	uint64_t margin;	/* what stays with the host */
};
int node_capacity(const struct prealloc_ctx *ctx, int node, struct node_capacity *ret);

/* settle.c. Commit: READY, held by its holder or file; lines that added nothing go. */
void record_commit(struct record *r, const struct rec_owner *owner);
/* Whether settle_matching settles r, and whether a READY file goes with it. */
typedef bool (*settle_pick_fn)(struct prealloc_ctx *ctx, const struct record *r, const void *arg,
			       bool *ret_remove_ready);
/*
 * Settles every record pick selects, under the store's lock (timeout_ms);
 * adds to info what went back, *ret_matched the records that left the
 * store. Says what it removed through the ctx's log once unlocked. The
 * first error, after trying every record.
 */
int settle_matching(struct prealloc_ctx *ctx, unsigned int timeout_ms, settle_pick_fn pick,
		    const void *arg, struct prealloc_release_info *info, unsigned int *ret_matched);
/* pool.c: a record's file path, its holder's name, or "-". */
const char *owner_label(const struct record *r);

#endif
