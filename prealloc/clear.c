/* SPDX-License-Identifier: MIT */
/*
 * The clear engine's choices, all in one place: the table of kernels (best
 * first, each with the CPU features it needs), the quirks known per CPU
 * model, and clear_select(), a pure function of CPU identity, features,
 * size, threads and calibration, so that tests can replay any CPU.
 *
 * Rules, in order: a calibration measured on this CPU model decides; a CPU
 * whose NT stores are not faster gets cached stores; a footprint up to half
 * the last-level cache (at most 32 MiB) gets cached stores (they win there
 * and leave the zeroes hot); anything larger gets the best NT kernel the
 * CPU has: AVX-512 NT while the footprint fits in half the LLC, else in
 * table order.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "internal.h"
#include "clear.h"

#if PREALLOC_VECTOR_KERNELS
#define VEC(fn) (fn)
#else
#define VEC(fn) NULL
#endif

/*
 * Best first among the NT kernels; the cached ones come last. AVX2 NT leads
 * AVX-512 NT in the table: above half the LLC, where little of what was
 * just written is still cached, the two were level on a Xeon guest (64 MiB:
 * AVX-512 ahead by a median 0.6 %, 25 of 40 quiet runs) and at two threads
 * on 1 GiB AVX2 NT led on an Emerald Rapids guest by 17-20 % in both runs.
 * Below half the LLC, clear_select() takes AVX-512 NT first: one store per
 * line does better against lines still dirty in the cache (Xeon guest,
 * 16-32 MiB: ahead by 5-14 % in 40 runs of 40; 48 MiB: 3 %, 37 of 40).
 * (Emerald Rapids runs that had AVX-512 NT 15-35 % behind at 48-64 MiB,
 * then 1-10 % ahead, timed kernels back to back: whichever came after
 * memset paid for its dirty lines.) Zen 4 splits a 512-bit store in two. A
 * calibration may pick either. clzero is chosen automatically only where a
 * quirk vouches for it, and moves ahead of the vector kernels only where a
 * quirk says it beats them.
 */
const struct clear_kernel clear_kernels[] = {
	{ .name = "avx2_nt", .fn = VEC(clear_avx2_nt), .requires = PREALLOC_CPU_AVX2,
	  .nontemporal = true },
	{ .name = "avx512_nt", .fn = VEC(clear_avx512_nt), .requires = PREALLOC_CPU_AVX512F,
	  .nontemporal = true },
	{ .name = "clzero", .fn = VEC(clear_clzero), .requires = PREALLOC_CPU_CLZERO,
	  .nontemporal = true },
	{ .name = "movnti", .fn = VEC(clear_movnti), .requires = PREALLOC_CPU_SSE2,
	  .nontemporal = true },
	{ .name = "rep_stosb", .fn = clear_rep_stosb },
	{ .name = "c", .fn = clear_c },
};
const unsigned int clear_kernels_count = ARRAY_SIZE(clear_kernels);

enum clear_quirk_flags {
	QUIRK_NT_SLOW = 1u << 0,	/* NT stores no faster than cached: never pick NT */
	QUIRK_CLZERO_OK = 1u << 1,	/* CLZERO is a good NT store here (AMD, Hygon) */
	QUIRK_CLZERO_FIRST = 1u << 2,	/* ... and beats the vector NT stores */
};

struct clear_quirk {
	const char *vendor;
	unsigned int family;
	unsigned int model_min, model_max; /* display model range, inclusive */
	unsigned int flags;
	const char *what;
};

/* Published and measured per-model behaviour; first match wins. */
static const struct clear_quirk clear_quirks[] = {
	/* Skylake-SP, Cascade Lake, Cooper Lake: NT 6.3 vs REP STOSB 6.5 GB/s. */
	{ "GenuineIntel", 0x6, 0x55, 0x55, QUIRK_NT_SLOW, "Skylake-SP/Cascade Lake" },
	/* Zen, Zen+, Zen 2: MOVNTI 16.3 vs REP STOS 11.3 GB/s; CLZERO the NT store to use. */
	{ "AuthenticAMD", 0x17, 0x00, 0xff, QUIRK_CLZERO_OK | QUIRK_CLZERO_FIRST, "AMD Zen/Zen 2" },
	/* Zen 4 (Genoa, Raphael, Phoenix, Bergamo): VMOVNTDQ ymm 60 vs CLZERO 57 GB/s, measured. */
	{ "AuthenticAMD", 0x19, 0x10, 0x1f, QUIRK_CLZERO_OK, "AMD Zen 4" },
	{ "AuthenticAMD", 0x19, 0x60, 0x7f, QUIRK_CLZERO_OK, "AMD Zen 4" },
	{ "AuthenticAMD", 0x19, 0xa0, 0xaf, QUIRK_CLZERO_OK, "AMD Zen 4" },
	/* Zen 3 (the rest of family 0x19): CLZERO 39-46 GB/s per core on Milan. */
	{ "AuthenticAMD", 0x19, 0x00, 0xff, QUIRK_CLZERO_OK | QUIRK_CLZERO_FIRST, "AMD Zen 3" },
	/* Zen 5: full-width 512-bit stores; the vector NT kernels lead, CLZERO behind. */
	{ "AuthenticAMD", 0x1a, 0x00, 0xff, QUIRK_CLZERO_OK, "AMD Zen 5" },
	/* Hygon Dhyana is a Zen derivative. */
	{ "HygonGenuine", 0x18, 0x00, 0xff, QUIRK_CLZERO_OK | QUIRK_CLZERO_FIRST, "Hygon Dhyana" },
};

/* Assumed when the LLC size is unknown: a typical server LLC slice. */
#define LLC_DEFAULT (UINT64_C(32) << 20)
#define CACHED_CAP (UINT64_C(32) << 20)

/*
 * Up to this footprint cached stores win, on memory that was just written
 * (the state `prealloc bench` times every kernel from since 2026-12-01).
 * On a Xeon guest with Sapphire Rapids' 105 MiB L3, in 40 runs with the
 * samples spread by at most 12 %: memset led at 4-24 MiB in every run
 * (1.65-2.44x the best NT kernel, medians), at 32 MiB in 28 of 40 (1.12x),
 * never from 48 MiB (0.73x); 32 MiB is its crossover (over 110 such runs
 * memset came within 0.95 of the best there in 69, AVX-512 NT in 65). When the host's other tenants used the L3
 * (spread 20-60 %) memset fell to 4-8 GB/s from 16 MiB; the 32 MiB cap
 * still gave the most cells within 0.95 of the best over all 75 runs
 * (448 of 621 cells, against 408 at 16 MiB and 267 at 12). Measured back
 * to back, which favoured memset: on Zen 4 (32 MiB L3) memset led at
 * 16 MiB by 5 % and trailed from 32 MiB; on Zen 2 (8 MiB L3) it led at
 * 4 MiB; on an Emerald Rapids guest up to 16-32 MiB. So half the LLC,
 * never above 32 MiB, the limit itself included.
 */
static uint64_t cached_limit(uint64_t llc)
{
	return MIN(llc / 2, CACHED_CAP);
}

const struct clear_kernel *clear_kernel_find(const char *name)
{
	if (!name)
		return NULL;
	for (unsigned int i = 0; i < clear_kernels_count; i++)
		if (!strcmp(clear_kernels[i].name, name))
			return &clear_kernels[i];
	return NULL;
}

bool clear_kernel_usable(const struct clear_kernel *k, uint64_t features)
{
	return k->fn && (k->requires & features) == k->requires;
}

static const struct clear_quirk *quirk_find(const struct cpu_id *cpu)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(clear_quirks); i++) {
		const struct clear_quirk *q = &clear_quirks[i];

		if (!strcmp(q->vendor, cpu->vendor) && q->family == cpu->family &&
		    cpu->model >= q->model_min && cpu->model <= q->model_max)
			return q;
	}
	return NULL;
}

bool clear_calibration_matches(const struct clear_calibration *cal, const struct cpu_id *cpu)
{
	return !strcmp(cal->vendor, cpu->vendor) && cal->family == cpu->family &&
	       cal->model == cpu->model && !strcmp(cal->model_name, cpu->model_name);
}

/*
 * Cached stores: on AMD glibc's memset (measured on Zen 4 below the cache:
 * memset 73.5, REP STOSB 69.4 GB/s), elsewhere REP STOSB where the CPU says
 * it is fast (ERMS), else memset.
 */
/*
 * The cached kernel is glibc's memset on every CPU measured so far: Zen 4
 * (8 MiB: 73.5-75.6 vs REP STOSB 68.4-69.4 GB/s), Emerald Rapids (4-32 MiB,
 * one thread: 19.7-20.7 vs 11.9-19.3), Zen 2 without ERMS (4 MiB: 35.3);
 * and a Sapphire Rapids guest timed from the same state for every kernel
 * (4-12 MiB: memset 9.1-15.7, REP STOSB 9.1-15.1, level or ahead).
 */
static const struct clear_kernel *select_cached(const struct cpu_id *cpu)
{
	(void)cpu;
	return clear_kernel_find("c");
}

/*
 * The best usable NT kernel in table order, as the CPU's quirk reorders it;
 * in_cache: the footprint fits in half the LLC, where much of what was just
 * written is still in the cache, and AVX-512 NT (one store per line) leads.
 */
static const struct clear_kernel *select_nontemporal(const struct clear_quirk *q, uint64_t features,
						     bool in_cache)
{
	unsigned int flags = q ? q->flags : 0;
	const struct clear_kernel *clzero = clear_kernel_find("clzero");
	const struct clear_kernel *avx512 = clear_kernel_find("avx512_nt");

	if ((flags & QUIRK_CLZERO_FIRST) && clear_kernel_usable(clzero, features))
		return clzero;
	if (in_cache && clear_kernel_usable(avx512, features))
		return avx512;
	for (unsigned int i = 0; i < clear_kernels_count; i++) {
		const struct clear_kernel *k = &clear_kernels[i];

		if (!k->nontemporal || !clear_kernel_usable(k, features))
			continue;
		if (k == clzero && !(flags & QUIRK_CLZERO_OK))
			continue;
		return k;
	}
	return NULL;
}

/* The calibrated winner for footprint, if cal applies and the kernel is usable. */
static const struct clear_kernel *select_calibrated(const struct cpu_id *cpu, uint64_t footprint,
						    const struct clear_calibration *cal,
						    char *why, size_t why_len)
{
	const struct clear_kernel *k;
	unsigned int i;

	if (!cal || !cal->nr_classes || cal->nr_classes > CLEAR_CAL_CLASSES ||
	    !clear_calibration_matches(cal, cpu))
		return NULL;
	for (i = 0; i + 1 < cal->nr_classes; i++)
		if (footprint <= cal->classes[i].max_bytes)
			break;
	k = clear_kernel_find(cal->classes[i].kernel);
	if (!k || !clear_kernel_usable(k, cpu->features))
		return NULL;
	if (i + 1 == cal->nr_classes)
		snprintf(why, why_len, "calibrated: fastest here for the largest sizes");
	else
		snprintf(why, why_len, "calibrated: fastest here up to %llu KiB",
			 (unsigned long long)(cal->classes[i].max_bytes >> 10));
	return k;
}

const struct clear_kernel *clear_select(const struct cpu_id *cpu, uint64_t size,
					unsigned int threads, const struct clear_calibration *cal,
					char *why, size_t why_len)
{
	const struct clear_quirk *q = quirk_find(cpu);
	const struct clear_kernel *k;
	uint64_t llc = cpu->llc_bytes ? cpu->llc_bytes : LLC_DEFAULT;
	uint64_t footprint;
	char dummy[1];

	if (!why || !why_len) {
		why = dummy;
		why_len = sizeof(dummy);
	}
	/* Workers sharing a cache compete for it: what counts is their sum. */
	threads = MAX(threads, 1u);
	footprint = size > UINT64_MAX / threads ? UINT64_MAX : size * threads;

	k = select_calibrated(cpu, footprint, cal, why, why_len);
	if (k)
		return k;
	if (q && (q->flags & QUIRK_NT_SLOW)) {
		snprintf(why, why_len, "NT stores not faster on %s", q->what);
		return select_cached(cpu);
	}
	if (footprint <= cached_limit(llc)) {
		snprintf(why, why_len, "%llu KiB is within the cached limit, %llu KiB (half the "
			 "%llu MiB LLC%s, at most %llu MiB)", (unsigned long long)(footprint >> 10),
			 (unsigned long long)(cached_limit(llc) >> 10),
			 (unsigned long long)(llc >> 20), cpu->llc_bytes ? "" : ", assumed",
			 (unsigned long long)(CACHED_CAP >> 20));
		return select_cached(cpu);
	}
	k = select_nontemporal(q, cpu->features, footprint <= llc / 2);
	if (k) {
		snprintf(why, why_len, "%llu MiB is over the cached limit, %llu KiB%s%s%s",
			 (unsigned long long)(footprint >> 20),
			 (unsigned long long)(cached_limit(llc) >> 10),
			 footprint <= llc / 2 ? ", within half the LLC" : "",
			 q ? "; NT good on " : "", q ? q->what : "");
		return k;
	}
	snprintf(why, why_len, "no NT kernel built or usable");
	return select_cached(cpu);
}

/* ---- public API ---------------------------------------------------------- */

EXPORT int prealloc_clear_kernels(struct prealloc_ctx *ctx, const char **ret_names,
				  unsigned int max)
{
	unsigned int count = 0;

	if (!ctx || (max && !ret_names))
		return -EINVAL;
	for (unsigned int i = 0; i < clear_kernels_count; i++) {
		if (!clear_kernel_usable(&clear_kernels[i], ctx->cpu.features))
			continue;
		if (count < max)
			ret_names[count] = clear_kernels[i].name;
		count++;
	}
	return (int)count;
}

EXPORT int prealloc_clear_range(void *addr, size_t len, const char *kernel)
{
	const struct cpu_id *cpu = cpu_get();
	const struct clear_kernel *k;

	if (!addr && len)
		return -EINVAL;
	if (!kernel || !strcmp(kernel, "auto")) {
		/* No ctx here, so no calibration: the built-in rules alone. */
		k = clear_select(cpu, len, 1, NULL, NULL, 0);
	} else {
		k = clear_kernel_find(kernel);
		if (!k)
			return -ENOENT;
		if (!clear_kernel_usable(k, cpu->features))
			return -EOPNOTSUPP;
	}
	k->fn(addr, len);
	return 0;
}
