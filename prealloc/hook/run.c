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

#include "clock.h"
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
	run->deadline = now_seconds() + run->set.deadline_s;
	run->reserve = tri(run->dom.reserve, run->set.reserve);
	run->prefault = tri(run->dom.prefault, run->set.prefault);
	run->warm = tri(run->dom.warm, run->set.warm);
	return 0;
}

unsigned int run_wait_ms(const struct hook_run *run, unsigned int want_ms, double share)
{
	double left_ms = (run->deadline - now_seconds()) * 1000 * share;

	return left_ms < 1 ? 1 : left_ms < want_ms ? (unsigned int)left_ms : want_ms;
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
	struct prealloc_record_info info = { .size = sizeof(info) };
	uint64_t pages = 0, warm = 0;

	/* The holder's claims, its warm files apart (their pages serve their own backend). */
	for (unsigned int i = 0; prealloc_ledger_entry(run->ctx, i, &e) == 0; i++)
		if (e.state == PREALLOC_LEDGER_HELD && !strcmp(e.owner, run->holder) &&
		    e.node == node && e.page_size == page_size)
			pages += e.pages;
	for (unsigned int k = 0; prealloc_record(run->ctx, k, &info) == 0; k++)
		if (info.warm && info.warm_node == node && info.page_size == page_size &&
		    info.owner == PREALLOC_OWNER_HOLDER && !strcmp(info.holder, run->holder))
			warm += info.pages;
	return pages > warm ? pages - warm : 0;
}
