/* SPDX-License-Identifier: MIT */
/*
 * Opening a handle: an iommufd IOAS (iommufd.c), or a device's IOMMU group
 * into a VFIO type1 container, with every
 * check a person would want named when it fails: the device exists, has a
 * group, is bound to vfio-pci, the group is viable (no device of it is held
 * by a host driver), the container speaks our API and has TYPE1v2. Then the
 * IOMMU's page sizes, usable IOVA ranges and dma_avail (info.c).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/vfio.h>

#include "vfio.h"

/* ---- the container ------------------------------------------------------ */

/* The group, viable, in a new container with a type1 IOMMU. */
static int container_open(struct prealloc_vfio *v, const char *group_path)
{
	struct vfio_group_status st = { .argsz = sizeof(st) };
	struct prealloc_vfio_info *info = &v->info;
	int api, type;

	v->group = open(group_path, O_RDWR | O_CLOEXEC);
	if (v->group < 0)
		return vfio_fail(info, PREALLOC_VFIO_STEP_GROUP, -errno, "cannot open %s: %s%s",
				 group_path, strerror(errno),
				 errno == EBUSY ? " (another process holds the group)" : "");
	if (ioctl(v->group, VFIO_GROUP_GET_STATUS, &st) < 0)
		return vfio_fail(info, PREALLOC_VFIO_STEP_GROUP, -errno,
				 "VFIO_GROUP_GET_STATUS on %s: %s", group_path, strerror(errno));
	if (!(st.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		if (info->group >= 0)
			vfio_find_blocker(v->ctx, info);
		return vfio_fail(info, PREALLOC_VFIO_STEP_VIABLE, -EBUSY,
				 "IOMMU group %d is not viable: %s%s%s%s (every device of the group "
				 "must be bound to vfio-pci or to no driver)", info->group,
				 info->blocker[0] ? "device " : "a device of the group is held by a host driver",
				 info->blocker, info->blocker[0] ? " is bound to " : "",
				 info->blocker_driver);
	}
	v->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (v->container < 0)
		return vfio_fail(info, PREALLOC_VFIO_STEP_CONTAINER, -errno,
				 "cannot open /dev/vfio/vfio: %s", strerror(errno));
	v->own_container = true;
	api = ioctl(v->container, VFIO_GET_API_VERSION);
	if (api != VFIO_API_VERSION)
		return vfio_fail(info, PREALLOC_VFIO_STEP_CONTAINER, -EPROTO,
				 "VFIO API version %d, built for %d", api, VFIO_API_VERSION);
	type = ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) == 1 ? VFIO_TYPE1v2_IOMMU
		: ioctl(v->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU) == 1 ? VFIO_TYPE1_IOMMU : 0;
	if (!type)
		return vfio_fail(info, PREALLOC_VFIO_STEP_CONTAINER, -EOPNOTSUPP,
				 "the kernel has no VFIO type1 IOMMU (load vfio_iommu_type1)");
	if (ioctl(v->group, VFIO_GROUP_SET_CONTAINER, &v->container) < 0 ||
	    ioctl(v->container, VFIO_SET_IOMMU, type) < 0)
		return vfio_fail(info, PREALLOC_VFIO_STEP_CONTAINER, -errno,
				 "cannot set the type1 IOMMU for %s: %s%s", group_path, strerror(errno),
				 errno == EPERM ? " (interrupt remapping off? vfio_iommu_type1 "
						  "allow_unsafe_interrupts)" : "");
	info->iommu_type = type;
	return 0;
}

static int vfio_open_checked(struct prealloc_vfio *v, const struct prealloc_vfio_opts *o)
{
	struct prealloc_vfio_info *info = &v->info;
	char group_path[64];
	int r;

	if ((o->backend != PREALLOC_VFIO_TYPE1 && o->backend != PREALLOC_VFIO_IOMMUFD) ||
	    (o->flags & ~PREALLOC_VFIO_CALLER_FD) ||
	    (!(o->flags & PREALLOC_VFIO_CALLER_FD) && !o->device && !o->group))
		return vfio_fail(info, PREALLOC_VFIO_STEP_BACKEND, -EINVAL,
				 "give a PCI device, a group or a container fd");
	if (o->backend == PREALLOC_VFIO_IOMMUFD) {
		r = iommufd_open(v, o);
		if (r < 0)
			return r;
	} else if (o->flags & PREALLOC_VFIO_CALLER_FD) {
		v->container = o->fd;
		if (ioctl(v->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
			return vfio_fail(info, PREALLOC_VFIO_STEP_CONTAINER, -EBADF,
					 "fd %d is not a VFIO container", o->fd);
	} else {
		if (o->device && (r = vfio_device_group(v->ctx, o->device, info)) < 0)
			return r;
		if (o->group)
			snprintf(group_path, sizeof(group_path), "%s", o->group);
		else
			snprintf(group_path, sizeof(group_path), "/dev/vfio/%d", info->group);
		if (!o->device && sscanf(group_path, "/dev/vfio/%d", &info->group) != 1)
			info->group = -1;
		r = container_open(v, group_path);
		if (r < 0)
			return r;
	}
	r = vfio_info_read(v);
	if (r < 0 && o->backend == PREALLOC_VFIO_IOMMUFD)
		return vfio_fail(info, PREALLOC_VFIO_STEP_IOMMUFD, r,
				 "IOMMU_IOAS_IOVA_RANGES of IOAS %u: %s", v->ioas, strerror(-r));
	if (r < 0)
		return vfio_fail(info, PREALLOC_VFIO_STEP_INFO, r, "VFIO_IOMMU_GET_INFO: %s%s",
				 strerror(-r), r == -EINVAL ? " (no IOMMU set on the container)" : "");
	return 0;
}

EXPORT int prealloc_vfio_open(struct prealloc_ctx *ctx, const struct prealloc_vfio_opts *opts,
			      struct prealloc_vfio **ret_vfio, struct prealloc_vfio_info *ret_info)
{
	struct prealloc_vfio_opts o;
	struct prealloc_vfio *v;
	int r;

	if (!ctx || !opts || !ret_vfio)
		return -EINVAL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->ctx = ctx;
	v->container = v->group = v->device = -1;
	v->info.size = sizeof(v->info);
	v->info.group = -1;
	r = copy_sized_in(&o, sizeof(o), opts);
	v->backend = r == 0 ? o.backend : PREALLOC_VFIO_TYPE1;
	if (r == 0)
		r = vfio_open_checked(v, &o);
	else
		vfio_fail(&v->info, PREALLOC_VFIO_STEP_BACKEND, r, "options from a newer library");
	v->info.backend = o.backend;
	if (ret_info && ret_info->size >= sizeof(size_t))
		copy_sized_out(ret_info, &v->info, sizeof(v->info));
	if (r < 0) {
		prealloc_vfio_close(v);
		return r;
	}
	*ret_vfio = v;
	return 0;
}

EXPORT int prealloc_vfio_container_fd(const struct prealloc_vfio *vfio)
{
	return vfio ? vfio->container : -EINVAL;
}

EXPORT int prealloc_vfio_group_fd(const struct prealloc_vfio *vfio)
{
	return vfio ? vfio->group : -EINVAL;
}

EXPORT int prealloc_vfio_device_fd(const struct prealloc_vfio *vfio)
{
	return vfio ? vfio->device : -EINVAL;
}

EXPORT void prealloc_vfio_close(struct prealloc_vfio *vfio)
{
	if (!vfio)
		return;
	while (vfio->maps)
		prealloc_vfio_unmap(vfio, vfio->maps->region);
	iommufd_close(vfio);
	if (vfio->group >= 0)
		close(vfio->group);
	if (vfio->own_container && vfio->container >= 0)
		close(vfio->container);
	free(vfio);
}
