/* SPDX-License-Identifier: MIT */
/*
 * vm_vfio_bench [--iommufd] BDF [MiB]: what the pin costs for memory prealloc prepared,
 * for the same size never populated (MAP_DMA faults and zeroes every page
 * itself), and for memory prepared then re-cleared; 2M hugetlb and 4k, on
 * each node; median of 3. One "BENCH" line per case and a ratio line;
 * exits 1 when a 2M prepared pin takes more than 5% of the unprepared one.
 * Under TCG absolute times mean little: compare within one run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "prealloc.h"

#define M (UINT64_C(1) << 20)
#define REPS 3

enum prep { UNPREPARED, PREPARED, RECLEARED };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Seconds in MAP_DMA for one fresh region of bytes on node, prepared as asked. */
static double pin_once(struct prealloc_ctx *ctx, struct prealloc_vfio *v, uint64_t page,
		       int node, uint64_t bytes, enum prep how)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MEMFD,
					   .page_size = page, .length = bytes, .nr_nodes = 1,
					   .nodes = &node };
	struct prealloc_job_opts pop = { .size = sizeof(pop), .op = PREALLOC_OP_POPULATE };
	struct prealloc_job_opts clr = { .size = sizeof(clr), .op = PREALLOC_OP_CLEAR };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_region *reg;
	double s = -1;

	if (prealloc_region_new(ctx, &ro, &reg) < 0)
		return -1;
	if (page == 4096)	/* "4k" must not turn into THP (Debian: THP always) */
		madvise(prealloc_region_addr(reg), bytes, MADV_NOHUGEPAGE);
	if (how != UNPREPARED && prealloc_run(reg, &pop, NULL) < 0)
		goto out;
	if (how == RECLEARED && prealloc_run(reg, &clr, NULL) < 0)
		goto out;
	if (prealloc_vfio_map(v, reg, NULL, NULL, &mi, NULL) == 0) {
		s = mi.seconds;
		prealloc_vfio_unmap(v, reg);
	} else {
		fprintf(stderr, "map: %s\n", mi.message);
	}
out:
	prealloc_region_free(reg);
	return s;
}

static double pin_median(struct prealloc_ctx *ctx, struct prealloc_vfio *v, uint64_t page,
			 int node, uint64_t bytes, enum prep how)
{
	double t[REPS];

	for (int i = 0; i < REPS; i++)
		if ((t[i] = pin_once(ctx, v, page, node, bytes, how)) < 0)
			return -1;
	qsort(t, REPS, sizeof(t[0]), cmp_double);
	return t[REPS / 2];
}

int main(int argc, char **argv)
{
	struct prealloc_vfio_opts vo = { .size = sizeof(vo) };
	struct prealloc_vfio_info vi = { .size = sizeof(vi) };
	static const char *const names[] = { "unprepared", "prepared", "recleared" };
	static const uint64_t pages[] = { 2 * M, 4096 };
	uint64_t bytes;
	struct prealloc_vfio *v;
	struct prealloc_ctx *ctx;
	int fail = 0;

	if (argc > 1 && !strcmp(argv[1], "--iommufd")) {
		vo.backend = PREALLOC_VFIO_IOMMUFD;
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: %s [--iommufd] BDF [MiB]\n", argv[0]);
		return 1;
	}
	bytes = (argc > 2 ? strtoull(argv[2], NULL, 0) : 64) * M;
	vo.device = argv[1];
	if (prealloc_ctx_new(&ctx) < 0 || prealloc_vfio_open(ctx, &vo, &v, &vi) < 0) {
		printf("BENCH FAIL open %s: %s\n", argv[1], vi.message);
		return 1;
	}
	printf("BENCH | page | node | MiB | unprepared ms | prepared ms | re-cleared ms | "
	       "prepared/unprepared | re-cleared/unprepared |\n");
	for (int p = 0; p < 2; p++) {
		for (int node = 0; node < 2; node++) {
			double t[3];

			for (int how = 0; how < 3; how++)
				t[how] = pin_median(ctx, v, pages[p], node, bytes, how);
			if (t[0] <= 0 || t[1] < 0 || t[2] < 0) {
				printf("BENCH FAIL %s node %d: a pin failed (%s)\n",
				       p ? "4k" : "2M", node, names[t[1] < 0 ? 1 : t[2] < 0 ? 2 : 0]);
				fail = 1;
				continue;
			}
			printf("BENCH | %s | %d | %llu | %.2f | %.2f | %.2f | %.2f%% | %.2f%% |\n",
			       p ? "4k" : "2M", node, (unsigned long long)(bytes / M), t[0] * 1e3,
			       t[1] * 1e3, t[2] * 1e3, 100 * t[1] / t[0], 100 * t[2] / t[0]);
			if (p == 0 && t[1] > 0.05 * t[0]) {
				printf("BENCH FAIL 2M node %d: prepared pin %.2f%% of unprepared (goal <= 5%%)\n",
				       node, 100 * t[1] / t[0]);
				fail = 1;
			}
		}
	}
	prealloc_vfio_close(v);
	prealloc_ctx_free(ctx);
	return fail;
}
