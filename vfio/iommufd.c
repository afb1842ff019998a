/* SPDX-License-Identifier: MIT */
/*
 * The iommufd backend's open and close: /dev/iommu (or the caller's
 * iommufd), an IOAS (IOMMU_IOAS_ALLOC, or the caller's), and the device's
 * VFIO cdev (/dev/vfio/devices/vfioN, CONFIG_VFIO_DEVICE_CDEV) bound to the
 * iommufd and attached to the IOAS, every failure named. The map and unmap
 * are pin.c's, the usable IOVA ranges info.c's.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "iommufd_uapi.h"
#include "vfio.h"

#define STEP PREALLOC_VFIO_STEP_IOMMUFD

static int ioas_alloc(struct prealloc_vfio *v, bool caller)
{
	struct iofd_ioas_alloc a = { .size = sizeof(a) };

	if (ioctl(v->container, IOFD_IOAS_ALLOC, &a) < 0)
		return vfio_fail(&v->info, STEP, -errno, "IOMMU_IOAS_ALLOC: %s%s", strerror(errno),
				 caller && errno == ENOTTY ? " (the fd given is no iommufd)" : "");
	v->ioas = a.out_ioas_id;
	v->own_ioas = true;
	return 0;
}

/* The device exists, is bound to vfio-pci and has a cdev (info->cdev). */
static int device_find(struct prealloc_vfio *v, const char *dev)
{
	struct prealloc_vfio_info *info = &v->info;
	int r = vfio_device_group(v->ctx, dev, info);

	if (r < 0)
		return r;
	r = vfio_device_cdev(v->ctx, dev, info->cdev, sizeof(info->cdev));
	if (r < 0)
		return vfio_fail(info, STEP, -ENODEV,
				 "PCI device %s has no VFIO cdev (%s%s): this kernel lacks "
				 "CONFIG_VFIO_DEVICE_CDEV; use the type1 backend", dev,
				 r == -ENODEV ? info->cdev : "no vfio-dev/vfioN in sysfs",
				 r == -ENODEV ? " is missing" : "");
	return 0;
}

/* The device's cdev, opened, bound to the iommufd and attached to the IOAS. */
static int device_bind(struct prealloc_vfio *v)
{
	struct iofd_vfio_bind b = { .argsz = sizeof(b), .iommufd = v->container };
	struct iofd_vfio_attach_pt at = { .argsz = sizeof(at), .pt_id = v->ioas };
	struct prealloc_vfio_info *info = &v->info;

	v->device = open(info->cdev, O_RDWR | O_CLOEXEC);
	if (v->device < 0)
		return vfio_fail(info, STEP, -errno, "cannot open %s: %s%s", info->cdev,
				 strerror(errno), errno == EBUSY ?
				 " (its group is open through a type1 container)" : "");
	if (ioctl(v->device, IOFD_VFIO_DEVICE_BIND, &b) < 0)
		return vfio_fail(info, STEP, -errno, "VFIO_DEVICE_BIND_IOMMUFD of %s: %s",
				 info->cdev, strerror(errno));
	info->devid = b.out_devid;
	if (ioctl(v->device, IOFD_VFIO_DEVICE_ATTACH_PT, &at) < 0)
		return vfio_fail(info, STEP, -errno, "VFIO_DEVICE_ATTACH_IOMMUFD_PT of %s to IOAS %u: %s",
				 info->cdev, v->ioas, strerror(errno));
	return 0;
}

int iommufd_open(struct prealloc_vfio *v, const struct prealloc_vfio_opts *o)
{
	int r = 0;

	if (o->device && (r = device_find(v, o->device)) < 0)
		return r;
	if (o->flags & PREALLOC_VFIO_CALLER_FD) {
		v->container = o->fd;
		v->ioas = o->ioas_id;
		if (!v->ioas)
			r = ioas_alloc(v, true);
	} else {
		if (!o->device)
			return vfio_fail(&v->info, PREALLOC_VFIO_STEP_BACKEND, -EINVAL,
					 "the iommufd backend binds a PCI device through its cdev: "
					 "give the device, not a group");
		v->container = open("/dev/iommu", O_RDWR | O_CLOEXEC);
		if (v->container < 0)
			return vfio_fail(&v->info, STEP, -errno, "cannot open /dev/iommu: %s%s",
					 strerror(errno), errno == ENOENT ?
					 " (this kernel lacks CONFIG_IOMMUFD; use the type1 backend)" : "");
		v->own_container = true;
		r = ioas_alloc(v, false);
	}
	v->info.ioas_id = v->ioas;
	if (r == 0 && o->device)
		r = device_bind(v);
	return r;
}

void iommufd_close(struct prealloc_vfio *v)
{
	if (v->device >= 0)
		close(v->device);
	v->device = -1;
	if (v->own_ioas && !v->own_container && v->container >= 0) {
		struct iofd_destroy d = { .size = sizeof(d), .id = v->ioas };

		ioctl(v->container, IOFD_DESTROY, &d);
	}
	v->own_ioas = false;
}
