/* SPDX-License-Identifier: MIT */
/*
 * The one clock: monotonic seconds, for durations, deadlines and rates.
 * Every layer reads time with it, and so do the programs above the
 * library (the CLI, the hook), which may include the ground floor but link
 * only the library's public ABI: hence a header, not an exported symbol.
 */
#ifndef PREALLOC_ARCH_CLOCK_H
#define PREALLOC_ARCH_CLOCK_H

#include <time.h>

static inline double now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
