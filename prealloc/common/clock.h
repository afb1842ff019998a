/* SPDX-License-Identifier: MIT */
/*
 * The one clock: monotonic seconds, for durations, deadlines and rates.
 * common/ is the floor every layer stands on, the programs above the
 * library included (the CLI, the hook, the front ends), which may include
 * it but link only the library's public ABI: hence a header, not an
 * exported symbol.
 */
#ifndef PREALLOC_COMMON_CLOCK_H
#define PREALLOC_COMMON_CLOCK_H

#include <time.h>

static inline double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
