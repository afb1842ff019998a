/* SPDX-License-Identifier: MIT */
/*
 * What `prealloc-domain NAME [--json]` prints (docs/libvirt.md) as
 * domain_cli.c renders it, from a run whose every field has its own value:
 * the front-end layer's guest_* calls and the pool status it reads are defined here,
 * so each key and column of a need (pages, claimed, free, grow) and of a
 * backend (bytes, page_size, start, warm) can be held to the field it
 * comes from, and the run's switches (grow_pools, prefault, warm) to theirs.
 * A field rendered from its neighbour fails. domain_cli.c keeps its
 * rendering static, so it is included here whole (its main() renamed).
 */
#define main prealloc_domain_main
#include "domain_cli.c"
#undef main

#include "json-check.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)
#define P2M (UINT64_C(2) << 20)

/* ---- what the run and the library answer --------------------------------- */

/* Per backend: whether a start now is warm (and why), pre-faulted, and its path. */
static const struct {
	bool warm, prefaulted;
	const char *why, *path;
} fake_backends[] = {
	{ true, false, "a READY file of its size on node 3",
	  "/dev/hugepages/libvirt/qemu/1-g/ram-node0" },
	{ false, true, "no warm target for 1G on node 4",
	  "/dev/hugepages-1G/libvirt/qemu/1-g/dimm0" },
	{ false, false, "not a file", "" },
};

/* Per need: what the holder has claimed, and the pool's free and promised pages. */
static const struct {
	int node;
	uint64_t page_size, claimed, free, promised;
} fake_pools[] = {
	{ 3, P2M, 200, 450, 50 },	/* 700 pages: 500 wanted, 400 free, 100 to grow */
	{ 4, GiB, 1, 6, 1 },		/* 9 pages: 8 wanted, 5 free, 3 to grow */
};

bool guest_warm_plan(struct guest *g, unsigned int i, char *why, size_t len)
{
	(void)g;
	snprintf(why, len, "%s", fake_backends[i].why);
	return fake_backends[i].warm;
}

bool guest_prefaulted(const struct guest *g, unsigned int i)
{
	(void)g;
	return fake_backends[i].prefaulted;
}

int run_backend_path(const struct hook_run *run, unsigned int i, char *buf, size_t len)
{
	(void)run;
	snprintf(buf, len, "%s", fake_backends[i].path);
	return 0;
}

uint64_t guest_claimed(struct guest *g, int node, uint64_t page_size)
{
	(void)g;
	for (size_t i = 0; i < sizeof(fake_pools) / sizeof(fake_pools[0]); i++)
		if (fake_pools[i].node == node && fake_pools[i].page_size == page_size)
			return fake_pools[i].claimed;
	return 0;
}

int prealloc_pool_status(struct prealloc_ctx *ctx, int node, uint64_t page_size,
			 struct prealloc_pool_status *ret)
{
	(void)ctx;
	for (size_t i = 0; i < sizeof(fake_pools) / sizeof(fake_pools[0]); i++)
		if (fake_pools[i].node == node && fake_pools[i].page_size == page_size) {
			ret->free = fake_pools[i].free;
			ret->promised = fake_pools[i].promised;
			return 0;
		}
	return -ENOENT;
}

const char *guest_page_label(uint64_t page_size, char *buf, size_t len)
{
	snprintf(buf, len, "%s", page_size == GiB ? "1G" : page_size == P2M ? "2M" : "4K");
	return buf;
}

/* The devices' list (hostdev.c's, tested by libvirt-demand): its count, to tell it apart. */
void hostdev_list(const struct domain *d, char *buf, size_t len)
{
	snprintf(buf, len, "the list of %u", d->nr_hostdevs);
}

/* What the rest of prealloc-domain calls: never reached by these checks. */
int run_init(struct hook_run *run, guest_log_fn *log, const char *xml, size_t len)
{
	(void)run, (void)log, (void)xml, (void)len;
	return -ENOSYS;
}

int run_claim(struct hook_run *run)
{
	(void)run;
	return -ENOSYS;
}

int guest_release(struct guest *g, uint64_t *ret_returned)
{
	(void)g, (void)ret_returned;
	return -ENOSYS;
}

void run_free(struct hook_run *run)
{
	(void)run;
}

int settings_load(const char *path, struct hook_settings *s, char *why, size_t why_len)
{
	(void)path, (void)s, (void)why, (void)why_len;
	return -ENOSYS;
}

int prealloc_ctx_new_opts(const struct prealloc_ctx_opts *opts, struct prealloc_ctx **ret_ctx)
{
	(void)opts, (void)ret_ctx;
	return -ENOSYS;
}

void prealloc_ctx_set_holder_alive(struct prealloc_ctx *ctx,
				   int (*fn)(void *userdata, const char *holder), void *userdata)
{
	(void)ctx, (void)fn, (void)userdata;
}

int prealloc_store_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned,
		      unsigned int *ret_entries)
{
	(void)ctx, (void)ret_returned, (void)ret_entries;
	return -ENOSYS;
}

void prealloc_ctx_free(struct prealloc_ctx *ctx)
{
	(void)ctx;
}

/* ---- the run: a domain of three backends over two needs ------------------ */

static struct hook_run *run_new(bool grow_pools, bool prefault, bool warm)
{
	struct hook_run *run = calloc(1, sizeof(*run));
	struct guest_demand *d;

	if (!run)
		return NULL;
	snprintf(run->g.name, sizeof(run->g.name), "g");
	snprintf(run->g.holder, sizeof(run->g.holder), "libvirt:0f1e2d3c");
	run->g.grow_pools = grow_pools;
	run->g.prefault = prefault;
	run->g.warm = warm;
	d = &run->g.demand;
	d->nr_needs = 2;
	d->needs[0] = (struct guest_need){ .node = 3, .page_size = P2M, .bytes = 700 * P2M };
	d->needs[1] = (struct guest_need){ .node = 4, .page_size = GiB, .bytes = 9 * GiB };
	d->nr_backends = 3;
	d->backends[0] = (struct guest_backend){ .alias = "ram-node0", .bytes = 1400 * MiB,
					       .page_size = P2M, .file = true, .nr_nodes = 1,
					       .nodes = { 3 }, .node_bytes = { 1400 * MiB } };
	d->backends[1] = (struct guest_backend){ .alias = "dimm0", .bytes = 9 * GiB,
					       .page_size = GiB, .file = true, .nr_nodes = 2,
					       .nodes = { 4, 5 }, .node_bytes = { 5 * GiB, 4 * GiB } };
	d->backends[2] = (struct guest_backend){ .alias = "virtiomem0", .bytes = 512 * MiB,
					       .page_size = 0, .file = false };
	return run;
}

/* The same run with three devices passed through, its RAM pinned at start (or not, viommu). */
static struct hook_run *run_pinned(bool viommu)
{
	struct hook_run *run = run_new(true, true, true);

	if (!run)
		return NULL;
	run->dom.nr_hostdevs = 3;
	run->dom.hostdevs[0] = (struct dom_hostdev){ HOSTDEV_PCI, "0000:00:03.0" };
	run->dom.hostdevs[1] = (struct dom_hostdev){ HOSTDEV_INTERFACE, "0000:81:10.1" };
	run->dom.hostdevs[2] = (struct dom_hostdev){ HOSTDEV_NVME, "10000:02:00.0" };
	run->dom.viommu = viommu;
	run->g.pinned = !viommu;
	return run;
}

/* What each start of run_new's backends tells a guest pinned at start (pin_note). */
static const char *const pin_notes[] = {
	"pinned at start: its pages are there, zeroed, on its node",
	"pinned at start: pre-faulted by prealloc first",
	"pinned at start: QEMU's pin faults and zeroes every page on one thread",
};

static json_object *demand_document(struct hook_run *run)
{
	struct capture c;
	char *text;
	json_object *o;

	capture_begin(&c);
	demand_show(run, true);
	text = capture_end(&c);
	o = text && text[0] ? json_tokener_parse(text) : NULL;
	free(text);
	return o;
}

static void need_matches(json_object *j, int node, uint64_t page_size, uint64_t pages,
			 uint64_t claimed, uint64_t free_pages, uint64_t grow)
{
	static const char *const keys[] = { "node", "page_size", "pages", "claimed", "free",
		"grow", NULL };
	char what[32];

	snprintf(what, sizeof(what), "need node %d", node);
	has_keys(j, what, keys);
	is_int(j, what, "node", node);
	is_u64(j, what, "page_size", page_size);
	is_u64(j, what, "pages", pages);
	is_u64(j, what, "claimed", claimed);
	is_u64(j, what, "free", free_pages);
	is_u64(j, what, "grow", grow);
}

static void backend_matches(json_object *j, unsigned int i, const char *nodes,
			    const char *start, bool pinned)
{
	static const char *const keys[] = { "alias", "bytes", "page_size", "nodes", "path",
		"start", "warm", "warm_why", "pin", NULL };
	const struct guest_backend *be;
	struct hook_run *shape = run_new(false, false, false);
	char what[32];

	if (!shape)
		return;
	be = &shape->g.demand.backends[i];
	snprintf(what, sizeof(what), "backend %s", be->alias);
	has_keys(j, what, keys);
	is_string(j, what, "alias", be->alias);
	is_u64(j, what, "bytes", be->bytes);
	is_u64(j, what, "page_size", be->page_size);
	is_string(j, what, "nodes", nodes);
	if (fake_backends[i].path[0] && be->file)
		is_string(j, what, "path", fake_backends[i].path);
	else
		is_null(j, what, "path");
	is_string(j, what, "start", start);
	is_bool(j, what, "warm", fake_backends[i].warm);
	is_string(j, what, "warm_why", fake_backends[i].why);
	if (pinned)
		is_string(j, what, "pin", pin_notes[i]);
	else
		is_null(j, what, "pin");
	free(shape);
}

/* The document's passthrough: the devices in order, their count, vIOMMU, pinned. */
static void passthrough_matches(json_object *o, const char *what, const struct hook_run *run)
{
	static const char *const keys[] = { "devices", "count", "viommu", "pinned_at_start",
		NULL };
	json_object *p = json_object_object_get(o, "passthrough");
	json_object *a = p ? json_object_object_get(p, "devices") : NULL;
	bool same = a && json_object_array_length(a) == run->dom.nr_hostdevs;
	char w[64];

	snprintf(w, sizeof(w), "%s: passthrough", what);
	has_keys(p, w, keys);
	for (unsigned int i = 0; same && i < run->dom.nr_hostdevs; i++)
		same = !strcmp(json_object_get_string(json_object_array_get_idx(a, i)),
			       run->dom.hostdevs[i].addr);
	tap_ok(same, "%s: devices, each address in order (%u)", w, run->dom.nr_hostdevs);
	is_int(p, w, "count", (int)run->dom.nr_hostdevs);
	is_bool(p, w, "viommu", run->dom.viommu);
	is_bool(p, w, "pinned_at_start", run->g.pinned);
}

static void test_json(void)
{
	/* "reserve": grow_pools's key before it, still there (docs/libvirt.md). */
	static const char *const keys[] = { "domain", "holder", "reserve", "grow_pools",
		"prefault", "warm", "needs", "files", "backends", "passthrough", NULL };
	/* Each pair of switches differs in one of the two runs: none can carry another. */
	static const bool switches[2][3] = { { true, false, true }, { true, true, false } };

	for (unsigned int k = 0; k < 2; k++) {
		struct hook_run *run = run_new(switches[k][0], switches[k][1], switches[k][2]);
		json_object *o = run ? demand_document(run) : NULL, *a;
		char what[32];

		snprintf(what, sizeof(what), "domain run %u", k);
		if (!tap_ok(o != NULL, "%s: the document parses", what)) {
			free(run);
			continue;
		}
		has_keys(o, what, keys);
		is_string(o, what, "domain", "g");
		is_string(o, what, "holder", "libvirt:0f1e2d3c");
		is_bool(o, what, "grow_pools", switches[k][0]);
		is_bool(o, what, "reserve", switches[k][0]);
		is_bool(o, what, "prefault", switches[k][1]);
		is_bool(o, what, "warm", switches[k][2]);
		passthrough_matches(o, what, run);
		if (k == 0) {
			a = json_object_object_get(o, "needs");
			if (tap_ok(a && json_object_array_length(a) == 2, "needs: two, in order")) {
				need_matches(json_object_array_get_idx(a, 0), 3, P2M, 700, 200,
					     400, 100);
				need_matches(json_object_array_get_idx(a, 1), 4, GiB, 9, 1, 5, 3);
			}
			/* Only the backend the hook pre-faults is a file to pre-fault. */
			a = json_object_object_get(o, "files");
			tap_ok(a && json_object_array_length(a) == 1 &&
				       !strcmp(json_object_get_string(json_object_array_get_idx(a, 0)),
					       fake_backends[1].path),
			       "files: the pre-faulted backend's path alone");
			a = json_object_object_get(o, "backends");
			if (tap_ok(a && json_object_array_length(a) == 3, "backends: three, in order")) {
				backend_matches(json_object_array_get_idx(a, 0), 0, "3", "warm", false);
				backend_matches(json_object_array_get_idx(a, 1), 1, "4,5", "prefault",
						false);
				backend_matches(json_object_array_get_idx(a, 2), 2, "", "qemu", false);
			}
		}
		json_object_put(o);
		free(run);
	}
}

/* A guest with devices passed through: pinned at start, or behind a vIOMMU. */
static void test_json_pinned(void)
{
	for (int viommu = 0; viommu < 2; viommu++) {
		struct hook_run *run = run_pinned(viommu);
		json_object *o = run ? demand_document(run) : NULL, *a;
		const char *what = viommu ? "behind a vIOMMU" : "pinned";

		if (!tap_ok(o != NULL, "%s: the document parses", what)) {
			free(run);
			continue;
		}
		passthrough_matches(o, what, run);
		a = json_object_object_get(o, "backends");
		if (tap_ok(a && json_object_array_length(a) == 3, "%s: backends: three", what)) {
			backend_matches(json_object_array_get_idx(a, 0), 0, "3", "warm", !viommu);
			backend_matches(json_object_array_get_idx(a, 1), 1, "4,5", "prefault",
					!viommu);
			backend_matches(json_object_array_get_idx(a, 2), 2, "", "qemu", !viommu);
		}
		json_object_put(o);
		free(run);
	}
}

/* The table demand_show prints for run (freed here); NULL when it cannot be had. */
static char *table_of(struct hook_run *run)
{
	struct capture c;
	char *text;

	if (!run)
		return NULL;
	capture_begin(&c);
	demand_show(run, false);
	text = capture_end(&c);
	free(run);
	return text;
}

static void test_human(void)
{
	char *text = table_of(run_new(true, false, true));

	if (!tap_ok(text != NULL, "domain: the table renders"))
		return;
	is_line(text, 0, "domain g (holder libvirt:0f1e2d3c): grow_pools yes, prefault no, warm yes");
	is_line(text, 1, "  node 3, 2M pages: 700 needed, 200 claimed already, 400 free, "
			 "100 to grow");
	is_line(text, 2, "  node 4, 1G pages: 9 needed, 1 claimed already, 5 free, 3 to grow");
	is_line(text, 3, "  pre-fault /dev/hugepages-1G/libvirt/qemu/1-g/dimm0: 9216 MiB");
	is_line(text, 4, "  ram-node0: 1400 MiB on node(s) 3, start warm "
			 "(a READY file of its size on node 3)");
	is_line(text, 5, "  dimm0: 9216 MiB on node(s) 4,5, start prefault "
			 "(no warm target for 1G on node 4)");
	is_line(text, 6, "  virtiomem0: 512 MiB on node(s) -, start qemu (not a file)");
	is_line(text, 7, "");
	free(text);

	/* The switches the other way: grow_pools yes, prefault yes, warm no. */
	text = table_of(run_new(true, true, false));
	if (text)
		is_line(text, 0, "domain g (holder libvirt:0f1e2d3c): grow_pools yes, prefault yes, "
				 "warm no");
	free(text);

	/* Devices passed through: a line for them, and each backend's pin. */
	for (int viommu = 0; viommu < 2; viommu++) {
		text = table_of(run_pinned(viommu));
		if (!tap_ok(text != NULL, "pinned %d: the table renders", viommu))
			return;
		is_line(text, 1, viommu ? "  passthrough: 3 device(s) through VFIO (the list of 3): "
					  "behind a vIOMMU, pinned as the guest maps it"
				 : "  passthrough: 3 device(s) through VFIO (the list of 3): all guest "
				   "RAM pinned at start");
		is_line(text, 5, viommu ? "  ram-node0: 1400 MiB on node(s) 3, start warm "
					  "(a READY file of its size on node 3)"
				 : "  ram-node0: 1400 MiB on node(s) 3, start warm (a READY file of its "
				   "size on node 3); pinned at start: its pages are there, zeroed, on "
				   "its node");
		is_line(text, 7, viommu ? "  virtiomem0: 512 MiB on node(s) -, start qemu (not a file)"
				 : "  virtiomem0: 512 MiB on node(s) -, start qemu (not a file); pinned "
				   "at start: QEMU's pin faults and zeroes every page on one thread");
		free(text);
	}
}

int main(void)
{
	test_json();
	test_json_pinned();
	test_human();
	return tap_done();
}
