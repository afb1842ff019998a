/* SPDX-License-Identifier: MIT */
/*
 * Clearing, private to the library: which of the architecture's clear
 * kernels (arch/arch.h) clears what, by the built-in rules (select.c), the
 * probe (probe.c), the calibration (calibration.c, its arithmetic in
 * calibration_figures.c) and the ranking measured here (rank.c); the
 * choices a ctx makes under them (auto.c). Over the memory layer (a
 * region's choice), below the engine that runs it. Never installed.
 */
#ifndef PREALLOC_CLEAR_H
#define PREALLOC_CLEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "internal.h"
#include "memory.h"

/* ---- the calibration and the ranking, and what a ctx settled of them --- */

/*
 * Calibration: the measured winner per size class on one CPU model. A
 * class covers footprints (bytes per worker x workers) up to max_bytes;
 * classes ascend, and the last one also covers anything larger.
 */
#define CLEAR_CAL_CLASSES 8
#define CLEAR_KERNEL_NAME_MAX 24

struct clear_cal_class {
	uint64_t max_bytes;
	char kernel[CLEAR_KERNEL_NAME_MAX];
	double gbps;		/* informational */
};

struct clear_calibration {
	/* Identity of the CPU it was measured on; anything else makes it foreign. */
	char vendor[16];
	char model_name[64];
	unsigned int family;
	unsigned int model;
	unsigned int nr_classes;
	struct clear_cal_class classes[CLEAR_CAL_CLASSES];
};

/* The kernels ranked for large clears, measured on this machine (clear/rank.c). */
#define CLEAR_RANK_MAX 8
struct clear_rank {
	char vendor[16];
	char model_name[64];
	unsigned int family, model;
	char microcode[24];
	unsigned int nr;		/* kernels, fastest first */
	struct {
		char kernel[CLEAR_KERNEL_NAME_MAX];
		double gbps;		/* median */
	} k[CLEAR_RANK_MAX];
	uint64_t buffer_bytes;
	unsigned int rounds;
	double seconds;			/* the measurement, buffer included */
	bool level;			/* the first two within 3 %: the table's order kept */
};

/*
 * What the clear layer settled for a ctx (ctx->clear): its calibration,
 * under calibration.c's lock (cal_settled once the default file was looked
 * at or a caller loaded, saved or unloaded one; cal_active when cal
 * applies), and its ranking for large clears, looked for once, under
 * auto.c's.
 */
struct clear_ctx {
	bool cal_settled;
	bool cal_active;
	struct clear_calibration cal;
	bool rank_settled;
	bool rank_active;
	struct clear_rank rank;
	char rank_how[96];		/* "measured at ...", "cached in PATH" */
};

/* ctx's clear state, made zeroed at the first call; NULL: out of memory. */
struct clear_ctx *ctx_clear_get(struct prealloc_ctx *ctx);

/* ---- the calibration's figures (calibration_figures.c) ---------------- */

/* What the calibration's figures say, pure (the probe takes its median). */
/* The median of v[0..n) (n > 0); sorts v. */
double calibration_median(double *v, unsigned int n);
/* Per kernel k < nk, the median of s[k][0..rep) into gbps; -EIO if a sample failed (<= 0). */
int calibration_medians(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
			unsigned int rep, double *gbps);
/*
 * The paired ratio of kernel chosen to kernel best in samples s (rep each,
 * GB/s, sample i of every kernel from the same repetition): the median of
 * s[chosen][i] / s[best][i]. *ret_error (may be NULL): that median's
 * standard error relative to it, estimated from the ratios' interquartile
 * range (1, unknown, with fewer than 4 repetitions). Pure.
 */
double calibration_paired_ratio(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int rep,
				unsigned int chosen, unsigned int best, double *ret_error);
/* The kernel with the highest figure among gbps[0..nk). */
unsigned int calibration_best(unsigned int nk, const double *gbps);
/*
 * Whether rep repetitions of nk columns (the last auto's) are enough: rep
 * >= max; or rep >= min and auto's paired ratio to the best kernel (by the
 * medians) known to PREALLOC_CALIBRATE_PRECISION. Pure.
 */
bool calibration_enough(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
			unsigned int rep, unsigned int min, unsigned int max);
/* order[] gets 0..n-1 shuffled, the same for the same seed: one repetition's kernel order. */
void calibration_order(unsigned int *order, unsigned int n, unsigned int seed);
/*
 * res->calibration from res's medians: per measured size the fastest kernel
 * (the last column, auto, is not one), or the probe auto ran there
 * (res->size_auto) where it came within 0.95 of it; for anything larger
 * the kernel never far behind over the thread counts.
 */
void calibration_build(struct prealloc_calibrate_result *res);

/* ---- the kernels and their selection (select.c, probe.c) -------------- */

/* The kernels, their table and the quirks are the architecture's (arch/arch.h). */

const struct clear_kernel *clear_kernel_find(const char *name);
/* Built, and every required feature present. */
bool clear_kernel_usable(const struct clear_kernel *k, uint64_t features);

/* True when cal was measured on a CPU of cpu's vendor, family, model and name. */
bool clear_calibration_matches(const struct clear_calibration *cal, const struct cpu_id *cpu);

/*
 * What automatic selection gives a clear: one kernel, or a probe (nt set):
 * each piece is cleared by whichever of kernel (cached stores) and nt is
 * faster on it, measured on the piece itself (probe.c).
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
 * beside the ranking (rank.c): memset against the probe's NT kernel
 * on buffers of the cached limit, then half of it, down to
 * CLEAR_PROBE_MIN, each written once since it left the caches (as `prealloc
 * bench` times them), until a size where memset holds. nr 0: not measured.
 * Where memset held at the cached limit, upward too (up[], ascending: twice
 * the cached limit, doubling up to the probe limit) until a size where NT
 * leads: between the limits the rule probes each piece, and a Zen 5 ran
 * memset at 125 GB/s where its probe's pair ran 56 at 16 MiB (issue 52).
 */
#define CLEAR_CROSS_SIZES 4
#define CLEAR_CROSS_UP_SIZES 4
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
	double seconds;			/* the measurement, down and up */
	unsigned int nr_up;		/* sizes measured above the cached limit, smallest first */
	struct clear_cross_point up[CLEAR_CROSS_UP_SIZES];
	double fault_seconds;		/* of seconds: faulting in a buffer past the ranking's */
};

/*
 * The footprint up to which cached stores keep winning here: limit (the
 * cached limit) unless NT led memset by CLEAR_CROSS_LEAD at the sizes x
 * measured, from the largest down; then the largest size where memset
 * held (half the smallest measured where NT led at every one). Where
 * memset held at the limit, the largest size above it where it held, up
 * to the first where NT led. Pure.
 */
#define CLEAR_CROSS_LEAD 1.1
uint64_t clear_crossover_cached_bytes(const struct clear_crossover *x, uint64_t limit);
/*
 * The measurement's stop rule: the size to measure after x's last point
 * (x->nr 0: the first, the cached limit or buf_bytes if smaller), elapsed
 * seconds into it; 0 stops. Half the last size while NT led there by
 * CLEAR_CROSS_LEAD, down to CLEAR_PROBE_MIN, at most CLEAR_CROSS_SIZES
 * sizes, none begun past CLEAR_CROSS_BUDGET_S. Pure.
 */
#define CLEAR_CROSS_BUDGET_S 0.06
uint64_t clear_cross_next(const struct clear_crossover *x, uint64_t cached_limit,
			  uint64_t buf_bytes, double elapsed);
/*
 * Upward: the size to measure after x's last up point (none: twice
 * cached_limit), elapsed seconds into the upward measurement; 0 stops.
 * Only where memset held at the cached limit (x->at[0], measured there);
 * doubling while memset held at the last, up to probe_limit, at most
 * CLEAR_CROSS_UP_SIZES sizes, none begun past CLEAR_CROSS_UP_BUDGET_S. Pure.
 */
#define CLEAR_CROSS_UP_BUDGET_S 0.12
uint64_t clear_cross_next_up(const struct clear_crossover *x, uint64_t cached_limit,
			     uint64_t probe_limit, double elapsed);
/*
 * Whether a measured crossover can change the choice for this clear: a
 * footprint up to the probe limit, in pieces the probe would take.
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
 * crossover x measured here (NULL or nr 0: the rules): a footprint up to
 * clear_crossover_cached_bytes() gets cached stores (above the cached
 * limit too, where memset held there); over it and up to the cached limit,
 * the probe with handicap 1 (the dirty lines stay in the cache, so the
 * slices' ratio is the clear's); over both, the probe as the rules have it. Pure.
 */
struct clear_choice clear_select_measured(const struct cpu_id *cpu, uint64_t size,
					  unsigned int threads, const struct clear_crossover *x,
					  char *why, size_t why_len);

/*
 * The probe (probe.c): one slice with each kernel at each of up to
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

/* ---- calibration.c: the ctx's calibration, and the choices under it -- */
/*
 * select.c is pure and knows nothing of files or contexts; calibration.c
 * builds on it: it owns each ctx's calibration; auto.c makes the
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

/* ---- auto.c: the automatic choice for a ctx --------------------- */

/*
 * The ctx's ranking for large clears (rank.c) into ret, and how it
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

/* ---- rank.c: the kernels ranked for large clears, measured here ----- */

/*
 * Every usable kernel on flushed slices of a 16 MiB buffer, until the
 * leader is known; then, into ret_cross (NULL: not measured), the crossover
 * at and below the cached limit (nr 0 where no probe could run).
 */
int clear_rank_measure(const struct cpu_id *cpu, struct clear_rank *ret,
		       struct clear_crossover *ret_cross);
/* ---- rank_file.c: the ranking's file -------------------------------- */

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

#endif
