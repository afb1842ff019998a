/* SPDX-License-Identifier: MIT */
/*
 * The memory layer, private to the library: regions and their backing,
 * chunks, populate and the SIGBUS guard, placement, the clear kernels and
 * their selection and calibration, the staging directory, and who uses a
 * file. Calls nothing above it (tests/unit/test-layers.sh). Never
 * installed.
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

/* calibrate_figures.c: what the calibration's figures say, pure (the probe takes its median). */
/* The median of v[0..n) (n > 0); sorts v. */
double calibrate_median(double *v, unsigned int n);
/* Per kernel k < nk, the median of s[k][0..rep) into gbps; -EIO if a sample failed (<= 0). */
int calibrate_medians(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
		      unsigned int rep, double *gbps);
/*
 * The paired ratio of kernel chosen to kernel best in samples s (rep each,
 * GB/s, sample i of every kernel from the same repetition): the median of
 * s[chosen][i] / s[best][i]. *ret_error (may be NULL): that median's
 * standard error relative to it, estimated from the ratios' interquartile
 * range (1, unknown, with fewer than 4 repetitions). Pure.
 */
double calibrate_paired_ratio(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int rep,
			      unsigned int chosen, unsigned int best, double *ret_error);
/* The kernel with the highest figure among gbps[0..nk). */
unsigned int calibrate_best(unsigned int nk, const double *gbps);
/*
 * Whether rep repetitions of nk columns (the last auto's) are enough: rep
 * >= max; or rep >= min and auto's paired ratio to the best kernel (by the
 * medians) known to PREALLOC_CALIBRATE_PRECISION. Pure.
 */
bool calibrate_enough(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
		      unsigned int rep, unsigned int min, unsigned int max);
/* order[] gets 0..n-1 shuffled, the same for the same seed: one repetition's kernel order. */
void calibrate_order(unsigned int *order, unsigned int n, unsigned int seed);
/*
 * res->calibration from res's medians: per measured size the fastest kernel
 * (the last column, auto, is not one), or the probe auto ran there
 * (res->size_auto) where it came within 0.95 of it; for anything larger
 * the kernel never far behind over the thread counts.
 */
void calibrate_build(struct prealloc_calibrate_result *res);

/* ---- clear kernels, their selection and calibration (clear_*.c, calibration.c) -- */

/* The kernels, their table and the quirks are the architecture's (arch/arch.h). */

const struct clear_kernel *clear_kernel_find(const char *name);
/* Built, and every required feature present. */
bool clear_kernel_usable(const struct clear_kernel *k, uint64_t features);

/* True when cal was measured on a CPU of cpu's vendor, family, model and name. */
bool clear_calibration_matches(const struct clear_calibration *cal, const struct cpu_id *cpu);

/*
 * What automatic selection gives a clear: one kernel, or a probe (nt set):
 * each piece is cleared by whichever of kernel (cached stores) and nt is
 * faster on it, measured on the piece itself (clear_probe.c).
 */
struct clear_choice {
	const struct clear_kernel *kernel;	/* the kernel; with a probe, the cached one */
	const struct clear_kernel *nt;		/* a probe's NT kernel; NULL: no probe */
	const char *name;			/* "c", or a probe's "c/avx2_nt" */
	/* A probe's: how much faster cached stores must be on the slices (0: the default 1.4). */
	double handicap;
};

/*
 * The footprint (bytes per worker x workers sharing the cache) up to which
 * cached stores win wherever the memory is: half the LLC (llc 0: unknown,
 * 32 MiB assumed), at most 8 MiB. Up to the probe limit (twice the LLC,
 * at most 128 MiB) a probe decides per piece; above it, NT stores.
 */
uint64_t clear_cached_limit(uint64_t llc);
uint64_t clear_probe_limit(uint64_t llc);

/*
 * The crossover at and below the cached limit, measured on this machine
 * beside the ranking (clear_rank.c): memset against the probe's NT kernel
 * on buffers of the cached limit, then half of it, down to
 * CLEAR_PROBE_MIN, each written once since it left the caches (as `prealloc
 * bench` times them), until a size where memset holds. nr 0: not measured.
 */
#define CLEAR_CROSS_SIZES 4
struct clear_cross_point {
	uint64_t bytes;
	unsigned int rounds;
	double cached_gbps, nt_gbps;	/* medians over the rounds */
	double nt_over_cached;		/* median of the rounds' paired ratios */
};
struct clear_crossover {
	char nt[CLEAR_KERNEL_NAME_MAX];	/* the NT kernel timed against memset */
	unsigned int nr;		/* sizes measured, largest first */
	struct clear_cross_point at[CLEAR_CROSS_SIZES];
	double seconds;			/* the measurement */
};

/*
 * The footprint up to which cached stores keep winning here: limit (the
 * cached limit) unless NT led memset by CLEAR_CROSS_LEAD at the sizes x
 * measured, from the largest down; then the largest size where memset
 * held (half the smallest measured where NT led at every one). Pure.
 */
#define CLEAR_CROSS_LEAD 1.1
uint64_t clear_crossover_cached_bytes(const struct clear_crossover *x, uint64_t limit);
/*
 * Whether a measured crossover can change the choice for this clear: a
 * footprint the rules give cached stores, in pieces the probe would take.
 */
bool clear_crossover_matters(const struct cpu_id *cpu, uint64_t size, unsigned int threads);

/*
 * Picks for clearing size bytes per worker with threads workers sharing a
 * last-level cache, under an optional calibration (NULL: none). A pure
 * function of its inputs; why gets a short reason.
 */
struct clear_choice clear_select(const struct cpu_id *cpu, uint64_t size, unsigned int threads,
				 const struct clear_calibration *cal, char *why, size_t why_len);
/*
 * clear_select() with no calibration, its cached limit refined by the
 * crossover x measured here (NULL or nr 0: the rules): a footprint over
 * clear_crossover_cached_bytes() and up to the cached limit gets the probe
 * (with handicap 1: the dirty lines stay in the cache, so the slices' ratio
 * is the clear's). Pure.
 */
struct clear_choice clear_select_measured(const struct cpu_id *cpu, uint64_t size,
					  unsigned int threads, const struct clear_crossover *x,
					  char *why, size_t why_len);

/*
 * The probe (clear_probe.c): one slice with each kernel at each of up to
 * SPOTS places, one place per SPOT_BYTES of the piece (at least one);
 * pieces under MIN get the cached kernel unprobed.
 */
#define CLEAR_PROBE_SLICE (UINT64_C(16) << 10)
#define CLEAR_PROBE_SPOTS 4
#define CLEAR_PROBE_SPOT_BYTES (UINT64_C(4) << 20)
#define CLEAR_PROBE_MIN (UINT64_C(2) << 20)

/*
 * A choice by name: a kernel, or a probe's pair ("c/avx2_nt"). -ENOENT
 * unknown, -EOPNOTSUPP not built or not usable with these features.
 */
int clear_choice_find(const char *name, uint64_t features, struct clear_choice *ret);

/*
 * Clears [dst, dst + len) as c says: with its kernel, or with a probe.
 * Returns the bytes cleared by the cached kernel (all of them without a
 * probe when c->kernel is cached, none when it is NT).
 */
uint64_t clear_choice_run(const struct clear_choice *c, void *dst, size_t len);

/* ---- calibration.c: the ctx's calibration, and the choices made under it -- */
/*
 * clear_select.c is pure and knows nothing of files or contexts; calibration.c
 * builds on it: it owns each ctx's calibration; clear_auto.c makes the
 * choices that need a ctx (clear_select_region, prealloc_clear_choose).
 */

/*
 * clear_select() for a job on region: per node, its bytes spread over its
 * workers (threads, 0: the node's CPUs), under the region's ctx's
 * calibration. The node with the largest footprint decides.
 */
struct clear_choice clear_select_region(const struct prealloc_region *region, unsigned int threads,
					char *why, size_t why_len);
/*
 * clear_select() as a ctx runs it: under cal (NULL: none), and with none,
 * over the probe limit, the kernel the ctx's ranking measured fastest.
 */
struct clear_choice clear_select_auto(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads,
				      const struct clear_calibration *cal, char *why, size_t why_len);

/*
 * Copies ctx's calibration into ret; false when none applies. The first
 * call on a ctx that has not loaded, saved or unloaded one reads the
 * default file; a foreign or unreadable one is ignored and said once
 * through the ctx's log at PREALLOC_LOG_INFO.
 */
bool ctx_calibration(struct prealloc_ctx *ctx, struct clear_calibration *ret);

/*
 * Default file: $PREALLOC_CALIBRATION, else /var/lib/prealloc/calibration
 * as root, else the user's cache.
 */
int calibration_default_path(char *buf, size_t len);
/* Parses a calibration file's text; -EINVAL when malformed. Pure. */
int calibration_parse(const char *text, struct clear_calibration *ret);
/* Formats cal as a file's text; returns the length or -ENOSPC. Pure. */
int calibration_format(const struct clear_calibration *cal, char *buf, size_t len);
int calibration_read(const char *path, struct clear_calibration *ret);
int calibration_write(const char *path, const struct clear_calibration *cal);
/* The default file's directory made (and a missing cache root): 0 or -errno. */
int calibration_mkdir(void);

/* ---- clear_auto.c: the automatic choice for a ctx --------------------- */

/*
 * The ctx's ranking for large clears (clear_rank.c) into ret, and how it
 * came (how: "measured ...", "cached in PATH"): the file beside the
 * calibration if measured on this CPU and microcode, else measured now,
 * once per ctx (who says for whom, for the reason), and saved. false:
 * none, with PREALLOC_CALIBRATION=none or where it cannot be measured.
 */
bool ctx_ranking(struct prealloc_ctx *ctx, const char *who, struct clear_rank *ret, char *how,
		 size_t how_len);
/*
 * The crossover measured and kept with the ranking (ctx_ranking() settles
 * both) into ret; false where there is no ranking or it holds none. The
 * ranking lives in the ctx; the crossover, a figure of the machine, is
 * kept once per process: the last ctx to settle its ranking sets it.
 */
bool ctx_crossover(struct prealloc_ctx *ctx, const char *who, struct clear_crossover *ret,
		   char *how, size_t how_len);

/* ---- clear_rank.c: the kernels ranked for large clears, measured here ----- */

/*
 * Every usable kernel on flushed slices of a 16 MiB buffer, until the
 * leader is known; then, into ret_cross (NULL: not measured), the crossover
 * at and below the cached limit (nr 0 where no probe could run).
 */
int clear_rank_measure(const struct cpu_id *cpu, struct clear_rank *ret,
		       struct clear_crossover *ret_cross);
/* Measured on this CPU model, model name and microcode. */
bool clear_rank_matches(const struct clear_rank *rank, const struct cpu_id *cpu);
/* The ranking's file: the ranking, then the crossover's lines (x NULL: none). */
int clear_rank_format(const struct clear_rank *rank, const struct clear_crossover *x, char *buf,
		      size_t len);
/* The ranking, and the crossover into ret_cross (NULL: not wanted; nr 0 where the file has none). */
int clear_rank_parse(const char *text, struct clear_rank *ret, struct clear_crossover *ret_cross);
/* /proc/cpuinfo's microcode revision, "unknown" where it says none. */
void cpu_microcode(char *buf, size_t len);
/* A file of a few KiB into buf (NUL-terminated); -EINVAL when it does not fit. */
int small_file_read(const char *path, char *buf, size_t len);
/* text written to a temporary file beside path, synced, renamed over it (mode 0644). */
int small_file_write(const char *path, const char *text, size_t len);

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
