/* SPDX-License-Identifier: MIT */
/*
 * prealloc/common/clock.h: now_seconds() is CLOCK_MONOTONIC, bracketed by
 * two reads of it and never going back. The CPU identity beside it
 * (cpu_id.h) is a struct the architectures fill: tests/unit/arch/ checks
 * what they fill it with.
 */
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include "clock.h"
#include "tap.h"

static double ts_seconds(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

/*
 * Each now_seconds() lies between two CLOCK_MONOTONIC reads around it (no
 * tolerance needed: the same conversion, and a clock that never goes back),
 * and a run of them never decreases. CLOCK_REALTIME, a wrong scale of the
 * nanoseconds or a clock that steps back all fall outside.
 */
static void test_clock(void)
{
	struct timespec a, b;
	double prev = 0, now = 0, bad = 0, lo = 0, hi = 0;
	bool inside = true, rising = true;

	for (unsigned int i = 0; i < 10000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		now = now_seconds();
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (ts_seconds(&a) > now || now > ts_seconds(&b)) {
			if (inside) {
				bad = now;
				lo = ts_seconds(&a);
				hi = ts_seconds(&b);
			}
			inside = false;
		}
		if (now < prev)
			rising = false;
		prev = now;
	}
	if (!tap_ok(inside, "now_seconds() lies between two CLOCK_MONOTONIC reads around it, "
			    "10000 times"))
		printf("#   first outside: %.9f not within [%.9f, %.9f]\n", bad, lo, hi);
	tap_ok(rising, "now_seconds() never goes back over 10000 reads (last %.6f)", now);
}

int main(void)
{
	test_clock();
	return tap_done();
}
