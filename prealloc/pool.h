/* SPDX-License-Identifier: MIT */
/*
 * Hugepage pools per node, the system-wide pool lock and the on-disk ledger
 * of what prealloc added to each pool and for whom. Shared by admit.c and
 * pool.c; never installed.
 */
#ifndef PREALLOC_POOL_H
#define PREALLOC_POOL_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* One owner's share of one node's pool of one page size. */
struct ledger_entry {
	uint64_t id;		/* shared by the entries of one reservation */
	int state;		/* enum prealloc_ledger_state */
	int node;
	uint64_t page_size;
	uint64_t pages;		/* pages the owner needs on this node */
	uint64_t added;		/* pages added to the node's pool for it */
	uint64_t base;		/* owner file's resident pages when named */
	int pid;		/* IN_FLIGHT: the run populating */
	uint64_t start_time;	/* its start time (clock ticks), against pid reuse */
	uint64_t dev, ino;	/* owner file identity, 0 when not a file yet */
	char owner[PATH_MAX];	/* "-" when not named yet */
};

struct ledger {
	struct ledger_entry *e;
	size_t nr, cap;
};

/* <state dir>/<leaf>: PREALLOC_STATE_DIR, /run/prealloc as root, else per user. */
int state_path(char *buf, size_t len, const char *leaf);
/* Takes the pool lock, waiting up to timeout_ms; -ETIMEDOUT when held too long. */
int pool_lock(unsigned int timeout_ms, int *ret_fd);
void pool_unlock(int fd);

/* Ledger I/O: load a missing ledger as empty; save is write-temp + rename. */
int ledger_load(struct ledger *l);
int ledger_save(const struct ledger *l);
void ledger_free(struct ledger *l);
int ledger_append(struct ledger *l, const struct ledger_entry *e);
void ledger_remove(struct ledger *l, size_t i);
/* IN_FLIGHT and its process still running. */
bool ledger_entry_live(const struct ledger_entry *e);
/* Pages a live in-flight entry still has to fault (0 for any other entry). */
uint64_t ledger_outstanding(const struct ledger *l, size_t i);
/* Sum of outstanding pages on node/page_size, skipping entries of id skip_id. */
uint64_t ledger_node_outstanding(const struct ledger *l, int node, uint64_t page_size,
				 uint64_t skip_id);
/* Process start time from /proc/<pid>/stat, 0 if gone. */
uint64_t process_start_time(int pid);
/* 1 when path names a file with this dev/ino, 0 when not (gone or replaced). */
int owner_present(const struct ledger_entry *e);

/* sysfs pools: per node, and the system-wide counters. */
int pool_read(int node, uint64_t page_size, uint64_t *ret_total, uint64_t *ret_free,
	      uint64_t *ret_surplus);
int pool_global(uint64_t page_size, uint64_t *ret_free, uint64_t *ret_resv);

struct grow_result {
	uint64_t before;	/* nr_hugepages before */
	uint64_t requested;	/* nr_hugepages written */
	uint64_t got;		/* nr_hugepages read back at the end */
	uint64_t added;		/* pages kept (0 when the growth was undone) */
	double seconds;
};
/*
 * Grows node's pool by pages: absolute write, read back, compact the node
 * and retry until deadline (now_seconds() clock). All or nothing: a short
 * pool is put back as it was and -ENOMEM returned. Call under the lock.
 */
int pool_grow(int node, uint64_t page_size, uint64_t pages, double deadline,
	      struct grow_result *ret);
/* Shrinks node's pool by up to pages; returns the pages given back. */
int pool_shrink(int node, uint64_t page_size, uint64_t pages, uint64_t *ret_returned);
/*
 * Gives back entry i's growth as far as the node has free pages that nobody
 * else has reserved; returns what is still owed in ret_left.
 */
int ledger_return_growth(struct ledger *l, size_t i, uint64_t *ret_returned, uint64_t *ret_left);

#endif
