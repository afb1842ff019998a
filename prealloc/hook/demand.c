/* SPDX-License-Identifier: MIT */
/*
 * From a parsed domain to what it asks of the host: one backend per piece
 * of guest RAM QEMU gets from hugepages or memory_backing_dir (pc.ram,
 * ram-node<N>, dimm<N>, virtiomem<N>), each with its page size, host nodes
 * and access, and the hugepages per host node and size. The rules are
 * libvirt 9's, as its QEMU command line shows them (tests/unit/hook/test-demand.c
 * quotes it): a backend is on hugepages (a hugetlbfs mount, or memfd) when
 * its page size is above 4K, else a file in memory_backing_dir when
 * <source type='file'/> or any access mode applies to it, else anonymous
 * memory (or memfd).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "domain.h"

#define PAGE_4K 4096u

static int why_fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void nodes_format(uint64_t mask, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int n = 0; n < DOM_MAX_NODES && off < len; n++) {
		int e = n;

		if (!(mask >> n & 1))
			continue;
		while (e + 1 < DOM_MAX_NODES && mask >> (e + 1) & 1)
			e++;
		off += (size_t)snprintf(buf + off, len - off, e > n ? "%s%d-%d" : "%s%d",
					off ? "," : "", n, e);
		n = e;
	}
}

/*
 * The hugepage size for guest cell (-1: no cells): the <page> whose nodeset
 * names it, else the one without a nodeset, else (only pages for other
 * cells) 4K as libvirt does; <hugepages/> alone is the host's default.
 */
static uint64_t cell_page(const struct domain *d, const struct host_view *h, int cell)
{
	unsigned int bit = cell < 0 ? 0 : (unsigned int)cell;	/* no cells: the guest is cell 0 */
	uint64_t fallback = 0;
	bool any = false;

	if (!d->hugepages)
		return PAGE_4K;
	if (!d->nr_pages)
		return h->default_page;
	for (unsigned int i = 0; i < d->nr_pages; i++) {
		if (!d->pages[i].cells) {
			fallback = d->pages[i].size;
			any = true;
		} else if (bit < 64 && (d->pages[i].cells >> bit & 1)) {
			/* A nodeset names cells 0-63 (the mask); a higher cell is in none. */
			return d->pages[i].size;
		}
	}
	return any ? fallback : PAGE_4K;
}

/* The host nodes a binding allows, as a list; 0 or -EINVAL. */
static int binding_nodes(const struct dom_binding *b, const struct host_view *h,
			 struct guest_backend *be, char *why, size_t len)
{
	char want[128];

	be->nr_nodes = 0;
	if (b->automatic && h->auto_rule == AUTO_REFUSE)
		return why_fail(why, len, "%s: placement='auto' is refused by this host "
				"(auto_placement = refuse in libvirt.conf)", be->alias);
	for (unsigned int i = 0; i < h->nr_nodes; i++) {
		int n = h->nodes[i];

		if (b->mode == MODE_NONE || b->automatic || (n < 64 && b->nodes >> n & 1))
			be->nodes[be->nr_nodes++] = n;
	}
	if (be->nr_nodes)
		return 0;
	nodes_format(b->nodes, want, sizeof(want));
	return why_fail(why, len, "%s is bound to host node(s) %s, none of which has memory here",
			be->alias, want);
}

/* What a backend is built from: the part of the XML libvirt reads for it. */
struct backend_src {
	const char *alias;
	uint64_t bytes;
	int cell;			/* guest cell, -1: none */
	uint64_t page_size;		/* <source><pagesize>; 0: the cell's */
	int access;			/* the device's own; ACCESS_DEFAULT: none */
	bool discarded;			/* virtio-mem: QEMU empties its file at start */
	struct dom_binding bind;
};

static const struct dom_cell *find_cell(const struct domain *d, int cell)
{
	for (unsigned int i = 0; i < d->nr_cells; i++)
		if (d->cells[i].id == cell)
			return &d->cells[i];
	return NULL;
}

/* libvirt's precedence: the device's access, else its cell's memAccess, else <access>. */
static int access_of(const struct domain *d, const struct backend_src *src)
{
	const struct dom_cell *c = find_cell(d, src->cell);

	if (src->access != ACCESS_DEFAULT)
		return src->access;
	if (c && c->access != ACCESS_DEFAULT)
		return c->access;
	return d->access;
}

/* QEMU's policy for a binding: strict and restrictive bind. */
static int policy_of(const struct dom_binding *b)
{
	if (b->automatic || b->mode == MODE_NONE)
		return GUEST_POLICY_DEFAULT;
	return b->mode == MODE_PREFERRED ? GUEST_POLICY_PREFERRED
	       : b->mode == MODE_INTERLEAVE ? GUEST_POLICY_INTERLEAVE : GUEST_POLICY_BIND;
}

static int add_backend(const struct domain *d, const struct host_view *h, struct guest_demand *dd,
		       const struct backend_src *src, char *why, size_t len)
{
	struct guest_backend *be = &dd->backends[dd->nr_backends];
	int access = access_of(d, src);
	bool huge, in_dir;
	char pl[16];
	int r;

	memset(be, 0, sizeof(*be));
	snprintf(be->alias, sizeof(be->alias), "%s", src->alias);
	be->bytes = src->bytes;
	be->page_size = src->page_size ? src->page_size : cell_page(d, h, src->cell);
	if (!be->page_size)
		return why_fail(why, len, "%s: the host has no default hugepage size", src->alias);
	/* Hugepages (a hugetlbfs mount, or memfd) win; any access mode means a file. */
	huge = be->page_size > PAGE_4K;
	in_dir = !huge && d->source != SOURCE_MEMFD &&
		 (d->source == SOURCE_FILE || access != ACCESS_DEFAULT);
	if (in_dir && h->backing_page)
		be->page_size = h->backing_page;
	be->file = in_dir && !src->discarded;
	/* QEMU's default when libvirt says nothing: share=on for memfd only. */
	be->shared = access == ACCESS_SHARED ||
		     (access == ACCESS_DEFAULT && d->source == SOURCE_MEMFD);
	if (src->bytes % be->page_size)
		return why_fail(why, len, "%s: %llu bytes is not a multiple of its %s pages",
				src->alias, (unsigned long long)src->bytes,
				guest_page_label(be->page_size, pl, sizeof(pl)));
	r = binding_nodes(&src->bind, h, be, why, len);
	if (r < 0)
		return r;
	be->policy = policy_of(&src->bind);
	guest_spread(be);
	dd->nr_backends++;
	return 0;
}

static const struct dom_binding *cell_binding(const struct domain *d, int cell)
{
	const struct dom_cell *c = find_cell(d, cell);

	return c ? &c->bind : &d->bind;
}

/* A memory device's host nodes: its <source><nodemask> in its cell's mode, else its cell's. */
static struct dom_binding memdev_binding(const struct domain *d, const struct dom_dimm *m)
{
	struct dom_binding b = *cell_binding(d, m->cell);

	if (m->source_nodes) {
		b.mode = b.mode == MODE_NONE ? MODE_STRICT : b.mode;
		b.automatic = false;
		b.nodes = m->source_nodes;
	}
	return b;
}

static int add_ram(const struct domain *d, const struct host_view *h, struct guest_demand *dd,
		   char *why, size_t len)
{
	struct backend_src src = { .alias = "pc.ram", .cell = -1, .bind = d->bind };
	uint64_t dimms = 0;
	char alias[64];
	int r = 0;

	/* <memory> includes every memory device's <size>, whatever backs it. */
	for (unsigned int i = 0; i < d->nr_dimms; i++)
		dimms += d->dimms[i].bytes;
	if (!d->nr_cells) {
		if (d->memory <= dimms)
			return why_fail(why, len, "<memory> %llu bytes leaves nothing besides the "
					"memory devices", (unsigned long long)d->memory);
		src.bytes = d->memory - dimms;
		return add_backend(d, h, dd, &src, why, len);
	}
	for (unsigned int i = 0; r == 0 && i < d->nr_cells; i++) {
		snprintf(alias, sizeof(alias), "ram-node%d", d->cells[i].id);
		src = (struct backend_src){ .alias = alias, .bytes = d->cells[i].bytes,
					    .cell = d->cells[i].id, .bind = d->cells[i].bind };
		r = add_backend(d, h, dd, &src, why, len);
	}
	return r;
}

/*
 * The memory devices libvirt backs like guest RAM: dimm and virtio-mem
 * (of which the guest plugs <requested> at start). nvdimm and virtio-pmem
 * map the admin's <source><path>, sgx-epc the host's EPC: never hugepages
 * or memory_backing_dir, nothing to count.
 */
static int add_memdevs(const struct domain *d, const struct host_view *h, struct guest_demand *dd,
		       char *why, size_t len)
{
	int r = 0;

	for (unsigned int i = 0; r == 0 && i < d->nr_dimms; i++) {
		const struct dom_dimm *m = &d->dimms[i];
		bool vmem = m->model == MEM_VIRTIO_MEM;
		struct backend_src src = {
			.alias = m->alias, .bytes = vmem ? m->requested : m->bytes,
			.cell = m->cell, .page_size = m->page_size, .access = m->access,
			.discarded = vmem, .bind = memdev_binding(d, m),
		};

		if (m->model == MEM_DIMM || vmem)
			r = add_backend(d, h, dd, &src, why, len);
	}
	return r;
}

int domain_demand(const struct domain *d, const struct host_view *h, struct guest_demand *dd,
		  char *why, size_t len)
{
	int r;

	memset(dd, 0, sizeof(*dd));
	if (!h->nr_nodes)
		return why_fail(why, len, "the host has no node with memory");
	r = add_ram(d, h, dd, why, len);
	if (r == 0)
		r = add_memdevs(d, h, dd, why, len);
	if (r == 0)
		r = guest_needs(dd);
	if (r == -E2BIG)
		r = why_fail(why, len, "more than %d node and page size pairs", GUEST_MAX_NEEDS);
	return r;
}
