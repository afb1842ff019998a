/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: the record store: its records, its shares one by one, garbage collection.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_STORE_H
#define LIBPREALLOC_STORE_H

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- records ------------------------------------------------------------ */

/*
 * One store under the state directory holds everything prealloc owns: each
 * claim (pool growth per node and page size, pages promised but not
 * yet faulted) and each file it prepares, with its state. A record is
 * written BEFORE the change it describes (before a pool grows, before the
 * file's first page is faulted), under one lock that is held only while the
 * store or a pool changes, never during populate. The store is one
 * versioned file rewritten whole (temp, fsync, rename, fsync of the
 * directory); a corrupt store is refused (-EBADMSG), never reset.
 */
enum prealloc_record_state {
	PREALLOC_RECORD_PREPARING = 0, /* a run is admitting or populating */
	PREALLOC_RECORD_READY,	       /* committed: the file (or holder) holds the pages */
	PREALLOC_RECORD_RELEASING,     /* a release began: the file goes, then the growth */
	PREALLOC_RECORD_ORPHAN,	       /* owner gone; growth not yet given back */
};

enum prealloc_record_owner {
	PREALLOC_OWNER_NONE = 0,	/* held by its file alone */
	PREALLOC_OWNER_RUN,	/* a process: pid + start time */
	PREALLOC_OWNER_HOLDER,	/* a named holder that outlives processes */
};

struct prealloc_record_info {
	size_t size;		/* sizeof(struct prealloc_record_info) */
	uint64_t id;
	int state;		/* enum prealloc_record_state */
	int owner;		/* enum prealloc_record_owner */
	int alive;		/* the owner lives (runs and holders), 1 or 0 */
	int pid;		/* RUN */
	char holder[256];	/* HOLDER */
	int has_file;
	int created;		/* the file was created by prealloc (else adopted, --reuse) */
	uint64_t file_size;
	uint64_t page_size;
	uint64_t pages;		/* hugepages the record needs, all nodes */
	uint64_t added;		/* hugepages added to pools for it, all nodes */
	uint64_t outstanding;	/* PREPARING: hugepages not faulted yet */
	char path[4096];	/* the file's final path, or "" */
	uint64_t dev, ino;	/* the file's identity as recorded (st_dev, st_ino); 0: not yet */
	/* Since 0.2: a warm file's state (enum prealloc_warm_state), 0 for any other record. */
	int warm;
	int warm_node;		/* a warm file's node */
	/*
	 * A warm file's tenant (cleared in place for it: only its takes get
	 * it), "" none or a file any take may have.
	 */
	char tenant[64];
};
/* Record index of the store as it is now; -ENOENT past the end, -EBADMSG corrupt. */
int prealloc_record(struct prealloc_ctx *ctx, unsigned int index,
		    struct prealloc_record_info *ret_info);

/* ---- the store's shares, one by one -------------------------------------- */

enum prealloc_store_entry_state {
	PREALLOC_STORE_IN_FLIGHT = 0, /* a run is populating for the tag */
	PREALLOC_STORE_HELD,	      /* the tag (its file, or the holder) holds the pages */
	PREALLOC_STORE_ORPHAN,	      /* owner gone; growth not yet given back */
};

struct prealloc_store_entry {
	size_t size;		/* sizeof(struct prealloc_store_entry) */
	int state;		/* enum prealloc_store_entry_state */
	int node;
	uint64_t page_size;
	uint64_t pages;		/* pages the tag needs on the node */
	uint64_t added;		/* pages added to the pool for it */
	uint64_t outstanding;	/* IN_FLIGHT: pages not faulted yet */
	int pid;		/* IN_FLIGHT: the run */
	uint64_t dev, ino;	/* the tag's file identity, 0 if none */
	/* The claim's tag: its file, or a holder's name (0.1: owner). */
	__extension__ union {
		char tag[4096];
		char owner[4096];
	};
};
/*
 * The store's hugepage pool shares one by one (one per record and node);
 * -ENOENT past the end.
 */
int prealloc_store_entry(struct prealloc_ctx *ctx, unsigned int index,
			 struct prealloc_store_entry *ret_entry);
/*
 * The pages of node's pool of page_size that holder has claimed and holds
 * (its READY records without a file: what prealloc_admit committed for
 * it), its files apart (a pre-faulted file, a warm file: their pages serve
 * their own backends), in *ret_pages. A front end's "what does this guest
 * hold already", in one read of the store.
 */
int prealloc_holder_claimed(struct prealloc_ctx *ctx, const char *holder, int node,
			    uint64_t page_size, uint64_t *ret_pages);

/* ---- garbage collection --------------------------------------------------- */

/*
 * Settles every record whose owner is gone: a run that died before its
 * file was ready (the file it created is removed: it never held a guest's
 * data; a file it adopted keeps its data), a file removed by hand, a named
 * holder that is gone (with its files), a release cut short. Their growth
 * goes back as far as the pages are free; the rest stays as ORPHAN. Ready
 * files and live owners are never touched. ret_entries: records settled.
 */
int prealloc_store_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned, unsigned int *ret_entries);

/*
 * ---- 0.1's names (docs/abi.md: a renamed symbol) ---------------------------
 *
 * 0.1 called the store the ledger and its gc the pool's. Code written
 * against 0.1 builds unchanged (each old name stands for the new one), and
 * a program linked against 0.1 still finds prealloc_ledger_entry and
 * prealloc_pool_gc at PREALLOC_0.1: the library exports each as an alias
 * of the same code.
 */
#define prealloc_ledger_entry prealloc_store_entry
#define prealloc_ledger_state prealloc_store_entry_state
#define PREALLOC_LEDGER_IN_FLIGHT PREALLOC_STORE_IN_FLIGHT
#define PREALLOC_LEDGER_HELD PREALLOC_STORE_HELD
#define PREALLOC_LEDGER_ORPHAN PREALLOC_STORE_ORPHAN
#define prealloc_pool_gc prealloc_store_gc
int prealloc_ledger_entry(struct prealloc_ctx *ctx, unsigned int index,
			  struct prealloc_ledger_entry *ret_entry);
int prealloc_pool_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned, unsigned int *ret_entries);

#ifdef __cplusplus
}
#endif
#endif
