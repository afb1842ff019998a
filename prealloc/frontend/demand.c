/* SPDX-License-Identifier: MIT */
/*
 * From a guest's backends to what it asks of the host: the hugepages per
 * host node and page size. Pure code: the libvirt hook's demand table
 * (tests/unit/hook/test-demand.c) runs it.
 */
#include <errno.h>
#include <stdio.h>

#include "guest.h"

const char *guest_page_label(uint64_t ps, char *buf, size_t len)
{
	if (ps >= (UINT64_C(1) << 30) && !(ps % (UINT64_C(1) << 30)))
		snprintf(buf, len, "%lluG", (unsigned long long)(ps >> 30));
	else if (ps >= (UINT64_C(1) << 20) && !(ps % (UINT64_C(1) << 20)))
		snprintf(buf, len, "%lluM", (unsigned long long)(ps >> 20));
	else
		snprintf(buf, len, "%lluK", (unsigned long long)(ps >> 10));
	return buf;
}

void guest_spread(struct guest_backend *be)
{
	uint64_t ps = be->page_size, pages = be->bytes / ps;
	uint64_t each = pages / be->nr_nodes, extra = pages % be->nr_nodes;

	for (unsigned int i = 0; i < be->nr_nodes; i++)
		be->node_bytes[i] = (each + (i < extra)) * ps;
}

static int add_need(struct guest_demand *dd, int node, uint64_t ps, uint64_t bytes)
{
	for (unsigned int i = 0; i < dd->nr_needs; i++)
		if (dd->needs[i].node == node && dd->needs[i].page_size == ps) {
			dd->needs[i].bytes += bytes;
			return 0;
		}
	if (dd->nr_needs == GUEST_MAX_NEEDS)
		return -E2BIG;
	dd->needs[dd->nr_needs++] = (struct guest_need){ .node = node, .page_size = ps,
							 .bytes = bytes };
	return 0;
}

int guest_needs(struct guest_demand *dd)
{
	int r = 0;

	dd->nr_needs = 0;
	for (unsigned int i = 0; r == 0 && i < dd->nr_backends; i++) {
		const struct guest_backend *be = &dd->backends[i];

		if (be->page_size <= GUEST_PAGE_4K)
			continue;
		for (unsigned int k = 0; r == 0 && k < be->nr_nodes; k++)
			if (be->node_bytes[k])
				r = add_need(dd, be->nodes[k], be->page_size, be->node_bytes[k]);
	}
	return r;
}
