/* SPDX-License-Identifier: MIT */
/*
 * Admission's warm files at their exact edges (issue 42), over a fake
 * two-node sysfs/procfs (fakeroot.h), no root: a node short by exactly
 * what its READY warm files hold is admitted, taking all of them; one page
 * more is refused with nothing taken. For 2M (free hugepages: none free,
 * then one free and the warm file covering exactly the rest) and for 4k
 * (free memory). A slip to "more than the shortfall" refuses the exact fit.
 */
#include <fcntl.h>
#include <string.h>

#include "state.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define K4 PREALLOC_PAGE_4K
#define MB2 PREALLOC_PAGE_2M
#define KIB (UINT64_C(1) << 10)

static struct fakeroot fr;	/* two nodes */

/* A READY warm file in the fake tree (warm-record.h). */
static uint64_t add_warm(struct prealloc_ctx *ctx, const char *name, int node, uint64_t ps,
			 uint64_t bytes, uint64_t added)
{
	return add_warm_in(fr.dir, ctx, name, node, ps, bytes, added);
}

/* The store emptied, the warm files removed. */
static void clear_all(struct prealloc_ctx *ctx)
{
	struct store s = { 0 };
	char cmd[400];

	store_save(ctx, &s);
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/warm-*", fr.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# cannot remove the warm files\n");
}

/* Admits bytes on node 0 alone, page size ps; the claim freed. */
static int admit0(struct prealloc_ctx *ctx, uint64_t ps, uint64_t bytes,
		  struct prealloc_admit_result *res)
{
	static const int node = 0;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .page_size = ps, .nr_nodes = 1, .nodes = &node,
		.node_bytes = &bytes, .tag = "/nonexistent/guest",
	};
	struct prealloc_claim *claim = NULL;
	int r;

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	r = prealloc_admit(ctx, &o, &claim, res);
	prealloc_claim_free(claim);
	return r;
}

/* 2M: node 0's pool all in READY warm files (free_pages free beside them). */
static void test_2m(struct prealloc_ctx *ctx, uint64_t free_pages)
{
	struct prealloc_admit_result res;
	uint64_t need = free_pages + 2;
	int r;

	tap_ok(add_warm(ctx, "warm-2m", 0, MB2, 2 * MB2, 2) != 0,
	       "2M: a READY warm file of 2 pages on node 0, %llu free beside it",
	       (unsigned long long)free_pages);
	fr_set_pool(&fr, 0, 2 + free_pages, free_pages);
	fr_set_pool(&fr, 1, 0, 0);
	fr_set_global(&fr, MB2, free_pages, 0);
	r = admit0(ctx, MB2, (need + 1) * MB2, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.node == 0 &&
		       res.warm_pages == 0 && nr_records(ctx) == 1,
	       "2M: %llu pages, one more than free + warm: refused, POOL, nothing taken (r %d "
	       "reason %d, %llu taken, %u records)", (unsigned long long)need + 1, r, res.reason,
	       (unsigned long long)res.warm_pages, nr_records(ctx));
	r = admit0(ctx, MB2, need * MB2, &res);
	tap_ok(r == 0 && res.warm_pages == 2 && res.warm_removed == 1 && res.warm_cut == 0,
	       "2M: %llu pages, exactly free + warm: admitted, the whole file taken (r %d reason "
	       "%d, %llu taken, %u removed, %u cut)", (unsigned long long)need, r, res.reason,
	       (unsigned long long)res.warm_pages, res.warm_removed, res.warm_cut);
	clear_all(ctx);
}

/* 4k: node 0 has 512 KiB free and a READY 512 KiB warm file. */
static void test_4k(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	int r;

	tap_ok(add_warm(ctx, "warm-4k", 0, K4, 512 * KIB, 0) != 0,
	       "4k: a READY 512 KiB warm file on node 0, 512 KiB free");
	fr_set_meminfo(&fr, 0, 16 << 20, 512, 0, 0, 0);
	r = admit0(ctx, K4, 1024 * KIB + K4, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMORY && res.node == 0 &&
		       res.warm_pages == 0 && nr_records(ctx) == 1,
	       "4k: 1 MiB and a page, a page more than free + warm: refused, MEMORY, nothing "
	       "taken (r %d reason %d, %llu taken)", r, res.reason,
	       (unsigned long long)res.warm_pages);
	r = admit0(ctx, K4, 1024 * KIB, &res);
	tap_ok(r == 0 && res.warm_pages == 128 && res.warm_removed == 1 && res.warm_cut == 0,
	       "4k: 1 MiB, exactly free + warm: admitted, the whole file taken (r %d reason %d, "
	       "%llu pages, %u removed, %u cut)", r, res.reason,
	       (unsigned long long)res.warm_pages, res.warm_removed, res.warm_cut);
	fr_set_meminfo(&fr, 0, 16 << 20, 8 << 20, 0, 0, 0);
	clear_all(ctx);
}

int main(void)
{
	struct prealloc_ctx *ctx;

	ctx = warm_test_ctx(&fr, 2);
	if (!ctx)
		return tap_done();
	test_2m(ctx, 0);
	test_2m(ctx, 1);
	test_4k(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
