/* SPDX-License-Identifier: MIT */
/*
 * Cancel latency and populate throughput through the public API only (so
 * the same source builds against older trees for before/after numbers).
 *
 *   bench-cancel cancel   <memfd|memfd2m> <chunk MiB> <runs>
 *       one worker populates a fresh region of max(2 GiB, 2 chunks) with
 *       that chunk size; 50 ms in, prealloc_job_cancel(); prints the time
 *       from cancel to prealloc_job_wait() returning, per run, in ms.
 *   bench-cancel populate <memfd|thp> <threads> <runs>
 *       populates a fresh 2 GiB region per run (after one warm-up run);
 *       prints GB/s of the op (report.seconds) per run.
 *
 * Reports, never passes or fails: not registered with meson test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prealloc.h"

#define MiB (UINT64_C(1) << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct prealloc_region *region_make(struct prealloc_ctx *ctx, const char *kind,
					   uint64_t len)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .length = len };
	struct prealloc_region *region;
	int r;

	if (!strcmp(kind, "thp")) {
		ro.backing = PREALLOC_BACKING_ANON_THP;
	} else {
		ro.backing = PREALLOC_BACKING_MEMFD;
		ro.page_size = strcmp(kind, "memfd2m") ? PREALLOC_PAGE_4K : PREALLOC_PAGE_2M;
	}
	r = prealloc_region_new(ctx, &ro, &region);
	if (r < 0) {
		fprintf(stderr, "region %s: %s\n", kind, strerror(-r));
		exit(2);
	}
	return region;
}

static double cancel_once(struct prealloc_ctx *ctx, const char *kind, uint64_t chunk)
{
	uint64_t len = chunk * 2 > 2048 * MiB ? chunk * 2 : 2048 * MiB;
	struct prealloc_region *region = region_make(ctx, kind, len);
	struct prealloc_job_opts jo = {
		.size = sizeof(jo), .op = PREALLOC_OP_POPULATE, .threads = 1,
		.chunk_size = chunk, .flags = PREALLOC_JOB_NO_PLACEMENT,
	};
	struct timespec pause = { 0, 50 * 1000 * 1000 };
	struct prealloc_job *job;
	double t;
	int r = prealloc_job_start(region, &jo, &job);

	if (r < 0) {
		fprintf(stderr, "job: %s\n", strerror(-r));
		exit(2);
	}
	nanosleep(&pause, NULL);
	t = now();
	prealloc_job_cancel(job);
	prealloc_job_wait(job);
	t = now() - t;
	prealloc_job_free(job);
	prealloc_region_free(region);
	return t * 1e3;
}

static double populate_once(struct prealloc_ctx *ctx, const char *kind, unsigned int threads)
{
	struct prealloc_region *region = region_make(ctx, kind, 2048 * MiB);
	struct prealloc_job_opts jo = {
		.size = sizeof(jo), .op = PREALLOC_OP_POPULATE, .threads = threads,
		.flags = PREALLOC_JOB_NO_PLACEMENT,
	};
	struct prealloc_report rep = { .size = sizeof(rep) };
	int r = prealloc_run(region, &jo, &rep);

	prealloc_region_free(region);
	if (r < 0) {
		fprintf(stderr, "populate: %s\n", strerror(-r));
		exit(2);
	}
	return (double)rep.bytes / rep.seconds / 1e9;
}

int main(int argc, char **argv)
{
	struct prealloc_ctx *ctx;
	int runs;

	if (argc != 5 || (strcmp(argv[1], "cancel") && strcmp(argv[1], "populate"))) {
		fprintf(stderr, "usage: %s cancel <memfd|memfd2m> <chunk MiB> <runs>\n"
				"       %s populate <memfd|thp> <threads> <runs>\n",
			argv[0], argv[0]);
		return 2;
	}
	if (prealloc_ctx_new(&ctx) < 0)
		return 2;
	runs = atoi(argv[4]);
	if (!strcmp(argv[1], "populate"))
		populate_once(ctx, argv[2], (unsigned int)atoi(argv[3]));	/* warm-up */
	for (int i = 0; i < runs; i++) {
		double v = !strcmp(argv[1], "cancel")
				   ? cancel_once(ctx, argv[2], (uint64_t)atoll(argv[3]) * MiB)
				   : populate_once(ctx, argv[2], (unsigned int)atoi(argv[3]));

		printf("%.2f\n", v);
		fflush(stdout);
	}
	prealloc_ctx_free(ctx);
	return 0;
}
