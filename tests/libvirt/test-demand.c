/* SPDX-License-Identifier: MIT */
/*
 * Domain XML -> demand per host node and page size, over a table of
 * domains: cells, numatune (modes, memnode), hugepage nodesets naming guest
 * cells, DIMMs, the default page size, 1G, placement='auto', file backing,
 * and the XML that must be refused. The host is described, not read: a
 * two-cell guest on two host nodes is checked here on any machine.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "domain.h"
#include "../unit/tap.h"

#define HEAD "<domain type='qemu'><name>g</name><uuid>11111111-2222-3333-4444-555555555555</uuid>"
#define MiB(n) ((uint64_t)(n) << 20)

struct want { int node; uint64_t ps; uint64_t bytes; };

struct dcase {
	const char *what;
	const char *xml;
	int rc;			/* 0 or -EINVAL (parse or demand) */
	struct want needs[4];	/* hugepage needs, in order; bytes 0 ends */
	const char *backends;	/* aliases joined with ',' */
};

static const struct dcase cases[] = {
	{ "<hugepages/> alone: the default 2M, spread over both host nodes",
	  HEAD "<memory unit='MiB'>128</memory><memoryBacking><hugepages/></memoryBacking></domain>",
	  0, { { 0, MiB(2), MiB(64) }, { 1, MiB(2), MiB(64) } }, "pc.ram" },
	{ "numatune strict nodeset 1: all on host node 1",
	  HEAD "<memory unit='MiB'>128</memory><memoryBacking><hugepages/></memoryBacking>"
	  "<numatune><memory mode='strict' nodeset='1'/></numatune></domain>",
	  0, { { 1, MiB(2), MiB(128) } }, "pc.ram" },
	{ "two cells bound by memnode to different host nodes",
	  HEAD "<memory unit='MiB'>256</memory><memoryBacking><hugepages/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='128' unit='MiB'/>"
	  "<cell id='1' cpus='1' memory='128' unit='MiB'/></numa></cpu>"
	  "<numatune><memnode cellid='0' mode='strict' nodeset='1'/>"
	  "<memnode cellid='1' mode='strict' nodeset='0'/></numatune></domain>",
	  0, { { 1, MiB(2), MiB(128) }, { 0, MiB(2), MiB(128) } }, "ram-node0,ram-node1" },
	{ "hugepage nodesets name guest cells: cell 1 on 1G pages, cell 0 on 2M",
	  HEAD "<memory unit='GiB'>3</memory><memoryBacking><hugepages>"
	  "<page size='1' unit='G' nodeset='1'/><page size='2048' unit='KiB' nodeset='0'/>"
	  "</hugepages></memoryBacking>"
	  "<cpu><numa><cell id='0' memory='1' unit='GiB'/><cell id='1' memory='2' unit='GiB'/>"
	  "</numa></cpu><numatune><memory mode='strict' nodeset='0'/>"
	  "<memnode cellid='1' mode='strict' nodeset='1'/></numatune></domain>",
	  0, { { 0, MiB(2), MiB(1024) }, { 1, MiB(1024), MiB(2048) } }, "ram-node0,ram-node1" },
	{ "interleave over 0-1: an odd number of pages, the first node takes the extra one",
	  HEAD "<memory unit='MiB'>130</memory><memoryBacking><hugepages/></memoryBacking>"
	  "<numatune><memory mode='interleave' nodeset='0-1'/></numatune></domain>",
	  0, { { 0, MiB(2), MiB(66) }, { 1, MiB(2), MiB(64) } }, "pc.ram" },
	{ "a DIMM on cell 1 follows cell 1's binding; pc RAM is memory minus DIMMs",
	  HEAD "<memory unit='MiB'>384</memory><memoryBacking><hugepages/></memoryBacking>"
	  "<cpu><numa><cell id='0' memory='128' unit='MiB'/><cell id='1' memory='128' unit='MiB'/>"
	  "</numa></cpu><numatune><memnode cellid='0' mode='strict' nodeset='0'/>"
	  "<memnode cellid='1' mode='preferred' nodeset='1'/></numatune><devices>"
	  "<memory model='dimm'><target><size unit='MiB'>128</size><node>1</node></target>"
	  "</memory></devices></domain>",
	  0, { { 0, MiB(2), MiB(128) }, { 1, MiB(2), MiB(256) } },
	  "ram-node0,ram-node1,dimm0" },
	{ "no cells: a DIMM is taken out of <memory>, not counted on top of it",
	  HEAD "<memory unit='MiB'>384</memory><memoryBacking><hugepages/></memoryBacking>"
	  "<numatune><memory mode='strict' nodeset='0'/></numatune><devices>"
	  "<memory model='dimm'><target><size unit='MiB'>128</size><node>0</node></target>"
	  "</memory></devices></domain>",
	  0, { { 0, MiB(2), MiB(384) } }, "pc.ram,dimm0" },
	{ "no hugepages: 4K, nothing to size",
	  HEAD "<memory unit='MiB'>128</memory></domain>", 0, { { 0 } }, "pc.ram" },
	{ "placement='auto' spreads by the host's rule",
	  HEAD "<memory unit='MiB'>128</memory><memoryBacking><hugepages/></memoryBacking>"
	  "<numatune><memory mode='strict' placement='auto'/></numatune></domain>",
	  0, { { 0, MiB(2), MiB(64) }, { 1, MiB(2), MiB(64) } }, "pc.ram" },
	{ "file source on a 2M hugetlbfs memory_backing_dir: file backends of 2M",
	  HEAD "<memory unit='MiB'>128</memory><memoryBacking><source type='file'/>"
	  "<access mode='shared'/></memoryBacking>"
	  "<numatune><memory mode='strict' nodeset='0'/></numatune></domain>",
	  0, { { 0, MiB(2), MiB(128) } }, "pc.ram" },
	{ "bound to host node 5, which has no memory: refused",
	  HEAD "<memory unit='MiB'>128</memory><memoryBacking><hugepages/></memoryBacking>"
	  "<numatune><memory mode='strict' nodeset='5'/></numatune></domain>", -EINVAL, { { 0 } }, "" },
	{ "memory not a multiple of 1G pages: refused",
	  HEAD "<memory unit='MiB'>1500</memory><memoryBacking><hugepages>"
	  "<page size='1048576'/></hugepages></memoryBacking></domain>", -EINVAL, { { 0 } }, "" },
	{ "a bad unit: refused", HEAD "<memory unit='parsecs'>1</memory></domain>", -EINVAL, { { 0 } }, "" },
	{ "a bad metadata value: refused",
	  HEAD "<memory unit='MiB'>128</memory><metadata>"
	  "<p:config xmlns:p='urn:x-prealloc:libvirt:1' prefault='maybe'/></metadata></domain>",
	  -EINVAL, { { 0 } }, "" },
	{ "memnode naming no cell: refused",
	  HEAD "<memory unit='MiB'>128</memory><numatune><memnode cellid='3' nodeset='0'/>"
	  "</numatune></domain>", -EINVAL, { { 0 } }, "" },
	{ "not XML: refused", "<domain><name>", -EINVAL, { { 0 } }, "" },
};

static int run_case(const struct dcase *c, char *got, size_t len)
{
	struct host_view h = { .nr_nodes = 2, .nodes = { 0, 1 }, .default_page = MiB(2),
			       .backing_page = MiB(2) };
	struct domain d;
	static struct dom_demand dd;
	char why[512];
	size_t off = 0;
	int r;

	r = domain_parse(c->xml, strlen(c->xml), &d, why, sizeof(why));
	if (r == 0)
		r = domain_demand(&d, &h, &dd, why, sizeof(why));
	if (r < 0) {
		snprintf(got, len, "error: %s", why);
		return r == c->rc && why[0] ? 0 : -1;
	}
	got[0] = '\0';
	for (unsigned int i = 0; i < dd.nr_needs; i++)
		off += (size_t)snprintf(got + off, len - off, "%d:%llu:%llu ", dd.needs[i].node,
					(unsigned long long)dd.needs[i].page_size >> 20,
					(unsigned long long)dd.needs[i].bytes >> 20);
	if (c->rc || dd.nr_needs > 4)
		return -1;
	for (unsigned int i = 0; i < 4; i++) {
		const struct want *w = &c->needs[i];

		if (!w->bytes)
			if (i != dd.nr_needs)
				return -1;
		if (!w->bytes)
			break;
		if (i >= dd.nr_needs || dd.needs[i].node != w->node ||
		    dd.needs[i].page_size != w->ps || dd.needs[i].bytes != w->bytes)
			return -1;
	}
	off = 0;
	char aliases[256] = "";
	for (unsigned int i = 0; i < dd.nr_backends; i++)
		off += (size_t)snprintf(aliases + off, sizeof(aliases) - off, "%s%s", i ? "," : "",
					dd.backends[i].alias);
	return strcmp(aliases, c->backends) ? -1 : 0;
}

int main(void)
{
	char got[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = run_case(&cases[i], got, sizeof(got));

		tap_ok(r == 0, "%s [%s]", cases[i].what, got);
	}
	return tap_done();
}
