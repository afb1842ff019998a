/* SPDX-License-Identifier: MIT */
/*
 * A STREAM-like copy loop, the neighbour of a background clear
 * (bench-warm-serve.sh): two arrays of MiB each, copied back and forth for
 * seconds, one line per interval on stdout: the interval's end (CLOCK_REALTIME,
 * seconds) and its rate in GB/s, counting each byte read and written (as
 * STREAM's Copy does).
 *
 *   stream-copy MiB SECONDS INTERVAL_MS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	size_t len, step = 1 << 20;
	double secs, interval, start, mark;
	uint64_t bytes = 0;
	char *a, *b;

	if (argc != 4) {
		fprintf(stderr, "usage: stream-copy MiB SECONDS INTERVAL_MS\n");
		return 2;
	}
	len = (size_t)strtoul(argv[1], NULL, 10) << 20;
	secs = strtod(argv[2], NULL);
	interval = strtod(argv[3], NULL) / 1000;
	a = aligned_alloc(4096, len);
	b = aligned_alloc(4096, len);
	if (!a || !b || !len)
		return 1;
	memset(a, 1, len);
	memset(b, 2, len);
	start = mark = now(CLOCK_MONOTONIC);
	for (unsigned int round = 0; now(CLOCK_MONOTONIC) - start < secs; round++) {
		char *src = round & 1 ? b : a, *dst = round & 1 ? a : b;

		/* In steps, so that an interval ends near when it should. */
		for (size_t off = 0; off < len; off += step) {
			double t;

			memcpy(dst + off, src + off, step);
			bytes += 2 * step;
			t = now(CLOCK_MONOTONIC);
			if (t - mark >= interval) {
				printf("%.3f %.3f\n", now(CLOCK_REALTIME), (double)bytes / (t - mark) / 1e9);
				fflush(stdout);
				bytes = 0;
				mark = t;
			}
		}
	}
	free(a);
	free(b);
	return 0;
}
