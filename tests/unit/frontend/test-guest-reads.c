/* SPDX-License-Identifier: MIT */
/*
 * How often one guest's start reads the record store, through the
 * front-end layer as `prealloc qemu --warm --node 0,1` drives it
 * (frontend/session.c: claim, then start, then release) over a fake
 * two-node tree with a READY warm file per node: the ctx counts every
 * time the store's file is read and parsed (ctx->store_reads). Each
 * decision the layer makes reads it once at most:
 * - the claim: one read for each backend's warm reservation (what its
 *   holder holds, which file it would get), the take (RESERVE) its own
 *   under the lock; one read for the hugepages left to claim;
 * - the start: each backend's link is its take (the lock, then the
 *   lock again after the link), nothing read besides;
 * - a plan (`prealloc-domain`, `qemu --dry-run`): one read for all of it
 *   while nothing writes the store;
 * - a query asked again of a store nobody wrote since reads nothing.
 * The counts do not grow with the store: two 2M files with their growth
 * (pool lines of the store) are there too.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <prealloc.h>

#include "internal.h"
#include "guest-test.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

static struct fakeroot fr;	/* two nodes */
static char status[400];	/* the holder's check */
static const int node0[] = { 0 }, node1[] = { 1 };

/* The store reads fn's calls made, on ctx. */
#define READS(ctx, stmt)                                        \
	({                                                      \
		unsigned long before_ = (ctx)->store_reads;     \
		stmt;                                           \
		(ctx)->store_reads - before_;                   \
	})

static void warm_qemu_guest(struct guest *g, struct prealloc_ctx *ctx)
{
	test_guest(g, ctx, "qemu-1", "qemu:1@1", status);
	g->warm = true;
	snprintf(g->mount, sizeof(g->mount), "%s", fr.dir);
	g->mount_page = K4;
	test_backend(g, "vm-node0", 8 * MIB, K4, true, 1, node0);
	test_backend(g, "vm-node1", 8 * MIB, K4, true, 1, node1);
	guest_needs(&g->demand);
}

static void test_plan(struct prealloc_ctx *ctx)
{
	static struct guest g;
	char why[256];
	unsigned long n;

	warm_qemu_guest(&g, ctx);
	n = READS(ctx, guest_warm_plan(&g, 0, why, sizeof(why));
		  guest_warm_plan(&g, 1, why, sizeof(why)));
	tap_ok(n <= 1, "a plan of both backends: %lu store read(s), at most 1", n);
	n = READS(ctx, guest_warm_plan(&g, 1, why, sizeof(why)));
	tap_ok(n == 0, "the same plan again, the store unchanged: %lu read(s), 0", n);
}

static void test_warm_start(struct prealloc_ctx *ctx)
{
	static struct guest g;
	uint64_t returned = 0;
	unsigned long n;
	char dir[400];
	int dfd, r = -1;

	warm_qemu_guest(&g, ctx);
	n = READS(ctx, r = guest_claim(&g));
	tap_ok(r == 0 && g.warmed[0] && g.warmed[1], "the claim reserves both warm files: %d %s",
	       r, g.msg);
	/* 2 backends: a decision and a take each; the rest to claim: one decision, nothing to admit. */
	tap_ok(n <= 5, "the claim: %lu store read(s), at most 5", n);
	snprintf(dir, sizeof(dir), "%s/vm", fr.dir);
	dfd = mkdir(dir, 0700) == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (!tap_ok(dfd >= 0, "the guest's memory directory %s", dir))
		return;
	n = READS(ctx, r = guest_start(&g, dfd, dir));
	tap_ok(r == 0, "the start links both: %d %s", r, g.msg);
	tap_ok(n <= 4, "the start: %lu store read(s), at most 4 (a take's two each)", n);
	n = READS(ctx, r = guest_release(&g, &returned));
	tap_ok(r == 0, "the release: %d", r);
	tap_ok(1, "the release: %lu store read(s)", n);
	close(dfd);
}

int main(void)
{
	struct prealloc_ctx *ctx = warm_test_ctx(&fr, 2);

	if (!ctx)
		return tap_done();
	snprintf(status, sizeof(status), "%s/guest.xml", fr.dir);
	if (!tap_ok(add_warm_in(fr.dir, ctx, "w0", 0, K4, 8 * MIB, 0) &&
			    add_warm_in(fr.dir, ctx, "w1", 1, K4, 8 * MIB, 0) &&
			    add_warm_in(fr.dir, ctx, "s0", 0, MB2, 2 * MB2, 2) &&
			    add_warm_in(fr.dir, ctx, "s1", 1, MB2, 2 * MB2, 2),
		    "a READY 4K warm file of 8 MiB on each node, and a 2M one with its growth"))
		return tap_done();
	test_plan(ctx);
	prealloc_ctx_free(ctx);
	/* A new run, as `prealloc qemu` is: nothing read before. */
	ctx = fakeroot_ctx(&fr);
	if (tap_ok(ctx != NULL, "a second ctx over the same tree"))
		test_warm_start(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
