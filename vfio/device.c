/* SPDX-License-Identifier: MIT */
/*
 * The device and its IOMMU group, from sysfs, for both backends: it exists,
 * has a group, is bound to vfio-pci; which device of a group that is not
 * viable a host driver holds; and the device's VFIO cdev (iommufd).
 */
#include <dirent.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vfio.h"

/* The basename of a sysfs link: driver, iommu_group. "" when absent. */
static int link_name(struct prealloc_ctx *ctx, const char *dev, const char *what, char *buf,
		     size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;
	int r;

	buf[0] = '\0';
	r = sys_path(ctx, path, sizeof(path), "/bus/pci/devices/%s/%s", dev, what);
	if (r < 0)
		return r;
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = '\0';
	snprintf(buf, len, "%s", basename(target));
	return 0;
}

/* Names a device of the group held by a driver other than vfio-pci (the kernel's verdict decides). */
void vfio_find_blocker(struct prealloc_ctx *ctx, struct prealloc_vfio_info *info)
{
	char path[PATH_MAX], drv[64];
	struct dirent *de;
	DIR *d;

	info->group_devices = 0;
	if (sys_path(ctx, path, sizeof(path), "/kernel/iommu_groups/%d/devices", info->group) < 0 ||
	    !(d = opendir(path)))
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		info->group_devices++;
		if (link_name(ctx, de->d_name, "driver", drv, sizeof(drv)) < 0 || !drv[0] ||
		    !strcmp(drv, "vfio-pci") || info->blocker[0])
			continue;
		snprintf(info->blocker, sizeof(info->blocker), "%s", de->d_name);
		snprintf(info->blocker_driver, sizeof(info->blocker_driver), "%s", drv);
	}
	closedir(d);
}

/* The device's group number, after checking it is bound to vfio-pci. */
int vfio_device_group(struct prealloc_ctx *ctx, const char *dev, struct prealloc_vfio_info *info)
{
	char path[PATH_MAX], grp[32];
	int r;

	r = sys_path(ctx, path, sizeof(path), "/bus/pci/devices/%s", dev);
	if (r < 0 || strchr(dev, '/') || access(path, F_OK) < 0)
		return vfio_fail(info, PREALLOC_VFIO_STEP_DEVICE, -ENOENT, "no PCI device %s", dev);
	if (link_name(ctx, dev, "iommu_group", grp, sizeof(grp)) < 0)
		return vfio_fail(info, PREALLOC_VFIO_STEP_DEVICE, -ENODEV,
				 "PCI device %s has no IOMMU group (is the IOMMU enabled? "
				 "intel_iommu=on / amd_iommu=on)", dev);
	info->group = atoi(grp);
	link_name(ctx, dev, "driver", info->driver, sizeof(info->driver));
	if (strcmp(info->driver, "vfio-pci"))
		return vfio_fail(info, PREALLOC_VFIO_STEP_DRIVER, -EBUSY,
				 "PCI device %s is bound to %s, not vfio-pci (echo vfio-pci > "
				 "/sys/bus/pci/devices/%s/driver_override, unbind, reprobe)", dev,
				 info->driver[0] ? info->driver : "no driver", dev);
	return 0;
}


int vfio_device_cdev(struct prealloc_ctx *ctx, const char *dev, char *buf, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int r;

	buf[0] = '\0';
	r = sys_path(ctx, path, sizeof(path), "/bus/pci/devices/%s/vfio-dev", dev);
	if (r < 0)
		return r;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "vfio", 4) && de->d_name[4] >= '0' && de->d_name[4] <= '9') {
			snprintf(buf, len, "/dev/vfio/devices/%s", de->d_name);
			break;
		}
	closedir(d);
	if (!buf[0])
		return -ENOENT;
	/* sysfs lists vfio-dev/vfioN since 6.0; the cdev itself came in 6.6 (VFIO_DEVICE_CDEV). */
	return access(buf, F_OK) == 0 ? 0 : -ENODEV;
}
