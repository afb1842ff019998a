/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: VFIO: DMA-map (pin) a region for a device.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_VFIO_H
#define LIBPREALLOC_VFIO_H

#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- VFIO: DMA-map (pin) a region for a device (vfio/) -------------------
 *
 * A device passed through to a guest may DMA to any guest page, so all of
 * guest memory is pinned and mapped into the device's IOMMU before the guest
 * runs. Pinning memory that is not populated faults and zeroes every page
 * inside the pin, on one thread, under the container's lock; pinning memory
 * prealloc populated (or cleared) only walks present pages. Here the map is
 * the serial phase of one job after the parallel populate (or clear): "fault
 * every node in parallel, then pin" with one progress, cancel and completion.
 * docs/vfio.md says what is pinned when.
 *
 * Backends: a VFIO type1 container (the library opens one for a group or a
 * PCI device, or maps into the caller's), or an iommufd IOAS (/dev/iommu:
 * the library allocates one and binds the device's VFIO cdev to it, or maps
 * into the caller's IOAS). docs/vfio.md compares them.
 *
 * A handle is used by one thread at a time, one map job at a time.
 */
struct prealloc_vfio;

enum prealloc_vfio_backend {
	PREALLOC_VFIO_TYPE1 = 0,	/* VFIO container, TYPE1v2 IOMMU (TYPE1 where v2 is missing) */
	PREALLOC_VFIO_IOMMUFD,		/* iommufd IOAS, the device through its cdev (6.6+) */
};

enum prealloc_vfio_flags {
	/*
	 * fd is the caller's container, its IOMMU already set (TYPE1), or the
	 * caller's iommufd (IOMMUFD; ioas_id its IOAS); never closed here.
	 */
	PREALLOC_VFIO_CALLER_FD = 1u << 0,
};

struct prealloc_vfio_opts {
	size_t size;		/* sizeof(struct prealloc_vfio_opts) */
	int backend;		/* enum prealloc_vfio_backend */
	unsigned int flags;	/* enum prealloc_vfio_flags */
	/* A PCI address ("0000:00:03.0"): its IOMMU group; it must be bound to vfio-pci. */
	const char *device;
	const char *group;	/* or the group's node, "/dev/vfio/N" */
	int fd;			/* CALLER_FD: the container, or the iommufd */
	/* IOMMUFD with CALLER_FD: the caller's IOAS to map into (0: allocate one in fd). */
	uint32_t ioas_id;
};

/* The check or step that failed: info.step. */
enum prealloc_vfio_step {
	PREALLOC_VFIO_STEP_NONE = 0,
	PREALLOC_VFIO_STEP_BACKEND,	/* -EOPNOTSUPP: iommufd; -EINVAL: bad options */
	PREALLOC_VFIO_STEP_DEVICE,	/* -ENOENT: no such PCI device; -ENODEV: it has no IOMMU group */
	PREALLOC_VFIO_STEP_DRIVER,	/* -EBUSY: bound to driver (not vfio-pci; "" none) */
	PREALLOC_VFIO_STEP_GROUP,	/* opening the group: -ENOENT, -EACCES, -EBUSY (open elsewhere) */
	PREALLOC_VFIO_STEP_VIABLE,	/* -EBUSY: a device of the group (blocker) is held by a host driver */
	PREALLOC_VFIO_STEP_CONTAINER,	/* /dev/vfio/vfio, API version, TYPE1 extension, SET_IOMMU */
	PREALLOC_VFIO_STEP_INFO,	/* VFIO_IOMMU_GET_INFO */
	PREALLOC_VFIO_STEP_FIT,		/* map: -ERANGE/-ENOSPC no usable IOVA room or mappings left; -EINVAL alignment */
	PREALLOC_VFIO_STEP_MEMLOCK,	/* map: -ENOMEM RLIMIT_MEMLOCK is below what the pin needs */
	PREALLOC_VFIO_STEP_MAP,		/* map: VFIO_IOMMU_MAP_DMA failed (the job's report says where) */
	/*
	 * iommufd: /dev/iommu, IOMMU_IOAS_ALLOC, the device's cdev (-ENODEV: the
	 * kernel has none, CONFIG_VFIO_DEVICE_CDEV), VFIO_DEVICE_BIND_IOMMUFD,
	 * VFIO_DEVICE_ATTACH_IOMMUFD_PT, IOMMU_IOAS_IOVA_RANGES
	 */
	PREALLOC_VFIO_STEP_IOMMUFD,
};

#define PREALLOC_VFIO_MAX_RANGES 16

/* Usable IOVA, inclusive bounds as the kernel reports them. */
struct prealloc_iova_range {
	uint64_t start;
	uint64_t last;
};

struct prealloc_vfio_info {
	size_t size;		/* sizeof(struct prealloc_vfio_info) */
	int step;		/* enum prealloc_vfio_step that failed, NONE */
	int error;		/* negative errno, 0 */
	int backend;
	int iommu_type;		/* VFIO_TYPE1v2_IOMMU (3), VFIO_TYPE1_IOMMU (1); 0 caller's */
	int group;		/* N of /dev/vfio/N; -1 for the caller's container */
	unsigned int group_devices; /* devices in the group (sysfs) */
	char driver[64];	/* the device's driver, "" none */
	char blocker[256];	/* VIABLE: a device of the group bound to another driver */
	char blocker_driver[64];
	uint64_t pgsize_bitmap;	/* IOMMU page sizes */
	uint32_t dma_avail;	/* mappings the container still allows; UINT32_MAX: not reported */
	unsigned int nr_ranges;	/* usable IOVA ranges, ascending (0: not reported: all of it) */
	struct prealloc_iova_range ranges[PREALLOC_VFIO_MAX_RANGES];
	char message[512];	/* the failure in one line, "" on success */
	/* iommufd: the IOAS mapped into, the device's id in it, and its cdev ("" none). */
	uint32_t ioas_id;
	uint32_t devid;
	char cdev[64];
};

/*
 * Opens the device's (or group's) group into a new type1 container, after
 * checking the device is bound to vfio-pci and the group is viable; or takes
 * the caller's container (CALLER_FD). Reads the IOMMU's page sizes, usable
 * IOVA ranges and dma_avail (VFIO_IOMMU_GET_INFO and its capabilities).
 * ret_info (may be NULL) says what was found, or which step failed.
 */
int prealloc_vfio_open(struct prealloc_ctx *ctx, const struct prealloc_vfio_opts *opts,
		       struct prealloc_vfio **ret_vfio, struct prealloc_vfio_info *ret_info);
/* The container's info now (dma_avail shrinks as mappings are made). */
int prealloc_vfio_info(struct prealloc_vfio *vfio, struct prealloc_vfio_info *ret_info);
/* The container fd (type1); owned by the handle unless it was the caller's. */
int prealloc_vfio_container_fd(const struct prealloc_vfio *vfio);
/* The group fd the handle opened (VFIO_GROUP_GET_DEVICE_FD); -1 with CALLER_FD or iommufd. */
int prealloc_vfio_group_fd(const struct prealloc_vfio *vfio);
/*
 * iommufd: the device's cdev the handle opened and bound (a VMM's device
 * fd: regions, interrupts), CALLER_FD included when opts.device was given;
 * owned by the handle, closed (and the device unbound) by
 * prealloc_vfio_close: never close it yourself. -1 where no device was
 * bound, and for type1 (VFIO_GROUP_GET_DEVICE_FD on the group gives it there).
 */
int prealloc_vfio_device_fd(const struct prealloc_vfio *vfio);
/* Unmaps every mapping the handle still holds, closes what it opened, frees. */
void prealloc_vfio_close(struct prealloc_vfio *vfio);

enum prealloc_vfio_map_flags {
	PREALLOC_VFIO_MAP_FIXED = 1u << 0,    /* at opts.iova exactly; else placed at or above it */
	PREALLOC_VFIO_MAP_READONLY = 1u << 1, /* the device may read, not write */
	/* Tests: skip the RLIMIT_MEMLOCK check; the kernel refuses mid-map instead. */
	PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK = 1u << 2,
};

struct prealloc_vfio_map_opts {
	size_t size;		/* sizeof(struct prealloc_vfio_map_opts) */
	unsigned int flags;	/* enum prealloc_vfio_map_flags */
	/*
	 * FIXED: the IOVA of the region's first byte, aligned to the IOMMU's
	 * smallest page; the region must fit one usable range. Else the lowest
	 * IOVA to use: the region is placed in the usable ranges from there,
	 * split around reserved ones (the x86 MSI window at 0xfee00000), each
	 * piece aligned to the region's page size.
	 */
	uint64_t iova;
};

#define PREALLOC_VFIO_MAX_SEGMENTS 8
#define PREALLOC_VFIO_MAX_NODES 64

/* A piece of the region at a contiguous IOVA. */
struct prealloc_vfio_segment {
	uint64_t iova;
	uint64_t offset;	/* in the region */
	uint64_t length;
};

/* What mapping one node's memory cost. */
struct prealloc_vfio_node_map {
	int node;		/* -1: pages that were not resident (ADOPT_PLACEMENT) */
	uint64_t bytes;
	double seconds;		/* in VFIO_IOMMU_MAP_DMA */
};

struct prealloc_vfio_map_info {
	size_t size;		/* sizeof(struct prealloc_vfio_map_info) */
	int step;		/* enum prealloc_vfio_step that failed, NONE */
	int error;		/* negative errno, 0 */
	uint64_t bytes;		/* mapped (and still mapped after success) */
	double seconds;		/* in VFIO_IOMMU_MAP_DMA, all nodes */
	unsigned int mappings;	/* MAP_DMA calls: kernel mappings used */
	uint64_t locked_now;	/* MEMLOCK check: VmLck before the map */
	uint64_t locked_needed;	/* ... VmLck the pin would reach */
	uint64_t locked_limit;	/* ... RLIMIT_MEMLOCK, UINT64_MAX unlimited */
	int cap_ipc_lock;	/* 1: the caller may lock past the limit */
	unsigned int nr_segments;
	struct prealloc_vfio_segment segments[PREALLOC_VFIO_MAX_SEGMENTS];
	unsigned int nr_nodes;	/* in the region's extent order */
	struct prealloc_vfio_node_map nodes[PREALLOC_VFIO_MAX_NODES];
	char message[512];	/* the failure in one line, "" on success */
	/*
	 * iommufd: 1 when every piece was mapped by IOMMU_IOAS_MAP_FILE (the
	 * region's file and offset; 6.13+), 0 by IOMMU_IOAS_MAP (its address).
	 */
	int map_file;
};

/*
 * Maps region into the container as one job: job_opts' op runs on every
 * node in parallel (POPULATE, CLEAR, VERIFY, or NONE; job_opts NULL: NONE),
 * then one thread maps the region node extent by node extent with
 * VFIO_IOMMU_MAP_DMA, 1 GiB (or one page, if larger) per call, cancel
 * checked between calls. Before the job starts: the IOVA placement (FIT)
 * and, for a caller without CAP_IPC_LOCK, RLIMIT_MEMLOCK against what the
 * pin needs (MEMLOCK), each refused with its numbers in ret_info. A job that
 * fails or is cancelled unmaps what it mapped before it completes; one that
 * succeeds leaves the region mapped until prealloc_vfio_unmap (or close).
 * A FILE or MEMFD region is flock(LOCK_SH)ed while mapped: prealloc_release
 * of the file is refused meanwhile. The region must outlive the mapping.
 */
int prealloc_vfio_map_start(struct prealloc_vfio *vfio, struct prealloc_region *region,
			    const struct prealloc_job_opts *job_opts,
			    const struct prealloc_vfio_map_opts *opts, struct prealloc_job **ret_job,
			    struct prealloc_vfio_map_info *ret_info);
/* The map job's outcome (waits for it): per node bytes and seconds, segments. */
int prealloc_vfio_map_info(struct prealloc_job *job, struct prealloc_vfio_map_info *ret_info);
/* Synchronous: start, wait, info and report (either may be NULL). */
int prealloc_vfio_map(struct prealloc_vfio *vfio, struct prealloc_region *region,
		      const struct prealloc_job_opts *job_opts,
		      const struct prealloc_vfio_map_opts *opts,
		      struct prealloc_vfio_map_info *ret_info, struct prealloc_report *ret_report);
/* Unmaps region (every segment); -ENOENT when the handle has not mapped it. */
int prealloc_vfio_unmap(struct prealloc_vfio *vfio, struct prealloc_region *region);

#ifdef __cplusplus
}
#endif
#endif
