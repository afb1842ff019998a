/* SPDX-License-Identifier: MIT */
/*
 * The library's clear for memory a VMM already holds: a MAPPED region with
 * ADOPT_PLACEMENT over an anonymous mapping whose first half was written
 * with a pattern and whose second half was never touched. The written pages
 * form node extents, the untouched ones node -1 extents that the job skips
 * (and leaves untouched); PREALLOC_OP_CLEAR with every usable kernel zeroes
 * the written half, verified by the job and byte by byte here.
 * Exit 0 pass, 1 fail.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prealloc.h"

#define LEN (UINT64_C(32) << 20)

static int fails;

static void expect(int cond, const char *what)
{
	printf("%s - %s\n", cond ? "ok" : "not ok", what);
	fails += !cond;
}

/* Pages of [addr, addr + len) resident after the job (mincore). */
static size_t resident(void *addr, size_t len)
{
	static unsigned char vec[LEN / 4096];
	size_t n = 0;

	if (mincore(addr, len, vec) < 0)
		return (size_t)-1;
	for (size_t i = 0; i < len / 4096; i++)
		n += vec[i] & 1;
	return n;
}

int main(void)
{
	struct prealloc_ctx *ctx;
	const char *kernels[16];
	char what[128];
	int nk, r;

	if (prealloc_ctx_new(&ctx) < 0) {
		printf("not ok - context\n");
		return 1;
	}
	/*
	 * Sane: at least one kernel ("c", plain cached stores, runs on every
	 * CPU) and no more than the six the library knows, each one named;
	 * otherwise the per-kernel loop below could silently run zero times.
	 */
	nk = prealloc_clear_kernels(ctx, kernels, 16);
	{
		int named = nk > 0 && nk <= 6, has_c = 0;

		for (int k = 0; named && k < nk; k++) {
			named = kernels[k] && kernels[k][0];
			has_c |= named && !strcmp(kernels[k], "c");
		}
		snprintf(what, sizeof(what), "prealloc_clear_kernels: %d usable kernels, \"c\" among them",
			 nk);
		expect(named && has_c, what);
		if (!named || !has_c) {
			printf("1..1\n");
			return 1;
		}
	}
	for (int k = 0; k < nk; k++) {
		struct prealloc_report rep = { .size = sizeof(rep) };
		struct prealloc_extent ext[64];
		struct prealloc_region *region;
		uint64_t holes = 0, placed = 0;
		uint8_t *p;
		int n, nonzero = 0;

		p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 1;
		madvise(p, LEN, MADV_NOHUGEPAGE);	/* the untouched half stays unbacked */
		memset(p, 0xab, LEN / 2);

		struct prealloc_region_opts ro = {
			.size = sizeof(ro),
			.backing = PREALLOC_BACKING_MAPPED,
			.flags = PREALLOC_REGION_ADOPT_PLACEMENT,
			.addr = p,
			.length = LEN,
		};
		r = prealloc_region_new(ctx, &ro, &region);
		snprintf(what, sizeof(what), "%s: MAPPED region with adopted placement (%d)",
			 kernels[k], r);
		expect(r == 0, what);
		if (r < 0)
			return 1;
		n = prealloc_region_extents(region, ext, 64);
		for (int i = 0; i < n && i < 64; i++) {
			if (ext[i].node < 0)
				holes += ext[i].length;
			else
				placed += ext[i].length;
		}
		snprintf(what, sizeof(what), "%s: written half placed, untouched half a hole",
			 kernels[k]);
		expect(placed == LEN / 2 && holes == LEN / 2, what);

		struct prealloc_job_opts jo = {
			.size = sizeof(jo),
			.op = PREALLOC_OP_CLEAR,
			.flags = PREALLOC_JOB_VERIFY,
			.clear_kernel = kernels[k],
		};
		r = prealloc_run(region, &jo, &rep);
		snprintf(what, sizeof(what), "%s: clear job succeeds, %s cleared, verified zero (%d)",
			 kernels[k], rep.clear_kernel, r);
		expect(r == 0 && !strcmp(rep.clear_kernel, kernels[k]) &&
			       rep.bytes_done == LEN / 2 && rep.nonzero_offset == UINT64_MAX,
		       what);
		for (uint64_t i = 0; i < LEN; i++)
			nonzero |= p[i] != 0;
		snprintf(what, sizeof(what), "%s: every byte reads zero", kernels[k]);
		expect(!nonzero, what);
		prealloc_region_free(region);
		munmap(p, LEN);
	}
	/* The hole was skipped, not faulted in: check on a fresh mapping once. */
	{
		struct prealloc_report rep = { .size = sizeof(rep) };
		struct prealloc_region *region;
		uint8_t *p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				  -1, 0);
		struct prealloc_region_opts ro = {
			.size = sizeof(ro),
			.backing = PREALLOC_BACKING_MAPPED,
			.flags = PREALLOC_REGION_ADOPT_PLACEMENT,
			.addr = p,
			.length = LEN,
		};
		struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_CLEAR };

		madvise(p, LEN, MADV_NOHUGEPAGE);
		memset(p, 0xab, LEN / 2);
		r = prealloc_region_new(ctx, &ro, &region);
		if (r == 0)
			r = prealloc_run(region, &jo, &rep);
		expect(r == 0 && resident(p + LEN / 2, LEN / 2) == 0,
		       "auto: the untouched half is still not resident after the clear");
		if (r == 0)
			prealloc_region_free(region);
		munmap(p, LEN);
	}
	prealloc_ctx_free(ctx);
	printf("1..%d\n", 1 + nk * 4 + 1);
	return fails ? 1 : 0;
}
