/* SPDX-License-Identifier: MIT */
/*
 * The probe: between the cached and probe limits (clear.c), whether cached
 * or NT stores clear faster depends on where the memory is, not on its
 * size. Lines still in the cache, dirty: cached stores hit, NT stores must
 * take each line out first. Lines gone from it: cached stores read each
 * line before writing it, NT stores write it once. So the piece itself is
 * asked: at up to PROBE_SPOTS places spread over it, one slice is cleared
 * with each kernel (which goes first alternates from place to place) and
 * timed, and the faster kernel clears the rest. The slices are part of the
 * clear: all the probe costs is what the slower kernel loses on its slices
 * (at most 4 x 16 KiB per 16 MiB piece; 1-2 % when the two differ 4x).
 *
 * A slice shows cached stores cheaper than they are where they miss: the
 * dirty lines they push out are written back later, on someone else's
 * time. So cached stores must be PROBE_HANDICAP times faster on the
 * slices to win. On the Xeon guest (0xa7), NT slices over cached ones:
 * 3.8x at 16 MiB and 1.7-2.5x at 48 MiB written twice (memset won those
 * clears 5x and 1.6x), 1.1-1.2x at 64 MiB written twice and 1.0-1.1x at
 * 48 MiB written once (NT won 1.8x and 1.7x), 1.2-2.2x at 12-16 MiB written
 * once (a tie either way).
 */
#include "internal.h"
#include "clear.h"

#define PROBE_SLICE CLEAR_PROBE_SLICE
#define PROBE_SPOTS CLEAR_PROBE_SPOTS
#define PROBE_SPOT_BYTES CLEAR_PROBE_SPOT_BYTES
#define PROBE_MIN CLEAR_PROBE_MIN
#define PROBE_HANDICAP 1.75

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
	unsigned int spots = (unsigned int)MIN(MAX(len / PROBE_SPOT_BYTES, UINT64_C(1)),
					       (uint64_t)PROBE_SPOTS);
	size_t stride = ALIGN_DOWN(len / spots, 64), done = 0;
	const struct clear_kernel *first, *second, *winner;
	double cached = 0, nt = 0, t1, t2;

	for (unsigned int i = 0; i < spots; i++) {
		uint8_t *q = p + stride * i;

		first = i % 2 ? c->nt : c->kernel;
		second = i % 2 ? c->kernel : c->nt;
		t1 = timed(first, q, PROBE_SLICE);
		t2 = timed(second, q + PROBE_SLICE, PROBE_SLICE);
		cached += i % 2 ? t2 : t1;
		nt += i % 2 ? t1 : t2;
	}
	winner = cached * PROBE_HANDICAP < nt ? c->kernel : c->nt;
	for (unsigned int i = 0; i < spots; i++) {
		size_t from = stride * i + 2 * PROBE_SLICE;
		size_t to = i + 1 < spots ? stride * (i + 1) : len;

		winner->fn(p + from, to - from);
		done += to - from;
	}
	return (winner == c->kernel ? done : 0) + spots * PROBE_SLICE;
}

uint64_t clear_choice_run(const struct clear_choice *c, void *dst, size_t len)
{
	if (c->nt && len >= PROBE_MIN)
		return probe_run(c, dst, len);
	c->kernel->fn(dst, len);
	return c->kernel->nontemporal ? 0 : len;
}
