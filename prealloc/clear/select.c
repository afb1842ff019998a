/* SPDX-License-Identifier: MIT */
/*
 * The clear engine's choices, all in one place: clear_select(), a pure
 * function of CPU identity, features, size, threads and calibration, so
 * that tests can replay any CPU, over the architecture's table of kernels
 * (best first, each with the CPU features it needs) and its quirks per CPU
 * model (arch/<arch>/).
 *
 * Rules, in order: a calibration measured on this CPU model decides; a CPU
 * whose NT stores are not faster gets cached stores; a footprint up to the
 * cached limit (half the LLC, at most 8 MiB) gets cached stores; one up to
 * the probe limit (twice the LLC, at most 128 MiB) gets a probe: each piece
 * is cleared by whichever of cached and NT stores is faster on it at that
 * moment (clear/probe.c), because there the winner depends on whether the
 * memory is still in the cache, which only the memory can tell; anything
 * larger gets the best NT kernel the CPU has.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "clear.h"
#include "cpu.h"

/* Assumed when the LLC size is unknown: a typical server LLC slice. */
#define LLC_DEFAULT (UINT64_C(32) << 20)
#define CACHED_CAP (UINT64_C(8) << 20)
#define PROBE_CAP (UINT64_C(128) << 20)

/*
 * Which stores win between the limits depends on where the memory is, not
 * on its size alone. On the Xeon guest (0xa7, 2 MiB L2 per core, 105-480
 * MiB of L3 reported and shared with other tenants), one thread, each
 * kernel timed on the CPU that had just written the memory, medians of 15
 * runs (docs/kernels.md): written once since it left the caches, memset
 * led NT by 1.3x at 8 MiB and trailed from 16 (11.5 vs 13.2 GB/s; 10.2 vs
 * 17.8 at 48 MiB), since that L3 keeps few lines written only once;
 * written twice, it led up to 48 MiB (27.6 vs 5.9 at 16 MiB, 12.6 vs 9.3
 * at 48: NT stores over dirty cached lines are slow) and trailed at 64
 * (10.2 vs 16.1). No size rule holds both: picking by size alone gets
 * 0.54-0.69 of the best in one state or 0.18-0.38 in the other. Up to half
 * the LLC and 8 MiB cached stores won in both states there, and on Zen 4,
 * Zen 2 and Emerald Rapids as the earlier bench measured them; NT won in
 * both states at 128 MiB there.
 */
uint64_t clear_cached_limit(uint64_t llc)
{
	return MIN((llc ? llc : LLC_DEFAULT) / 2, CACHED_CAP);
}

uint64_t clear_probe_limit(uint64_t llc)
{
	return MAX(MIN((llc ? llc : LLC_DEFAULT) * 2, PROBE_CAP), clear_cached_limit(llc));
}

static struct clear_choice choice_one(const struct clear_kernel *k)
{
	return (struct clear_choice){ .kernel = k, .name = k->name };
}

/* memset against nt, piece by piece; named after nt (its .probe). */
static struct clear_choice choice_probe(const struct clear_kernel *nt)
{
	return (struct clear_choice){ .kernel = clear_kernel_find("c"), .nt = nt, .name = nt->probe };
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

int clear_choice_find(const char *name, uint64_t features, struct clear_choice *ret)
{
	const struct clear_kernel *k = clear_kernel_find(name), *nt = NULL;

	for (unsigned int i = 0; !k && name && i < clear_kernels_count; i++)
		if (clear_kernels[i].probe && !strcmp(clear_kernels[i].probe, name))
			nt = &clear_kernels[i];
	if (!k && !nt)
		return -ENOENT;
	if (!clear_kernel_usable(nt ? nt : k, features))
		return -EOPNOTSUPP;
	*ret = nt ? choice_probe(nt) : choice_one(k);
	return 0;
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
 * The best usable NT kernel in table order, as the CPU's quirk reorders it:
 * a vouched kernel (x86's clzero) counts only where the quirk vouches for
 * it, and comes first where the quirk says it leads.
 */
static const struct clear_kernel *select_nontemporal(const struct clear_quirk *q, uint64_t features)
{
	unsigned int flags = q ? q->flags : 0;
	const struct clear_kernel *first = NULL;

	for (unsigned int i = 0; i < clear_kernels_count; i++) {
		const struct clear_kernel *k = &clear_kernels[i];

		if (!k->nontemporal || !clear_kernel_usable(k, features))
			continue;
		if (k->vouched && !(flags & QUIRK_VOUCH_OK))
			continue;
		if (k->vouched && (flags & QUIRK_VOUCH_FIRST))
			return k;
		if (!first)
			first = k;
	}
	return first;
}

/*
 * The calibrated winner for footprint into *ret, if cal applies and the
 * kernel, or a probe's pair, is usable here.
 */
static bool select_calibrated(const struct cpu_id *cpu, uint64_t footprint,
			      const struct clear_calibration *cal, struct clear_choice *ret,
			      char *why, size_t why_len)
{
	const char *what;
	unsigned int i;

	if (!cal || !cal->nr_classes || cal->nr_classes > CLEAR_CAL_CLASSES ||
	    !clear_calibration_matches(cal, cpu))
		return false;
	for (i = 0; i + 1 < cal->nr_classes; i++)
		if (footprint <= cal->classes[i].max_bytes)
			break;
	if (clear_choice_find(cal->classes[i].kernel, cpu->features, ret) < 0)
		return false;
	what = ret->nt ? "each piece takes the faster" : "fastest here";
	if (i + 1 == cal->nr_classes)
		snprintf(why, why_len, "calibrated: %s for the largest sizes", what);
	else
		snprintf(why, why_len, "calibrated: %s up to %llu KiB", what,
			 (unsigned long long)(cal->classes[i].max_bytes >> 10));
	return true;
}

struct clear_choice clear_select(const struct cpu_id *cpu, uint64_t size, unsigned int threads,
				 const struct clear_calibration *cal, char *why, size_t why_len)
{
	const struct clear_quirk *q = arch_clear_quirk(cpu);
	const struct clear_kernel *nt;
	uint64_t llc = cpu->llc_bytes ? cpu->llc_bytes : LLC_DEFAULT;
	uint64_t footprint, cached, probe;
	struct clear_choice c;
	char dummy[1];

	if (!why || !why_len) {
		why = dummy;
		why_len = sizeof(dummy);
	}
	/* Workers sharing a cache compete for it: what counts is their sum. */
	threads = MAX(threads, 1u);
	footprint = size > UINT64_MAX / threads ? UINT64_MAX : size * threads;
	cached = clear_cached_limit(cpu->llc_bytes);
	probe = clear_probe_limit(cpu->llc_bytes);

	if (select_calibrated(cpu, footprint, cal, &c, why, why_len))
		return c;
	if (q && (q->flags & QUIRK_NT_SLOW)) {
		snprintf(why, why_len, "NT stores not faster on %s", q->what);
		return choice_one(select_cached(cpu));
	}
	nt = select_nontemporal(q, cpu->features);
	if (!nt) {
		snprintf(why, why_len, "no NT kernel built or usable");
		return choice_one(select_cached(cpu));
	}
	if (footprint <= cached) {
		snprintf(why, why_len, "%llu KiB is within the cached limit, %llu KiB (half the "
			 "%llu MiB LLC%s, at most %llu MiB)", (unsigned long long)(footprint >> 10),
			 (unsigned long long)(cached >> 10), (unsigned long long)(llc >> 20),
			 cpu->llc_bytes ? "" : ", assumed", (unsigned long long)(CACHED_CAP >> 20));
		return choice_one(select_cached(cpu));
	}
	if (footprint <= probe) {
		snprintf(why, why_len, "%llu KiB is between the cached and probe limits, %llu and "
			 "%llu KiB: each piece takes the faster on it", (unsigned long long)(footprint >> 10),
			 (unsigned long long)(cached >> 10), (unsigned long long)(probe >> 10));
		return choice_probe(nt);
	}
	snprintf(why, why_len, "%llu MiB is over the probe limit, %llu MiB%s%s",
		 (unsigned long long)(footprint >> 20), (unsigned long long)(probe >> 20),
		 q ? "; NT good on " : "", q ? q->what : "");
	return choice_one(nt);
}

/*
 * At and below the cached limit the rule keeps cached stores, which won on
 * every CPU measured when it was made; an Emerald Rapids with a 260 MiB
 * LLC (0xcf, issue 39) ran memset at 0.70 of the NT stores at 8 MiB,
 * written once. So the crossover is measured on the machine, beside the
 * ranking (clear/rank.c): where NT led memset by CLEAR_CROSS_LEAD, the
 * probe decides; where it led by less, memset keeps 1/1.1 = 0.91 of the
 * best and costs no slices.
 */
uint64_t clear_crossover_cached_bytes(const struct clear_crossover *x, uint64_t limit)
{
	uint64_t upto = limit;

	for (unsigned int i = 0; x && i < x->nr; i++) {
		if (x->at[i].bytes > limit)
			continue;	/* measured under another cached limit */
		if (x->at[i].nt_over_cached < CLEAR_CROSS_LEAD)
			break;		/* memset holds here, and at every smaller size */
		upto = MIN(upto, x->at[i].bytes / 2);
	}
	/* Above: only from a limit where memset held, each size twice the last. */
	for (unsigned int i = 0; x && upto == limit && i < x->nr_up; i++) {
		if (x->up[i].bytes != upto * 2 || x->up[i].nt_over_cached >= CLEAR_CROSS_LEAD)
			break;
		upto = x->up[i].bytes;
	}
	return upto;
}

/* The probe's pair for this CPU, as between the limits; .nt NULL where none runs. */
static struct clear_choice select_probe_pair(const struct cpu_id *cpu)
{
	return clear_select(cpu, clear_probe_limit(cpu->llc_bytes), 1, NULL, NULL, 0);
}

bool clear_crossover_matters(const struct cpu_id *cpu, uint64_t size, unsigned int threads)
{
	uint64_t footprint;

	threads = MAX(threads, 1u);
	footprint = size > UINT64_MAX / threads ? UINT64_MAX : size * threads;
	/* A piece under CLEAR_PROBE_MIN is never probed: no figure changes it. */
	return size >= CLEAR_PROBE_MIN && footprint <= clear_probe_limit(cpu->llc_bytes) &&
	       select_probe_pair(cpu).nt;
}

struct clear_choice clear_select_measured(const struct cpu_id *cpu, uint64_t size,
					  unsigned int threads, const struct clear_crossover *x,
					  char *why, size_t why_len)
{
	struct clear_choice c = clear_select(cpu, size, threads, NULL, why, why_len);
	uint64_t cached = clear_cached_limit(cpu->llc_bytes), upto;
	uint64_t footprint = size * MAX(threads, 1u);	/* <= the probe limit: no overflow */
	const struct clear_cross_point *held = NULL, *led = NULL;
	struct clear_choice pair = select_probe_pair(cpu);

	/* Figures of another NT kernel (a feature masked since) say nothing of this probe. */
	if (!x || !x->nr || !clear_crossover_matters(cpu, size, threads) ||
	    strcmp(x->nt, pair.nt->name))
		return c;
	if (!why)
		why_len = 0;
	upto = clear_crossover_cached_bytes(x, cached);
	/* The figures that decided: the size where memset held, and the smallest where NT led. */
	for (unsigned int i = 0; i < x->nr && !held; i++) {
		if (x->at[i].bytes > cached)
			continue;
		if (x->at[i].nt_over_cached < CLEAR_CROSS_LEAD)
			held = &x->at[i];
		else
			led = &x->at[i];
	}
	/* Above the cached limit: the largest size where memset held, the first where NT led. */
	for (unsigned int i = 0; upto >= cached && i < x->nr_up && x->up[i].bytes <= upto * 2; i++)
		if (x->up[i].bytes <= upto)
			held = &x->up[i];
		else
			led = &x->up[i];
	if (footprint <= upto) {
		held = held ? held : &x->at[x->nr - 1];
		/* Short: the public report keeps 159 characters, with how it came. */
		if (why_len)
			snprintf(why, why_len, "%llu KiB is within the %s, %llu KiB%s (c %.1f GB/s, "
				 "%s %.1f at %llu KiB)", (unsigned long long)(footprint >> 10),
				 upto != cached ? "crossover measured here" : "cached limit",
				 (unsigned long long)(upto >> 10),
				 upto != cached ? "" : ", where memset held", held->cached_gbps, x->nt,
				 held->nt_gbps, (unsigned long long)(held->bytes >> 10));
		return choice_one(select_cached(cpu));
	}
	c = pair;
	/*
	 * The footprint fits the cache: the dirty lines memset leaves are not
	 * written back on the clear's time, so the slices' ratio is the
	 * clear's, and memset needs no handicap. Over the cached limit, the
	 * probe as the rules run it.
	 */
	if (footprint <= cached)
		c.handicap = 1.0;
	else if (!led)
		return c;	/* nothing measured there: the rules' reason stands */
	if (why_len && led)
		snprintf(why, why_len, "%llu KiB is over the crossover measured here, %llu KiB (%s "
			 "%.1f GB/s, c %.1f at %llu KiB): probed", (unsigned long long)(footprint >> 10),
			 (unsigned long long)(upto >> 10), x->nt, led->nt_gbps, led->cached_gbps,
			 (unsigned long long)(led->bytes >> 10));
	return c;
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
		struct clear_choice c = clear_select(cpu, len, 1, NULL, NULL, 0);

		clear_choice_run(&c, addr, len);
		return 0;
	}
	k = clear_kernel_find(kernel);
	if (!k)
		return -ENOENT;
	if (!clear_kernel_usable(k, cpu->features))
		return -EOPNOTSUPP;
	k->fn(addr, len);
	return 0;
}
