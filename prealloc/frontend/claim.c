/* SPDX-License-Identifier: MIT */
/*
 * Before the guest starts (libvirt's prepare begin): every hugepage it
 * needs claimed for its holder under the record store's lock (the pools
 * grown where they are short), a warm file reserved first for each backend
 * that starts on one, or the start refused with the node, the shortfall
 * and what to do about it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <prealloc.h>

#include "guest.h"

static void refusal(struct guest *g, int err, const struct prealloc_admit_result *a)
{
	char pl[16];

	guest_page_label(a->page_size, pl, sizeof(pl));
	if (a->reason == PREALLOC_ADMIT_POOL || a->reason == PREALLOC_ADMIT_GROW)
		snprintf(g->msg, sizeof(g->msg),
			 "%s %s needs %llu %s hugepages on host node %d, which has %llu free "
			 "(pool of %llu, %llu promised to other guests)%s; %s", g->words->noun, g->name,
			 (unsigned long long)a->needed, pl, a->node,
			 (unsigned long long)a->available, (unsigned long long)a->pool_total,
			 (unsigned long long)a->promised_others,
			 a->reason == PREALLOC_ADMIT_GROW ? " and the kernel could not add more" : "",
			 g->grow_pools ? "free memory on that node, reserve the pages at boot "
				      "(hugepages= on the kernel command line) or shrink the guest"
				    : g->words->grow_off);
	else if (a->reason == PREALLOC_ADMIT_CAPACITY)
		snprintf(g->msg, sizeof(g->msg),
			 "%s %s needs %llu %s hugepages on host node %d, which can supply at "
			 "most %llu (%llu MiB free or reclaimable, %llu MiB kept for the host); "
			 "the pool was not touched: free memory on that node or shrink the guest",
			 g->words->noun, g->name, (unsigned long long)a->needed, pl, a->node,
			 (unsigned long long)a->available,
			 (unsigned long long)(a->capacity_estimate >> 20),
			 (unsigned long long)(a->capacity_margin >> 20));
	else
		snprintf(g->msg, sizeof(g->msg), "%s %s: admission of %s hugepages "
			 "failed: %s (reason %d, node %d)", g->words->noun, g->name, pl, strerror(-err),
			 a->reason, a->node);
}

/* Admits one page size's needs (minus what the holder claimed before). */
static int claim_size(struct guest *g, uint64_t ps, struct prealloc_claim **ret)
{
	struct prealloc_admit_result a = { .size = sizeof(a) };
	int nodes[GUEST_MAX_NEEDS];
	uint64_t bytes[GUEST_MAX_NEEDS];
	unsigned int n = 0;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .page_size = ps, .nodes = nodes, .node_bytes = bytes,
		.flags = g->grow_pools ? PREALLOC_ADMIT_GROW_POOLS : 0,
		.grow_timeout_ms = guest_wait_ms(g, g->deadline_s * 500, 0.5),
		.lock_timeout_ms = guest_wait_ms(g, g->deadline_s * 400, 0.4),
		.tag = g->holder, .holder = g->holder, .holder_check = g->check[0] ? g->check : NULL,
		.holder_expires = g->expires,
	};
	int r;

	*ret = NULL;
	for (unsigned int i = 0; i < g->demand.nr_needs; i++) {
		const struct guest_need *need = &g->demand.needs[i];
		uint64_t had = guest_claimed(g, need->node, ps) * ps;

		if (need->page_size != ps || need->bytes <= had)
			continue;
		nodes[n] = need->node;
		bytes[n++] = need->bytes - had;
	}
	if (!n)
		return 0;
	o.nr_nodes = n;
	r = prealloc_admit(g->ctx, &o, ret, &a);
	if (r < 0) {
		refusal(g, r, &a);
		return r;
	}
	if (a.warm_pages)
		guest_log(g, 6, "%s: took %llu %s pages from the warm pool (%u files cut, %u removed)",
			g->name, (unsigned long long)a.warm_pages,
			guest_page_label(ps, (char[16]){ 0 }, 16), a.warm_cut, a.warm_removed);
	if (a.added)
		guest_log(g, 6, "%s: added %llu %s pages to the pools", g->name,
			(unsigned long long)a.added, guest_page_label(ps, (char[16]){ 0 }, 16));
	return r;
}

/* Needs of backends not pre-faulted nor warm (the VMM allocates them itself). */
static void drop_prefaulted(struct guest *g)
{
	struct guest_demand *dd = &g->demand;

	dd->nr_needs = 0;
	for (unsigned int i = 0; i < dd->nr_backends; i++) {
		const struct guest_backend *be = &dd->backends[i];

		if (be->page_size <= 4096 || guest_prefaulted(g, i) || g->warmed[i])
			continue;
		for (unsigned int k = 0; k < be->nr_nodes; k++) {
			unsigned int j;

			for (j = 0; j < dd->nr_needs; j++)
				if (dd->needs[j].node == be->nodes[k] &&
				    dd->needs[j].page_size == be->page_size)
					break;
			if (j == dd->nr_needs)
				dd->needs[dd->nr_needs++] = (struct guest_need){
					.node = be->nodes[k], .page_size = be->page_size };
			dd->needs[j].bytes += be->node_bytes[k];
		}
	}
}

int guest_claim(struct guest *g)
{
	struct prealloc_claim *claims[GUEST_MAX_NEEDS] = { 0 };
	uint64_t sizes[GUEST_MAX_NEEDS];
	unsigned int nr = 0;
	int r = guest_rules(g);

	if (r < 0)
		return r;
	/* Backends with a warm file of their own claim nothing more. */
	guest_warm_reserve(g);
	drop_prefaulted(g);
	for (unsigned int i = 0; i < g->demand.nr_needs; i++) {
		unsigned int k;

		for (k = 0; k < nr && sizes[k] != g->demand.needs[i].page_size; k++)
			;
		if (k == nr)
			sizes[nr++] = g->demand.needs[i].page_size;
	}
	for (unsigned int k = 0; r == 0 && k < nr; k++)
		r = claim_size(g, sizes[k], &claims[k]);
	for (unsigned int k = 0; k < nr; k++) {
		if (r == 0 && claims[k])
			r = prealloc_claim_commit(claims[k]);
		if (r < 0 && !g->msg[0])
			snprintf(g->msg, sizeof(g->msg), "%s %s: the record store: %s",
				 g->words->noun, g->name, strerror(-r));
	}
	/*
	 * On failure the reservations not committed roll back as they are
	 * freed. The warm files reserved stay the holder's: the guest's
	 * release gives them back (the hook's release end), or their expiry
	 * if none comes, never those of another call for the same holder (a
	 * running guest's).
	 */
	for (unsigned int k = 0; k < nr; k++)
		prealloc_claim_free(claims[k]);
	return r;
}

int guest_claim_backend(struct guest *g, unsigned int i)
{
	const struct guest_backend *be = &g->demand.backends[i];
	uint64_t had = guest_claimed(g, be->nodes[0], be->page_size) * be->page_size;
	struct prealloc_claim *claim = NULL;
	int r;

	/* The needs were the claim's: at start only this backend's is left to claim. */
	g->demand.nr_needs = 1;
	g->demand.needs[0] = (struct guest_need){ .node = be->nodes[0],
						  .page_size = be->page_size,
						  .bytes = had + be->bytes };
	r = claim_size(g, be->page_size, &claim);
	if (r == 0 && claim)
		r = prealloc_claim_commit(claim);
	prealloc_claim_free(claim);
	return r;
}
