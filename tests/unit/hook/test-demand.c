/* SPDX-License-Identifier: MIT */
/*
 * Domain XML -> demand per host node and page size, over a table of
 * domains: cells, numatune (modes, memnode), hugepage nodesets naming guest
 * cells, every memory device model, the default page size, 1G,
 * placement='auto', file backing, access per domain, cell and device, and
 * the XML that must be refused, and the tenant labels the warm pool
 * refuses (refused here, when the domain is read, not at the start's
 * take). The host is described, not read: a
 * two-cell guest on two host nodes is checked here on any machine.
 *
 * What libvirt backs each piece with was read from libvirt 9.0's own QEMU
 * command line (Debian 12, QEMU 7.2), without a daemon:
 *   virsh -c 'qemu:///embed?root=DIR' domxml-to-native qemu-argv FILE.xml
 * with memory_backing_dir and hugetlbfs_mount (2M default, 1G) set in
 * DIR/etc/qemu.conf; the cases below quote it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "domain.h"
#include "tap.h"

#define HEAD "<domain type='qemu'><name>g</name><uuid>11111111-2222-3333-4444-555555555555</uuid>"
#define MiB(n) ((uint64_t)(n) << 20)

struct want { int node; uint64_t ps; uint64_t bytes; };

struct dcase {
	const char *what;
	const char *xml;
	int rc;			/* 0 or -EINVAL (parse or demand) */
	struct want needs[4];	/* hugepage needs, in order; bytes 0 ends */
	const char *backends;	/* aliases joined with ',', each followed by :file
				 * and :shared where the backend has them */
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
	  0, { { 0, MiB(2), MiB(128) } }, "pc.ram:file:shared" },
	/*
	 * nvdimm: -object memory-backend-file id=memnvdimm0 mem-path=<source><path>
	 * prealloc=true size=64G, host-nodes/policy of its cell. The same with
	 * <hugepages/> and with <source type='file'/> (then share=true): never the
	 * hugetlbfs mount or memory_backing_dir, so no hugepages to size.
	 */
	{ "nvdimm: backed by its own <source><path>, not counted (2G cell + 64G nvdimm)",
	  HEAD "<maxMemory slots='4' unit='GiB'>128</maxMemory><memory unit='GiB'>66</memory>"
	  "<memoryBacking><hugepages/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='2' unit='GiB'/></numa></cpu>"
	  "<numatune><memory mode='strict' nodeset='0'/></numatune><devices>"
	  "<memory model='nvdimm'><source><path>/var/lib/pmem/g.img</path></source>"
	  "<target><size unit='GiB'>64</size><node>0</node></target></memory></devices></domain>",
	  0, { { 0, MiB(2), MiB(2048) } }, "ram-node0" },
	/*
	 * virtio-pmem: memory-backend-file id=memvirtiopmem0 mem-path=<source><path>
	 * share=true (libvirt sets access='shared' and refuses 'private'), no
	 * prealloc, host-nodes/policy of <numatune><memory> (it has no target
	 * node); hugepages and memory_backing_dir never.
	 */
	{ "virtio-pmem: backed by its own <source><path>, not counted",
	  HEAD "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='MiB'>4352</memory>"
	  "<memoryBacking><hugepages/><access mode='shared'/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='256' unit='MiB'/></numa></cpu>"
	  "<numatune><memory mode='strict' nodeset='1'/></numatune><devices>"
	  "<memory model='virtio-pmem' access='shared'><source><path>/var/lib/pmem/p.img</path>"
	  "</source><target><size unit='GiB'>4</size></target></memory></devices></domain>",
	  0, { { 1, MiB(2), MiB(256) } }, "ram-node0:shared" },
	/*
	 * virtio-mem on hugepages: memory-backend-file id=memvirtiomem0
	 * mem-path=<the 2M hugetlbfs mount> reserve=false size=4G (<size>), with
	 * host-nodes/policy of its cell; -device virtio-mem-pci node=1
	 * requested-size=1G prealloc=true. QEMU maps <size> without reserving and
	 * populates the blocks the guest plugs: <requested> at start (<current>,
	 * output only, is what it has plugged). <requested> is what counts.
	 */
	{ "virtio-mem: its <requested> counts, not its <size>, on its cell's pages and nodes",
	  HEAD "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='GiB'>6</memory>"
	  "<memoryBacking><hugepages/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='1' unit='GiB'/>"
	  "<cell id='1' cpus='1' memory='1' unit='GiB'/></numa></cpu>"
	  "<numatune><memnode cellid='0' mode='strict' nodeset='0'/>"
	  "<memnode cellid='1' mode='strict' nodeset='1'/></numatune><devices>"
	  "<memory model='virtio-mem'><target><size unit='GiB'>4</size><node>1</node>"
	  "<block unit='KiB'>2048</block><requested unit='GiB'>1</requested></target></memory>"
	  "</devices></domain>",
	  0, { { 0, MiB(2), MiB(1024) }, { 1, MiB(2), MiB(2048) } },
	  "ram-node0,ram-node1,virtiomem0" },
	/*
	 * virtio-mem on memory_backing_dir: memory-backend-file
	 * mem-path=<memory_backing_dir>/libvirt/qemu/<id>-<name>/virtiomem0
	 * share=true reserve=false size=2G. QEMU discards the whole file when it
	 * realizes the device, so it is no file to pre-fault; its <requested>
	 * pages are still claimed.
	 */
	{ "virtio-mem in memory_backing_dir: <requested> counts, and it is not pre-faulted",
	  HEAD "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='MiB'>3072</memory>"
	  "<memoryBacking><source type='file'/><access mode='shared'/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='1' unit='GiB'/></numa></cpu>"
	  "<numatune><memory mode='strict' nodeset='0'/></numatune><devices>"
	  "<memory model='virtio-mem'><target><size unit='GiB'>2</size><node>0</node>"
	  "<block unit='KiB'>2048</block><requested unit='MiB'>512</requested></target></memory>"
	  "</devices></domain>",
	  0, { { 0, MiB(2), MiB(1536) } }, "ram-node0:file:shared,virtiomem0:shared" },
	/*
	 * sgx-epc (a capabilities cache with the sgx-epc flag: this host has no
	 * SGX): memory-backend-epc id=memepc0 prealloc=true size=64M, host-nodes
	 * of its cell, -machine sgx-epc.0.node=1; the EPC, never hugepages.
	 */
	{ "sgx-epc: backed by the EPC, not counted",
	  "<domain type='kvm'><name>g</name><uuid>11111111-2222-3333-4444-555555555555</uuid>"
	  "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='MiB'>320</memory>"
	  "<memoryBacking><hugepages/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='128' unit='MiB'/>"
	  "<cell id='1' cpus='1' memory='128' unit='MiB'/></numa></cpu>"
	  "<numatune><memnode cellid='1' mode='strict' nodeset='1'/></numatune><devices>"
	  "<memory model='sgx-epc'><target><size unit='MiB'>64</size><node>1</node></target>"
	  "</memory></devices></domain>",
	  0, { { 0, MiB(2), MiB(64) }, { 1, MiB(2), MiB(192) } }, "ram-node0,ram-node1" },
	/*
	 * dimm <source>: memory-backend-file id=memdimm0 mem-path=<the 1G mount>
	 * prealloc=true, host-nodes=<nodemask> with its cell's policy
	 * (preferred), though <memoryBacking> has no <hugepages>: the cells stay
	 * memory-backend-ram. A <pagesize> of 4K is memory-backend-ram.
	 */
	{ "dimm <source><pagesize> and <nodemask> override its cell's page size and nodes",
	  HEAD "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='GiB'>4</memory>"
	  "<cpu><numa><cell id='0' cpus='0' memory='1' unit='GiB'/>"
	  "<cell id='1' cpus='1' memory='1' unit='GiB'/></numa></cpu>"
	  "<numatune><memnode cellid='1' mode='preferred' nodeset='0'/></numatune><devices>"
	  "<memory model='dimm'><source><pagesize unit='KiB'>1048576</pagesize>"
	  "<nodemask>1</nodemask></source><target><size unit='GiB'>2</size><node>1</node>"
	  "</target></memory></devices></domain>",
	  0, { { 1, MiB(1024), MiB(2048) } }, "ram-node0,ram-node1,dimm0" },
	/*
	 * Access: memory-backend-file ram-node0 share=true, ram-node1 share=false,
	 * memdimm0 (target node 1) share=false: a cell's memAccess overrides the
	 * domain's <access>, and a memory device without its own access takes its
	 * cell's.
	 */
	{ "cell memAccess='private' overrides the domain's shared access, for its DIMM too",
	  HEAD "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='GiB'>3</memory>"
	  "<memoryBacking><source type='file'/><access mode='shared'/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='1' unit='GiB'/>"
	  "<cell id='1' cpus='1' memory='1' unit='GiB' memAccess='private'/></numa></cpu>"
	  "<numatune><memory mode='strict' nodeset='0'/></numatune><devices>"
	  "<memory model='dimm'><target><size unit='GiB'>1</size><node>1</node></target>"
	  "</memory></devices></domain>",
	  0, { { 0, MiB(2), MiB(3072) } }, "ram-node0:file:shared,ram-node1:file,dimm0:file" },
	/*
	 * ram-node0 share=false, ram-node1 share=true, memdimm0 (node 1,
	 * access='private') share=false, memdimm1 (node 0, access='shared')
	 * share=true: the device's access beats its cell's, the cell's the domain's.
	 */
	{ "a memory device's access beats its cell's memAccess, which beats the domain's",
	  HEAD "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='MiB'>512</memory>"
	  "<memoryBacking><source type='file'/><access mode='private'/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='128' unit='MiB'/>"
	  "<cell id='1' cpus='1' memory='128' unit='MiB' memAccess='shared'/></numa></cpu>"
	  "<numatune><memory mode='strict' nodeset='1'/></numatune><devices>"
	  "<memory model='dimm' access='private'><target><size unit='MiB'>128</size>"
	  "<node>1</node></target></memory>"
	  "<memory model='dimm' access='shared'><target><size unit='MiB'>128</size>"
	  "<node>0</node></target></memory></devices></domain>",
	  0, { { 1, MiB(2), MiB(512) } },
	  "ram-node0:file,ram-node1:file:shared,dimm0:file,dimm1:file:shared" },
	/*
	 * <access mode='shared'/> without <source type='file'/>: memory-backend-file
	 * pc.ram mem-path=<memory_backing_dir>/.../pc.ram share=true (any access
	 * mode, 'private' too, makes libvirt use a file).
	 */
	{ "<access mode='shared'/> alone is a shared file in memory_backing_dir",
	  HEAD "<memory unit='MiB'>128</memory><memoryBacking><access mode='shared'/>"
	  "</memoryBacking><numatune><memory mode='strict' nodeset='0'/></numatune></domain>",
	  0, { { 0, MiB(2), MiB(128) } }, "pc.ram:file:shared" },
	/*
	 * No <memoryBacking>: ram-node0 memory-backend-ram; ram-node1 and memdimm0
	 * memory-backend-file in memory_backing_dir share=true (cell 1's
	 * memAccess); memdimm1 (node 0, access='private') a file, share=false.
	 */
	{ "a cell's memAccess or a device's access alone makes a file of just that memory",
	  HEAD "<maxMemory slots='4' unit='GiB'>64</maxMemory><memory unit='MiB'>512</memory>"
	  "<cpu><numa><cell id='0' cpus='0' memory='128' unit='MiB'/>"
	  "<cell id='1' cpus='1' memory='128' unit='MiB' memAccess='shared'/></numa></cpu>"
	  "<numatune><memory mode='strict' nodeset='0'/></numatune><devices>"
	  "<memory model='dimm'><target><size unit='MiB'>128</size><node>1</node></target>"
	  "</memory><memory model='dimm' access='private'><target><size unit='MiB'>128</size>"
	  "<node>0</node></target></memory></devices></domain>",
	  0, { { 0, MiB(2), MiB(384) } },
	  "ram-node0,ram-node1:file:shared,dimm0:file:shared,dimm1:file" },
	/* memory-backend-memfd ram-node0 share=true, ram-node1 share=false: memfd
	 * is shared unless told (QEMU's default), and never a file to pre-fault. */
	{ "memfd: shared by default, a cell's memAccess='private' is not",
	  HEAD "<memory unit='MiB'>256</memory><memoryBacking><source type='memfd'/>"
	  "</memoryBacking><cpu><numa><cell id='0' cpus='0' memory='128' unit='MiB'/>"
	  "<cell id='1' cpus='1' memory='128' unit='MiB' memAccess='private'/></numa></cpu>"
	  "</domain>",
	  0, { { 0 } }, "ram-node0:shared,ram-node1" },
	/* memory-backend-file mem-path=<the hugetlbfs mount> prealloc=true,
	 * ram-node0 share=true, ram-node1 share=false: not memory_backing_dir. */
	{ "hugepages with access: hugetlbfs, no file to pre-fault; share per cell",
	  HEAD "<memory unit='MiB'>256</memory><memoryBacking><hugepages/>"
	  "<access mode='shared'/></memoryBacking>"
	  "<cpu><numa><cell id='0' cpus='0' memory='128' unit='MiB'/>"
	  "<cell id='1' cpus='1' memory='128' unit='MiB' memAccess='private'/></numa></cpu>"
	  "<numatune><memory mode='strict' nodeset='1'/></numatune></domain>",
	  0, { { 1, MiB(2), MiB(256) } }, "ram-node0:shared,ram-node1" },
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
	{ "a bad warm value: refused",
	  HEAD "<memory unit='MiB'>128</memory><metadata>"
	  "<p:config xmlns:p='urn:x-prealloc:libvirt:1' warm='sometimes'/></metadata></domain>",
	  -EINVAL, { { 0 } }, "" },
	{ "memnode naming no cell: refused",
	  HEAD "<memory unit='MiB'>128</memory><numatune><memnode cellid='3' nodeset='0'/>"
	  "</numatune></domain>", -EINVAL, { { 0 } }, "" },
	{ "not XML: refused", "<domain><name>", -EINVAL, { { 0 } }, "" },
	{ "a memory model libvirt 9 does not know: refused",
	  HEAD "<memory unit='MiB'>256</memory><cpu><numa><cell id='0' memory='128' unit='MiB'/>"
	  "</numa></cpu><devices><memory model='cxl'><target><size unit='MiB'>128</size>"
	  "<node>0</node></target></memory></devices></domain>", -EINVAL, { { 0 } }, "" },
	{ "memAccess neither shared nor private: refused",
	  HEAD "<memory unit='MiB'>128</memory><cpu><numa>"
	  "<cell id='0' memory='128' unit='MiB' memAccess='maybe'/></numa></cpu></domain>",
	  -EINVAL, { { 0 } }, "" },
};

static int run_case(const struct dcase *c, char *got, size_t len)
{
	struct host_view h = { .nr_nodes = 2, .nodes = { 0, 1 }, .default_page = MiB(2),
			       .backing_page = MiB(2) };
	struct domain d;
	static struct guest_demand dd;
	char why[512], aliases[256] = "";
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
	/* Each backend as alias[:file][:shared], shown whatever fails. */
	for (unsigned int i = 0, a = 0; i < dd.nr_backends; i++) {
		const struct guest_backend *be = &dd.backends[i];

		a += (unsigned int)snprintf(aliases + a, sizeof(aliases) - a, "%s%s%s%s",
					    i ? "," : "", be->alias, be->file ? ":file" : "",
					    be->shared ? ":shared" : "");
	}
	snprintf(got + off, len - off, "%s", aliases);
	if (c->rc || dd.nr_needs > 4)
		return -1;
	for (unsigned int i = 0; i < 4; i++) {
		const struct want *w = &c->needs[i];

		if (!w->bytes)
			return i == dd.nr_needs && !strcmp(aliases, c->backends) ? 0 : -1;
		if (i >= dd.nr_needs || dd.needs[i].node != w->node ||
		    dd.needs[i].page_size != w->ps || dd.needs[i].bytes != w->bytes)
			return -1;
	}
	return dd.nr_needs == 4 && !strcmp(aliases, c->backends) ? 0 : -1;
}

/* struct domain.shared stays the domain's <access>, whatever a cell says. */
static int domain_shared_case(void)
{
	static const char xml[] =
		HEAD "<memory unit='MiB'>256</memory><memoryBacking><access mode='shared'/>"
		"</memoryBacking><cpu><numa><cell id='0' memory='128' unit='MiB'/>"
		"<cell id='1' memory='128' unit='MiB' memAccess='private'/></numa></cpu></domain>";
	struct domain d;
	char why[512];

	if (domain_parse(xml, strlen(xml), &d, why, sizeof(why)) < 0)
		return -1;
	return d.shared && d.access == ACCESS_SHARED && d.cells[1].access == ACCESS_PRIVATE &&
	       d.cells[0].access == ACCESS_DEFAULT ? 0 : -1;
}

/*
 * grow_pools='yes|no' in <metadata>, and reserve=, its name before (still
 * read; grow_pools wins when a domain has both): the domain's grow_pools.
 */
static int metadata_grow_case(const char *attrs, int want)
{
	char xml[512], why[512];
	struct domain d;

	snprintf(xml, sizeof(xml), HEAD "<memory unit='MiB'>128</memory><metadata>"
		 "<p:config xmlns:p='" DOM_NAMESPACE "' %s/></metadata></domain>", attrs);
	if (domain_parse(xml, strlen(xml), &d, why, sizeof(why)) < 0)
		return -1;
	return d.grow_pools == want ? 0 : -1;
}

/*
 * tenant='LABEL' read as the library bounds it (warm.h's tenant_valid, which
 * take and give apply): 1 to 63 printable ASCII bytes, not starting with
 * '@' (the warm pool's own labels). 1: taken, 0: refused with why, -1: wrong.
 */
static int tenant_case(const char *label)
{
	char xml[1024], why[512] = "";
	struct domain d;
	int r;

	snprintf(xml, sizeof(xml), HEAD "<memory unit='MiB'>128</memory><metadata>"
		 "<p:config xmlns:p='" DOM_NAMESPACE "' tenant='%s'/></metadata></domain>", label);
	r = domain_parse(xml, strlen(xml), &d, why, sizeof(why));
	if (r == 0)
		return !strcmp(d.tenant, label) ? 1 : -1;
	return r == -EINVAL && strstr(why, "tenant") ? 0 : -1;
}

static void test_tenant_bounds(void)
{
	static const struct {
		const char *label;
		int taken;
	} t[] = {
		{ "acme", 1 },
		{ "a", 1 },
		{ "acme-2.prod_x~!", 1 },
		{ "@single", 0 },	/* the warm pool's own label */
		{ "@", 0 },
		{ "a@b", 1 },		/* only a first '@' is the pool's */
		{ "ac me", 0 },
		{ " acme", 0 },
		{ "acm\xc3\xa9", 0 },	/* not ASCII */
	};
	char at63[64], at64[65];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int r = tenant_case(t[i].label);

		tap_ok(r == t[i].taken, "tenant='%s': %s when the domain is read (got %d)",
		       t[i].label, t[i].taken ? "taken" : "refused, as take and give refuse it", r);
	}
	memset(at63, 'a', 63);
	at63[63] = '\0';
	memset(at64, 'b', 64);
	at64[64] = '\0';
	tap_ok(tenant_case(at63) == 1, "a tenant of 63 bytes (the library's most): taken");
	tap_ok(tenant_case(at64) == 0,
	       "a tenant of 64 bytes (one past the library's most): refused when the domain is read");
	tap_ok(tenant_case("") == 0, "an empty tenant='': refused");
}

int main(void)
{
	char got[1024];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r = run_case(&cases[i], got, sizeof(got));

		tap_ok(r == 0, "%s [%s]", cases[i].what, got);
	}
	tap_ok(domain_shared_case() == 0, "domain.shared is the domain's <access>, not a cell's");
	tap_ok(metadata_grow_case("grow_pools='no'", TRI_NO) == 0, "grow_pools='no': no growth");
	tap_ok(metadata_grow_case("reserve='no'", TRI_NO) == 0,
	       "reserve='no', grow_pools's name before, still read");
	tap_ok(metadata_grow_case("reserve='no' grow_pools='yes'", TRI_YES) == 0,
	       "reserve= and grow_pools= both: grow_pools wins");
	tap_ok(metadata_grow_case("prefault='yes'", TRI_UNSET) == 0,
	       "neither: the host's setting decides");
	test_tenant_bounds();
	return tap_done();
}
