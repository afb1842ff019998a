/* SPDX-License-Identifier: MIT */
/*
 * --grow-pools against what a node could possibly give, over an injected
 * sysfs/procfs (fakeroot.h), no root: a request beyond the node's free and
 * reclaimable memory less the host's margin is refused before any pool
 * write (CAPACITY, with the estimate and the margin); the margin is
 * max(256 MiB, 2% of the node, its share of vm.min_free_kbytes); a cancel
 * fd that is readable stops the growth with -ECANCELED and leaves the pool
 * and the store as they were. On three nodes of different sizes: each
 * node's margin is its own share of vm.min_free_kbytes, its estimate its
 * own meminfo (not the system's MemAvailable); a growth on several nodes
 * reports the sum it added and gives all of it back, and a node that
 * cannot supply its share undoes what the nodes before it grew.
 */
#include <string.h>

#include "engine.h"
#include "fakeroot.h"
#include "tap.h"

#define MB2 PREALLOC_PAGE_2M
#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

static struct fakeroot fr;	/* one node */
static struct fakeroot fr3;	/* three nodes: 16, 32 and 80 GiB */

static int admit(struct prealloc_ctx *ctx, uint64_t pages, unsigned int flags, int cancel_fd,
		 struct prealloc_claim **ret_resv, struct prealloc_admit_result *res)
{
	int node = 0;
	uint64_t bytes = pages * MB2;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .flags = flags, .page_size = MB2, .nr_nodes = 1,
		.nodes = &node, .node_bytes = &bytes, .cancel_fd = cancel_fd,
	};

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	*ret_resv = NULL;
	return prealloc_admit(ctx, &o, ret_resv, res);
}

/*
 * Node 0's meminfo, in kB; the file cache split 3:1 between active and
 * inactive, so that each must be counted once.
 */
static void set_meminfo(uint64_t total_kb, uint64_t free_kb, uint64_t file_kb, uint64_t slab_kb)
{
	fr_set_meminfo(&fr, 0, total_kb, free_kb, file_kb / 4 * 3, file_kb / 4, slab_kb);
}

/* 16 GiB node: 8 GiB free, 2 GiB file cache, 512 MiB reclaimable slab; 10 free pool pages. */
static void test_refusal(struct prealloc_ctx *ctx)
{
	uint64_t estimate = 8 * GIB + 2 * GIB + 512 * MIB, margin = 16 * GIB / 50;
	uint64_t room = (estimate - margin) / MB2 + 10;
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	uint64_t returned = 0;
	int r;

	set_meminfo(16 << 20, 8 << 20, 2 << 20, 512 << 10);
	fr_write(fr.proc, "sys/vm/min_free_kbytes", "67584\n");
	fr_set_pool(&fr, 0, 10, 10);
	r = admit(ctx, UINT64_C(64) << 40 >> 21, PREALLOC_ADMIT_GROW_POOLS, -1, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_CAPACITY && res.node == 0 &&
		       res.needed == UINT64_C(64) << 40 >> 21 && res.available == room,
	       "64T refused: -ENOMEM, CAPACITY, node 0, available %llu pages (r %d reason %d "
	       "available %llu)", (unsigned long long)room, r, res.reason,
	       (unsigned long long)res.available);
	tap_ok(res.capacity_estimate == estimate + 10 * MB2 && res.capacity_margin == margin,
	       "estimate = free + file + slab + free pool pages = %llu, margin = 2%% of 16 GiB = "
	       "%llu (got %llu, %llu)", (unsigned long long)(estimate + 10 * MB2),
	       (unsigned long long)margin, (unsigned long long)res.capacity_estimate,
	       (unsigned long long)res.capacity_margin);
	tap_ok(fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "refused before any pool write: nr_hugepages 10 (%llu), no record",
	       (unsigned long long)fr_pool_nr(&fr, 0));

	r = admit(ctx, room + 1, PREALLOC_ADMIT_GROW_POOLS, -1, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_CAPACITY,
	       "one page past the room is refused (r %d reason %d)", r, res.reason);
	r = admit(ctx, room, PREALLOC_ADMIT_GROW_POOLS, -1, &claim, &res);
	tap_ok(r == 0 && res.added == room - 10 && fr_pool_nr(&fr, 0) == room,
	       "exactly the room is admitted, grown in steps to %llu (r %d nr %llu)",
	       (unsigned long long)room, r, (unsigned long long)fr_pool_nr(&fr, 0));
	fr_set_pool(&fr, 0, room, room);	/* the fake pool's pages are all free */
	r = claim ? prealloc_claim_rollback(claim, &returned) : -1;
	tap_ok(r == 0 && fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "rolled back to 10 (%llu)", (unsigned long long)fr_pool_nr(&fr, 0));
	prealloc_claim_free(claim);
	r = admit(ctx, room + 1, PREALLOC_ADMIT_GROW_POOLS | PREALLOC_ADMIT_NO_CHECK, -1, &claim, &res);
	tap_ok(r == 0, "NO_CHECK (tests only) skips the capacity check too (r %d)", r);
	fr_set_pool(&fr, 0, room + 1, room + 1);
	prealloc_claim_free(claim);
	fr_set_pool(&fr, 0, 10, 10);
}

/* The margin's three terms, each made the largest in turn. */
static void test_margin(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;

	fr_write(fr.proc, "sys/vm/min_free_kbytes", "1048576\n");
	admit(ctx, UINT64_C(1) << 30, PREALLOC_ADMIT_GROW_POOLS, -1, &claim, &res);
	tap_ok(res.reason == PREALLOC_ADMIT_CAPACITY && res.capacity_margin == GIB,
	       "vm.min_free_kbytes 1 GiB (one node: all of it) is the margin (%llu)",
	       (unsigned long long)res.capacity_margin);
	fr_write(fr.proc, "sys/vm/min_free_kbytes", "67584\n");
	set_meminfo(4 << 20, 2 << 20, 0, 0);
	admit(ctx, UINT64_C(1) << 30, PREALLOC_ADMIT_GROW_POOLS, -1, &claim, &res);
	tap_ok(res.reason == PREALLOC_ADMIT_CAPACITY && res.capacity_margin == 256 * MIB,
	       "a 4 GiB node keeps the 256 MiB floor (%llu)",
	       (unsigned long long)res.capacity_margin);
	/* One node: MemAvailable (8 GiB in the fake /proc/meminfo) counts when larger. */
	tap_ok(res.capacity_estimate == 8 * GIB + 10 * MB2,
	       "one node: MemAvailable beats a meminfo that misses memory (%llu)",
	       (unsigned long long)res.capacity_estimate);
	set_meminfo(16 << 20, 8 << 20, 2 << 20, 512 << 10);
}

static void test_cancel(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	int p[2], r;

	if (!tap_ok(pipe(p) == 0 && write(p[1], "x", 1) == 1, "a readable cancel fd"))
		return;
	r = admit(ctx, 100, PREALLOC_ADMIT_GROW_POOLS | PREALLOC_ADMIT_CANCEL_FD, p[0], &claim, &res);
	tap_ok(r == -ECANCELED && res.reason == PREALLOC_ADMIT_CANCELED && !claim,
	       "a readable cancel fd stops the growth: -ECANCELED, CANCELED (r %d reason %d)", r,
	       res.reason);
	tap_ok(fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "the pool is as it was (%llu) and no record is left",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	r = admit(ctx, 100, PREALLOC_ADMIT_GROW_POOLS, p[0], &claim, &res);
	tap_ok(r == 0, "without PREALLOC_ADMIT_CANCEL_FD the fd is not looked at (r %d)", r);
	fr_set_pool(&fr, 0, 100, 100);
	prealloc_claim_free(claim);
	tap_ok(fr_pool_nr(&fr, 0) == 10, "freed: rolled back");
	close(p[0]);
	close(p[1]);
}

/* Admits pages[i] 2M pages on node i of fr3, for i < nr (0 pages: the node asks none). */
static int admit_split(struct prealloc_ctx *ctx, unsigned int nr, const uint64_t *pages,
		       unsigned int flags, struct prealloc_claim **ret_resv,
		       struct prealloc_admit_result *res)
{
	static const int nodes[] = { 0, 1, 2 };
	uint64_t bytes[3];
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .flags = flags, .page_size = MB2, .nr_nodes = nr,
		.nodes = nodes, .node_bytes = bytes, .cancel_fd = -1,
	};

	for (unsigned int i = 0; i < nr; i++)
		bytes[i] = pages[i] * MB2;
	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	*ret_resv = NULL;
	return prealloc_admit(ctx, &o, ret_resv, res);
}

/*
 * Three nodes of 16, 32 and 80 GiB, vm.min_free_kbytes 8 GiB: each node's
 * margin is its share by size (1, 2 and 5 GiB, each above 2% of the node);
 * node 1's estimate is its own free memory, file cache and slab, though the
 * system's MemAvailable is far larger.
 */
static void test_capacity_nodes(struct prealloc_ctx *ctx)
{
	uint64_t estimate = 4 * GIB + GIB + 512 * MIB + 256 * MIB;
	uint64_t room = (estimate - 2 * GIB) / MB2 + 7;
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	uint64_t returned = 0;
	int r;

	fr_write(fr3.proc, "sys/vm/min_free_kbytes", "8388608\n");
	fr_write(fr3.proc, "meminfo", "MemTotal: 134217728 kB\nMemAvailable: 104857600 kB\n");
	fr_set_meminfo(&fr3, 0, 16 << 20, 2 << 20, 0, 0, 0);
	fr_set_meminfo(&fr3, 1, 32 << 20, 4 << 20, 1 << 20, 512 << 10, 256 << 10);
	fr_set_meminfo(&fr3, 2, 80 << 20, 8 << 20, 0, 0, 0);
	fr_set_pool(&fr3, 1, 7, 7);
	fr_set_global(&fr3, MB2, 1000000, 0);
	r = admit_split(ctx, 2, (uint64_t[]){ 0, 5000 }, PREALLOC_ADMIT_GROW_POOLS, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_CAPACITY && res.node == 1 &&
		       res.needed == 5000 && res.available == room &&
		       res.capacity_estimate == estimate + 7 * MB2 &&
		       res.capacity_margin == 2 * GIB,
	       "node 1 of 16/32/80 GiB: margin 2 GiB (its share of 8), estimate its own %llu + "
	       "7 pool pages, room %llu (node %d available %llu estimate %llu margin %llu)",
	       (unsigned long long)estimate, (unsigned long long)room, res.node,
	       (unsigned long long)res.available, (unsigned long long)res.capacity_estimate,
	       (unsigned long long)res.capacity_margin);
	r = admit_split(ctx, 2, (uint64_t[]){ 0, room + 1 }, PREALLOC_ADMIT_GROW_POOLS, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_CAPACITY && res.available == room,
	       "node 1: one page past the room refused (r %d reason %d)", r, res.reason);
	r = admit_split(ctx, 2, (uint64_t[]){ 0, room }, PREALLOC_ADMIT_GROW_POOLS, &claim, &res);
	tap_ok(r == 0 && res.added == room - 7 && fr_pool_nr_of(&fr3, 1, MB2) == room,
	       "node 1: exactly the room admitted, the pool grown to %llu (r %d nr %llu)",
	       (unsigned long long)room, r, (unsigned long long)fr_pool_nr_of(&fr3, 1, MB2));
	fr_set_pool(&fr3, 1, room, room);
	r = claim ? prealloc_claim_rollback(claim, &returned) : -1;
	tap_ok(r == 0 && fr_pool_nr_of(&fr3, 1, MB2) == 7, "node 1: rolled back to 7 (%llu)",
	       (unsigned long long)fr_pool_nr_of(&fr3, 1, MB2));
	prealloc_claim_free(claim);
	fr_set_pool(&fr3, 1, 7, 7);

	admit_split(ctx, 1, (uint64_t[]){ 1000 }, PREALLOC_ADMIT_GROW_POOLS, &claim, &res);
	tap_ok(res.reason == PREALLOC_ADMIT_CAPACITY && res.node == 0 &&
		       res.capacity_margin == GIB && res.available == 512,
	       "node 0 (16 GiB): margin 1 GiB, 2 GiB free leave 512 pages (margin %llu available "
	       "%llu)", (unsigned long long)res.capacity_margin, (unsigned long long)res.available);
	admit_split(ctx, 3, (uint64_t[]){ 1, 1, 5000 }, PREALLOC_ADMIT_GROW_POOLS, &claim, &res);
	tap_ok(res.reason == PREALLOC_ADMIT_CAPACITY && res.node == 2 &&
		       res.capacity_margin == 5 * GIB && res.available == 1536,
	       "node 2 (80 GiB): margin 5 GiB, 8 GiB free leave 1536 pages (node %d margin %llu "
	       "available %llu)", res.node, (unsigned long long)res.capacity_margin,
	       (unsigned long long)res.available);
	tap_ok(fr_pool_nr_of(&fr3, 0, MB2) == 0 && fr_pool_nr_of(&fr3, 1, MB2) == 7 &&
		       nr_records(ctx) == 0,
	       "node 2's refusal gave back what nodes 0 and 1 grew first (nr %llu, %llu)",
	       (unsigned long long)fr_pool_nr_of(&fr3, 0, MB2),
	       (unsigned long long)fr_pool_nr_of(&fr3, 1, MB2));
}

/*
 * GROW_POOLS on three nodes, two of them short (by 1 and by 2): the result
 * says 3 pages were added, each pool grows by its own shortfall, and a
 * rollback or a refusal on a later node gives every node's growth back.
 */
static void test_grow_nodes(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	uint64_t returned = 0;
	int r;

	fr_write(fr3.proc, "sys/vm/min_free_kbytes", "67584\n");
	for (int n = 0; n < 3; n++)
		fr_set_meminfo(&fr3, n, 64 << 20, 32 << 20, 0, 0, 0);
	fr_set_pool(&fr3, 0, 4, 4);
	fr_set_pool(&fr3, 1, 6, 1);
	fr_set_pool(&fr3, 2, 2, 2);
	r = admit_split(ctx, 3, (uint64_t[]){ 5, 3, 2 }, PREALLOC_ADMIT_GROW_POOLS, &claim, &res);
	tap_ok(r == 0 && res.added == 3 && fr_pool_nr_of(&fr3, 0, MB2) == 5 &&
		       fr_pool_nr_of(&fr3, 1, MB2) == 8 && fr_pool_nr_of(&fr3, 2, MB2) == 2,
	       "grow_pools, 3 nodes: 1 + 2 added, pools 5/8/2 (r %d added %llu nr %llu/%llu/%llu)", r,
	       (unsigned long long)res.added, (unsigned long long)fr_pool_nr_of(&fr3, 0, MB2),
	       (unsigned long long)fr_pool_nr_of(&fr3, 1, MB2),
	       (unsigned long long)fr_pool_nr_of(&fr3, 2, MB2));
	fr_set_pool(&fr3, 0, 5, 5);
	fr_set_pool(&fr3, 1, 8, 8);
	r = claim ? prealloc_claim_rollback(claim, &returned) : -1;
	tap_ok(r == 0 && returned == 3 && fr_pool_nr_of(&fr3, 0, MB2) == 4 &&
		       fr_pool_nr_of(&fr3, 1, MB2) == 6 && nr_records(ctx) == 0,
	       "grow_pools, 3 nodes: rollback returns 3, pools 4/6 (returned %llu)",
	       (unsigned long long)returned);
	prealloc_claim_free(claim);

	/* Node 2 (64 GiB, 300 MiB free) is below its margin: it cannot supply one page. */
	fr_set_pool(&fr3, 1, 6, 1);
	fr_set_meminfo(&fr3, 2, 64 << 20, 300 << 10, 0, 0, 0);
	r = admit_split(ctx, 3, (uint64_t[]){ 5, 3, 3 }, PREALLOC_ADMIT_GROW_POOLS, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_CAPACITY && res.node == 2 &&
		       res.added == 0 && fr_pool_nr_of(&fr3, 0, MB2) == 4 &&
		       fr_pool_nr_of(&fr3, 1, MB2) == 6 && nr_records(ctx) == 0,
	       "grow_pools, 3 nodes: node 2 refused, nodes 0 and 1 given back (r %d node %d nr "
	       "%llu/%llu)", r, res.node, (unsigned long long)fr_pool_nr_of(&fr3, 0, MB2),
	       (unsigned long long)fr_pool_nr_of(&fr3, 1, MB2));
}

int main(void)
{
	struct prealloc_ctx *ctx, *ctx3;

	if (fakeroot_make(&fr, 1) < 0 || fakeroot_make(&fr3, 3) < 0) {
		tap_ok(0, "cannot build the fake trees in /tmp");
		return tap_done();
	}
	tap_remove_at_exit(fr.dir);
	tap_remove_at_exit(fr3.dir);
	set_meminfo(16 << 20, 8 << 20, 2 << 20, 512 << 10);
	/* Node sizes are read once, with the ctx: 16, 32 and 80 GiB. */
	fr_set_meminfo(&fr3, 0, 16 << 20, 8 << 20, 0, 0, 0);
	fr_set_meminfo(&fr3, 1, 32 << 20, 8 << 20, 0, 0, 0);
	fr_set_meminfo(&fr3, 2, 80 << 20, 8 << 20, 0, 0, 0);
	ctx = fakeroot_ctx(&fr);
	ctx3 = fakeroot_ctx(&fr3);
	if (!tap_ok(ctx != NULL && ctx3 != NULL,
		    "ctxs over the fake sysfs and procfs (1 and 3 nodes)")) {
		fakeroot_remove(&fr);
		fakeroot_remove(&fr3);
		return tap_done();
	}
	test_refusal(ctx);
	test_margin(ctx);
	test_cancel(ctx);
	test_capacity_nodes(ctx3);
	test_grow_nodes(ctx3);
	prealloc_ctx_free(ctx);
	prealloc_ctx_free(ctx3);
	fakeroot_remove(&fr);
	fakeroot_remove(&fr3);
	return tap_done();
}
