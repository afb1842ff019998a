/* SPDX-License-Identifier: MIT */
/*
 * vm_iommufd_check BDF: prove, through libprealloc's iommufd backend and the
 * QEMU edu device's DMA engine, that an iommufd mapping is real (the rig
 * kernel: 6.12 with IOMMUFD and VFIO_DEVICE_CDEV).
 *
 *  1. the handle binds the device's cdev to a new IOAS; its usable ranges
 *     leave out the MSI window;
 *  2. a map failing halfway unmaps what it mapped and nothing else: the
 *     caller's own 2 MiB at 0xff000000 in the IOAS, then a 16 MiB region
 *     placed from 0xfe000000 collides above the window (-EEXIST); the
 *     caller's mapping is still there (its unmap takes 2 MiB), and once it
 *     is gone the same IOVAs take the region whole;
 *  3. a 64 MiB 2M-hugetlb region on nodes 0 and 1 populated and mapped in
 *     one job, split by the MSI window; a pattern goes RAM (node 0) ->
 *     device -> RAM (node 1) through the IOVAs;
 *  4. the kernel has no IOMMU_IOAS_MAP_FILE (6.12): the map fell back to
 *     IOMMU_IOAS_MAP and says so;
 *  5. after unmap a DMA to the old IOVA writes nothing.
 *
 * One line per step; exit 0 or 1.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "edu.h"
#include "prealloc.h"

#define M (UINT64_C(1) << 20)
#define REGION (64 * M)

static int failures;

__attribute__((format(printf, 3, 4))) static void check(int ok, const char *what,
							const char *fmt, ...)
{
	va_list ap;

	printf("iommufd: %s %s: ", ok ? "ok" : "FAIL", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures += !ok;
}

/* The iommufd ioctls a VMM would call itself (include/uapi/linux/iommufd.h). */
struct ioas_map {
	uint32_t size, flags, ioas_id, reserved;
	uint64_t user_va, length, iova;
};

struct ioas_unmap {
	uint32_t size, ioas_id;
	uint64_t iova, length;
};

#define IOAS_MAP _IO(';', 0x85)
#define IOAS_UNMAP _IO(';', 0x86)

/* The caller's own mapping in the handle's IOAS, as a VMM maps its RAM; bytes unmapped. */
static int64_t raw_map(struct prealloc_vfio *v, uint32_t ioas, void *p, uint64_t iova, bool map)
{
	struct ioas_map m = { .size = sizeof(m), .flags = 7, .ioas_id = ioas,
			      .user_va = (uintptr_t)p, .length = 2 * M, .iova = iova };
	struct ioas_unmap u = { .size = sizeof(u), .ioas_id = ioas, .iova = iova, .length = 2 * M };
	int fd = prealloc_vfio_container_fd(v);

	if (map)
		return ioctl(fd, IOAS_MAP, &m) < 0 ? -errno : 0;
	return ioctl(fd, IOAS_UNMAP, &u) < 0 ? -errno : (int64_t)u.length;
}

static int region(struct prealloc_ctx *ctx, uint64_t len, int nr_nodes,
		  struct prealloc_region **ret)
{
	static const int nodes[] = { 0, 1 };
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MEMFD,
					   .page_size = 2 * M, .length = len,
					   .nr_nodes = (unsigned int)nr_nodes, .nodes = nodes };

	return prealloc_region_new(ctx, &ro, ret);
}

static void failed_halfway(struct prealloc_ctx *ctx, struct prealloc_vfio *v, uint32_t ioas)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_vfio_map_opts from = { .size = sizeof(from), .iova = 0xfe000000 };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_region *b = NULL;
	void *own = mmap(NULL, 2 * M, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int64_t n;
	int r;

	r = own == MAP_FAILED ? -errno : (int)raw_map(v, ioas, own, 0xff000000, true);
	check(r == 0, "caller's own mapping", "%s", r ? strerror(-r) : "2 MiB at 0xff000000");
	r = region(ctx, 16 * M, 1, &b);
	if (r == 0)
		r = prealloc_vfio_map(v, b, &jo, &from, &mi, NULL);
	check(r < 0 && mi.step == PREALLOC_VFIO_STEP_MAP, "a map failing halfway", "%s",
	      r ? mi.message : "MAPPED over another mapping");
	n = own == MAP_FAILED ? -EINVAL : raw_map(v, ioas, own, 0xff000000, false);
	check(n == (int64_t)(2 * M), "caller's mapping intact", "its unmap took %lld bytes",
	      (long long)n);
	r = b ? prealloc_vfio_map(v, b, &jo, &from, &mi, NULL) : -EINVAL;
	check(r == 0 && mi.nr_segments == 2 && mi.segments[0].iova == 0xfe000000,
	      "same iovas after the failure", "%s", r ? mi.message : "16 MiB mapped whole");
	if (b && r == 0)
		prealloc_vfio_unmap(v, b);
	prealloc_region_free(b);
	if (own != MAP_FAILED)
		munmap(own, 2 * M);
}

static void copy_through(uint8_t *base, const struct prealloc_vfio_map_info *mi)
{
	uint64_t a = 1 * M, b = 40 * M;
	int r = edu_copy(base, mi, a, b);

	check(r == 0, "dma copy",
	      "%d bytes RAM@iova 0x%llx (node 0) -> edu -> RAM@iova 0x%llx (node 1) %s", XFER,
	      (unsigned long long)iova_of(mi, a), (unsigned long long)iova_of(mi, b),
	      r == -EIO ? "MISMATCH" : r ? strerror(-r) : "match");
}

static int open_handle(struct prealloc_ctx *ctx, const char *bdf, struct prealloc_vfio **v,
		       struct prealloc_vfio_info *vi)
{
	struct prealloc_vfio_opts vo = { .size = sizeof(vo), .backend = PREALLOC_VFIO_IOMMUFD,
					 .device = bdf };
	bool msi_out = true;
	int r = prealloc_vfio_open(ctx, &vo, v, vi);

	for (unsigned int i = 0; r == 0 && i < vi->nr_ranges; i++) {
		printf("iommufd:   usable iova 0x%llx-0x%llx\n",
		       (unsigned long long)vi->ranges[i].start, (unsigned long long)vi->ranges[i].last);
		msi_out &= !(vi->ranges[i].start <= 0xfee00000 && vi->ranges[i].last >= 0xfee00000);
	}
	check(r == 0 && vi->ioas_id && vi->cdev[0] && prealloc_vfio_device_fd(*v) >= 0 &&
		      vi->nr_ranges >= 2 && msi_out,
	      "open", "%s: IOAS %u, devid %u, %s, %u ranges without the MSI window, alignment 0x%llx",
	      r ? vi->message : "bound", vi->ioas_id, vi->devid, vi->cdev, vi->nr_ranges,
	      (unsigned long long)vi->pgsize_bitmap);
	return r;
}

int main(int argc, char **argv)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo), .iova = 0xfe000000 };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_vfio_info vi = { .size = sizeof(vi) };
	struct prealloc_region *reg = NULL;
	struct prealloc_vfio *v = NULL;
	struct prealloc_ctx *ctx;
	uint8_t *base;
	int r;

	if (argc != 2) {
		fprintf(stderr, "usage: %s BDF\n", argv[0]);
		return 1;
	}
	if (prealloc_ctx_new(&ctx) < 0 || open_handle(ctx, argv[1], &v, &vi) < 0)
		return 1;
	r = edu_setup(prealloc_vfio_device_fd(v));
	check(r >= 0, "edu", "%s", r < 0 ? strerror(-r) : "BAR0 mapped through the cdev, bus master on");
	if (r < 0)
		return 1;
	failed_halfway(ctx, v, vi.ioas_id);
	r = region(ctx, REGION, 2, &reg);
	if (r == 0)
		r = prealloc_vfio_map(v, reg, &jo, &mo, &mi, NULL);
	check(r == 0 && mi.nr_segments == 2 && mi.segments[1].iova == 0xff000000,
	      "populate + map, one job", "%s; %u segments, %u mappings, %.6f s in IOMMU_IOAS_MAP",
	      r ? mi.message : "done, split at the MSI window", mi.nr_segments, mi.mappings,
	      mi.seconds);
	if (r < 0)
		return 1;
	check(!mi.map_file, "map_file", "6.12 has no IOMMU_IOAS_MAP_FILE: %s",
	      mi.map_file ? "MAP_FILE CLAIMED" : "fell back to IOMMU_IOAS_MAP");
	base = prealloc_region_addr(reg);
	copy_through(base, &mi);
	r = prealloc_vfio_unmap(v, reg);
	memset(base + 1 * M, 0x5a, XFER);
	if (r == 0)
		r = edu_dma(iova_of(&mi, 1 * M), 1);
	check(r == 0 && all_bytes(base + 1 * M, XFER, 0x5a), "old iova blocked",
	      "a DMA to 0x%llx after unmap %s", (unsigned long long)iova_of(&mi, 1 * M),
	      all_bytes(base + 1 * M, XFER, 0x5a) ? "wrote nothing" : "WROTE MEMORY");
	prealloc_region_free(reg);
	prealloc_vfio_close(v);
	prealloc_ctx_free(ctx);
	return failures ? 1 : 0;
}
