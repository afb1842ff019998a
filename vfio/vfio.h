/* SPDX-License-Identifier: MIT */
/* VFIO mapping inside libprealloc, type1 and iommufd (the files of vfio/). Never installed. */
#ifndef PREALLOC_VFIO_INTERNAL_H
#define PREALLOC_VFIO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What vfio/ uses of the library, and nothing else (tests/tree/test-layers.sh
 * holds it to the engine and the root): the engine's job with a flow and a
 * serial op (job_start_spec, job_flow_arg, struct job_spec, job_flow,
 * job_op; the public prealloc_job_wait, _report, _free), from util.c
 * copy_sized_in/out, format_bytes, sys_path and proc_path, and the one
 * clock, now_seconds (arch/clock.h).
 * engine.h brings those (with memory.h and internal.h beneath it).
 */
#include "engine.h"

/*
 * Records a failure in an info struct's step, error and message fields (both
 * prealloc_vfio_info and prealloc_vfio_map_info have them); returns err.
 * In info.c, with the rest of what open and map report.
 */
int vfio_note_failure(int *ret_step, int *ret_error, char *msg, size_t len, int step, int err,
		      const char *fmt, ...) __attribute__((format(printf, 7, 8)));
#define vfio_fail(info, at, err, ...)                                                            \
	vfio_note_failure(&(info)->step, &(info)->error, (info)->message, sizeof((info)->message), \
			  at, err, __VA_ARGS__)

/* One region mapped into the container: its IOVA segments. */
struct vfio_mapping {
	struct prealloc_region *region;
	/*
	 * This mapping's own description of the region's file, holding a
	 * shared flock while mapped (prealloc_release refuses the file); -1
	 * none. Never the region's fd: a lock there is every handle's at once.
	 */
	int lock_fd;
	unsigned int nr_segments;
	struct prealloc_vfio_segment segments[PREALLOC_VFIO_MAX_SEGMENTS];
	struct vfio_mapping *next;
};

struct prealloc_vfio {
	struct prealloc_ctx *ctx;
	int backend;		/* enum prealloc_vfio_backend */
	int container;		/* type1: the container; iommufd: /dev/iommu's fd */
	int group;		/* -1: the caller's container, or iommufd */
	int device;		/* iommufd: the device's cdev, bound; -1 none */
	uint32_t ioas;		/* iommufd: the IOAS mapped into */
	bool own_ioas;		/* ... allocated here in the caller's iommufd: destroyed at close */
	bool no_map_file;	/* iommufd: IOMMU_IOAS_MAP_FILE refused once: the plain map from then */
	bool own_container;
	bool busy;		/* a map job runs */
	struct prealloc_vfio_info info;
	struct vfio_mapping *maps;
};

/* device.c: sysfs, for both backends. */
/* The device's group number into info->group, after checking it is bound to vfio-pci. */
int vfio_device_group(struct prealloc_ctx *ctx, const char *dev, struct prealloc_vfio_info *info);
/* Names in info a device of info->group held by a host driver (the VIABLE failure). */
void vfio_find_blocker(struct prealloc_ctx *ctx, struct prealloc_vfio_info *info);
/*
 * "/dev/vfio/devices/vfioN" of dev into buf; -ENOENT: sysfs names none,
 * -ENODEV: sysfs names one (6.0+) but the node is missing (no VFIO_DEVICE_CDEV).
 */
int vfio_device_cdev(struct prealloc_ctx *ctx, const char *dev, char *buf, size_t len);

/* iommufd.c: /dev/iommu (or the caller's), an IOAS, the device's cdev bound to it. */
int iommufd_open(struct prealloc_vfio *v, const struct prealloc_vfio_opts *o);
/* Closes the device (unbinding it), destroys an IOAS allocated here, closes what was opened. */
void iommufd_close(struct prealloc_vfio *v);

/* info.c */
/*
 * Parses VFIO_IOMMU_GET_INFO's reply (buf, len bytes: struct
 * vfio_iommu_type1_info and its capability chain) into ret's page sizes,
 * usable IOVA ranges and dma_avail. -EBADMSG: a capability runs past len
 * or the chain loops. Pure: unit-tested.
 */
int vfio_info_parse(const void *buf, size_t len, struct prealloc_vfio_info *ret);
/*
 * Reads the IOMMU's page sizes and usable IOVA ranges into v->info:
 * VFIO_IOMMU_GET_INFO of the container (type1), IOMMU_IOAS_IOVA_RANGES of
 * the IOAS (iommufd: its alignment as the smallest page, no mapping budget).
 */
int vfio_info_read(struct prealloc_vfio *v);

/* iova.c: pure, unit-tested. */
/*
 * Places length bytes (a multiple of page_size) in the usable ranges: FIXED
 * at iova exactly (inside one range, aligned to min_page), else from iova
 * upward, each segment's IOVA aligned to page_size, split where a range
 * ends. nr_ranges 0: all 64-bit IOVA is usable. Returns the segment count;
 * -EINVAL misaligned, -ERANGE the fixed IOVA does not fit one range,
 * -ENOSPC no room, -E2BIG more than max segments.
 */
int iova_place(const struct prealloc_iova_range *ranges, unsigned int nr_ranges,
	       uint64_t min_page, uint64_t page_size, uint64_t length, uint64_t iova, bool fixed,
	       struct prealloc_vfio_segment *ret, unsigned int max);

/*
 * ranges (nr_ranges 0: all of it) less every taken segment, in order, into
 * ret; the count, or -E2BIG past max.
 */
int iova_exclude(const struct prealloc_iova_range *ranges, unsigned int nr_ranges,
		 const struct prealloc_vfio_segment *taken, unsigned int nr_taken,
		 struct prealloc_iova_range *ret, unsigned int max);

/*
 * The usable ranges of info less every segment of maps (a handle's own
 * mappings), in *ret (to free, also on failure); the count or -errno.
 */
int iova_free_ranges(const struct prealloc_vfio_info *info, const struct vfio_mapping *maps,
		     struct prealloc_iova_range **ret);

/* Bytes per MAP_DMA call (one kernel mapping each): 1 TiB takes 1024 of the default 65535. */
#define VFIO_MAP_STEP (UINT64_C(1) << 30)

/* One MAP_DMA that succeeded. */
struct vfio_map_call {
	uint64_t iova, size;
};

/* One map job: map.c's flow around pin.c's serial op (its state). */
struct vfio_map_flow {
	uint64_t magic;
	struct prealloc_vfio *v;
	struct prealloc_region *region;
	struct vfio_mapping *m;		/* ours until the job succeeds, then v's */
	bool readonly;
	/*
	 * Every MAP_DMA that succeeded, so that a failed map undoes exactly
	 * those: its segments' IOVAs may hold someone else's mapping (the
	 * collision that failed it), which must stay.
	 */
	struct vfio_map_call *calls;
	size_t nr_calls, cap_calls;
	struct prealloc_vfio_map_info info;
};

/* pin.c */
/*
 * The serial op of a map job (serial_arg: its vfio_map_flow): MAP_DMA of
 * every piece at its segment's IOVA, each call noted in the flow's calls
 * and counted in its info (per node too).
 */
extern const struct job_op vfio_pin_op;
/* Undoes the flow's MAP_DMA calls, newest first. */
void vfio_pin_undo(struct vfio_map_flow *f);
/* Unmaps every segment of m (each at once: no mapping crosses a segment). */
int vfio_unmap_segments(struct prealloc_vfio *v, const struct vfio_mapping *m);
/* Bytes this process has pinned through iommufd handles (the MEMLOCK admission's "now"). */
uint64_t vfio_iommufd_pinned(void);
/*
 * iommufd's choice per piece, pure (unit-tested): IOMMU_IOAS_MAP_FILE for a
 * region with a file (fd >= 0) while the kernel has not refused it, else
 * IOMMU_IOAS_MAP; and whether an error from MAP_FILE means the kernel lacks
 * it (-ENOTTY before 6.13; -EOPNOTSUPP for a file it cannot map that way),
 * which makes every later piece take the plain map.
 */
bool iommufd_use_map_file(int region_fd, bool refused);
bool iommufd_map_file_lacking(int err);

#endif
