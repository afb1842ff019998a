/* SPDX-License-Identifier: MIT */
/*
 * Domain XML -> struct domain, with libxml2 (no network, no entity
 * expansion). Everything the XML says that the hook cannot honour (a size
 * without a valid unit, a nodeset naming node 64 or more) is an error with
 * its element named, never a silent default.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xpath.h>
#include <libxml/xpathInternals.h>

#include "domain.h"
#include "domain_xml.h"

/* libvirt's units: b, KB/MB/GB/TB decimal, k/KiB, M/MiB, G/GiB, T/TiB binary; "" = KiB. */
static int unit_scale(const char *u, uint64_t *ret)
{
	static const struct { const char *name; uint64_t scale; } units[] = {
		{ "", 1024 }, { "b", 1 }, { "bytes", 1 }, { "KB", 1000 }, { "k", 1024 },
		{ "KiB", 1024 }, { "MB", 1000000 }, { "M", 1 << 20 }, { "MiB", 1 << 20 },
		{ "GB", 1000000000 }, { "G", 1 << 30 }, { "GiB", 1 << 30 },
		{ "TB", 1000000000000ULL }, { "T", 1ULL << 40 }, { "TiB", 1ULL << 40 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(u, units[i].name)) {
			*ret = units[i].scale;
			return 0;
		}
	return -EINVAL;
}

/* The size in element at expr (text) with its unit attribute; 0 absent. */
static int xsize(struct px *p, xmlNodePtr node, const char *expr, const char *unit_expr,
		 uint64_t *ret)
{
	char num[64], unit[32] = "", *end;
	unsigned long long v;
	uint64_t scale;

	*ret = 0;
	if (!px_str(p, node, expr, num, sizeof(num)))
		return 0;
	px_str(p, node, unit_expr, unit, sizeof(unit));
	errno = 0;
	v = strtoull(num, &end, 10);
	if (errno || end == num || *end || num[0] == '-' || unit_scale(unit, &scale) < 0 ||
	    (scale && v > UINT64_MAX / scale))
		return px_bad(p, "%s: bad size '%s' unit '%s'", expr, num, unit);
	*ret = v * scale;
	return 0;
}

/* "0-3,^2,5" -> bitmap; nodes at or past DOM_MAX_NODES are an error. */
static int nodeset_parse(const char *s, uint64_t *ret)
{
	uint64_t set = 0, clear = 0;
	const char *c = s;

	while (*c) {
		bool neg = *c == '^';
		unsigned long a, b;
		char *end;

		c += neg;
		if (*c < '0' || *c > '9')
			return -EINVAL;
		a = b = strtoul(c, &end, 10);
		if (*end == '-') {
			if (end[1] < '0' || end[1] > '9')
				return -EINVAL;
			b = strtoul(end + 1, &end, 10);
		}
		if (a > b || b >= DOM_MAX_NODES)
			return -EINVAL;
		for (unsigned long n = a; n <= b; n++)
			*(neg ? &clear : &set) |= UINT64_C(1) << n;
		c = end;
		if (*c == ',')
			c++;
		else if (*c)
			return -EINVAL;
	}
	*ret = set & ~clear;
	return 0;
}

static int mode_parse(const char *s)
{
	static const char *const names[] = { "", "strict", "preferred", "interleave",
					     "restrictive" };

	for (int i = 1; i < 5; i++)
		if (!strcmp(s, names[i]))
			return i;
	return -1;
}

/* An access mode at expr relative to node (absent: ACCESS_DEFAULT); 0 or -EINVAL. */
static int access_parse(struct px *p, xmlNodePtr node, const char *expr, const char *what,
			int *ret)
{
	char v[32];

	*ret = ACCESS_DEFAULT;
	if (!px_str(p, node, expr, v, sizeof(v)))
		return 0;
	if (strcmp(v, "shared") && strcmp(v, "private"))
		return px_bad(p, "%s: access '%s' is neither shared nor private", what, v);
	*ret = !strcmp(v, "shared") ? ACCESS_SHARED : ACCESS_PRIVATE;
	return 0;
}

/* A binding from an element with mode/nodeset/placement attributes. */
static int binding_parse(struct px *p, xmlNodePtr n, const char *what, struct dom_binding *b)
{
	char mode[32] = "strict", nodeset[256] = "", placement[32] = "";

	px_str(p, n, "@mode", mode, sizeof(mode));
	px_str(p, n, "@placement", placement, sizeof(placement));
	b->mode = mode_parse(mode);
	if (b->mode < 0)
		return px_bad(p, "%s: unknown mode '%s'", what, mode);
	if (px_str(p, n, "@nodeset", nodeset, sizeof(nodeset))) {
		if (nodeset_parse(nodeset, &b->nodes) < 0 || !b->nodes)
			return px_bad(p, "%s: bad nodeset '%s' (nodes 0-%d)", what, nodeset,
				      DOM_MAX_NODES - 1);
	} else if (!strcmp(placement, "auto")) {
		b->automatic = true;
	} else if (!placement[0] || !strcmp(placement, "static")) {
		b->mode = MODE_NONE;	/* no nodes named: unbound */
	} else {
		return px_bad(p, "%s: unknown placement '%s'", what, placement);
	}
	return 0;
}

static int parse_numa(struct px *p, struct domain *d)
{
	xmlXPathObjectPtr o = px_nodes(p, "/domain/cpu/numa/cell");
	int r = 0;

	d->nr_cells = px_count(o);
	if (d->nr_cells > DOM_MAX_CELLS)
		r = px_bad(p, "%u NUMA cells: at most %d", d->nr_cells, DOM_MAX_CELLS);
	for (unsigned int i = 0; r == 0 && i < d->nr_cells; i++) {
		xmlNodePtr n = o->nodesetval->nodeTab[i];
		char id[16];

		d->cells[i].id = (int)i;
		if (px_str(p, n, "@id", id, sizeof(id)))
			d->cells[i].id = atoi(id);
		if (d->cells[i].id < 0 || d->cells[i].id >= DOM_MAX_CELLS)
			r = px_bad(p, "cell id '%s' out of range", id);
		else
			r = xsize(p, n, "@memory", "@unit", &d->cells[i].bytes);
		if (r == 0 && !d->cells[i].bytes)
			r = px_bad(p, "cell %d: no memory", d->cells[i].id);
		if (r == 0)
			r = access_parse(p, n, "@memAccess", "cell memAccess", &d->cells[i].access);
		d->cells[i].bind = d->bind;
	}
	xmlXPathFreeObject(o);
	if (r < 0)
		return r;
	o = px_nodes(p, "/domain/numatune/memnode");
	for (unsigned int i = 0; r == 0 && i < px_count(o); i++) {
		xmlNodePtr n = o->nodesetval->nodeTab[i];
		char id[16] = "";
		unsigned int c;

		px_str(p, n, "@cellid", id, sizeof(id));
		for (c = 0; c < d->nr_cells && d->cells[c].id != atoi(id); c++)
			;
		if (!id[0] || c == d->nr_cells)
			r = px_bad(p, "memnode cellid '%s' names no cell", id);
		else
			r = binding_parse(p, n, "memnode", &d->cells[c].bind);
	}
	xmlXPathFreeObject(o);
	return r;
}

static int parse_pages(struct px *p, struct domain *d)
{
	xmlXPathObjectPtr o = px_nodes(p, "/domain/memoryBacking/hugepages/page");
	char nodeset[256];
	int r = 0;

	d->nr_pages = px_count(o);
	if (d->nr_pages > DOM_MAX_PAGES)
		r = px_bad(p, "%u hugepage elements: at most %d", d->nr_pages, DOM_MAX_PAGES);
	for (unsigned int i = 0; r == 0 && i < d->nr_pages; i++) {
		xmlNodePtr n = o->nodesetval->nodeTab[i];

		r = xsize(p, n, "@size", "@unit", &d->pages[i].size);
		if (r == 0 && d->pages[i].size & (d->pages[i].size - 1))
			r = px_bad(p, "hugepage size %llu is not a power of two",
				   (unsigned long long)d->pages[i].size);
		if (r == 0 && px_str(p, n, "@nodeset", nodeset, sizeof(nodeset)) &&
		    (nodeset_parse(nodeset, &d->pages[i].cells) < 0 || !d->pages[i].cells))
			r = px_bad(p, "hugepage nodeset '%s' is not a list of guest cells",
				   nodeset);
	}
	xmlXPathFreeObject(o);
	return r;
}

/* libvirt 9's models, and the alias prefix it gives each (dimm and nvdimm share slots). */
#define MEM_ALIAS_COUNTERS 4	/* dimm and nvdimm, virtio-pmem, virtio-mem, sgx-epc */
static const struct {
	const char *model, *prefix;
	int counter;
} mem_models[] = {
	[MEM_DIMM] = { "dimm", "dimm", 0 },
	[MEM_NVDIMM] = { "nvdimm", "nvdimm", 0 },
	[MEM_VIRTIO_PMEM] = { "virtio-pmem", "virtiopmem", 1 },
	[MEM_VIRTIO_MEM] = { "virtio-mem", "virtiomem", 2 },
	[MEM_SGX_EPC] = { "sgx-epc", "epc", 3 },
};

/* One <devices><memory>: its model, sizes, <source>, access, target cell and alias. */
static int parse_memdev(struct px *p, xmlNodePtr n, unsigned int i,
			unsigned int counters[MEM_ALIAS_COUNTERS], struct dom_dimm *m)
{
	char model[32] = "", buf[256];
	unsigned int k;
	int r;

	px_str(p, n, "@model", model, sizeof(model));
	for (k = 0; k < sizeof(mem_models) / sizeof(mem_models[0]); k++)
		if (!strcmp(model, mem_models[k].model))
			break;
	if (k == sizeof(mem_models) / sizeof(mem_models[0]))
		return px_bad(p, "memory device %u: unknown model '%s'", i, model);
	m->model = (int)k;
	r = xsize(p, n, "target/size", "target/size/@unit", &m->bytes);
	if (r == 0 && !m->bytes)
		r = px_bad(p, "memory device %u: no target size", i);
	if (r == 0 && m->model == MEM_VIRTIO_MEM)
		r = xsize(p, n, "target/requested", "target/requested/@unit", &m->requested);
	if (r == 0)
		r = xsize(p, n, "source/pagesize", "source/pagesize/@unit", &m->page_size);
	if (r == 0 && m->page_size & (m->page_size - 1))
		r = px_bad(p, "memory device %u: page size %llu is not a power of two", i,
			   (unsigned long long)m->page_size);
	if (r == 0 && px_str(p, n, "source/nodemask", buf, sizeof(buf)) &&
	    (nodeset_parse(buf, &m->source_nodes) < 0 || !m->source_nodes))
		r = px_bad(p, "memory device %u: bad nodemask '%s' (nodes 0-%d)", i, buf,
			   DOM_MAX_NODES - 1);
	if (r == 0)
		r = access_parse(p, n, "@access", "memory device access", &m->access);
	if (r < 0)
		return r;
	m->cell = px_str(p, n, "target/node", buf, sizeof(buf)) ? atoi(buf) : -1;
	/* The live XML names it; else libvirt's: dimm/nvdimm by slot, the rest by count. */
	k = counters[mem_models[m->model].counter]++;
	if (px_str(p, n, "address[@type='dimm']/@slot", buf, sizeof(buf)))
		k = (unsigned int)strtoul(buf, NULL, 0);
	if (!px_str(p, n, "alias/@name", m->alias, sizeof(m->alias)))
		snprintf(m->alias, sizeof(m->alias), "%s%u", mem_models[m->model].prefix, k);
	return 0;
}

static int parse_dimms(struct px *p, struct domain *d)
{
	xmlXPathObjectPtr o = px_nodes(p, "/domain/devices/memory");
	unsigned int counters[MEM_ALIAS_COUNTERS] = { 0 };
	int r = 0;

	d->nr_dimms = px_count(o);
	if (d->nr_dimms > DOM_MAX_DIMMS)
		r = px_bad(p, "%u memory devices: at most %d", d->nr_dimms, DOM_MAX_DIMMS);
	for (unsigned int i = 0; r == 0 && i < d->nr_dimms; i++)
		r = parse_memdev(p, o->nodesetval->nodeTab[i], i, counters, &d->dimms[i]);
	xmlXPathFreeObject(o);
	return r;
}

static int yes_no(struct px *p, const char *attr, int *ret)
{
	char v[16], expr[128];

	snprintf(expr, sizeof(expr), "/domain/metadata/pa:config/@%s", attr);
	if (!px_str(p, NULL, expr, v, sizeof(v)))
		return 0;
	if (strcmp(v, "yes") && strcmp(v, "no"))
		return px_bad(p, "<metadata> config %s='%s': yes or no", attr, v);
	*ret = !strcmp(v, "yes") ? TRI_YES : TRI_NO;
	return 0;
}

/*
 * tenant='NAME' in <metadata>: the guest's tenant, named to the warm pool
 * at take and give, so that its files may be cleared in place for it (1 to
 * 63 printable bytes; none: every file it gave back is renewed).
 */
static int tenant_parse(struct px *p, struct domain *d)
{
	size_t n;

	if (!px_str(p, NULL, "/domain/metadata/pa:config/@tenant", d->tenant, sizeof(d->tenant)))
		return 0;
	n = strlen(d->tenant);
	for (size_t i = 0; i < n; i++)
		if (d->tenant[i] <= ' ' || d->tenant[i] > '~' || d->tenant[0] == '@')
			n = 0;
	if (n == 0 || n >= sizeof(d->tenant) - 1)
		return px_bad(p,
			      "<metadata> config tenant='%s': 1 to %zu printable characters, not "
			      "starting with '@'",
			      d->tenant, sizeof(d->tenant) - 2);
	return 0;
}

static int parse_misc(struct px *p, struct domain *d)
{
	char buf[256];
	int r;

	if (px_str(p, NULL, "/domain/memoryBacking/source/@type", buf, sizeof(buf)))
		d->source = !strcmp(buf, "file") ? SOURCE_FILE
			    : !strcmp(buf, "memfd") ? SOURCE_MEMFD : SOURCE_ANON;
	r = access_parse(p, NULL, "/domain/memoryBacking/access/@mode", "<access>", &d->access);
	if (r < 0)
		return r;
	d->shared = d->access == ACCESS_SHARED;
	if (px_str(p, NULL, "/domain/seclabel[@model='dac']/label", buf, sizeof(buf)) ||
	    px_str(p, NULL, "/domain/seclabel[@model='dac']/imagelabel", buf, sizeof(buf))) {
		if (sscanf(buf, "+%u:+%u", &d->uid, &d->gid) != 2)
			return px_bad(p, "DAC label '%s' is not +UID:+GID", buf);
		d->has_dac = true;
	}
	/* libvirt fills in the label at start begin; none at prepare begin. */
	d->mac_dynamic = px_str(p, NULL,
				"/domain/seclabel[@type='dynamic'][@model='selinux' or "
				"@model='apparmor'][not(@relabel='no')]/@model",
				buf, sizeof(buf));
	/* reserve='yes': the attribute's name before grow_pools, still read. */
	r = yes_no(p, "reserve", &d->grow_pools);
	if (r == 0)
		r = yes_no(p, "grow_pools", &d->grow_pools);
	if (r == 0)
		r = yes_no(p, "warm", &d->warm);
	if (r == 0)
		r = tenant_parse(p, d);
	return r < 0 ? r : yes_no(p, "prefault", &d->prefault);
}

static int parse_doc(struct px *p, struct domain *d)
{
	xmlXPathObjectPtr o;
	char buf[64];
	int r;

	if (!px_str(p, NULL, "/domain/name", d->name, sizeof(d->name)) || !d->name[0])
		return px_bad(p, "no <name>");
	if (!px_str(p, NULL, "/domain/uuid", d->uuid, sizeof(d->uuid)) || strlen(d->uuid) != 36 ||
	    strspn(d->uuid, "0123456789abcdefABCDEF-") != 36)
		return px_bad(p, "no <uuid> of 36 characters");
	d->id = px_str(p, NULL, "/domain/@id", buf, sizeof(buf)) ? atoi(buf) : -1;
	r = xsize(p, NULL, "/domain/memory", "/domain/memory/@unit", &d->memory);
	if (r == 0 && !d->memory)
		r = px_bad(p, "no <memory>");
	o = r == 0 ? px_nodes(p, "/domain/numatune/memory") : NULL;
	if (px_count(o))
		r = binding_parse(p, o->nodesetval->nodeTab[0], "numatune memory", &d->bind);
	xmlXPathFreeObject(o);
	if (r == 0)
		r = parse_numa(p, d);
	d->hugepages =
	    r == 0 && px_str(p, NULL, "/domain/memoryBacking/hugepages", buf, sizeof(buf));
	if (r == 0)
		r = parse_pages(p, d);
	if (r == 0)
		r = parse_dimms(p, d);
	if (r == 0)
		r = hostdev_parse(p, d);
	return r == 0 ? parse_misc(p, d) : r;
}

static void no_errors(void *ctx, const char *msg, ...)
{
	(void)ctx;
	(void)msg;
}

int domain_parse(const char *xml, size_t len, struct domain *ret, char *why, size_t why_len)
{
	struct px p = { .why = why, .why_len = why_len };
	xmlDocPtr doc;
	int r;

	memset(ret, 0, sizeof(*ret));
	if (why_len)
		why[0] = '\0';
	if (len > INT32_MAX)
		return px_bad(&p, "domain XML too large");
	xmlSetGenericErrorFunc(NULL, no_errors);
	doc = xmlReadMemory(xml, (int)len, "domain.xml", NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (!doc)
		return px_bad(&p, "the domain XML does not parse");
	p.x = xmlXPathNewContext(doc);
	if (!p.x) {
		xmlFreeDoc(doc);
		return -ENOMEM;
	}
	xmlXPathRegisterNs(p.x, (const xmlChar *)"pa", (const xmlChar *)DOM_NAMESPACE);
	r = parse_doc(&p, ret);
	xmlXPathFreeContext(p.x);
	xmlFreeDoc(doc);
	return r;
}
