/* SPDX-License-Identifier: MIT */
/*
 * vm_vfio_check: prove a PCI device bound to vfio-pci is usable through VFIO
 * type1: the container opens and speaks the API we build against, the
 * device's group opens and is viable, the IOMMU can be set, the device fd
 * opens, and a DMA map pins memory (VmLck grows by the mapped size) until
 * unmapped.
 *
 *   vm_vfio_check BDF        e.g. 0000:00:03.0
 *
 * One line per step; exits 0 when all pass, 1 on the first failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/vfio.h>

#define MAP_BYTES (2u << 20)

static int fail(const char *step)
{
	printf("vfio: FAIL %s: %s\n", step, strerror(errno));
	return 1;
}

static long vm_locked_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int main(int argc, char **argv)
{
	char link[PATH_MAX], path[PATH_MAX];
	struct vfio_group_status status = {.argsz = sizeof(status)};
	struct vfio_device_info dinfo = {.argsz = sizeof(dinfo)};
	int container, group, device, api;
	long before, pinned, after;
	ssize_t n;
	void *buf;

	if (argc != 2) {
		fprintf(stderr, "usage: %s BDF\n", argv[0]);
		return 1;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group", argv[1]);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		return fail("iommu_group link");
	link[n] = '\0';
	snprintf(path, sizeof(path), "/dev/vfio/%s", basename(link));

	container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (container < 0)
		return fail("open /dev/vfio/vfio");
	api = ioctl(container, VFIO_GET_API_VERSION);
	if (api != VFIO_API_VERSION) {
		printf("vfio: FAIL VFIO_GET_API_VERSION: %d, built for %d\n", api,
		       VFIO_API_VERSION);
		return 1;
	}
	printf("vfio: ok api version %d\n", api);
	if (ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1)
		return fail("VFIO_CHECK_EXTENSION TYPE1v2");
	printf("vfio: ok type1v2 supported\n");

	group = open(path, O_RDWR | O_CLOEXEC);
	if (group < 0)
		return fail(path);
	if (ioctl(group, VFIO_GROUP_GET_STATUS, &status) < 0)
		return fail("VFIO_GROUP_GET_STATUS");
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		printf("vfio: FAIL group %s not viable (flags 0x%x)\n", path, status.flags);
		return 1;
	}
	printf("vfio: ok group %s viable\n", path);

	if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) < 0)
		return fail("VFIO_GROUP_SET_CONTAINER");
	if (ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) < 0)
		return fail("VFIO_SET_IOMMU");
	device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, argv[1]);
	if (device < 0)
		return fail("VFIO_GROUP_GET_DEVICE_FD");
	if (ioctl(device, VFIO_DEVICE_GET_INFO, &dinfo) < 0)
		return fail("VFIO_DEVICE_GET_INFO");
	printf("vfio: ok device fd, %u regions, %u irqs\n", dinfo.num_regions, dinfo.num_irqs);

	/* Pin 2 MiB through the IOMMU: VmLck must grow by exactly that. */
	buf = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED)
		return fail("mmap");
	memset(buf, 0, MAP_BYTES);
	before = vm_locked_kib();
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)buf,
		.iova = 1u << 20,
		.size = MAP_BYTES,
	};
	if (ioctl(container, VFIO_IOMMU_MAP_DMA, &map) < 0)
		return fail("VFIO_IOMMU_MAP_DMA");
	pinned = vm_locked_kib();
	struct vfio_iommu_type1_dma_unmap unmap = {
		.argsz = sizeof(unmap),
		.iova = map.iova,
		.size = MAP_BYTES,
	};
	if (ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap) < 0)
		return fail("VFIO_IOMMU_UNMAP_DMA");
	after = vm_locked_kib();
	if (pinned - before != MAP_BYTES / 1024 || after != before) {
		printf("vfio: FAIL VmLck %ld -> %ld -> %ld kB, expected +%u kB while mapped\n",
		       before, pinned, after, MAP_BYTES / 1024);
		return 1;
	}
	printf("vfio: ok map/unmap pinned %u kB (VmLck %ld -> %ld -> %ld kB)\n", MAP_BYTES / 1024,
	       before, pinned, after);

	close(device);
	close(group);
	close(container);
	munmap(buf, MAP_BYTES);
	return 0;
}
