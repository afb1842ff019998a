/* SPDX-License-Identifier: MIT */
/* Store kernels that zero resident memory, and the one place that picks one. */
#ifndef PREALLOC_CLEAR_H
#define PREALLOC_CLEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

struct prealloc_ctx;
struct prealloc_region;

/* Zeroes [dst, dst + len); any alignment, any length; NT kernels end with SFENCE. */
typedef void (*clear_fn)(void *dst, size_t len);

struct clear_kernel {
	const char *name;
	clear_fn fn;		/* NULL: not built (-Dvector_kernels=false) */
	uint64_t requires;	/* PREALLOC_CPU_* bits */
	bool nontemporal;
	const char *probe;	/* NT kernels: the name of the probe of memset against it */
};

/* The table, best first. */
extern const struct clear_kernel clear_kernels[];
extern const unsigned int clear_kernels_count;

/* The kernels themselves (clear_kernels.c); the vector ones exist only when built. */
void clear_c(void *dst, size_t len);
void clear_rep_stosb(void *dst, size_t len);
void clear_movnti(void *dst, size_t len);
void clear_avx2_nt(void *dst, size_t len);
void clear_avx512_nt(void *dst, size_t len);
void clear_clzero(void *dst, size_t len);

const struct clear_kernel *clear_kernel_find(const char *name);
/* Built, and every required feature present. */
bool clear_kernel_usable(const struct clear_kernel *k, uint64_t features);

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
 * Picks for clearing size bytes per worker with threads workers sharing a
 * last-level cache, under an optional calibration (NULL: none). A pure
 * function of its inputs; why gets a short reason.
 */
struct clear_choice clear_select(const struct cpu_id *cpu, uint64_t size, unsigned int threads,
				 const struct clear_calibration *cal, char *why, size_t why_len);

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

/* ---- calibrate.c: the ctx's calibration, and the choices made under it ---- */
/*
 * clear.c above is pure and knows nothing of files or contexts; calibrate.c
 * builds on it: it owns each ctx's calibration and makes the choices that
 * need one (clear_select_region, prealloc_clear_choose).
 */

/*
 * clear_select() for a job on region: per node, its bytes spread over its
 * workers (threads, 0: the node's CPUs), under the region's ctx's
 * calibration. The node with the largest footprint decides.
 */
struct clear_choice clear_select_region(const struct prealloc_region *region, unsigned int threads,
					char *why, size_t why_len);

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

#endif
