/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: the clear kernels, calibration, and clearing a file (prealloc clear).
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_CLEAR_H
#define LIBPREALLOC_CLEAR_H

#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- clear kernels ------------------------------------------------------ */

/*
 * Kernels, on x86-64: "avx2_nt", "avx512_nt", "clzero", "movnti"
 * (non-temporal stores), "rep_stosb", "c" (cached stores); on arm64:
 * "dc_zva", "mops", "stnp" (non-temporal stores), "c"; elsewhere "c"
 * alone (prealloc_clear_kernels() lists those usable here). Automatic
 * selection ("auto" or NULL) uses, in order: the ctx's calibration if it was measured on this CPU
 * model; cached stores where NT stores are known not to be faster; cached
 * stores (memset) when the footprint (bytes per worker x workers) is at
 * most the cached limit (half the last-level cache, at most 8 MiB); a
 * probe up to the probe limit (twice the LLC, at most 128 MiB): each piece
 * is cleared by whichever of memset and the best NT kernel is faster on
 * that memory at that moment, named "c/avx2_nt" and so on (such a name can
 * also be given as a kernel); else the best NT kernel this CPU has
 * (docs/kernels.md says why).
 */

/* Kernels usable on this CPU, best first; returns the count (may exceed max). */
int prealloc_clear_kernels(struct prealloc_ctx *ctx, const char **ret_names, unsigned int max);
/*
 * The kernel (or probe pair) automatic selection picks for size bytes per
 * worker and threads workers; ret_why (may be NULL when why_len is 0) gets
 * a short reason. *ret_name is a static string.
 */
int prealloc_clear_choose(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads,
			  const char **ret_name, char *ret_why, size_t why_len);
/*
 * Zeroes [addr, addr + len) on the calling thread; any alignment. kernel
 * NULL or "auto" selects by the built-in rules only (there is no ctx, so no
 * calibration); -ENOENT unknown name, -EOPNOTSUPP not on this CPU (or not
 * built). Thread-safe.
 */
int prealloc_clear_range(void *addr, size_t len, const char *kernel);

/*
 * Calibration: per size class, the kernel measured fastest here (prealloc
 * bench). A class covers footprints up to max_bytes; classes ascend and the
 * last also covers anything larger. Each ctx has its own: the first
 * automatic selection on a ctx that has not loaded, saved or unloaded one
 * reads the default file, if present; one measured on another CPU (or
 * unreadable) is ignored and said once through the ctx's log at
 * PREALLOC_LOG_INFO.
 */
#define PREALLOC_CALIBRATION_CLASSES 8

struct prealloc_calibration_class {
	uint64_t max_bytes;
	char kernel[24];	/* a kernel, or a probe's pair ("c/avx2_nt") */
	double gbps;		/* measured, informational */
};

struct prealloc_calibration {
	size_t size;		/* sizeof(struct prealloc_calibration) */
	unsigned int nr_classes;
	struct prealloc_calibration_class classes[PREALLOC_CALIBRATION_CLASSES];
};

/*
 * The default file: $PREALLOC_CALIBRATION (an absolute path) if set, else
 * /var/lib/prealloc/calibration as root, else the user's cache dir.
 */
int prealloc_calibration_path(char *ret_path, size_t len);
/*
 * Stores cal as measured on this CPU at path (NULL: the default file, its
 * directory created) and makes it the ctx's. -EINVAL: unknown kernel, classes
 * not ascending.
 */
int prealloc_calibration_save(struct prealloc_ctx *ctx, const struct prealloc_calibration *cal,
			      const char *path);
/*
 * Loads path (NULL: the default file) and makes it the ctx's; ret_cal may be
 * NULL. -ENOENT: no file; -ESTALE: measured on another CPU, not used;
 * -EINVAL: malformed.
 */
int prealloc_calibration_load(struct prealloc_ctx *ctx, const char *path,
			      struct prealloc_calibration *ret_cal);
/* Drops the ctx's calibration: its automatic selection uses the built-in rules. */
int prealloc_calibration_unload(struct prealloc_ctx *ctx);

/*
 * Measuring the clear kernels (`prealloc bench`): each kernel single-
 * threaded at each size, and at a large size for each thread count, through
 * the job engine (a MAPPED region over one anonymous THP buffer, written
 * once before timing; a sample's time is the job's, from the gate opening
 * to the last worker, so creating threads is not timed; small sizes are
 * cleared repeatedly so each sample clears at least 64 MiB; every timed
 * pass follows an untimed pass of ordinary stores over the same bytes on
 * the same CPU, worker i on the node's i-th CPU). Kernels are
 * interleaved within each repetition; each figure is the median. The
 * calibration built from it takes, per measured size, the winner up to
 * the geometric middle with the next size (the probe's pair where auto
 * ran one and came within 0.95 of the fastest kernel), and for anything
 * larger the kernel whose worst ratio to the best over the thread counts
 * is highest.
 */
#define PREALLOC_CALIBRATE_SIZES 7
#define PREALLOC_CALIBRATE_THREADS 16
#define PREALLOC_CALIBRATE_KERNELS 8
#define PREALLOC_CALIBRATE_REPEAT_MAX 101
/*
 * repeat 0: each point takes at least MIN repetitions, then more until
 * auto's paired ratio to the best kernel is known to PRECISION (its
 * median's standard error, estimated from the ratios' spread), at most MAX.
 */
#define PREALLOC_CALIBRATE_REPEAT_AUTO_MIN 7
#define PREALLOC_CALIBRATE_REPEAT_AUTO_MAX 31
#define PREALLOC_CALIBRATE_PRECISION 0.01
#define PREALLOC_CALIBRATE_WRITES_MAX 4

enum prealloc_calibrate_flags {
	PREALLOC_CALIBRATE_SAVE = 1u << 0, /* save the calibration (path) and make it the ctx's */
};

struct prealloc_calibrate_opts {
	size_t size;		/* sizeof(struct prealloc_calibrate_opts) */
	unsigned int flags;	/* enum prealloc_calibrate_flags */
	/*
	 * 0: from LLC/4 or half the cached limit (the cached limit: half the
	 * LLC, at most 8 MiB), whichever is smaller, doubling up to 8x LLC
	 * (at most 6, half the free memory)
	 */
	unsigned int nr_sizes;
	uint64_t sizes[PREALLOC_CALIBRATE_SIZES];	/* single-threaded, at least 4 KiB */
	unsigned int nr_threads; /* 0: 1, 2, 4, ... and every allowed CPU */
	unsigned int threads[PREALLOC_CALIBRATE_THREADS];
	uint64_t large_size;	/* the by-threads size; 0: 1 GiB or the largest size */
	unsigned int nr_kernels; /* 0: every kernel usable here; at most KERNELS - 1 */
	const char *kernels[PREALLOC_CALIBRATE_KERNELS];
	unsigned int repeat;	/* samples per figure; 0: as each point needs (REPEAT_AUTO_*) */
	const char *path;	/* SAVE: NULL for the default file */
	/*
	 * The state every timed pass meets: the buffer drained from the caches
	 * by NT stores, then written this many times by ordinary stores
	 * (0: 1, written once; 2: written again, which CPUs keep in the cache
	 * as reused data). At most PREALLOC_CALIBRATE_WRITES_MAX.
	 */
	unsigned int writes;
};

struct prealloc_calibrate_result {
	size_t size;		/* sizeof(struct prealloc_calibrate_result) */
	int bad_kernel;		/* -ENOENT/-EOPNOTSUPP: index into opts.kernels, else -1 */
	uint64_t buffer_bytes;	/* memory the measurement needs (-ENOMEM: more than ...) */
	uint64_t buffer_limit;	/* ... half the memory available */
	unsigned int repeat;	/* opts.repeat, or REPEAT_AUTO_MIN: the fewest a point took */
	unsigned int repeat_max; /* opts.repeat, or REPEAT_AUTO_MAX */
	/* The kernels measured, then "auto": what the built-in rules run at each point. */
	unsigned int nr_kernels;
	char kernels[PREALLOC_CALIBRATE_KERNELS][24];
	unsigned int nr_sizes;	/* ascending */
	uint64_t sizes[PREALLOC_CALIBRATE_SIZES];
	double size_gbps[PREALLOC_CALIBRATE_SIZES][PREALLOC_CALIBRATE_KERNELS];
	char size_auto[PREALLOC_CALIBRATE_SIZES][24];	/* built-in rules' pick (the auto column) */
	char size_calibrated[PREALLOC_CALIBRATE_SIZES][24]; /* the pick under calibration */
	unsigned int nr_threads; /* ascending */
	unsigned int threads[PREALLOC_CALIBRATE_THREADS];
	uint64_t large_size;
	double threads_gbps[PREALLOC_CALIBRATE_THREADS][PREALLOC_CALIBRATE_KERNELS];
	char threads_auto[PREALLOC_CALIBRATE_THREADS][24];
	char threads_calibrated[PREALLOC_CALIBRATE_THREADS][24];
	struct prealloc_calibration calibration; /* built from the figures above */
	int saved;		/* SAVE: 1 when stored */
	/*
	 * How close each pick comes to the best kernel (the highest median):
	 * the median over the repetitions of the pick's speed divided by the
	 * best's in the same repetition (above 1: the pick beat it, as a
	 * probe mixing two kernels can; 0: the pick was not among the kernels
	 * measured). Within a repetition the kernels run back to back, so the
	 * machine's drift between repetitions cancels, which a ratio of
	 * medians keeps.
	 */
	double size_auto_ratio[PREALLOC_CALIBRATE_SIZES];
	double size_calibrated_ratio[PREALLOC_CALIBRATE_SIZES];
	double threads_auto_ratio[PREALLOC_CALIBRATE_THREADS];
	double threads_calibrated_ratio[PREALLOC_CALIBRATE_THREADS];
	/*
	 * How noisy the machine was while measuring: per point and kernel, the
	 * interquartile range of the samples over their median; the median of
	 * those (0.1: samples of one kernel spread by 10 %). Ratios closer to
	 * 1 than this are within the noise.
	 */
	double spread;
	unsigned int writes;	/* opts.writes as used */
	/*
	 * The share of auto's timed bytes cleared by cached stores (1: all by
	 * memset or another cached kernel, 0: all by NT stores): where auto
	 * is a probe, how its pieces went.
	 */
	double size_auto_cached[PREALLOC_CALIBRATE_SIZES];
	double threads_auto_cached[PREALLOC_CALIBRATE_THREADS];
	/* The repetitions each point took (repeat to repeat_max). */
	unsigned int size_repeat[PREALLOC_CALIBRATE_SIZES];
	unsigned int threads_repeat[PREALLOC_CALIBRATE_THREADS];
};

/*
 * Measures as described above and builds ret->calibration; with SAVE also
 * stores it (prealloc_calibration_save). -EINVAL bad options; -ENOENT /
 * -EOPNOTSUPP a kernel unknown / not usable here (bad_kernel); -ENOMEM the
 * buffer exceeds half the available memory; a save error is returned with
 * the measurements in ret complete. Runs for seconds; uses every CPU asked.
 */
int prealloc_calibrate(struct prealloc_ctx *ctx, const struct prealloc_calibrate_opts *opts,
		       struct prealloc_calibrate_result *ret);

/* ---- clearing a file (`prealloc clear`) ---------------------------------- */

enum prealloc_clear_file_flags {
	PREALLOC_CLEAR_VERIFY = 1u << 0, /* read every byte back; -EBADMSG when one is not zero */
	PREALLOC_CLEAR_FORCE = 1u << 1,	 /* clear a file not on hugetlbfs/tmpfs, or one mapped */
};

/* The check or step that failed: prealloc_clear_file_info.error_step. */
enum prealloc_clear_file_step {
	PREALLOC_CLEAR_STEP_NONE = 0,
	PREALLOC_CLEAR_STEP_KERNEL,	/* opts.kernel: -ENOENT unknown, -EOPNOTSUPP not here */
	PREALLOC_CLEAR_STEP_LOOKUP,	/* lstat or statfs failed: their errno (-ENOENT, ...) */
	PREALLOC_CLEAR_STEP_SYMLINK,	/* -ELOOP: a symbolic link, refused even with FORCE */
	PREALLOC_CLEAR_STEP_TYPE,	/* -EINVAL: not a regular file */
	PREALLOC_CLEAR_STEP_FILESYSTEM, /* -EMEDIUMTYPE: not on hugetlbfs or tmpfs (no FORCE) */
	PREALLOC_CLEAR_STEP_MAPPERS,	/* -EBUSY: mapper_pid maps it (no FORCE); or /proc unreadable */
	PREALLOC_CLEAR_STEP_OPEN,	/* open failed; -ESTALE: another file took its place */
	PREALLOC_CLEAR_STEP_MAP,	/* mapping: -ENOMEM (hugetlbfs: holes cannot be backed), -ESTALE */
	PREALLOC_CLEAR_STEP_START,	/* the workers could not start */
	PREALLOC_CLEAR_STEP_CLEAR,	/* a worker failed (the job's report says where), -ECANCELED;
					 * -ENXIO: the file shrank under the clear (truncated) */
	PREALLOC_CLEAR_STEP_SWAPPED,	/* clearing swapped-out tmpfs pages */
	PREALLOC_CLEAR_STEP_TAIL,	/* writing the partial last page; -ENXIO: it was cut away */
	PREALLOC_CLEAR_STEP_SYNC,	/* msync/fsync of a file not in memory */
	PREALLOC_CLEAR_STEP_VERIFY,	/* -EBADMSG: not zero at nonzero_offset */
};

struct prealloc_clear_file_opts {
	size_t size;		/* sizeof(struct prealloc_clear_file_opts) */
	unsigned int flags;	/* enum prealloc_clear_file_flags */
	unsigned int threads;	/* per node; 0: every allowed CPU of the node */
	const char *kernel;	/* clear kernel; NULL or "auto": chosen under the ctx's calibration */
	/* Completion of the job into the caller's io_uring, as in prealloc_job_opts. */
	const struct prealloc_completion *completion;
};

struct prealloc_clear_file_info {
	size_t size;		/* sizeof(struct prealloc_clear_file_info) */
	int error_step;		/* enum prealloc_clear_file_step; 0 on success */
	pid_t mapper_pid;	/* another process mapping the file (-EBUSY, or FORCE), 0 none */
	char mapper_comm[64];
	unsigned int unreadable; /* processes whose mappings could not be checked */
	unsigned long fs_magic;	/* statfs f_type: HUGETLBFS_MAGIC, TMPFS_MAGIC, ... */
	uint64_t page_size;	/* the file's page size (hugetlbfs), else 4 KiB */
	uint64_t length;	/* file size, bytes */
	uint64_t tail_bytes;	/* a partial last page, written with pwrite */
	uint64_t unbacked_bytes; /* hugetlbfs holes that got pages the kernel zeroed */
	uint64_t hole_bytes;	/* tmpfs holes: not resident, read as zero, skipped */
	uint64_t swapped_bytes;	/* tmpfs pages swapped out, read back in and cleared */
	uint64_t nonzero_offset; /* VERIFY: first non-zero byte of the file, UINT64_MAX none */
	char kernel[24];	/* the kernel used; "" when only write(2) ran */
	char kernel_why[160];	/* why automatic selection chose it; "" when named */
	/*
	 * Since 0.2, where the time went, seconds: the checks (the kernel and
	 * auto's choice, the file, other processes' mappings); the mapping,
	 * its pages made present and their nodes read; the job, from its start
	 * (workers woken) to its last store and the tail written, and with
	 * VERIFY the read-back, for a disk file the write-back.
	 */
	double check_seconds, map_seconds, clear_seconds;
};

/*
 * Re-zeroes the file at path in place: each resident page by workers on
 * the node it sits on, after checking it is the file meant (see the steps
 * above), then swapped-out tmpfs pages, the partial last page (pwrite), and
 * msync + fsync for a file not in memory. Returns at once with the job;
 * *ret_job is NULL (and the work done) when the file has no whole page.
 * The job owns the mapping, descriptor and region it made. ret_info (may
 * be NULL) says what was found, and on failure which check failed; errors
 * are negative errno as listed with the steps. Clearing is idempotent: an
 * interrupted (cancelled) file is finished by clearing it again.
 */
int prealloc_clear_file_start(struct prealloc_ctx *ctx, const char *path,
			      const struct prealloc_clear_file_opts *opts,
			      struct prealloc_job **ret_job,
			      struct prealloc_clear_file_info *ret_info);
/*
 * The flow's result and info, once the job is done (waits for it): 0, or
 * the negative errno of the step that failed (-EBADMSG: VERIFY found a
 * non-zero byte, in the pages, the swapped ones or the tail).
 */
int prealloc_clear_file_info(struct prealloc_job *job, struct prealloc_clear_file_info *ret_info);
/* Synchronous: start + wait + info + report + free. ret_info, ret_report may be NULL. */
int prealloc_clear_file(struct prealloc_ctx *ctx, const char *path,
			const struct prealloc_clear_file_opts *opts,
			struct prealloc_clear_file_info *ret_info, struct prealloc_report *ret_report);

#ifdef __cplusplus
}
#endif
#endif
