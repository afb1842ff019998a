/* SPDX-License-Identifier: MIT */
/*
 * The front-end layer's claim (prealloc/frontend: demand.c, claim.c,
 * guest.c, prefault.c's release) over a fake two-node sysfs/procfs
 * (fakeroot.h) and a private state dir, no root. tests/unit/hook/test-demand.c
 * holds the domain XML -> backends table and tests/integration/test-qemu.sh
 * and the libvirt suites the whole path as root on real pools; this holds
 * the layer itself on pools whose every count the test sets:
 * - the needs merged per node and page size (two backends on one node add
 *   up, a backend bound to two nodes counts on each, 4K needs nothing,
 *   2M and 1G apart), and -E2BIG past GUEST_MAX_NEEDS;
 * - guest_claim at the exact edge on each node (exactly enough admitted,
 *   one page short refused), the refusal naming the short node with its
 *   numbers and nothing taken on the other; a second claim for the same
 *   holder takes nothing more; another guest sees the pages as promised;
 * - with grow_pools, the pools grown by exactly the shortfall, and
 *   guest_release giving back exactly that (nr_hugepages back to its
 *   value, the holder's records gone); a release of nothing is no error.
 */
#include <string.h>

#include <prealloc.h>

#include "guest-test.h"
#include "fakeroot.h"
#include "tap.h"

static struct fakeroot fr;	/* two nodes */
static char status[400];	/* the holders' check: absent, no guest started yet */

static const int node0[] = { 0 }, node1[] = { 1 }, both[] = { 0, 1 };

static const struct guest_need *need_of(const struct guest_demand *dd, int node, uint64_t ps)
{
	for (unsigned int i = 0; i < dd->nr_needs; i++)
		if (dd->needs[i].node == node && dd->needs[i].page_size == ps)
			return &dd->needs[i];
	return NULL;
}

static uint64_t need_bytes(const struct guest_demand *dd, int node, uint64_t ps)
{
	const struct guest_need *n = need_of(dd, node, ps);

	return n ? n->bytes : 0;
}

/*
 * The claim tests' guest: on node 0, ram-node0 (8 MiB) and dimm0 (4 MiB);
 * ram-node1 (8 MiB) bound to nodes 0 and 1, 2M pages: 8 pages on node 0,
 * 2 on node 1; pc.ram4k (64 MiB of 4K pages on node 1) needs no hugepage.
 * holder is "test:<name>": the guest's name is what follows.
 */
static void claim_guest(struct guest *g, struct prealloc_ctx *ctx, const char *holder)
{
	test_guest(g, ctx, holder + 5, holder, status);
	test_backend(g, "ram-node0", 8 * MIB, MB2, false, 1, node0);
	test_backend(g, "dimm0", 4 * MIB, MB2, false, 1, node0);
	test_backend(g, "ram-node1", 8 * MIB, MB2, false, 2, both);
	test_backend(g, "pc.ram4k", 64 * MIB, K4, false, 1, node1);
	guest_needs(&g->demand);
}

static void test_needs(struct prealloc_ctx *ctx)
{
	static struct guest g;
	char pl[16];
	int r;

	claim_guest(&g, ctx, "test:needs");
	test_backend(&g, "dimm1", 2 * GB1, GB1, false, 1, node1);
	test_backend(&g, "dimm2", 7 * MB2, MB2, false, 2, both);
	r = guest_needs(&g.demand);
	tap_ok(r == 0 && g.demand.nr_needs == 3, "needs: three (node, size) pairs from six "
	       "backends: %d, %u", r, g.demand.nr_needs);
	tap_ok(need_bytes(&g.demand, 0, MB2) == 24 * MIB, "node 0, 2M: 8 + 4 + 4 + 8 (4 of dimm2's "
	       "7 pages on two nodes, the extra one first) = 24 MiB: %llu",
	       (unsigned long long)(need_bytes(&g.demand, 0, MB2) >> 20));
	tap_ok(need_bytes(&g.demand, 1, MB2) == 10 * MIB, "node 1, 2M: 4 + 6 = 10 MiB: %llu",
	       (unsigned long long)(need_bytes(&g.demand, 1, MB2) >> 20));
	tap_ok(need_bytes(&g.demand, 1, GB1) == 2 * GB1, "node 1, 1G: dimm1's 2 GiB apart");
	tap_ok(!need_of(&g.demand, 1, K4) && !need_of(&g.demand, 0, K4),
	       "the 4K backend asks no hugepages");
	tap_ok(!strcmp(guest_page_label(MB2, pl, sizeof(pl)), "2M") &&
		       !strcmp(guest_page_label(GB1, pl, sizeof(pl)), "1G") &&
		       !strcmp(guest_page_label(K4, pl, sizeof(pl)), "4K") &&
		       !strcmp(guest_page_label(3 * MIB / 2, pl, sizeof(pl)), "1536K"),
	       "page labels: 2M, 1G, 4K, and 1536K for a size of no whole MiB");
}

/* 64 nodes on each of two page sizes: 128 needs fit exactly, a third size is -E2BIG. */
static void test_needs_full(struct prealloc_ctx *ctx)
{
	static struct guest g;
	int nodes[GUEST_MAX_NODES], r;

	for (int i = 0; i < GUEST_MAX_NODES; i++)
		nodes[i] = i;
	test_guest(&g, ctx, "full", "test:full", status);
	test_backend(&g, "a", GUEST_MAX_NODES * MB2, MB2, false, GUEST_MAX_NODES, nodes);
	test_backend(&g, "b", GUEST_MAX_NODES * GB1, GB1, false, GUEST_MAX_NODES, nodes);
	r = guest_needs(&g.demand);
	tap_ok(r == 0 && g.demand.nr_needs == GUEST_MAX_NEEDS, "needs: exactly %u fit: %d, %u",
	       GUEST_MAX_NEEDS, r, g.demand.nr_needs);
	test_backend(&g, "c", 4 * MIB, 4 * MIB, false, 1, nodes);
	r = guest_needs(&g.demand);
	tap_ok(r == -E2BIG && g.demand.nr_needs == GUEST_MAX_NEEDS, "needs: one more is -E2BIG "
	       "(%d), the table not overrun (%u)", r, g.demand.nr_needs);
}

/* Both nodes' 2M pools: nr pages, all of them free (and so system-wide). */
static void pools(uint64_t nr0, uint64_t nr1)
{
	fr_set_pool(&fr, 0, nr0, nr0);
	fr_set_pool(&fr, 1, nr1, nr1);
	fr_set_global(&fr, MB2, nr0 + nr1, 0);
}

/* A claim refused on node: the message's words, nothing held, no record. */
static void check_refused(struct prealloc_ctx *ctx, struct guest *g, int r, int node,
			  uint64_t needed, uint64_t free_pages)
{
	char want[400];

	snprintf(want, sizeof(want), "domain %s needs %llu 2M hugepages on host node %d, which "
		 "has %llu free (pool of %llu, 0 promised to other guests); set grow_pools = yes",
		 g->name, (unsigned long long)needed, node, (unsigned long long)free_pages,
		 (unsigned long long)free_pages);
	tap_ok(r == -ENOMEM, "node %d short: -ENOMEM (%d)", node, r);
	tap_ok(!strncmp(g->msg, want, strlen(want)), "the refusal names node %d and its numbers: "
	       "%s", node, g->msg);
	tap_ok(nr_records(ctx) == 0 && held_pages(ctx, g->holder, 0, MB2) == 0 &&
		       held_pages(ctx, g->holder, 1, MB2) == 0,
	       "refused: nothing taken on either node, no record (%u)", nr_records(ctx));
	tap_ok(guest_claimed(g, 0, MB2) == 0 && guest_claimed(g, 1, MB2) == 0,
	       "refused: guest_claimed says nothing on either node");
}

/* Pages the claim holds are promised: another guest finds node 1 full. */
static void test_other_guest(struct prealloc_ctx *ctx)
{
	static struct guest o;
	int r;

	test_guest(&o, ctx, "other", "test:other", status);
	test_backend(&o, "ram-node0", 2 * MIB, MB2, false, 1, node1);
	guest_needs(&o.demand);
	r = guest_claim(&o);
	tap_ok(r == -ENOMEM && strstr(o.msg, "needs 1 2M hugepages on host node 1, which has 0 "
				      "free (pool of 2, 2 promised to other guests)"),
	       "another guest: node 1's 2 pages are promised (%d): %s", r, o.msg);
	tap_ok(held_pages(ctx, o.holder, 1, MB2) == 0, "another guest refused holds nothing");
}

/* The release of a claim made without grow_pools: records gone, no pool written. */
static void test_release_exact(struct prealloc_ctx *ctx, struct guest *g)
{
	uint64_t returned = 99;
	int r = guest_release(g, &returned);

	tap_ok(r == 0 && returned == 0, "release: 0, no page to give back (none was added): "
	       "%d, %llu", r, (unsigned long long)returned);
	tap_ok(nr_records(ctx) == 0 && guest_claimed(g, 0, MB2) == 0 &&
		       guest_claimed(g, 1, MB2) == 0,
	       "release: the holder's records are gone (%u left)", nr_records(ctx));
	tap_ok(fr_pool_nr(&fr, 0) == 8 && fr_pool_nr(&fr, 1) == 2,
	       "release: the pools as they were (%llu, %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0), (unsigned long long)fr_pool_nr(&fr, 1));
	returned = 99;
	r = guest_release(g, &returned);
	tap_ok(r == 0 && returned == 0, "a release of nothing held: 0, nothing returned (%d, "
	       "%llu)", r, (unsigned long long)returned);
}

static void test_claim_edges(struct prealloc_ctx *ctx)
{
	static struct guest g;
	unsigned int records;
	int r;

	pools(8, 1);
	claim_guest(&g, ctx, "test:short1");
	check_refused(ctx, &g, guest_claim(&g), 1, 2, 1);
	pools(7, 2);
	claim_guest(&g, ctx, "test:short0");
	check_refused(ctx, &g, guest_claim(&g), 0, 8, 7);

	pools(8, 2);
	claim_guest(&g, ctx, "test:exact");
	r = guest_claim(&g);
	tap_ok(r == 0 && !g.msg[0], "exactly enough on both nodes: admitted (%d %s)", r, g.msg);
	tap_ok(held_pages(ctx, g.holder, 0, MB2) == 8 && held_pages(ctx, g.holder, 1, MB2) == 2 &&
		       held_pages(ctx, g.holder, 1, K4) == 0,
	       "the holder holds 8 pages on node 0, 2 on node 1, no 4K share: %llu, %llu",
	       (unsigned long long)held_pages(ctx, g.holder, 0, MB2),
	       (unsigned long long)held_pages(ctx, g.holder, 1, MB2));
	tap_ok(guest_claimed(&g, 0, MB2) == 8 && guest_claimed(&g, 1, MB2) == 2 &&
		       guest_claimed(&g, 1, GB1) == 0,
	       "guest_claimed: 8 and 2 of 2M, none of 1G");
	tap_ok(fr_pool_nr(&fr, 0) == 8 && fr_pool_nr(&fr, 1) == 2,
	       "no grow_pools: the pools are not written (%llu, %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0), (unsigned long long)fr_pool_nr(&fr, 1));

	/* prepare run again: what the holder claimed serves, nothing is claimed twice. */
	records = nr_records(ctx);
	claim_guest(&g, ctx, "test:exact");
	r = guest_claim(&g);
	tap_ok(r == 0 && held_pages(ctx, g.holder, 0, MB2) == 8 &&
		       held_pages(ctx, g.holder, 1, MB2) == 2,
	       "a second claim of the holder takes nothing more (%d): %llu, %llu", r,
	       (unsigned long long)held_pages(ctx, g.holder, 0, MB2),
	       (unsigned long long)held_pages(ctx, g.holder, 1, MB2));
	tap_ok(nr_records(ctx) == records, "a second claim adds no record, not even an empty one "
	       "(%u, were %u)", nr_records(ctx), records);
	test_other_guest(ctx);
	test_release_exact(ctx, &g);
}

/*
 * grow_pools: node 0 has 3 of the 8 pages, node 1 none of 2; the claim grows
 * each pool by its shortfall, the release gives exactly that back.
 */
static void test_grow_pools(struct prealloc_ctx *ctx)
{
	static struct guest g;
	uint64_t returned = 0;
	int r;

	pools(3, 0);
	claim_guest(&g, ctx, "test:grow");
	g.grow_pools = true;
	test_log_clear();
	r = guest_claim(&g);
	tap_ok(r == 0 && !g.msg[0], "grow_pools: admitted by growing the pools (%d %s)", r, g.msg);
	tap_ok(fr_pool_nr(&fr, 0) == 8 && fr_pool_nr(&fr, 1) == 2,
	       "grow_pools: node 0 grown 3 -> 8, node 1 0 -> 2 (%llu, %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0), (unsigned long long)fr_pool_nr(&fr, 1));
	tap_ok(strstr(test_log, "grow: added 7 2M pages to the pools | ") != NULL,
	       "the log says 7 pages were added: %s", test_log);
	tap_ok(held_pages(ctx, g.holder, 0, MB2) == 8 && held_pages(ctx, g.holder, 1, MB2) == 2,
	       "grow_pools: the holder holds 8 and 2");
	/* The kernel's count: grown pages are free until the guest faults them. */
	pools(8, 2);
	r = guest_release(&g, &returned);
	tap_ok(r == 0 && returned == 7, "release gives back the 7 pages added: %d, %llu", r,
	       (unsigned long long)returned);
	tap_ok(fr_pool_nr(&fr, 0) == 3 && fr_pool_nr(&fr, 1) == 0,
	       "release: nr_hugepages back to 3 and 0 (%llu, %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0), (unsigned long long)fr_pool_nr(&fr, 1));
	tap_ok(nr_records(ctx) == 0, "release: no record left (%u)", nr_records(ctx));
}

int main(void)
{
	struct prealloc_ctx *ctx;

	if (fakeroot_make(&fr, 2) < 0) {
		tap_ok(0, "cannot build the fake tree in /tmp");
		return tap_done();
	}
	tap_remove_at_exit(fr.dir);
	ctx = fakeroot_ctx(&fr);
	snprintf(status, sizeof(status), "%s/guest.xml", fr.dir);
	if (!tap_ok(ctx != NULL, "a ctx over the fake two-node tree"))
		return tap_done();
	test_needs(ctx);
	test_needs_full(ctx);
	test_claim_edges(ctx);
	test_grow_pools(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
