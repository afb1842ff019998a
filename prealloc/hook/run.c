/* SPDX-License-Identifier: MIT */
/*
 * One invocation: libvirt's settings, domain and host turned into the
 * front-end layer's guest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "run.h"

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

static const struct guest_words libvirt_words = {
	.noun = "domain",
	.dir = "memory_backing_dir",
	.grow_off = "set grow_pools = yes in " HOOK_CONF " to grow the pool, or shrink the guest",
	.warm_off = "warm is off (warm = yes in " HOOK_CONF ", or warm='yes' in the domain's "
		    "<metadata>)",
	.vmm = "QEMU",
	.shared_how = "<access mode='shared'/>",
	.private_why = "its cell's memAccess or the domain's access",
	.private_opt = "share=off",
};

static int host_fill(struct hook_run *run)
{
	int nodes[PREALLOC_MAX_NODES], n = prealloc_nodes(run->g.ctx, nodes, PREALLOC_MAX_NODES);

	if (n < 0)
		return n;
	for (int i = 0; i < n && run->host.nr_nodes < DOM_MAX_NODES; i++)
		run->host.nodes[run->host.nr_nodes++] = nodes[i];
	run->host.default_page = settings_libvirt_default_page(&run->set, default_hugepage());
	run->host.auto_rule = run->set.auto_rule;
	/* Unreadable: on disk, as far as the hook goes (nothing to pre-fault or link). */
	guest_dir_page(run->g.mount, &run->host.backing_page);
	return 0;
}

static bool tri(int v, bool host)
{
	return v == TRI_UNSET ? host : v == TRI_YES;
}

/* The domain as the front-end layer's guest: who holds it, for how long, what it may do. */
static void guest_fill(struct hook_run *run)
{
	struct guest *g = &run->g;
	bool files_shared = true;

	for (unsigned int i = 0; i < g->demand.nr_backends; i++)
		if (g->demand.backends[i].file && !g->demand.backends[i].shared)
			files_shared = false;

	snprintf(g->name, sizeof(g->name), "%s", run->dom.name);
	snprintf(g->holder, sizeof(g->holder), HOLDER_PREFIX "%s", run->dom.uuid);
	snprintf(g->check, sizeof(g->check), "%s/%s.xml", run->set.status_dir, run->dom.name);
	snprintf(g->tenant, sizeof(g->tenant), "%s", run->dom.tenant);
	g->has_owner = run->dom.has_dac;
	g->uid = run->dom.uid;
	g->gid = run->dom.gid;
	g->mount_page = run->host.backing_page;
	g->deadline_s = run->set.deadline_s;
	g->expires = (int64_t)time(NULL) + run->set.start_grace_s;
	g->deadline = now_seconds() + run->set.deadline_s;
	g->grow_pools = tri(run->dom.grow_pools, run->set.grow_pools);
	g->pinned = domain_pinned(&run->dom);
	g->prefault = hostdev_prefault(&run->dom, run->set.prefault, run->set.prefault_pinned,
				       files_shared);
	g->warm = tri(run->dom.warm, run->set.warm);
}

int run_init(struct hook_run *run, guest_log_fn *log, const char *xml, size_t len)
{
	struct prealloc_ctx_opts co = { .size = sizeof(co) };
	struct guest *g = &run->g;
	char why[512] = "";
	int r;

	g->log = log;
	g->words = &libvirt_words;
	g->cancel_fd = -1;	/* the stage's deadline (and alarm) bounds it */
	r = settings_load(HOOK_CONF, &run->set, why, sizeof(why));
	if (r == 0)
		r = settings_backing_dir(&run->set, run->backing_dir, sizeof(run->backing_dir), why,
					 sizeof(why));
	if (r == 0) {
		size_t n = strlen(run->backing_dir), suffix = strlen("/libvirt/qemu");

		snprintf(g->mount, sizeof(g->mount), "%.*s",
			 (int)(n > suffix ? n - suffix : n), run->backing_dir);
		r = domain_parse(xml, len, &run->dom, why, sizeof(why));
	}
	if (r < 0) {
		snprintf(g->msg, sizeof(g->msg), "%s", why[0] ? why : strerror(-r));
		return r;
	}
	co.state_dir = run->set.state_dir[0] ? run->set.state_dir : NULL;
	r = prealloc_ctx_new_opts(&co, &g->ctx);
	if (r == 0)
		r = host_fill(run);
	if (r < 0) {
		snprintf(g->msg, sizeof(g->msg), "libprealloc: %s", strerror(-r));
		return r;
	}
	r = domain_demand(&run->dom, &run->host, &g->demand, why, sizeof(why));
	if (r < 0) {
		snprintf(g->msg, sizeof(g->msg), "%s: %s", run->dom.name, why);
		return r;
	}
	guest_fill(run);
	return 0;
}

void run_free(struct hook_run *run)
{
	prealloc_ctx_free(run->g.ctx);
	run->g.ctx = NULL;
}
