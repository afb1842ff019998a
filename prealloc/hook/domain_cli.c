/* SPDX-License-Identifier: MIT */
/*
 * prealloc-domain: what the libvirt hook would do for a defined domain, and
 * the same ahead of time. A binary of its own, so that libprealloc and the
 * core `prealloc` CLI never link libvirt.
 *
 *   prealloc-domain [-c URI] NAME [--json]        its demand: needs, files to pre-fault
 *   prealloc-domain [-c URI] NAME --claim [--for SECONDS]   (--reserve: its 0.1 name)
 *   prealloc-domain [-c URI] NAME --release
 *   prealloc-domain [-c URI] --gc                 gc, asking libvirt which domains live
 *
 * Exit: 0 done, 1 error, 2 usage, 3 refused (the pools cannot hold it).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "run.h"

static bool quiet;

/* What the run did, to stderr; with --json only warnings and errors. */
static void domain_vlog(int level, const char *fmt, va_list ap)
{
	if (quiet && level > 4)
		return;
	fprintf(stderr, "prealloc-domain: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Libvirt knows: 1 defined and running, 0 undefined, -EAGAIN defined but off (record decides). */
static int holder_alive(void *userdata, const char *holder)
{
	virConnectPtr conn = userdata;
	virDomainPtr dom;
	int active;

	if (strncmp(holder, HOLDER_PREFIX, strlen(HOLDER_PREFIX)))
		return -ENOENT;
	dom = virDomainLookupByUUIDString(conn, holder + strlen(HOLDER_PREFIX));
	if (!dom)
		return virGetLastErrorCode() == VIR_ERR_NO_DOMAIN ? 0 : -EIO;
	active = virDomainIsActive(dom);
	virDomainFree(dom);
	return active == 1 ? 1 : -EAGAIN;
}

/* The devices passed through and whether QEMU pins all guest RAM at start. */
static json_object *passthrough_json(const struct hook_run *run)
{
	const struct domain *d = &run->dom;
	json_object *o = json_object_new_object(), *devs = json_object_new_array();

	for (unsigned int i = 0; i < d->nr_hostdevs && i < DOM_MAX_HOSTDEVS; i++)
		json_object_array_add(devs, json_object_new_string(d->hostdevs[i].addr));
	json_object_object_add(o, "devices", devs);
	json_object_object_add(o, "count", json_object_new_int((int)d->nr_hostdevs));
	json_object_object_add(o, "viommu", json_object_new_boolean(d->viommu));
	json_object_object_add(o, "pinned_at_start", json_object_new_boolean(run->g.pinned));
	return o;
}

/* What the pin at start meets in a backend that starts this way; NULL: no pin at start. */
static const char *pin_note(const struct hook_run *run, const char *start)
{
	if (!run->g.pinned)
		return NULL;
	if (!strcmp(start, "warm"))
		return "pinned at start: its pages are there, zeroed, on its node";
	if (!strcmp(start, "prefault"))
		return "pinned at start: pre-faulted by prealloc first";
	return "pinned at start: QEMU's pin faults and zeroes every page on one thread";
}

static json_object *demand_json(struct hook_run *run)
{
	json_object *o = json_object_new_object(), *needs = json_object_new_array();
	json_object *files = json_object_new_array();

	json_object_object_add(o, "domain", json_object_new_string(run->g.name));
	json_object_object_add(o, "holder", json_object_new_string(run->g.holder));
	/* "reserve": the key before "grow_pools" (docs/libvirt.md), kept. */
	json_object_object_add(o, "reserve", json_object_new_boolean(run->g.grow_pools));
	json_object_object_add(o, "grow_pools", json_object_new_boolean(run->g.grow_pools));
	json_object_object_add(o, "prefault", json_object_new_boolean(run->g.prefault));
	json_object_object_add(o, "warm", json_object_new_boolean(run->g.warm));
	json_object_object_add(o, "needs", needs);
	json_object_object_add(o, "files", files);
	json_object_object_add(o, "backends", json_object_new_array());
	json_object_object_add(o, "passthrough", passthrough_json(run));
	return o;
}

/* Backend i as a start now would take it: warm, pre-faulted, or left to QEMU. */
static void backend_show(struct hook_run *run, unsigned int i, json_object *backends)
{
	const struct guest_backend *be = &run->g.demand.backends[i];
	char why[512], path[4096] = "", nodes[64] = "";
	bool warm = guest_warm_plan(&run->g, i, why, sizeof(why));
	const char *start = warm ? "warm" : guest_prefaulted(&run->g, i) ? "prefault" : "qemu";
	const char *pin = pin_note(run, start);

	for (unsigned int k = 0; k < be->nr_nodes; k++)
		snprintf(nodes + strlen(nodes), sizeof(nodes) - strlen(nodes), "%s%d", k ? "," : "",
			 be->nodes[k]);
	if (be->file)
		run_backend_path(run, i, path, sizeof(path));
	if (backends) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "alias", json_object_new_string(be->alias));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)be->bytes));
		json_object_object_add(o, "page_size", json_object_new_int64((int64_t)be->page_size));
		json_object_object_add(o, "nodes", json_object_new_string(nodes));
		json_object_object_add(o, "path", path[0] ? json_object_new_string(path) : NULL);
		json_object_object_add(o, "start", json_object_new_string(start));
		json_object_object_add(o, "warm", json_object_new_boolean(warm));
		json_object_object_add(o, "warm_why", json_object_new_string(why));
		json_object_object_add(o, "pin", pin ? json_object_new_string(pin) : NULL);
		json_object_array_add(backends, o);
		return;
	}
	printf("  %s: %llu MiB on node(s) %s, start %s (%s)%s%s\n", be->alias,
	       (unsigned long long)(be->bytes >> 20), nodes[0] ? nodes : "-", start, why,
	       pin ? "; " : "", pin ? pin : "");
}

static void need_show(struct hook_run *run, const struct guest_need *n, json_object *needs)
{
	struct prealloc_pool_status st = { .size = sizeof(st) };
	uint64_t pages = n->bytes / n->page_size;
	uint64_t claimed = guest_claimed(&run->g, n->node, n->page_size);
	uint64_t avail = 0, grow = 0, want = pages > claimed ? pages - claimed : 0;
	char pl[16];

	if (prealloc_pool_status(run->g.ctx, n->node, n->page_size, &st) == 0)
		avail = st.free > st.promised ? st.free - st.promised : 0;
	grow = want > avail ? want - avail : 0;
	guest_page_label(n->page_size, pl, sizeof(pl));
	if (needs) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "node", json_object_new_int(n->node));
		json_object_object_add(o, "page_size", json_object_new_int64((int64_t)n->page_size));
		json_object_object_add(o, "pages", json_object_new_int64((int64_t)pages));
		json_object_object_add(o, "claimed", json_object_new_int64((int64_t)claimed));
		json_object_object_add(o, "free", json_object_new_int64((int64_t)avail));
		json_object_object_add(o, "grow", json_object_new_int64((int64_t)grow));
		json_object_array_add(needs, o);
		return;
	}
	printf("  node %d, %s pages: %llu needed, %llu claimed already, %llu free, %llu to grow\n",
	       n->node, pl, (unsigned long long)pages, (unsigned long long)claimed,
	       (unsigned long long)avail, (unsigned long long)grow);
}

static void demand_show(struct hook_run *run, bool json)
{
	json_object *o = json ? demand_json(run) : NULL;
	json_object *needs = o ? json_object_object_get(o, "needs") : NULL;
	json_object *files = o ? json_object_object_get(o, "files") : NULL;
	json_object *backends = o ? json_object_object_get(o, "backends") : NULL;
	char path[4096];

	if (!json)
		printf("domain %s (holder %s): grow_pools %s, prefault %s, warm %s\n", run->g.name,
		       run->g.holder, run->g.grow_pools ? "yes" : "no", run->g.prefault ? "yes" : "no",
		       run->g.warm ? "yes" : "no");
	if (!json && run->dom.nr_hostdevs) {
		char devs[256];

		hostdev_list(&run->dom, devs, sizeof(devs));
		printf("  passthrough: %u device(s) through VFIO (%s): %s\n", run->dom.nr_hostdevs,
		       devs, run->g.pinned ? "all guest RAM pinned at start"
		       : "behind a vIOMMU, pinned as the guest maps it");
	}
	for (unsigned int i = 0; i < run->g.demand.nr_needs; i++)
		need_show(run, &run->g.demand.needs[i], needs);
	for (unsigned int i = 0; i < run->g.demand.nr_backends; i++) {
		if (!guest_prefaulted(&run->g, i) ||
		    run_backend_path(run, i, path, sizeof(path)) < 0)
			continue;
		if (json)
			json_object_array_add(files, json_object_new_string(path));
		else
			printf("  pre-fault %s: %llu MiB\n", path,
			       (unsigned long long)(run->g.demand.backends[i].bytes >> 20));
	}
	for (unsigned int i = 0; i < run->g.demand.nr_backends; i++)
		backend_show(run, i, backends);
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							  JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
}

static int gc(virConnectPtr conn)
{
	struct prealloc_ctx *ctx;
	struct hook_settings set;
	struct prealloc_ctx_opts co = { .size = sizeof(co) };
	uint64_t returned = 0;
	unsigned int settled = 0;
	char why[512] = "";
	int r = settings_load(HOOK_CONF, &set, why, sizeof(why));

	if (r < 0) {
		fprintf(stderr, "prealloc-domain: %s\n", why);
		return 1;
	}
	co.state_dir = set.state_dir[0] ? set.state_dir : NULL;
	r = prealloc_ctx_new_opts(&co, &ctx);
	if (r == 0) {
		prealloc_ctx_set_holder_alive(ctx, holder_alive, conn);
		r = prealloc_store_gc(ctx, &returned, &settled);
		prealloc_ctx_free(ctx);
	}
	if (r < 0) {
		fprintf(stderr, "prealloc-domain: gc: %s\n", strerror(-r));
		return 1;
	}
	printf("gc: %u records settled, %llu hugepages given back\n", settled,
	       (unsigned long long)returned);
	return 0;
}

static int act(virConnectPtr conn, const char *name, int what, bool json, unsigned int for_s)
{
	virDomainPtr dom = virDomainLookupByName(conn, name);
	struct hook_run *run = calloc(1, sizeof(*run));
	char *xml = dom ? virDomainGetXMLDesc(dom, 0) : NULL;
	uint64_t returned = 0;
	int r, rc = 0;

	if (!xml || !run) {
		fprintf(stderr, "prealloc-domain: no domain %s\n", name);
		rc = 1;
		goto out;
	}
	r = run_init(run, domain_vlog, xml, strlen(xml));
	if (r == 0 && what == 'r' && virDomainIsActive(dom) == 1) {
		/* Its pages and warm files are held already: a second claim would double them. */
		snprintf(run->g.msg, sizeof(run->g.msg), "domain %s is running: --claim is for a "
			 "domain about to start", name);
		r = -EBUSY;
	}
	if (r == 0 && what == 'r') {
		run->g.expires = (int64_t)time(NULL) + for_s;
		r = guest_claim(&run->g);
		if (r == 0)
			printf("claimed for %s until it starts, or %u s\n", run->g.holder, for_s);
	} else if (r == 0 && what == 'R') {
		r = guest_release(&run->g, &returned);
		if (r == 0)
			printf("released %s: %llu hugepages given back\n", run->g.holder,
			       (unsigned long long)returned);
	} else if (r == 0) {
		demand_show(run, json);
	}
	if (r < 0) {
		fprintf(stderr, "prealloc-domain: %s\n", run->g.msg[0] ? run->g.msg : strerror(-r));
		rc = r == -ENOMEM || r == -EDQUOT ? 3 : 1;
	}
	run_free(run);
out:
	free(xml);
	free(run);
	if (dom)
		virDomainFree(dom);
	return rc;
}

/* --help: to stdout, exit 0; a usage error: to stderr, exit 2. */
static int usage(FILE *f, int rc)
{
	fprintf(f, "usage: prealloc-domain [-c URI] NAME [--json | --claim [--for SECONDS] |"
		" --release]\n       prealloc-domain [-c URI] --gc\n");
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "connect", required_argument, NULL, 'c' }, { "claim", no_argument, NULL, 'r' },
		{ "reserve", no_argument, NULL, 'r' },	/* 0.1's name of --claim, hidden */
		{ "release", no_argument, NULL, 'R' },	     { "gc", no_argument, NULL, 'g' },
		{ "for", required_argument, NULL, 'f' },     { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },	     {}
	};
	const char *uri = "qemu:///system";
	unsigned int for_s = 3600;
	int c, what = 0, rc;
	bool json = false;
	virConnectPtr conn;

	/* --help or -h wherever it stands (before "--"): no usage error comes first. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return usage(stdout, 0);
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		if (c == 'c')
			uri = optarg;
		else if (c == 'r' || c == 'R' || c == 'g')
			what = c;
		else if (c == 'f')
			for_s = (unsigned int)strtoul(optarg, NULL, 10);
		else if (c == 'j')
			json = true;
		else
			return usage(c == 'h' ? stdout : stderr, c == 'h' ? 0 : 2);
	}
	if ((what == 'g') != (optind == argc) || optind + 1 < argc || !for_s)
		return usage(stderr, 2);
	quiet = json;
	conn = virConnectOpen(uri);
	if (!conn) {
		fprintf(stderr, "prealloc-domain: cannot connect to %s\n", uri);
		return 1;
	}
	rc = what == 'g' ? gc(conn) : act(conn, argv[optind], what, json, for_s);
	virConnectClose(conn);
	return rc;
}
