/* SPDX-License-Identifier: MIT */
/*
 * prepare begin: every hugepage the domain needs claimed for its holder
 * under the record store's lock (the pools grown where they are short), a
 * warm file reserved first for each backend that starts on one, or the
 * start refused with the node, the shortfall and what to do about it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "run.h"

static void refusal(struct hook_run *run, int err, const struct prealloc_admit_result *a)
{
	char pl[16];

	page_label(a->page_size, pl, sizeof(pl));
	if (a->reason == PREALLOC_ADMIT_POOL || a->reason == PREALLOC_ADMIT_GROW)
		snprintf(run->msg, sizeof(run->msg),
			 "domain %s needs %llu %s hugepages on host node %d, which has %llu free "
			 "(pool of %llu, %llu promised to other guests)%s; %s", run->dom.name,
			 (unsigned long long)a->needed, pl, a->node,
			 (unsigned long long)a->available, (unsigned long long)a->pool_total,
			 (unsigned long long)a->reserved_others,
			 a->reason == PREALLOC_ADMIT_GROW ? " and the kernel could not add more" : "",
			 run->reserve ? "free memory on that node, reserve the pages at boot "
					"(hugepages= on the kernel command line) or shrink the guest"
				      : "set reserve = yes in " HOOK_CONF " to grow the pool, "
					"or shrink the guest");
	else if (a->reason == PREALLOC_ADMIT_CAPACITY)
		snprintf(run->msg, sizeof(run->msg),
			 "domain %s needs %llu %s hugepages on host node %d, which can supply at "
			 "most %llu (%llu MiB free or reclaimable, %llu MiB kept for the host); "
			 "the pool was not touched: free memory on that node or shrink the guest",
			 run->dom.name, (unsigned long long)a->needed, pl, a->node,
			 (unsigned long long)a->available,
			 (unsigned long long)(a->capacity_estimate >> 20),
			 (unsigned long long)(a->capacity_margin >> 20));
	else
		snprintf(run->msg, sizeof(run->msg), "domain %s: admission of %s hugepages "
			 "failed: %s (reason %d, node %d)", run->dom.name, pl, strerror(-err),
			 a->reason, a->node);
}

/* Admits one page size's needs (minus what the holder claimed before). */
static int claim_size(struct hook_run *run, uint64_t ps, struct prealloc_reservation **ret)
{
	struct prealloc_admit_result a = { .size = sizeof(a) };
	int nodes[DOM_MAX_NEEDS];
	uint64_t bytes[DOM_MAX_NEEDS];
	unsigned int n = 0;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .page_size = ps, .nodes = nodes, .node_bytes = bytes,
		.flags = run->reserve ? PREALLOC_ADMIT_RESERVE : 0,
		.reserve_timeout_ms = run_wait_ms(run, run->set.deadline_s * 500, 0.5),
		.lock_timeout_ms = run_wait_ms(run, run->set.deadline_s * 400, 0.4),
		.owner = run->holder, .holder = run->holder, .holder_check = run->check,
		.holder_expires = run->expires,
	};
	int r;

	*ret = NULL;
	for (unsigned int i = 0; i < run->demand.nr_needs; i++) {
		const struct dom_need *need = &run->demand.needs[i];
		uint64_t had = run_claimed(run, need->node, ps) * ps;

		if (need->page_size != ps || need->bytes <= had)
			continue;
		nodes[n] = need->node;
		bytes[n++] = need->bytes - had;
	}
	if (!n)
		return 0;
	o.nr_nodes = n;
	r = prealloc_admit(run->ctx, &o, ret, &a);
	if (r < 0) {
		refusal(run, r, &a);
		return r;
	}
	if (a.warm_pages)
		run_log(run, 6, "%s: took %llu %s pages from the warm pool (%u files cut, %u removed)",
			run->dom.name, (unsigned long long)a.warm_pages,
			page_label(ps, (char[16]){ 0 }, 16), a.warm_cut, a.warm_removed);
	if (a.added)
		run_log(run, 6, "%s: added %llu %s pages to the pools", run->dom.name,
			(unsigned long long)a.added, page_label(ps, (char[16]){ 0 }, 16));
	return r;
}

/* Needs of backends the hook does not pre-fault (QEMU allocates them itself). */
static void drop_prefaulted(struct hook_run *run)
{
	struct dom_demand *dd = &run->demand;

	dd->nr_needs = 0;
	for (unsigned int i = 0; i < dd->nr_backends; i++) {
		const struct dom_backend *be = &dd->backends[i];

		if (be->page_size <= 4096 || run_backend_prefaulted(run, i) || run->warmed[i])
			continue;
		for (unsigned int k = 0; k < be->nr_nodes; k++) {
			unsigned int j;

			for (j = 0; j < dd->nr_needs; j++)
				if (dd->needs[j].node == be->nodes[k] &&
				    dd->needs[j].page_size == be->page_size)
					break;
			if (j == dd->nr_needs)
				dd->needs[dd->nr_needs++] = (struct dom_need){
					.node = be->nodes[k], .page_size = be->page_size };
			dd->needs[j].bytes += be->node_bytes[k];
		}
	}
}

int run_claim(struct hook_run *run)
{
	struct prealloc_reservation *resv[DOM_MAX_NEEDS] = { 0 };
	uint64_t sizes[DOM_MAX_NEEDS];
	unsigned int nr = 0;
	int r = 0;

	for (unsigned int i = 0; i < run->demand.nr_backends; i++) {
		const struct dom_backend *be = &run->demand.backends[i];

		/* Access as QEMU maps each backend: a cell's memAccess overrides the domain's. */
		if (run->prefault && be->file && !be->shared) {
			snprintf(run->msg, sizeof(run->msg), "domain %s: prefault needs "
				 "<access mode='shared'/>: %s is private (its cell's memAccess or "
				 "the domain's access), and QEMU maps a private (share=off) file "
				 "with a second copy of every page and fails with ENOMEM",
				 run->dom.name, be->alias);
			return -EINVAL;
		}
	}
	/* Backends with a warm file of their own claim nothing more. */
	run_warm_reserve(run);
	drop_prefaulted(run);
	for (unsigned int i = 0; i < run->demand.nr_needs; i++) {
		unsigned int k;

		for (k = 0; k < nr && sizes[k] != run->demand.needs[i].page_size; k++)
			;
		if (k == nr)
			sizes[nr++] = run->demand.needs[i].page_size;
	}
	for (unsigned int k = 0; r == 0 && k < nr; k++)
		r = claim_size(run, sizes[k], &resv[k]);
	for (unsigned int k = 0; k < nr; k++) {
		if (r == 0 && resv[k])
			r = prealloc_reservation_commit(resv[k]);
		if (r < 0 && !run->msg[0])
			snprintf(run->msg, sizeof(run->msg), "domain %s: the record store: %s",
				 run->dom.name, strerror(-r));
	}
	/*
	 * On failure the reservations not committed roll back as they are
	 * freed. The warm files reserved stay the holder's: release end gives
	 * them back, or their expiry (start_grace) if no stage comes, never
	 * those of another call for the same holder (a running guest's).
	 */
	for (unsigned int k = 0; k < nr; k++)
		prealloc_reservation_free(resv[k]);
	return r;
}

int run_claim_backend(struct hook_run *run, unsigned int i)
{
	const struct dom_backend *be = &run->demand.backends[i];
	uint64_t had = run_claimed(run, be->nodes[0], be->page_size) * be->page_size;
	struct prealloc_reservation *resv = NULL;
	int r;

	/* The needs were prepare's: at start begin only this backend's is left to claim. */
	run->demand.nr_needs = 1;
	run->demand.needs[0] = (struct dom_need){ .node = be->nodes[0],
						  .page_size = be->page_size,
						  .bytes = had + be->bytes };
	r = claim_size(run, be->page_size, &resv);
	if (r == 0 && resv)
		r = prealloc_reservation_commit(resv);
	prealloc_reservation_free(resv);
	return r;
}
