/* SPDX-License-Identifier: MIT */
/*
 * From a parsed domain to what it asks of the host: one backend per piece
 * of guest RAM QEMU gets (pc.ram, ram-node<N>, dimm<N>), each with its page
 * size and host nodes, and the hugepages per host node and size.
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

const char *page_label(uint64_t ps, char *buf, size_t len)
{
	if (ps >= (UINT64_C(1) << 30) && !(ps % (UINT64_C(1) << 30)))
		snprintf(buf, len, "%lluG", (unsigned long long)(ps >> 30));
	else if (ps >= (UINT64_C(1) << 20) && !(ps % (UINT64_C(1) << 20)))
		snprintf(buf, len, "%lluM", (unsigned long long)(ps >> 20));
	else
		snprintf(buf, len, "%lluK", (unsigned long long)(ps >> 10));
	return buf;
}

/*
 * The page size for guest cell (-1: no cells): the <page> whose nodeset
 * names it, else the one without a nodeset, else (only pages for other
 * cells) 4K as libvirt does; <hugepages/> alone is the host's default.
 */
static uint64_t cell_page(const struct domain *d, const struct host_view *h, int cell)
{
	unsigned int bit = cell < 0 ? 0 : (unsigned int)cell;	/* no cells: the guest is cell 0 */
	uint64_t fallback = 0;
	bool any = false;

	if (!d->hugepages) {
		if (d->source == SOURCE_FILE && h->backing_page)
			return h->backing_page;
		return PAGE_4K;
	}
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
			 struct dom_backend *be, char *why, size_t len)
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

/* Spreads the backend's bytes over its nodes in page units, first nodes first. */
static void spread(struct dom_backend *be)
{
	uint64_t ps = be->page_size, pages = be->bytes / ps;
	uint64_t each = pages / be->nr_nodes, extra = pages % be->nr_nodes;

	for (unsigned int i = 0; i < be->nr_nodes; i++)
		be->node_bytes[i] = (each + (i < extra)) * ps;
}

static int add_backend(const struct domain *d, const struct host_view *h, struct dom_demand *dd,
		       const char *alias, uint64_t bytes, int cell, const struct dom_binding *b,
		       char *why, size_t len)
{
	struct dom_backend *be = &dd->backends[dd->nr_backends];
	char pl[16];
	int r;

	memset(be, 0, sizeof(*be));
	snprintf(be->alias, sizeof(be->alias), "%s", alias);
	be->bytes = bytes;
	be->page_size = cell_page(d, h, cell);
	be->file = !d->hugepages && d->source == SOURCE_FILE;
	if (!be->page_size)
		return why_fail(why, len, "%s: the host has no default hugepage size", alias);
	if (bytes % be->page_size)
		return why_fail(why, len, "%s: %llu bytes is not a multiple of its %s pages", alias,
				(unsigned long long)bytes, page_label(be->page_size, pl, sizeof(pl)));
	r = binding_nodes(b, h, be, why, len);
	if (r < 0)
		return r;
	spread(be);
	dd->nr_backends++;
	return 0;
}

static int add_need(struct dom_demand *dd, int node, uint64_t ps, uint64_t bytes)
{
	for (unsigned int i = 0; i < dd->nr_needs; i++)
		if (dd->needs[i].node == node && dd->needs[i].page_size == ps) {
			dd->needs[i].bytes += bytes;
			return 0;
		}
	if (dd->nr_needs == DOM_MAX_NEEDS)
		return -E2BIG;
	dd->needs[dd->nr_needs++] = (struct dom_need){ .node = node, .page_size = ps,
						       .bytes = bytes };
	return 0;
}

static const struct dom_binding *cell_binding(const struct domain *d, int cell)
{
	for (unsigned int i = 0; i < d->nr_cells; i++)
		if (d->cells[i].id == cell)
			return &d->cells[i].bind;
	return &d->bind;
}

static int add_ram(const struct domain *d, const struct host_view *h, struct dom_demand *dd,
		   char *why, size_t len)
{
	uint64_t dimms = 0;
	char alias[64];
	int r = 0;

	for (unsigned int i = 0; i < d->nr_dimms; i++)
		dimms += d->dimms[i].bytes;
	if (!d->nr_cells) {
		if (d->memory <= dimms)
			return why_fail(why, len, "<memory> %llu bytes leaves nothing besides the "
					"memory devices", (unsigned long long)d->memory);
		return add_backend(d, h, dd, "pc.ram", d->memory - dimms, -1, &d->bind, why, len);
	}
	for (unsigned int i = 0; r == 0 && i < d->nr_cells; i++) {
		snprintf(alias, sizeof(alias), "ram-node%d", d->cells[i].id);
		r = add_backend(d, h, dd, alias, d->cells[i].bytes, d->cells[i].id,
				&d->cells[i].bind, why, len);
	}
	return r;
}

int domain_demand(const struct domain *d, const struct host_view *h, struct dom_demand *dd,
		  char *why, size_t len)
{
	int r;

	memset(dd, 0, sizeof(*dd));
	if (!h->nr_nodes)
		return why_fail(why, len, "the host has no node with memory");
	r = add_ram(d, h, dd, why, len);
	for (unsigned int i = 0; r == 0 && i < d->nr_dimms; i++) {
		const struct dom_dimm *m = &d->dimms[i];

		r = add_backend(d, h, dd, m->alias, m->bytes, m->cell, cell_binding(d, m->cell),
				why, len);
	}
	for (unsigned int i = 0; r == 0 && i < dd->nr_backends; i++) {
		const struct dom_backend *be = &dd->backends[i];

		if (be->page_size <= PAGE_4K)
			continue;
		for (unsigned int k = 0; r == 0 && k < be->nr_nodes; k++)
			if (be->node_bytes[k])
				r = add_need(dd, be->nodes[k], be->page_size, be->node_bytes[k]);
		if (r == -E2BIG)
			r = why_fail(why, len, "more than %d node and page size pairs",
				     DOM_MAX_NEEDS);
	}
	return r;
}
