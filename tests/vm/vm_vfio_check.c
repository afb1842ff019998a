/* SPDX-License-Identifier: MIT */
/*
 * vm_vfio_check BDF: prove, through libprealloc's VFIO API and the QEMU edu
 * device's DMA engine, that a DMA map is real.
 *
 *  1. a 64 MiB 2M-hugetlb region on nodes 0 and 1 is populated and mapped
 *     in one job, placed from IOVA 0xfe000000 so the MSI window splits it;
 *     VmLck grows by exactly the region;
 *  2. a pattern goes RAM (node 0, below the window) -> device -> RAM (node
 *     1, above it) through the IOVAs, and the bytes match;
 *  3. the pinned region is cleared in place by each node's workers, the
 *     mapping kept; the device then reads zeros through the IOVAs;
 *  4. after unmap VmLck is back and a DMA to the old IOVA writes nothing;
 *
 * and before them, IOVAs already taken: a map failing halfway unmaps what it
 * had mapped and nothing else, and a handle never places over its own maps.
 *
 * edu (QEMU docs/specs/edu): BAR0 registers 0x80 DMA source, 0x88 dest,
 * 0x90 count, 0x98 command (bit 0 run, bit 1 device->RAM); its buffer sits
 * at 0x40000. Under TCG this proves the mapping and the data path, not the
 * store fences of the clear kernels. One line per step; exit 0 or 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/vfio.h>

#include "prealloc.h"

#define M (UINT64_C(1) << 20)
#define REGION (64 * M)
#define EDU_BUF 0x40000
#define XFER 2048	/* QEMU 7.2's edu aborts on a 4096-byte DMA */

static int failures;

static void check(int ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("vfio: %s %s", ok ? "ok" : "FAIL", what);
	va_start(ap, fmt);
	if (fmt[0]) {
		printf(": ");
		vprintf(fmt, ap);
	}
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures += !ok;
}

static long vm_kib(const char *key)
{
	char line[256], fmt[32];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	snprintf(fmt, sizeof(fmt), "%s: %%ld kB", key);
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* ---- the edu device ------------------------------------------------------ */

static volatile uint8_t *bar0;

static void reg_write(unsigned int off, uint64_t v)
{
	*(volatile uint64_t *)(bar0 + off) = v;
}

/* One DMA: to_ram 0 copies from IOVA iova into the device's buffer, 1 back. */
static int edu_dma(uint64_t iova, int to_ram)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	reg_write(0x80, to_ram ? EDU_BUF : iova);
	reg_write(0x88, to_ram ? iova : EDU_BUF);
	reg_write(0x90, XFER);
	reg_write(0x98, 1 | (to_ram ? 2 : 0));
	for (int i = 0; i < 1000; i++) {	/* edu runs each DMA on a 100 ms timer */
		if (!(*(volatile uint32_t *)(bar0 + 0x98) & 1))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

/* The device fd, BAR0 mapped, bus mastering on (vfio-pci leaves it off). */
static int edu_open(int group, const char *bdf)
{
	struct vfio_region_info cfg = { .argsz = sizeof(cfg), .index = VFIO_PCI_CONFIG_REGION_INDEX };
	struct vfio_region_info bar = { .argsz = sizeof(bar), .index = VFIO_PCI_BAR0_REGION_INDEX };
	uint16_t cmd;
	int dev = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);

	if (dev < 0 || ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &cfg) < 0 ||
	    ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &bar) < 0)
		return -errno;
	if (pread(dev, &cmd, 2, (off_t)cfg.offset + 4) != 2)
		return -EIO;
	cmd |= 0x6;	/* memory space, bus master */
	if (pwrite(dev, &cmd, 2, (off_t)cfg.offset + 4) != 2)
		return -EIO;
	bar0 = mmap(NULL, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev, (off_t)bar.offset);
	if (bar0 == MAP_FAILED)
		return -errno;
	return dev;
}

/* ---- the proof -------------------------------------------------------------- */

static uint64_t iova_of(const struct prealloc_vfio_map_info *mi, uint64_t off)
{
	for (unsigned int i = 0; i < mi->nr_segments; i++)
		if (off - mi->segments[i].offset < mi->segments[i].length)
			return mi->segments[i].iova + (off - mi->segments[i].offset);
	return UINT64_MAX;
}

static int all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/* A pattern from node 0 (below the MSI window) to node 1 (above it) through the device. */
static void copy_through(uint8_t *base, const struct prealloc_vfio_map_info *mi)
{
	uint64_t a = 1 * M, b = 40 * M;
	int r;

	for (int i = 0; i < XFER; i++)
		base[a + i] = (uint8_t)(i * 7 + 3);
	memset(base + b, 0, XFER);
	r = edu_dma(iova_of(mi, a), 0);
	if (r == 0)
		r = edu_dma(iova_of(mi, b), 1);
	check(r == 0 && !memcmp(base + a, base + b, XFER), "dma copy",
	      "%d bytes RAM@iova 0x%llx (node 0) -> edu -> RAM@iova 0x%llx (node 1) %s", XFER,
	      (unsigned long long)iova_of(mi, a), (unsigned long long)iova_of(mi, b),
	      r ? strerror(-r) : memcmp(base + a, base + b, XFER) ? "MISMATCH" : "match");
}

/* Clear the pinned region in place, mapping kept; the device must read zeros. */
static void clear_pinned(struct prealloc_region *reg, uint8_t *base,
			 const struct prealloc_vfio_map_info *mi)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_CLEAR };
	struct prealloc_report rep = { .size = sizeof(rep) };
	uint64_t scratch = 60 * M, from[2] = { 1 * M, 40 * M };
	int r;

	memset(base, 0xa5, REGION);
	r = prealloc_run(reg, &jo, &rep);
	check(r == 0 && rep.nr_nodes == 2, "clear pinned", "%s by the %s kernel on %u nodes",
	      r ? strerror(-r) : "cleared in place", rep.clear_kernel, rep.nr_nodes);
	for (int i = 0; i < 2; i++) {
		memset(base + scratch, 0xff, XFER);
		r = edu_dma(iova_of(mi, from[i]), 0);
		if (r == 0)
			r = edu_dma(iova_of(mi, scratch), 1);
		check(r == 0 && all_bytes(base + scratch, XFER, 0), "device reads zeros",
		      "node %d, iova 0x%llx: %s", i, (unsigned long long)iova_of(mi, from[i]),
		      r ? strerror(-r) : all_bytes(base + scratch, XFER, 0) ? "all zero" : "NOT zero");
	}
}

static int map_region(struct prealloc_ctx *ctx, struct prealloc_vfio *v, struct prealloc_region **reg,
		      struct prealloc_vfio_map_info *mi)
{
	static const int nodes[] = { 0, 1 };
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MEMFD,
					   .page_size = 2 * M, .length = REGION, .nr_nodes = 2,
					   .nodes = nodes };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo), .iova = 0xfe000000 };
	long before = vm_kib("VmLck"), after;
	int r;

	r = prealloc_region_new(ctx, &ro, reg);
	if (r < 0)
		return r;
	r = prealloc_vfio_map(v, *reg, &jo, &mo, mi, NULL);
	after = vm_kib("VmLck");
	check(r == 0, "populate + map, one job", "%s; %u segments, %u mappings, %.6f s in MAP_DMA",
	      r ? mi->message : "done", mi->nr_segments, mi->mappings, mi->seconds);
	for (unsigned int i = 0; i < mi->nr_segments; i++)
		printf("vfio:   segment iova 0x%llx +%llu MiB <- offset %llu MiB\n",
		       (unsigned long long)mi->segments[i].iova,
		       (unsigned long long)(mi->segments[i].length / M),
		       (unsigned long long)(mi->segments[i].offset / M));
	check(r == 0 && mi->nr_segments == 2 && mi->segments[1].iova == 0xff000000, "msi split",
	      "below and above 0xfee00000");
	check(after - before == (long)(REGION >> 10), "pinned", "VmLck %ld -> %ld kB (VmPin %ld kB)",
	      before, after, vm_kib("VmPin"));
	return r;
}

/* A mapping the caller made on the container itself, as a VMM maps its own RAM. */
static int raw_map(struct prealloc_vfio *v, void *p, uint64_t iova, uint64_t len, bool map)
{
	struct vfio_iommu_type1_dma_map m = { .argsz = sizeof(m), .vaddr = (uintptr_t)p,
					       .iova = iova, .size = len,
					       .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE };
	struct vfio_iommu_type1_dma_unmap u = { .argsz = sizeof(u), .iova = iova, .size = len };
	int fd = prealloc_vfio_container_fd(v);

	if (map)
		return ioctl(fd, VFIO_IOMMU_MAP_DMA, &m) < 0 ? -errno : 0;
	return ioctl(fd, VFIO_IOMMU_UNMAP_DMA, &u) < 0 ? -errno : 0;
}

static int node0_region(struct prealloc_ctx *ctx, uint64_t len, struct prealloc_region **ret)
{
	static const int node0[] = { 0 };
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MEMFD,
					   .page_size = 2 * M, .length = len, .nr_nodes = 1,
					   .nodes = node0 };

	return prealloc_region_new(ctx, &ro, ret);
}

/*
 * IOVAs already taken. (1) A map that fails halfway gives back what it had
 * mapped and nothing else: the caller's own 2 MiB at 0xff000000, then a 16
 * MiB region placed from 0xfe000000 maps 14 MiB below the MSI window and
 * collides above it (MAP_DMA -EEXIST); VmLck must hold the caller's 2 MiB
 * only, and once that is gone the same IOVAs take the region whole.
 * (2) Regions this handle mapped are not placed over: a second region from
 * the same IOVA lands after the first, and a fixed IOVA on the first is
 * refused before any pin.
 */
static void taken_iovas(struct prealloc_ctx *ctx, struct prealloc_vfio *v)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_vfio_map_opts from = { .size = sizeof(from), .iova = 0xfe000000 };
	struct prealloc_vfio_map_opts at = { .size = sizeof(at), .iova = 0xff000000,
					     .flags = PREALLOC_VFIO_MAP_FIXED };
	struct prealloc_vfio_map_info mb = { .size = sizeof(mb) }, mc = { .size = sizeof(mc) };
	struct prealloc_region *b = NULL, *c = NULL;
	long before = vm_kib("VmLck"), mid;
	void *own = mmap(NULL, 2 * M, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int r;

	r = own == MAP_FAILED ? -errno : raw_map(v, own, 0xff000000, 2 * M, true);
	mid = vm_kib("VmLck");
	check(r == 0 && mid - before == 2048, "caller's own mapping", "%s; VmLck %ld -> %ld kB",
	      r ? strerror(-r) : "2 MiB at 0xff000000", before, mid);
	r = node0_region(ctx, 16 * M, &b);
	if (r == 0)
		r = prealloc_vfio_map(v, b, &jo, &from, &mb, NULL);
	check(r < 0 && mb.step == PREALLOC_VFIO_STEP_MAP && vm_kib("VmLck") == mid,
	      "failed map gives back its own", "%s; VmLck %ld kB, want %ld",
	      r ? mb.message : "MAPPED over another mapping", vm_kib("VmLck"), mid);
	if (own != MAP_FAILED) {
		check(raw_map(v, own, 0xff000000, 2 * M, false) == 0, "caller's mapping intact",
		      "%s", "unmapped by its owner");
		munmap(own, 2 * M);
	}
	r = b ? prealloc_vfio_map(v, b, &jo, &from, &mb, NULL) : -EINVAL;
	check(r == 0 && vm_kib("VmLck") - before == 16 * 1024, "same iovas after the failure",
	      "%s; VmLck %ld kB", r ? mb.message : "16 MiB mapped whole", vm_kib("VmLck"));
	r = node0_region(ctx, 2 * M, &c);
	if (r == 0)
		r = prealloc_vfio_map(v, c, &jo, &from, &mc, NULL);
	check(r == 0 && mc.nr_segments == 1 && mc.segments[0].iova == 0xff200000,
	      "second region placed after the first", "%s at 0x%llx", r ? mc.message : "mapped",
	      (unsigned long long)mc.segments[0].iova);
	if (c && r == 0)
		prealloc_vfio_unmap(v, c);
	r = c ? prealloc_vfio_map(v, c, &jo, &at, &mc, NULL) : -EINVAL;
	check(r == -ERANGE && mc.step == PREALLOC_VFIO_STEP_FIT && vm_kib("VmLck") - before == 16 * 1024,
	      "fixed over a mapped region refused", "%s", r ? mc.message : "MAPPED over it");
	if (b)
		prealloc_vfio_unmap(v, b);
	prealloc_region_free(c);
	prealloc_region_free(b);
	check(vm_kib("VmLck") == before, "taken iovas: all unmapped", "VmLck %ld kB, want %ld",
	      vm_kib("VmLck"), before);
}

int main(int argc, char **argv)
{
	struct prealloc_vfio_opts vo = { .size = sizeof(vo) };
	struct prealloc_vfio_info vi = { .size = sizeof(vi) };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_region *reg = NULL;
	struct prealloc_vfio *v;
	struct prealloc_ctx *ctx;
	uint8_t *base;
	long before;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: %s BDF\n", argv[0]);
		return 1;
	}
	vo.device = argv[1];
	if (prealloc_ctx_new(&ctx) < 0 || prealloc_vfio_open(ctx, &vo, &v, &vi) < 0) {
		printf("vfio: FAIL open %s: %s\n", argv[1], vi.message);
		return 1;
	}
	check(1, "open", "group %d, type %d, page sizes 0x%llx, %u IOVA ranges, dma_avail %u",
	      vi.group, vi.iommu_type, (unsigned long long)vi.pgsize_bitmap, vi.nr_ranges,
	      vi.dma_avail);
	for (unsigned int i = 0; i < vi.nr_ranges; i++)
		printf("vfio:   usable iova 0x%llx-0x%llx\n", (unsigned long long)vi.ranges[i].start,
		       (unsigned long long)vi.ranges[i].last);
	r = edu_open(prealloc_vfio_group_fd(v), argv[1]);
	check(r >= 0, "edu", "%s", r < 0 ? strerror(-r) : "BAR0 mapped, bus master on");
	if (r >= 0)
		taken_iovas(ctx, v);
	before = vm_kib("VmLck");
	if (r < 0 || map_region(ctx, v, &reg, &mi) < 0)
		return 1;
	base = prealloc_region_addr(reg);
	copy_through(base, &mi);
	clear_pinned(reg, base, &mi);

	r = prealloc_vfio_unmap(v, reg);
	check(r == 0 && vm_kib("VmLck") == before, "unmap", "VmLck back to %ld kB", vm_kib("VmLck"));
	memset(base + 1 * M, 0x5a, XFER);
	r = edu_dma(iova_of(&mi, 1 * M), 1);	/* the device buffer holds zeros */
	check(r == 0 && all_bytes(base + 1 * M, XFER, 0x5a), "old iova blocked",
	      "a DMA to 0x%llx after unmap %s", (unsigned long long)iova_of(&mi, 1 * M),
	      all_bytes(base + 1 * M, XFER, 0x5a) ? "wrote nothing" : "WROTE MEMORY");
	prealloc_region_free(reg);
	prealloc_vfio_close(v);
	prealloc_ctx_free(ctx);
	return failures ? 1 : 0;
}
