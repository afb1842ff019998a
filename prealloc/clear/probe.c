/* SPDX-License-Identifier: MIT */
/*
 * The probe: between the cached and probe limits (clear/select.c), whether cached
 * or NT stores clear faster depends on where the memory is, not on its
 * size. Lines still in the cache, dirty: cached stores hit, NT stores must
 * take each line out first. Lines gone from it: cached stores read each
 * line before writing it, NT stores write it once. So the piece itself is
 * asked: at up to CLEAR_PROBE_SPOTS places spread over it, one slice is cleared
 * with each kernel (which goes first alternates from place to place) and
 * timed, and the faster kernel clears the rest. The slices are part of the
 * clear: all the probe costs is what the slower kernel loses on its slices
 * (at most 4 x 16 KiB per 16 MiB piece; 0.7-2 % measured where memset
 * was 4.7x NT, docs/kernels.md).
 *
 * A slice shows cached stores cheaper than they are where they miss: the
 * dirty lines they push out are written back later, on someone else's
 * time. So cached stores must be PROBE_HANDICAP times faster on the
 * slices to win. On the Xeon guest (0xa7), NT slices over cached ones
 * (medians over the pieces): 2.6-4.1x at 12-32 MiB written twice and 1.8x
 * at 48 MiB (memset won those clears 3.2-5x and 1.7x); 1.4x at 64 MiB
 * written twice, its crossover; 0.83-1.15x at 12-64 MiB written once (NT
 * won from 24 MiB, tied below); 1.2x for two workers on 8 MiB each written
 * once (memset won by 1.2x: the one case the handicap gets wrong). The
 * decision takes the median over the places, so one slice an interrupt
 * stretched cannot make it. Once NT slices run PROBE_DECISIVE times slower
 * at two places the lines are plainly cached, and the probe stops: each
 * further NT slice over dirty lines costs. Below the cached limit, where
 * a measured crossover sends a footprint to the probe (clear/select.c),
 * the dirty lines stay in the cache and the choice says handicap 1.
 */
#include <stdbool.h>

#include "clear.h"

#define PROBE_HANDICAP 1.4
#define PROBE_DECISIVE 3.0

/* Seconds kernel k takes over [p, p + len). */
static double timed(const struct clear_kernel *k, uint8_t *p, size_t len)
{
	double t = now_seconds();

	k->fn(p, len);
	return now_seconds() - t;
}

/*
 * Probes, then clears what the slices left with the winner; returns the
 * bytes cleared by the cached kernel.
 */
static uint64_t probe_run(const struct clear_choice *c, uint8_t *p, size_t len)
{
	unsigned int spots = (unsigned int)MIN(MAX(len / CLEAR_PROBE_SPOT_BYTES, UINT64_C(1)),
					       (uint64_t)CLEAR_PROBE_SPOTS);
	size_t stride = ALIGN_DOWN(len / spots, 64), done = 0;
	const struct clear_kernel *first, *second, *winner;
	double ratio[CLEAR_PROBE_SPOTS], t1, t2, lowest = 0, handicap;
	unsigned int probed = 0;

	/* Per place, NT's time over cached stores' (which goes first alternates). */
	while (probed < spots) {
		uint8_t *q = p + stride * probed;
		bool nt_first = probed % 2;

		first = nt_first ? c->nt : c->kernel;
		second = nt_first ? c->kernel : c->nt;
		t1 = timed(first, q, CLEAR_PROBE_SLICE);
		t2 = timed(second, q + CLEAR_PROBE_SLICE, CLEAR_PROBE_SLICE);
		ratio[probed] = nt_first ? t1 / MAX(t2, 1e-9) : t2 / MAX(t1, 1e-9);
		lowest = probed ? MIN(lowest, ratio[probed]) : ratio[probed];
		probed++;
		/* Two places this plainly cached: more NT slices over dirty lines would only cost. */
		if (probed >= 2 && lowest > PROBE_DECISIVE)
			break;
	}
	/* The median over the places: one slice an interrupt stretched cannot decide. */
	handicap = c->handicap > 0 ? c->handicap : PROBE_HANDICAP;
	winner = calibration_median(ratio, probed) > handicap ? c->kernel : c->nt;
	for (unsigned int i = 0; i < spots; i++) {
		size_t from = stride * i + (i < probed ? 2 * CLEAR_PROBE_SLICE : 0);
		size_t to = i + 1 < spots ? stride * (i + 1) : len;

		winner->fn(p + from, to - from);
		done += to - from;
	}
	return (winner == c->kernel ? done : 0) + probed * CLEAR_PROBE_SLICE;
}

uint64_t clear_choice_run(const struct clear_choice *c, void *dst, size_t len)
{
	if (c->nt && len >= CLEAR_PROBE_MIN)
		return probe_run(c, dst, len);
	c->kernel->fn(dst, len);
	return c->kernel->nontemporal ? 0 : len;
}
