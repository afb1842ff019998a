/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

#define HUGETLBFS_MAGIC 0x958458f6
#define TMPFS_MAGIC 0x01021994

static uint64_t default_hugepage(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/meminfo", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return (uint64_t)kb << 10;
}

/* The page size of memory_backing_dir's filesystem: hugetlbfs, 4K tmpfs, 0 disk. */
static uint64_t backing_page(const char *top)
{
	struct statfs fs;

	if (statfs(top, &fs) < 0)
		return 0;
	if ((unsigned long)fs.f_type == HUGETLBFS_MAGIC)
		return (uint64_t)fs.f_bsize;
	return (unsigned long)fs.f_type == TMPFS_MAGIC ? 4096 : 0;
}

static int host_fill(struct hook_run *run)
{
	int nodes[PREALLOC_MAX_NODES], n = prealloc_nodes(run->ctx, nodes, PREALLOC_MAX_NODES);

	if (n < 0)
		return n;
	for (int i = 0; i < n && run->host.nr_nodes < DOM_MAX_NODES; i++)
		run->host.nodes[run->host.nr_nodes++] = nodes[i];
	run->host.default_page = settings_libvirt_default_page(&run->set, default_hugepage());
	run->host.auto_rule = run->set.auto_rule;
	run->host.backing_page = backing_page(run->backing_top);
	return 0;
}

static bool tri(int v, bool host)
{
	return v == TRI_UNSET ? host : v == TRI_YES;
}

int run_init(struct hook_run *run, hook_log_fn *log, const char *xml, size_t len)
{
	struct prealloc_ctx_opts co = { .size = sizeof(co) };
	char why[512] = "";
	int r;

	run->log = log;
	r = settings_load(HOOK_CONF, &run->set, why, sizeof(why));
	if (r == 0)
		r = settings_backing_dir(&run->set, run->backing_dir, sizeof(run->backing_dir), why,
					 sizeof(why));
	if (r == 0) {
		size_t n = strlen(run->backing_dir), suffix = strlen("/libvirt/qemu");

		snprintf(run->backing_top, sizeof(run->backing_top), "%.*s",
			 (int)(n > suffix ? n - suffix : n), run->backing_dir);
		r = domain_parse(xml, len, &run->dom, why, sizeof(why));
	}
	if (r < 0) {
		snprintf(run->msg, sizeof(run->msg), "%s", why[0] ? why : strerror(-r));
		return r;
	}
	co.state_dir = run->set.state_dir[0] ? run->set.state_dir : NULL;
	r = prealloc_ctx_new_opts(&co, &run->ctx);
	if (r == 0)
		r = host_fill(run);
	if (r < 0) {
		snprintf(run->msg, sizeof(run->msg), "libprealloc: %s", strerror(-r));
		return r;
	}
	r = domain_demand(&run->dom, &run->host, &run->demand, why, sizeof(why));
	if (r < 0) {
		snprintf(run->msg, sizeof(run->msg), "%s: %s", run->dom.name, why);
		return r;
	}
	snprintf(run->holder, sizeof(run->holder), HOLDER_PREFIX "%s", run->dom.uuid);
	snprintf(run->check, sizeof(run->check), "%s/%s.xml", run->set.status_dir, run->dom.name);
	run->expires = (int64_t)time(NULL) + run->set.start_grace_s;
	run->reserve = tri(run->dom.reserve, run->set.reserve);
	run->prefault = tri(run->dom.prefault, run->set.prefault);
	run->warm = tri(run->dom.warm, run->set.warm);
	return 0;
}

void run_log(const struct hook_run *run, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	run->log(level, fmt, ap);
	va_end(ap);
}

void run_free(struct hook_run *run)
{
	prealloc_ctx_free(run->ctx);
	run->ctx = NULL;
}

bool run_backend_prefaulted(const struct hook_run *run, unsigned int i)
{
	return run->prefault && run->demand.backends[i].file && run->host.backing_page;
}

uint64_t run_claimed(struct hook_run *run, int node, uint64_t page_size)
{
	struct prealloc_ledger_entry e = { .size = sizeof(e) };
	uint64_t pages = 0;

	for (unsigned int i = 0; prealloc_ledger_entry(run->ctx, i, &e) == 0; i++)
		if (e.state == PREALLOC_LEDGER_HELD && !strcmp(e.owner, run->holder) &&
		    e.node == node && e.page_size == page_size)
			pages += e.pages;
	return pages;
}

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
		.reserve_timeout_ms = run->set.deadline_s * 500,
		.lock_timeout_ms = run->set.deadline_s * 400,
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
	/* On failure the reservations not committed roll back as they are freed. */
	for (unsigned int k = 0; k < nr; k++)
		prealloc_reservation_free(resv[k]);
	if (r < 0)
		run_warm_give(run);
	return r;
}
