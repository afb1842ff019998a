/* SPDX-License-Identifier: MIT */
/*
 * The memory layer, private to the library: regions and their backing,
 * chunks, populate and the SIGBUS guard, placement, the staging directory,
 * and who uses a file. Calls nothing above it (tests/tree/test-layers.sh).
 * Never installed.
 */
#ifndef PREALLOC_MEMORY_H
#define PREALLOC_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "arch.h"
#include "internal.h"

/* ---- regions (region.c, backing.c) --------------------------------------- */

struct prealloc_region {
	struct prealloc_ctx *ctx;
	int backing;
	uint8_t *addr;
	uint64_t length;
	uint64_t page_size;
	int fd;
	bool owns_mapping;
	bool created_file;
	bool thp;		/* transparent hugepages: ANON_THP, or FILE/MEMFD with PREALLOC_REGION_THP */
	char *path;		/* FILE: relative to dir_fd */
	int dir_fd;		/* FILE: AT_FDCWD, or region_new_at's directory (our dup) */
	unsigned int nr_extents;
	struct prealloc_extent *extents;
	bool bound;		/* region_place bound each extent (MPOL_BIND) */
	/* Jobs still working on it (until their finish): free waits for them. */
	pthread_mutex_t jobs_lock;
	pthread_cond_t jobs_done;
	unsigned int jobs;
};

/*
 * Whether a populate should place r's pages by its workers' own policy
 * rather than the mapping's: r is bound, 4K shmem (a memfd or a tmpfs file).
 * There every fault looks up the file's shared policy under one lock that
 * all the workers share, and two workers were no faster than one.
 */
bool region_policy_by_workers(const struct prealloc_region *r);
/* Each extent's binding off (MPOL_DEFAULT) or back on (MPOL_BIND to its node). */
int region_bind(struct prealloc_region *r, bool on);
/* The calling thread's own policy: MPOL_BIND to node. */
int thread_bind(int node);

/* backing.c: r's memory made and mapped as o says (r->addr, fd, page_size, path). */
int backing_map(struct prealloc_region *r, const struct prealloc_region_opts *o);
/*
 * prealloc_region_new with a FILE's path taken relative to dir_fd (kept,
 * duplicated, for discard's unlink): the file is made in a directory the
 * caller opened, whatever its path names meanwhile.
 */
int region_new_at(struct prealloc_ctx *ctx, const struct prealloc_region_opts *opts, int dir_fd,
		  struct prealloc_region **ret_region);

/* ---- chunks (chunks.c) --------------------------------------------------- */

/* Pure: split a length into extents, cut extents into page-aligned chunks. */
struct chunk {
	uint64_t offset;
	uint64_t length;
	unsigned int extent;	/* index into the extent array */
};
uint64_t chunk_size_for(uint64_t extent_len, uint64_t page_size, unsigned int threads);
/* Returns the number of chunks written (call with ret NULL to count). */
size_t chunks_cut(const struct prealloc_extent *extents, unsigned int nr_extents,
		   uint64_t page_size, uint64_t chunk_size, struct chunk *ret);
/* Splits length over nr nodes: explicit sizes or even in page units. */
int extents_split(uint64_t length, uint64_t page_size, const int *nodes,
		 const uint64_t *node_bytes, unsigned int nr, struct prealloc_extent *ret);


/* ---- the SIGBUS guard (populate.c) --------------------------------------- */

/*
 * A store or load into a file's pages past its end (its owner truncated it),
 * into a hugetlb page the pool could not supply, or into poisoned memory
 * raises SIGBUS, which kills the process by default. Workers run what may
 * meet one through sigbus_guarded(): the touch fallback, a clear and the
 * zero check over a file or a caller's mapping.
 *
 * The handler is process-wide and an embedding VMM may have its own (memory
 * errors): an op installs it at setup only for a job that needs it, once,
 * and removes it at teardown. Installs nest (a count); the last remove puts
 * back the handler found at the first install, unless another was set
 * meanwhile, which stays. A SIGBUS that is not a guarded call's goes to the
 * handler found at install (SIG_DFL: the process dies as it would have).
 */
int sigbus_guard_install(void);
void sigbus_guard_remove(void);
/*
 * Runs fn(arg), which touches [addr, addr + len) only, on this thread. A
 * SIGBUS the kernel raises for an address in that range ends fn there: the
 * call returns -EHWPOISON for a memory error (BUS_MCEERR_AR), else -EFAULT
 * (the page is gone or could not be had: what MADV_POPULATE_WRITE says),
 * with *ret_fault (may be NULL) the faulting byte's offset from addr; else
 * fn's result. Calls nest: an inner call restores the outer's target, and
 * a fault in the outer's range alone returns from the outer. Without the
 * handler installed (by any job) it is fn(arg) and a SIGBUS kills.
 */
int sigbus_guarded(const void *addr, uint64_t len, int (*fn)(void *arg), void *arg,
		   uint64_t *ret_fault);

/* populate.c */
int populate_chunk(uint8_t *addr, uint64_t len, uint64_t page_size, bool touch);

/* placement.c */
/* Counts pages of [addr, addr+len) on node, elsewhere and missing. */
int placement_query(uint8_t *addr, uint64_t len, uint64_t page_size, int node,
		    uint64_t *ret_on, uint64_t *ret_off, uint64_t *ret_missing);
/*
 * Calls fn once per mapping of [addr, addr+len) with its per-node page
 * counts (counts[node], in pages of unit bytes) from /proc/self/numa_maps.
 * -ENOTSUP when the range is not made of whole mappings, -EAGAIN when the
 * mappings changed while reading: then ask move_pages instead.
 */
typedef int (*placement_fn)(void *arg, uint64_t start, uint64_t end, uint64_t unit,
			    const uint64_t *counts);
int placement_scan(uint8_t *addr, uint64_t len, placement_fn fn, void *arg);

/* pagemap.c: whether placement_pagemap can work here (page frames readable, memory blocks known). */
bool placement_pagemap_ok(void);
/*
 * placement_query for 4K pages from /proc/self/pagemap and the memory
 * blocks: each worker its own chunks. -ENOENT: a frame in no known block
 * (ask placement_query).
 */
int placement_pagemap(const uint8_t *addr, uint64_t len, int node, uint64_t *ret_on,
		      uint64_t *ret_off, uint64_t *ret_missing);
/*
 * Calls fn once per mapping of [addr, addr+len) in /proc/self/smaps with
 * the bytes huge pages map there (AnonHugePages + ShmemPmdMapped +
 * FilePmdMapped).
 */
typedef int (*huge_fn)(void *arg, uint64_t start, uint64_t end, uint64_t huge_bytes);
int huge_scan(uint8_t *addr, uint64_t len, huge_fn fn, void *arg);
/* Offset of the first non-zero byte, or len when all zero. */
uint64_t zero_check(const uint8_t *addr, uint64_t len);
/* The first of the architecture's zero scans (arch.h) that features allow. */
zero_scan_fn zero_scan_pick(uint64_t features);

/* ---- who uses a file (file_users.c) -------------------------------------- */

/*
 * The first process other than skip that maps the file dev/ino or holds it
 * open (also once it is unlinked), from <proc>/PID/maps and <proc>/PID/fd.
 * Returns its pid, 0 when none, or a negative errno when <proc> cannot be
 * read; *ret_unreadable counts processes that could not be looked at.
 */
pid_t file_user(const struct prealloc_ctx *ctx, uint64_t dev, uint64_t ino, pid_t skip,
		  unsigned int *ret_unreadable);
/*
 * A write lease on fd's file: 0 held (no other open file description of
 * it exists: no fd elsewhere, none in flight, no mapping but through fd),
 * -EAGAIN another exists, another negative errno where the filesystem or
 * the sysctl (fs.leases-enable) has none. Blind to O_PATH fds and to pages
 * a pipe or a pin holds. fd must be the only descriptor of the file this
 * process opened (mappings through it are fine).
 */
int file_lease_take(int fd);
/* Whether the lease is still held whole (nobody opened the file meanwhile). */
bool file_lease_held(int fd);
void file_lease_drop(int fd);
/* file_lease_take and drop: 0 when no other open file description exists now. */
int file_sole_open(int fd);

/* ---- the staging directory (staging.c) ----------------------------------- */

#define STAGING_NAME ".prealloc"

/*
 * Opens (making it when missing) the caller's staging directory on the
 * mount of dir_fd, whose path is dir_path; its path goes to ret_path:
 * STAGING_NAME (-<uid> but for root), or that and a random suffix where
 * another user took the name first (what they made is skipped, never used
 * or changed). Returns the directory's descriptor, or a negative errno
 * with why[].
 */
int staging_open(const struct prealloc_ctx *ctx, int dir_fd, const char *dir_path,
		 char *ret_path, size_t len, char *why, size_t why_len);

#endif
