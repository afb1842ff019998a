/* SPDX-License-Identifier: MIT */
/*
 * --reserve against what a node could possibly give, over an injected
 * sysfs/procfs (fakeroot.h), no root: a request beyond the node's free and
 * reclaimable memory less the host's margin is refused before any pool
 * write (CAPACITY, with the estimate and the margin); the margin is
 * max(256 MiB, 2% of the node, its share of vm.min_free_kbytes); a cancel
 * fd that is readable stops the growth with -ECANCELED and leaves the pool
 * and the store as they were.
 */
#include <string.h>

#include "internal.h"
#include "fakeroot.h"
#include "tap.h"

#define MB2 PREALLOC_PAGE_2M
#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

static struct fakeroot fr;

static int admit(struct prealloc_ctx *ctx, uint64_t pages, unsigned int flags, int cancel_fd,
		 struct prealloc_reservation **ret_resv, struct prealloc_admit_result *res)
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

/* Node 0's meminfo, in kB. */
static void set_meminfo(uint64_t total_kb, uint64_t free_kb, uint64_t file_kb, uint64_t slab_kb)
{
	fr_write(fr.sys, "devices/system/node/node0/meminfo",
		 "Node 0 MemTotal: %llu kB\nNode 0 MemFree: %llu kB\nNode 0 Active(anon): 999 kB\n"
		 "Node 0 Active(file): %llu kB\nNode 0 Inactive(file): %llu kB\n"
		 "Node 0 SReclaimable: %llu kB\nNode 0 SUnreclaim: 777 kB\n",
		 (unsigned long long)total_kb, (unsigned long long)free_kb,
		 (unsigned long long)file_kb / 2, (unsigned long long)file_kb / 2,
		 (unsigned long long)slab_kb);
}

/* 16 GiB node: 8 GiB free, 2 GiB file cache, 512 MiB reclaimable slab; 10 free pool pages. */
static void test_refusal(struct prealloc_ctx *ctx)
{
	uint64_t estimate = 8 * GIB + 2 * GIB + 512 * MIB, margin = 16 * GIB / 50;
	uint64_t room = (estimate - margin) / MB2 + 10;
	struct prealloc_admit_result res;
	struct prealloc_reservation *resv;
	uint64_t returned = 0;
	int r;

	set_meminfo(16 << 20, 8 << 20, 2 << 20, 512 << 10);
	fr_write(fr.proc, "sys/vm/min_free_kbytes", "67584\n");
	fr_set_pool(&fr, 0, 10, 10);
	r = admit(ctx, UINT64_C(64) << 40 >> 21, PREALLOC_ADMIT_RESERVE, -1, &resv, &res);
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

	r = admit(ctx, room + 1, PREALLOC_ADMIT_RESERVE, -1, &resv, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_CAPACITY,
	       "one page past the room is refused (r %d reason %d)", r, res.reason);
	r = admit(ctx, room, PREALLOC_ADMIT_RESERVE, -1, &resv, &res);
	tap_ok(r == 0 && res.added == room - 10 && fr_pool_nr(&fr, 0) == room,
	       "exactly the room is admitted, grown in steps to %llu (r %d nr %llu)",
	       (unsigned long long)room, r, (unsigned long long)fr_pool_nr(&fr, 0));
	fr_set_pool(&fr, 0, room, room);	/* the fake pool's pages are all free */
	r = resv ? prealloc_reservation_rollback(resv, &returned) : -1;
	tap_ok(r == 0 && fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "rolled back to 10 (%llu)", (unsigned long long)fr_pool_nr(&fr, 0));
	prealloc_reservation_free(resv);
	r = admit(ctx, room + 1, PREALLOC_ADMIT_RESERVE | PREALLOC_ADMIT_NO_CHECK, -1, &resv, &res);
	tap_ok(r == 0, "NO_CHECK (tests only) skips the capacity check too (r %d)", r);
	fr_set_pool(&fr, 0, room + 1, room + 1);
	prealloc_reservation_free(resv);
	fr_set_pool(&fr, 0, 10, 10);
}

/* The margin's three terms, each made the largest in turn. */
static void test_margin(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_reservation *resv;

	fr_write(fr.proc, "sys/vm/min_free_kbytes", "1048576\n");
	admit(ctx, UINT64_C(1) << 30, PREALLOC_ADMIT_RESERVE, -1, &resv, &res);
	tap_ok(res.reason == PREALLOC_ADMIT_CAPACITY && res.capacity_margin == GIB,
	       "vm.min_free_kbytes 1 GiB (one node: all of it) is the margin (%llu)",
	       (unsigned long long)res.capacity_margin);
	fr_write(fr.proc, "sys/vm/min_free_kbytes", "67584\n");
	set_meminfo(4 << 20, 2 << 20, 0, 0);
	admit(ctx, UINT64_C(1) << 30, PREALLOC_ADMIT_RESERVE, -1, &resv, &res);
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
	struct prealloc_reservation *resv;
	int p[2], r;

	if (!tap_ok(pipe(p) == 0 && write(p[1], "x", 1) == 1, "a readable cancel fd"))
		return;
	r = admit(ctx, 100, PREALLOC_ADMIT_RESERVE | PREALLOC_ADMIT_CANCEL_FD, p[0], &resv, &res);
	tap_ok(r == -ECANCELED && res.reason == PREALLOC_ADMIT_CANCELED && !resv,
	       "a readable cancel fd stops the growth: -ECANCELED, CANCELED (r %d reason %d)", r,
	       res.reason);
	tap_ok(fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "the pool is as it was (%llu) and no record is left",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	r = admit(ctx, 100, PREALLOC_ADMIT_RESERVE, p[0], &resv, &res);
	tap_ok(r == 0, "without PREALLOC_ADMIT_CANCEL_FD the fd is not looked at (r %d)", r);
	fr_set_pool(&fr, 0, 100, 100);
	prealloc_reservation_free(resv);
	tap_ok(fr_pool_nr(&fr, 0) == 10, "freed: rolled back");
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	struct prealloc_ctx *ctx;

	if (fakeroot_make(&fr, 1) < 0) {
		tap_ok(0, "cannot build the fake tree in /tmp");
		return tap_done();
	}
	set_meminfo(16 << 20, 8 << 20, 2 << 20, 512 << 10);
	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx over the fake sysfs and procfs")) {
		fakeroot_remove(&fr);
		return tap_done();
	}
	test_refusal(ctx);
	test_margin(ctx);
	test_cancel(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
