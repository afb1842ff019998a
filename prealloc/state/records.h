/* SPDX-License-Identifier: MIT */
/*
 * The record store: every reservation and every file prealloc owns, in one
 * versioned file under the state directory. Never installed.
 */
#ifndef PREALLOC_RECORDS_H
#define PREALLOC_RECORDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "internal.h"

#define STORE_LEAF "store"
#define STORE_VERSION 2

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
};

struct store {
	struct record *r;
	size_t nr, cap;
	bool legacy;		/* loaded from 0.1's files: the next save converts them */
};

/*
 * Loads the store; missing is empty. Where no store exists yet, the files
 * of earlier versions (the pool ledger and the files/ registry) are read
 * instead; store_save() then writes them as a store and removes them.
 * -EBADMSG: the store is corrupt (never reset).
 */
int store_load(const struct prealloc_ctx *ctx, struct store *s);
/* Writes the store whole and atomically; call under the lock. */
int store_save(const struct prealloc_ctx *ctx, const struct store *s);
void store_free(struct store *s);
/* Parses/formats the text of a store: pure, for tests and the fuzzer. */
int store_parse(const char *text, struct store *s);
int store_format(const struct store *s, char **ret_text, size_t *ret_len);
/* Parses the version-1 ledger text and registry records (legacy.c). */
int legacy_parse_ledger(const char *text, struct store *s);
int legacy_parse_registry(const char *text, uint64_t dev, uint64_t ino, struct store *s);
int legacy_load(const struct prealloc_ctx *ctx, struct store *s, bool *ret_found);
void legacy_remove(const struct prealloc_ctx *ctx);

/*
 * store_lock.c: the lock and the store together. store_open() takes the
 * lock, loads, and settles shares a dead run left marked growing (saving
 * them); store_close() frees and unlocks. store_update() runs fn on record
 * id under the lock (fn saves); -ENOENT when there is no such record.
 */
int store_open(struct prealloc_ctx *ctx, unsigned int timeout_ms, struct store *s, int *ret_fd);
/* store_open() whose lock wait cancel_fd ends (-ECANCELED; -1: none, as store_open). */
int store_open_cancel(struct prealloc_ctx *ctx, unsigned int timeout_ms, int cancel_fd,
		      struct store *s, int *ret_fd);
void store_close(struct store *s, int fd);
int store_update(struct prealloc_ctx *ctx, unsigned int timeout_ms, uint64_t id,
		 int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg),
		 void *arg);

/* A new record at the end (zeroed but for id); NULL on ENOMEM. Pointers into s move. */
struct record *store_add(struct store *s, uint64_t id);
void store_del(struct store *s, size_t i);
/* Index of the record with id, or -1. */
long store_find(const struct store *s, uint64_t id);
int record_add_pool(struct record *r, const struct rec_pool *p);
uint64_t record_new_id(void);

/* Process start time from <proc>/<pid>/stat, 0 if gone. */
uint64_t process_start_time(const struct prealloc_ctx *ctx, int pid);
/* This process as an owner. */
void owner_self(const struct prealloc_ctx *ctx, struct rec_owner *o);
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
 * name, which is unique to the record.
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

#endif
