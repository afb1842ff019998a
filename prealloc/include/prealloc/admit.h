/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: admission: proving a request fits, growing pools; claims.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_ADMIT_H
#define LIBPREALLOC_ADMIT_H

#include "ctx.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- admission and claims ------------------------------------------------ */

/*
 * Admission proves a request fits before any page is touched: per node, the
 * free hugepages of the size minus what was promised to other prealloc runs
 * and they have not faulted yet (and, on one node, the kernel's HugePages_Rsvd
 * of other programs),
 * the caller's hugetlb cgroup limit (v2 hugetlb.<size>.max), and for 4K/THP
 * the node's free memory. With PREALLOC_ADMIT_GROW_POOLS it grows a short
 * node's pool instead of failing, in steps of max(1 GiB, 5% of the node),
 * after refusing at once what the node could never supply (CAPACITY).
 * Pool changes happen under the record
 * store's lock (<state dir>/lock) and are recorded in the store
 * (<prealloc/store.h>) before they happen, so that concurrent runs never lose
 * an update and the growth can be given back exactly. What admission
 * promised is the caller's claim (struct prealloc_claim) until it commits
 * or rolls back.
 */
struct prealloc_claim;

enum prealloc_admit_flags {
	PREALLOC_ADMIT_GROW_POOLS = 1u << 0, /* grow short node pools to fit */
	PREALLOC_ADMIT_NO_CHECK = 1u << 1, /* tests only: claim without checking capacity */
	PREALLOC_ADMIT_CANCEL_FD = 1u << 2, /* cancel_fd is set (0 is a valid fd, so a flag) */
	/*
	 * A node short of free pages takes none from READY warm files (which
	 * it otherwise cuts or removes first, before growing or refusing).
	 */
	PREALLOC_ADMIT_KEEP_WARM = 1u << 3,
};

enum prealloc_admit_reason {
	PREALLOC_ADMIT_OK = 0,
	PREALLOC_ADMIT_POOL,	/* the node's pool has too few free pages */
	PREALLOC_ADMIT_GLOBAL,	/* system-wide free pages minus promised ones too few */
	PREALLOC_ADMIT_CGROUP,	/* the hugetlb cgroup limit leaves too few pages */
	PREALLOC_ADMIT_MEMORY,	/* 4K/THP: the node's free memory is too small */
	PREALLOC_ADMIT_GROW,	/* GROW_POOLS: the kernel allocated fewer pages than asked */
	PREALLOC_ADMIT_LOCK,	/* the store's lock was not obtained in time */
	PREALLOC_ADMIT_ACCESS,	/* the pool or the state dir is not writable */
	PREALLOC_ADMIT_MEMCG,	/* 4K/THP: a memory cgroup limit leaves too little room */
	PREALLOC_ADMIT_FS,	/* the filesystem (a tmpfs or hugetlbfs size=) has too little room */
	/*
	 * GROW_POOLS: the node cannot supply the pages at all: its free pool
	 * pages plus what its free and reclaimable memory could become, less a
	 * margin the host keeps (capacity_estimate, capacity_margin). Refused
	 * before any pool write.
	 */
	PREALLOC_ADMIT_CAPACITY,
	PREALLOC_ADMIT_CANCELED, /* cancel_fd turned readable waiting for the lock (node -1) or during growth (given back): -ECANCELED */
};

struct prealloc_admit_opts {
	size_t size;		/* sizeof(struct prealloc_admit_opts) */
	unsigned int flags;	/* enum prealloc_admit_flags */
	uint64_t page_size;	/* PREALLOC_PAGE_4K (also for THP), _2M or _1G */
	unsigned int nr_nodes;
	const int *nodes;
	const uint64_t *node_bytes; /* bytes still to fault on nodes[i] */
	/* GROW_POOLS: compaction deadline; 0: 5000 (0.1: reserve_timeout_ms) */
	__extension__ union {
		unsigned int grow_timeout_ms;
		unsigned int reserve_timeout_ms;
	};
	unsigned int lock_timeout_ms;	  /* 0: 30000 */
	/* The claim's tag: the file the pages are for, or a name; NULL: set later (0.1: owner). */
	__extension__ union {
		const char *tag;
		const char *owner;
	};
	/*
	 * A named holder that outlives this process (e.g. "libvirt:UUID" for
	 * a domain whose hook claims at prepare and exits): commit records
	 * the growth for it, and gc returns it only once the holder is gone
	 * (prealloc_ctx_set_holder_alive, holder_check, holder_expires).
	 * NULL: the growth is held by the tag's file.
	 */
	const char *holder;
	const char *holder_check;	/* the check path: exists while the holder lives, or NULL */
	int64_t holder_expires;		/* CLOCK_REALTIME seconds after which it is gone, 0: never */
	/*
	 * With both: the holder lives while the path exists or until the
	 * expiry (a guest that has not started yet), and a claim with no file
	 * counts as promised against other admissions until the path appears
	 * (the guest has mapped its pages).
	 */
	/*
	 * With PREALLOC_ADMIT_CANCEL_FD: polled (never read) while waiting for
	 * the store's lock and between growth steps; once readable (e.g. a
	 * signalfd with SIGINT pending) the wait ends, or the growth made so far
	 * is given back, and admission fails with -ECANCELED. The store's lock
	 * is held during growth, as for every pool change.
	 */
	int cancel_fd;
};

/* Why admission failed, with the numbers a message needs. Pages, or bytes for MEMORY, MEMCG, FS. */
struct prealloc_admit_result {
	size_t size;		/* sizeof(struct prealloc_admit_result) */
	int reason;		/* enum prealloc_admit_reason */
	int node;		/* the node that failed, -1 for a system-wide limit */
	uint64_t page_size;
	uint64_t needed;
	uint64_t available;	/* usable for this request */
	uint64_t pool_total;	/* the node's nr_hugepages */
	uint64_t pool_free;	/* the node's free_hugepages */
	/* Promised to other runs, not faulted yet (0.1: reserved_others). */
	__extension__ union {
		uint64_t promised_others;
		uint64_t reserved_others;
	};
	uint64_t grow_requested;  /* GROW: nr_hugepages written */
	uint64_t grow_got;	  /* GROW: nr_hugepages read back */
	double grow_seconds;
	uint64_t added;		/* success: pages added to the pools for this request */
	char cgroup[256];	/* CGROUP, MEMCG: the limiting limit file; FS: the mount */
	/*
	 * CAPACITY, bytes: the node's estimated free memory (MemFree,
	 * Active(file), Inactive(file), SReclaimable of its meminfo; on one
	 * node at least MemAvailable) plus its usable free pool pages, and the
	 * margin kept for the host: max(256 MiB, 2% of the node's MemTotal,
	 * its share of vm.min_free_kbytes). available is in pages.
	 */
	uint64_t capacity_estimate;
	uint64_t capacity_margin;
	/*
	 * Pages taken from READY warm files of the node (prepared ahead for
	 * other guests) because its free pages were short, before any growth:
	 * warm_cut files cut to a smaller size, warm_removed removed. Their
	 * growth of the pool moved to this request (in added).
	 */
	uint64_t warm_pages;
	unsigned int warm_cut, warm_removed;
};

/*
 * Checks (and with GROW_POOLS grows) every node of the request under the
 * store's lock and records an in-flight claim (for 4K, a share of each
 * node's free memory that other runs' admissions subtract). A node short
 * of free pages first takes them from READY warm files (unless
 * PREALLOC_ADMIT_KEEP_WARM), then grows (GROW_POOLS). Errors: -ENOMEM short (pool, memory, node capacity,
 * growth), -ECANCELED cancel_fd turned readable waiting for the lock or during growth, -EDQUOT cgroup limit, -ETIMEDOUT lock, -EACCES/-EPERM pool not writable,
 * -ENODEV unknown node, -EBADMSG a corrupt record store; ret_result (may be NULL) says why.
 */
int prealloc_admit(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *opts,
		   struct prealloc_claim **ret_claim, struct prealloc_admit_result *ret_result);
/* Tags the claim with the file (or name) holding the pages, once it exists. */
int prealloc_claim_set_tag(struct prealloc_claim *claim, const char *tag);
/*
 * The pages are faulted and held by the tag's file (or the holder): the
 * record keeps only the growth, or the holder's claim. -EINVAL when the
 * claim grew a pool but names neither a file (an absolute path) nor
 * a holder: nothing could ever give that growth back.
 */
int prealloc_claim_commit(struct prealloc_claim *claim);
/*
 * Drops the claim and gives back the growth it made; call after the
 * tag's pages are freed. ret_returned (may be NULL): pages given back.
 */
int prealloc_claim_rollback(struct prealloc_claim *claim, uint64_t *ret_returned);
/* Rolls back unless committed, then frees the handle. */
void prealloc_claim_free(struct prealloc_claim *claim);
/*
 * Frees the handle and leaves its record as it is: for a caller whose
 * commit failed but who keeps the memory (a rollback would shrink the pool
 * under it). Once this process is gone, `prealloc_store_gc` gives back the
 * growth of the record as far as its pages are free.
 */
void prealloc_claim_abandon(struct prealloc_claim *claim);

/*
 * ---- 0.1's names (docs/abi.md: a renamed symbol) ---------------------------
 *
 * 0.1 called a claim a reservation, its tag an owner, growing the pools
 * RESERVE and pages promised to other runs reserved_others; the warm pool
 * alone now reserves (docs/design.md, Words). Code written against 0.1
 * builds unchanged (each old name stands for the new one; the old field
 * names share their field's storage), and a program linked against 0.1
 * still finds prealloc_reservation_* at PREALLOC_0.1: the library exports
 * each as an alias of the same code.
 */
#define prealloc_reservation prealloc_claim
#define PREALLOC_ADMIT_RESERVE PREALLOC_ADMIT_GROW_POOLS
#define prealloc_reservation_set_owner prealloc_claim_set_tag
#define prealloc_reservation_commit prealloc_claim_commit
#define prealloc_reservation_rollback prealloc_claim_rollback
#define prealloc_reservation_free prealloc_claim_free
#define prealloc_reservation_abandon prealloc_claim_abandon
int prealloc_reservation_set_owner(struct prealloc_reservation *resv, const char *owner);
int prealloc_reservation_commit(struct prealloc_reservation *resv);
int prealloc_reservation_rollback(struct prealloc_reservation *resv, uint64_t *ret_returned);
void prealloc_reservation_free(struct prealloc_reservation *resv);
void prealloc_reservation_abandon(struct prealloc_reservation *resv);

#ifdef __cplusplus
}
#endif
#endif
