/* SPDX-License-Identifier: MIT */
/*
 * The iommufd and VFIO cdev ioctls this library uses, written out here:
 * Debian 12's kernel headers (6.1) predate both (iommufd came in 6.2, the
 * VFIO cdev in 6.6, IOMMU_IOAS_MAP_FILE in 6.13). Names, numbers and layouts
 * follow the kernel's uAPI (include/uapi/linux/iommufd.h and vfio.h); every
 * struct opens with its own size, which the kernel checks.
 */
#ifndef PREALLOC_IOMMUFD_UAPI_H
#define PREALLOC_IOMMUFD_UAPI_H

#include <stdint.h>
#include <sys/ioctl.h>

#define IOFD_TYPE ';'
#define IOFD_IOC(nr) _IO(IOFD_TYPE, nr)
#define IOFD_DESTROY IOFD_IOC(0x80)
#define IOFD_IOAS_ALLOC IOFD_IOC(0x81)
#define IOFD_IOAS_IOVA_RANGES IOFD_IOC(0x84)
#define IOFD_IOAS_MAP IOFD_IOC(0x85)
#define IOFD_IOAS_UNMAP IOFD_IOC(0x86)
#define IOFD_IOAS_MAP_FILE IOFD_IOC(0x8f)	/* 6.13 */

/* VFIO_TYPE is ';' too; VFIO_BASE 100. */
#define IOFD_VFIO_DEVICE_BIND IOFD_IOC(100 + 18)
#define IOFD_VFIO_DEVICE_ATTACH_PT IOFD_IOC(100 + 19)

#define IOFD_MAP_FIXED_IOVA (1u << 0)
#define IOFD_MAP_WRITEABLE (1u << 1)
#define IOFD_MAP_READABLE (1u << 2)

struct iofd_destroy {
	uint32_t size;
	uint32_t id;
};

struct iofd_ioas_alloc {
	uint32_t size;
	uint32_t flags;
	uint32_t out_ioas_id;
};

struct iofd_iova_range {
	uint64_t start;
	uint64_t last;
};

struct iofd_ioas_iova_ranges {
	uint32_t size;
	uint32_t ioas_id;
	uint32_t num_iovas;	/* in: room in allowed_iovas; out: how many there are */
	uint32_t reserved;
	uint64_t allowed_iovas;	/* user pointer to struct iofd_iova_range[] */
	uint64_t out_iova_alignment;
};

struct iofd_ioas_map {
	uint32_t size;
	uint32_t flags;
	uint32_t ioas_id;
	uint32_t reserved;
	uint64_t user_va;
	uint64_t length;
	uint64_t iova;		/* in with FIXED_IOVA; else out */
};

struct iofd_ioas_map_file {
	uint32_t size;
	uint32_t flags;
	uint32_t ioas_id;
	int32_t fd;
	uint64_t start;		/* file offset */
	uint64_t length;
	uint64_t iova;
};

struct iofd_ioas_unmap {
	uint32_t size;
	uint32_t ioas_id;
	uint64_t iova;
	uint64_t length;	/* in; out: bytes unmapped */
};

struct iofd_vfio_bind {
	uint32_t argsz;
	uint32_t flags;
	int32_t iommufd;
	uint32_t out_devid;
};

struct iofd_vfio_attach_pt {
	uint32_t argsz;
	uint32_t flags;
	uint32_t pt_id;
};

#endif
