/* SPDX-License-Identifier: MIT */
/*
 * VFIO without a device: the IOVA placement around reserved ranges, the
 * parser of VFIO_IOMMU_GET_INFO's capability chain (against the kernel's
 * ABI structs, with chains that lie), the iommufd backend refused, and the
 * file lock of each mapping through the public API on a fake container.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <linux/vfio.h>

#include "tap.h"
#include "../../vfio/vfio.h"
#include "../../vfio/iommufd_uapi.h"
#include "fakeroot.h"

#define M (UINT64_C(1) << 20)
#define G (UINT64_C(1) << 30)

/* What intel-iommu reports with a 39-bit address width: the MSI window carved out. */
static const struct prealloc_iova_range x86[] = {
	{ 0, 0xfedfffff },
	{ 0xfef00000, (UINT64_C(1) << 39) - 1 },
};

static void test_place(void)
{
	struct prealloc_vfio_segment s[8];
	int n;

	n = iova_place(x86, 2, 4096, 2 * M, 64 * M, 0, false, s, 8);
	tap_ok(n == 1 && s[0].iova == 0 && s[0].length == 64 * M, "placed low: one segment at 0");

	n = iova_place(x86, 2, 4096, 2 * M, 64 * M, 0xfe000000, false, s, 8);
	tap_ok(n == 2 && s[0].iova == 0xfe000000 && s[0].length == 14 * M &&
		       s[1].iova == 0xff000000 && s[1].offset == 14 * M && s[1].length == 50 * M,
	       "around the MSI window: 14 MiB below, the rest from the next 2M above (%d: %llx+%llx, %llx+%llx)",
	       n, (unsigned long long)s[0].iova, (unsigned long long)s[0].length,
	       (unsigned long long)s[1].iova, (unsigned long long)s[1].length);

	n = iova_place(x86, 2, 4096, 4096, 64 * M, 0xfe000000, false, s, 8);
	tap_ok(n == 2 && s[1].iova == 0xfef00000, "4k pages resume right after the window");

	n = iova_place(x86, 2, 4096, 2 * M, 64 * M, 0xfe000000, true, s, 8);
	tap_ok(n == -ERANGE, "fixed across the window: -ERANGE (%d)", n);
	n = iova_place(x86, 2, 4096, 2 * M, 64 * M, 4 * G, true, s, 8);
	tap_ok(n == 1 && s[0].iova == 4 * G, "fixed above 4G fits");
	n = iova_place(x86, 2, 4096, 2 * M, 64 * M, 4 * G + 512, true, s, 8);
	tap_ok(n == -EINVAL, "fixed, not page aligned: -EINVAL");
	n = iova_place(x86, 2, 4096, 2 * M, 1024 * G, 0, false, s, 8);
	tap_ok(n == -ENOSPC, "larger than the 39-bit space: -ENOSPC");
	n = iova_place(x86, 2, 4096, 2 * M, 64 * M, (UINT64_C(1) << 39) - 32 * M, false, s, 8);
	tap_ok(n == -ENOSPC, "not enough room above the hint: -ENOSPC");
	n = iova_place(x86, 2, 4096, 2 * M, 64 * M, 0xfe000000, false, s, 1);
	tap_ok(n == -E2BIG, "more segments than room: -E2BIG");
	n = iova_place(NULL, 0, 4096, 2 * M, 64 * M, UINT64_MAX - 32 * M, false, s, 8);
	tap_ok(n == -ENOSPC, "no ranges reported: the whole space, no wrap at the top (%d)", n);
	n = iova_place(NULL, 0, 4096, 2 * M, 64 * M, (UINT64_MAX - 63 * M) & ~UINT64_C(4095), true, s, 8);
	tap_ok(n == -ERANGE, "fixed wrapping past 2^64: -ERANGE (%d)", n);
}

/*
 * What a handle has mapped is cut out of the usable ranges: a second region
 * placed from the same IOVA lands after the first, across the MSI window.
 */
static void test_exclude(void)
{
	struct prealloc_vfio_segment first[2] = {
		{ .iova = 0xfe000000, .offset = 0, .length = 14 * M },
		{ .iova = 0xff000000, .offset = 14 * M, .length = 50 * M },
	};
	struct prealloc_vfio_segment whole = { .iova = 0, .length = 0xfee00000 }, s[8];
	struct prealloc_iova_range r[8];
	int n;

	n = iova_exclude(x86, 2, first, 2, r, 8);
	tap_ok(n == 3 && r[0].start == 0 && r[0].last == 0xfdffffff &&
		       r[1].start == 0xfef00000 && r[1].last == 0xfeffffff &&
		       r[2].start == 0xff000000 + 50 * M && r[2].last == x86[1].last,
	       "two segments out: below the first, the gap above the window, above the second (%d)",
	       n);
	n = iova_place(r, 3, 4096, 2 * M, 64 * M, 0xfe000000, false, s, 8);
	tap_ok(n == 1 && s[0].iova == 0xff000000 + 50 * M,
	       "a second region from the same IOVA lands after the first (%d: %llx)", n,
	       (unsigned long long)s[0].iova);
	n = iova_place(r, 3, 4096, 2 * M, 2 * M, 0xff000000, true, s, 8);
	tap_ok(n == -ERANGE, "fixed on the first's IOVA: -ERANGE before any pin (%d)", n);
	n = iova_place(r, 3, 4096, 4096, M, 0xfef00000, true, s, 8);
	tap_ok(n == 1, "fixed in the 1 MiB left above the window fits (%d)", n);
	n = iova_exclude(x86, 2, &whole, 1, r, 8);
	tap_ok(n == 1 && r[0].start == 0xfef00000, "a range taken whole goes (%d)", n);
	n = iova_exclude(NULL, 0, first, 1, r, 8);
	tap_ok(n == 2 && r[0].last == 0xfdffffff && r[1].start == 0xfe000000 + 14 * M &&
		       r[1].last == UINT64_MAX, "no ranges reported: the whole space split (%d)", n);
	n = iova_exclude(x86, 2, first, 2, r, 2);
	tap_ok(n == -E2BIG, "more ranges than room: -E2BIG (%d)", n);
	{
		/* Edges: a segment whose last byte is a range's first, one whose first is its last. */
		static const struct prealloc_iova_range two[] = { { 0x10000, 0x1ffff },
								   { 0x30000, 0x3ffff } };
		struct prealloc_vfio_segment edge[2] = { { .iova = 0xf000, .length = 0x1001 },
							 { .iova = 0x3ffff, .length = 0x1000 } };

		n = iova_exclude(two, 2, edge, 2, r, 8);
		tap_ok(n == 2 && r[0].start == 0x10001 && r[0].last == 0x1ffff &&
			       r[1].start == 0x30000 && r[1].last == 0x3fffe,
		       "a segment touching a range by one byte at either end cuts that byte "
		       "(%d: %llx-%llx, %llx-%llx)", n, (unsigned long long)r[0].start,
		       (unsigned long long)r[0].last, (unsigned long long)r[1].start,
		       (unsigned long long)r[1].last);
	}
}

/*
 * The fixed part of the IOVA range capability as the kernel lays it out
 * (struct vfio_iommu_type1_info_cap_iova_range without its flexible array,
 * which may not sit inside another struct: the ranges follow it here).
 */
struct iova_cap_head {
	struct vfio_info_cap_header header;
	uint32_t nr_iovas;
	uint32_t reserved;
};
_Static_assert(sizeof(struct iova_cap_head) ==
		       offsetof(struct vfio_iommu_type1_info_cap_iova_range, iova_ranges),
	       "the test's capability head matches the kernel's");

/* A GET_INFO reply: the fixed part, an IOVA range capability, a dma_avail one. */
struct reply {
	struct vfio_iommu_type1_info info;
	struct iova_cap_head iova;
	struct vfio_iova_range ranges[2];
	struct vfio_iommu_type1_info_dma_avail avail;
};

static void reply_fill(struct reply *r)
{
	memset(r, 0, sizeof(*r));
	r->info.argsz = sizeof(*r);
	r->info.flags = VFIO_IOMMU_INFO_PGSIZES | VFIO_IOMMU_INFO_CAPS;
	r->info.iova_pgsizes = 4096 | 2 * M | G;
	r->info.cap_offset = offsetof(struct reply, iova);
	r->iova.header.id = VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE;
	r->iova.header.version = 1;
	r->iova.header.next = offsetof(struct reply, avail);
	r->iova.nr_iovas = 2;
	r->ranges[0] = (struct vfio_iova_range){ 0, 0xfedfffff };
	r->ranges[1] = (struct vfio_iova_range){ 0xfef00000, (UINT64_C(1) << 39) - 1 };
	r->avail.header.id = VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL;
	r->avail.header.version = 1;
	r->avail.avail = 65535;
}

static void test_parse(void)
{
	struct prealloc_vfio_info info;
	struct reply r;
	int ret;

	reply_fill(&r);
	memset(&info, 0, sizeof(info));
	ret = vfio_info_parse(&r, sizeof(r), &info);
	tap_ok(ret == 0 && info.pgsize_bitmap == (4096 | 2 * M | G) && info.nr_ranges == 2 &&
		       info.ranges[1].start == 0xfef00000 && info.dma_avail == 65535,
	       "page sizes, two IOVA ranges, dma_avail 65535");

	reply_fill(&r);
	r.info.flags = VFIO_IOMMU_INFO_PGSIZES;	/* an old kernel: no chain */
	ret = vfio_info_parse(&r, sizeof(r.info), &info);
	tap_ok(ret == 0 && info.nr_ranges == 0 && info.dma_avail == UINT32_MAX,
	       "no capabilities: no ranges (all usable), dma_avail unknown");

	reply_fill(&r);
	r.iova.nr_iovas = 1000;
	tap_ok(vfio_info_parse(&r, sizeof(r), &info) == -EBADMSG, "ranges past the reply: -EBADMSG");
	reply_fill(&r);
	r.avail.header.next = offsetof(struct reply, iova);	/* a loop */
	tap_ok(vfio_info_parse(&r, sizeof(r), &info) == -EBADMSG, "a looping chain: -EBADMSG");
	reply_fill(&r);
	r.info.cap_offset = sizeof(r) - 2;
	tap_ok(vfio_info_parse(&r, sizeof(r), &info) == -EBADMSG, "a header past the end: -EBADMSG");
	reply_fill(&r);
	r.info.cap_offset = 4;
	tap_ok(vfio_info_parse(&r, sizeof(r), &info) == -EBADMSG,
	       "a capability inside the fixed part: -EBADMSG");
}

static void test_backend(void)
{
	struct prealloc_vfio_opts o = { .size = sizeof(o), .backend = PREALLOC_VFIO_IOMMUFD,
					.device = "0000:00:03.0" };
	struct prealloc_vfio_info info = { .size = sizeof(info) };
	struct prealloc_vfio *v = NULL;
	struct prealloc_ctx *ctx;
	int r;

	if (prealloc_ctx_new(&ctx) < 0) {
		tap_skip("no context");
		return;
	}
	o.device = NULL;
	o.group = "/dev/vfio/3";
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	tap_ok(r == -EINVAL && info.step == PREALLOC_VFIO_STEP_BACKEND && !v &&
		       strstr(info.message, "give the device"),
	       "iommufd with a group alone: -EINVAL, step BACKEND: %s", info.message);
	o.group = NULL;
	o.device = "0000:ff:1f.7";
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	tap_ok(r == -ENOENT && info.step == PREALLOC_VFIO_STEP_DEVICE && !v,
	       "iommufd, no such device: -ENOENT before /dev/iommu is opened: %s", info.message);
	o.backend = 7;
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	tap_ok(r == -EINVAL && info.step == PREALLOC_VFIO_STEP_BACKEND, "an unknown backend: -EINVAL");
	o.backend = PREALLOC_VFIO_TYPE1;
	o.device = "0000:ff:1f.7";
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	tap_ok(r == -ENOENT && info.step == PREALLOC_VFIO_STEP_DEVICE, "no such device: -ENOENT: %s",
	       info.message);
	o.device = "../../../etc";
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	tap_ok(r == -ENOENT, "a device name with a slash is no device");
	prealloc_ctx_free(ctx);
}

/* ---- a fake type1 container ------------------------------------------------
 *
 * The test's ioctl() takes the place of libc's at link time, for the library
 * too: on the fake containers' fds it answers as type1 would (no IOVA ranges
 * reported, MAP_DMA failing with EEXIST while fake_map_fails), every other
 * fd goes to the kernel. So a handle maps and unmaps for real as far as the
 * library's bookkeeping goes, with no device.
 */
static int fake_fds[2] = { -1, -1 };
static bool fake_map_fails;
static uint32_t fake_dma_avail;	/* nonzero: GET_INFO reports it, with reply_fill's chain */

/* A fake iommufd: IOAS ids from 42, every IOMMU_DESTROY noted, unmaps as told. */
static int fake_iofd = -1;
static uint32_t fake_ioas_next = 42, fake_destroyed[8];
static unsigned int fake_nr_destroyed;
static int fake_unmap_errno;		/* the next unmaps fail with it (ENOENT: IOAS gone) */
static uint64_t fake_unmap_report;	/* nonzero: the length the next unmaps report */

static int fake_iommufd(unsigned long req, void *arg)
{
	switch (req) {
	case IOFD_IOAS_ALLOC:
		((struct iofd_ioas_alloc *)arg)->out_ioas_id = fake_ioas_next++;
		return 0;
	case IOFD_DESTROY:
		if (fake_nr_destroyed < 8)
			fake_destroyed[fake_nr_destroyed] = ((struct iofd_destroy *)arg)->id;
		fake_nr_destroyed++;
		return 0;
	case IOFD_IOAS_IOVA_RANGES: {
		struct iofd_ioas_iova_ranges *q = arg;
		struct iofd_iova_range *r = (struct iofd_iova_range *)(uintptr_t)q->allowed_iovas;

		r[0] = (struct iofd_iova_range){ 0, (UINT64_C(1) << 39) - 1 };
		q->num_iovas = 1;
		q->out_iova_alignment = 4096;
		return 0;
	}
	case IOFD_IOAS_MAP:
	case IOFD_IOAS_MAP_FILE:
		return 0;
	case IOFD_IOAS_UNMAP:
		if (fake_unmap_errno) {
			errno = fake_unmap_errno;
			return -1;
		}
		if (fake_unmap_report)
			((struct iofd_ioas_unmap *)arg)->length = fake_unmap_report;
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd >= 0 && fd == fake_iofd)
		return fake_iommufd(req, arg);
	if (fd < 0 || (fd != fake_fds[0] && fd != fake_fds[1]))
		return (int)syscall(SYS_ioctl, fd, req, arg);
	switch (req) {
	case VFIO_GET_API_VERSION:
		return VFIO_API_VERSION;
	case VFIO_IOMMU_GET_INFO: {
		struct vfio_iommu_type1_info *i = arg;

		if (fake_dma_avail && i->argsz < sizeof(struct reply)) {
			i->argsz = sizeof(struct reply);	/* the probe: room for the chain */
			return 0;
		}
		if (fake_dma_avail) {
			reply_fill(arg);
			((struct reply *)arg)->avail.avail = fake_dma_avail;
			return 0;
		}
		*i = (struct vfio_iommu_type1_info){ .argsz = sizeof(*i),
						     .flags = VFIO_IOMMU_INFO_PGSIZES,
						     .iova_pgsizes = 4096 | 2 * M | G };
		return 0;
	}
	case VFIO_IOMMU_MAP_DMA:
		if (!fake_map_fails)
			return 0;
		errno = EEXIST;
		return -1;
	case VFIO_IOMMU_UNMAP_DMA:
		return 0;
	}
	errno = ENOTTY;
	return -1;
}

/* What prealloc_release's probe (release.c pin_lock) sees: 1 while some mapping holds the file. */
static int pinned(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), held;

	if (fd < 0)
		return -1;
	held = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd);
	return held;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/*
 * One region (a tmpfs file) mapped through two handles: each mapping holds
 * its own lock, so unmapping one, or a third map that fails, leaves the
 * file pinned for the other; once both are gone, so is the lock, and no
 * descriptor is left open.
 */
/*
 * iommufd's refusals over a fake sysfs: a device bound to vfio-pci with no
 * VFIO cdev (a kernel without CONFIG_VFIO_DEVICE_CDEV) is refused with
 * -ENODEV naming it, and so is one that sysfs lists under vfio-dev/ (as
 * 6.0-6.5 do) whose /dev/vfio/devices node is missing. Then
 * IOMMU_IOAS_MAP_FILE's fallback decision.
 */
static void test_iommufd_refusals(void)
{
	struct prealloc_vfio_opts o = { .size = sizeof(o), .backend = PREALLOC_VFIO_IOMMUFD,
					.device = "0000:00:03.0" };
	struct prealloc_vfio_info info = { .size = sizeof(info) };
	struct prealloc_vfio *v = NULL;
	struct prealloc_ctx *ctx = NULL;
	struct fakeroot fr = { 0 };
	char dev[400], path[480];
	int r;

	r = fakeroot_make(&fr, 1);
	snprintf(dev, sizeof(dev), "%s/bus/pci/devices/0000:00:03.0", fr.sys);
	r |= fr_write(fr.sys, "bus/pci/devices/0000:00:03.0/vendor", "0x1234\n");
	snprintf(path, sizeof(path), "%s/iommu_group", dev);
	r |= symlink("../../../../kernel/iommu_groups/5", path);
	snprintf(path, sizeof(path), "%s/driver", dev);
	r |= symlink("../../../../bus/pci/drivers/vfio-pci", path);
	if (r < 0 || !(ctx = fakeroot_ctx(&fr))) {
		tap_ok(0, "iommufd: a fake device and a ctx over it");
		fakeroot_remove(&fr);
		return;
	}
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	tap_ok(r == -ENODEV && info.step == PREALLOC_VFIO_STEP_IOMMUFD && info.group == 5 &&
		       strstr(info.message, "no VFIO cdev") && strstr(info.message, "type1"),
	       "iommufd, a device with no cdev: -ENODEV: %s", info.message);
	snprintf(path, sizeof(path), "%s/vfio-dev", dev);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/vfio-dev/vfio3", dev);
	mkdir(path, 0700);
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	if (access("/dev/vfio/devices/vfio3", F_OK) < 0)
		tap_ok(r == -ENODEV && info.step == PREALLOC_VFIO_STEP_IOMMUFD && !v &&
			       strstr(info.message, "/dev/vfio/devices/vfio3 is missing"),
		       "iommufd, sysfs names vfio3 (as 6.0-6.5 do) but no cdev node: -ENODEV: %s",
		       info.message);
	else
		tap_skip("this machine has a /dev/vfio/devices/vfio3 of its own");
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);

	tap_ok(iommufd_use_map_file(5, false) && !iommufd_use_map_file(-1, false) &&
		       !iommufd_use_map_file(5, true),
	       "MAP_FILE: for a region with a file, until the kernel refused it once");
	tap_ok(iommufd_map_file_lacking(-ENOTTY) && iommufd_map_file_lacking(-EOPNOTSUPP) &&
		       !iommufd_map_file_lacking(-ENOMEM) && !iommufd_map_file_lacking(-EEXIST) &&
		       !iommufd_map_file_lacking(-EFAULT),
	       "MAP_FILE: -ENOTTY (before 6.13) and -EOPNOTSUPP fall back to the plain map, "
	       "-ENOMEM, -EEXIST and -EFAULT fail the map");
}

static void test_pin_locks(void)
{
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo),
					     .flags = PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_vfio *a = NULL, *b = NULL;
	struct prealloc_region *reg = NULL;
	struct prealloc_ctx *ctx = NULL;
	char path[64];
	int r, fds;

	snprintf(path, sizeof(path), "/dev/shm/prealloc-test-vfio.%d", (int)getpid());
	tap_remove_at_exit(path);
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_FILE,
					   .length = 4 * M, .path = path };

	if (prealloc_ctx_new(&ctx) < 0) {
		tap_skip("pin locks: no context");
		return;
	}
	r = prealloc_region_new(ctx, &ro, &reg);
	if (r == -ENOENT || r == -EACCES || r == -EMEDIUMTYPE) {
		tap_skip("pin locks: no tmpfs at /dev/shm (%s)", strerror(-r));
		goto out;
	}
	/* qemu-user implements no mbind: proven by asking for the policy itself. */
	if (r == -ENOSYS && syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0) < 0 &&
	    errno == ENOSYS) {
		tap_skip("pin locks: this system has no NUMA policy calls (get_mempolicy: ENOSYS)");
		goto out;
	}
	fake_fds[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	fake_fds[1] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	struct prealloc_vfio_opts oa = { .size = sizeof(oa), .flags = PREALLOC_VFIO_CALLER_FD,
					 .fd = fake_fds[0] };
	struct prealloc_vfio_opts ob = { .size = sizeof(ob), .flags = PREALLOC_VFIO_CALLER_FD,
					 .fd = fake_fds[1] };
	if (!tap_ok(r == 0 && prealloc_vfio_open(ctx, &oa, &a, NULL) == 0 &&
			    prealloc_vfio_open(ctx, &ob, &b, NULL) == 0,
		    "pin locks: a tmpfs region (%d) and two handles on fake containers", r))
		goto out;
	fds = open_fds();
	r = prealloc_vfio_map(a, reg, NULL, &mo, &mi, NULL);
	if (r == 0)
		r = prealloc_vfio_map(b, reg, NULL, &mo, &mi, NULL);
	tap_ok(r == 0 && pinned(path) == 1, "both handles map the region: the file is pinned (%s)",
	       r ? mi.message : "locked");

	r = prealloc_vfio_unmap(a, reg);
	tap_ok(r == 0 && pinned(path) == 1,
	       "one handle unmapped, the other still maps: still pinned (%d)", pinned(path));
	r = prealloc_vfio_unmap(b, reg);
	tap_ok(r == 0 && pinned(path) == 0, "both unmapped: the lock is gone (%d)", pinned(path));

	r = prealloc_vfio_map(b, reg, NULL, &mo, &mi, NULL);
	fake_map_fails = true;
	if (r == 0)
		r = prealloc_vfio_map(a, reg, NULL, &mo, &mi, NULL);
	fake_map_fails = false;
	tap_ok(r == -EEXIST && mi.step == PREALLOC_VFIO_STEP_MAP && pinned(path) == 1,
	       "a map that fails on one handle leaves the file pinned for the other (%d, %d)", r,
	       pinned(path));
	prealloc_vfio_close(b);
	b = NULL;
	tap_ok(pinned(path) == 0 && open_fds() == fds,
	       "closing a handle unmaps: not pinned, every lock descriptor closed (%d fds, %d before)",
	       open_fds(), fds);
out:
	prealloc_vfio_close(b);
	prealloc_vfio_close(a);
	for (int i = 0; i < 2; i++)
		if (fake_fds[i] >= 0)
			close(fake_fds[i]);
	if (reg)
		prealloc_region_discard(reg);
	prealloc_ctx_free(ctx);
}

/* CAP_IPC_LOCK in this process's effective set: on (restoring it) or off. */
static bool ipc_lock_effective(bool on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };
	unsigned int w = CAP_IPC_LOCK / 32, bit = 1u << (CAP_IPC_LOCK % 32);

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	if (!on && !(d[w].effective & bit))
		return true;
	d[w].effective = on ? d[w].effective | (d[w].permitted & bit) : d[w].effective & ~bit;
	return syscall(SYS_capset, &h, d) == 0;
}

/* A 4 MiB tmpfs region at path, or NULL (skipped, said why). */
static struct prealloc_region *shm_region(struct prealloc_ctx *ctx, const char *path)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_FILE,
					   .length = 4 * M, .path = path };
	struct prealloc_region *reg = NULL;
	int r = prealloc_region_new(ctx, &ro, &reg);

	tap_remove_at_exit(path);
	if (r == -ENOENT || r == -EACCES || r == -EMEDIUMTYPE ||
	    (r == -ENOSYS && syscall(SYS_get_mempolicy, NULL, NULL, 0, NULL, 0) < 0 &&
	     errno == ENOSYS)) {
		tap_skip("iommufd, dma_avail: no tmpfs region here (%s)", strerror(-r));
		return NULL;
	}
	tap_ok(r == 0, "iommufd, dma_avail: a 4 MiB tmpfs region (%d)", r);
	return r == 0 ? reg : NULL;
}

/*
 * type1's mapping budget (dma_avail) at its edge: a 4 MiB region in one
 * segment is planned as up to 3 calls; a container that allows exactly 3
 * maps it, one that allows 2 refuses at FIT before any pin.
 */
static void test_dma_avail(struct prealloc_ctx *ctx, struct prealloc_region *reg)
{
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo),
					     .flags = PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_vfio *v = NULL;
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC), r;
	struct prealloc_vfio_opts o = { .size = sizeof(o), .flags = PREALLOC_VFIO_CALLER_FD,
					.fd = fd };

	fake_fds[0] = fd;
	fake_dma_avail = 3;
	r = prealloc_vfio_open(ctx, &o, &v, NULL);
	if (r == 0)
		r = prealloc_vfio_map(v, reg, NULL, &mo, &mi, NULL);
	tap_ok(r == 0, "dma_avail 3, a map planned as 3 calls: maps (%d: %s)", r,
	       r ? mi.message : "mapped");
	prealloc_vfio_close(v);
	v = NULL;
	fake_dma_avail = 2;
	r = prealloc_vfio_open(ctx, &o, &v, NULL);
	if (r == 0)
		r = prealloc_vfio_map(v, reg, NULL, &mo, &mi, NULL);
	tap_ok(r == -ENOSPC && mi.step == PREALLOC_VFIO_STEP_FIT,
	       "dma_avail 2, one call short: refused at FIT (%d: %s)", r, mi.message);
	prealloc_vfio_close(v);
	fake_dma_avail = 0;
	fake_fds[0] = -1;
	if (fd >= 0)
		close(fd);
}

/* The IOAS a caller gives is its own: never destroyed at close; one allocated here is, once. */
static void test_iommufd_ioas(struct prealloc_ctx *ctx, struct prealloc_region *reg)
{
	struct prealloc_vfio_opts o = { .size = sizeof(o), .backend = PREALLOC_VFIO_IOMMUFD,
					.flags = PREALLOC_VFIO_CALLER_FD, .fd = fake_iofd,
					.ioas_id = 7 };
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo),
					     .flags = PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK };
	struct prealloc_vfio_info info = { .size = sizeof(info) };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_vfio *v = NULL;
	int r;

	fake_nr_destroyed = 0;
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	if (r == 0)
		r = prealloc_vfio_map(v, reg, NULL, &mo, &mi, NULL);
	prealloc_vfio_close(v);
	tap_ok(r == 0 && info.ioas_id == 7 && fake_nr_destroyed == 0,
	       "iommufd: the caller's IOAS 7, mapped and closed: never destroyed (%d, %u destroys)",
	       r, fake_nr_destroyed);
	o.ioas_id = 0;
	v = NULL;
	r = prealloc_vfio_open(ctx, &o, &v, &info);
	prealloc_vfio_close(v);
	tap_ok(r == 0 && info.ioas_id == 42 && fake_nr_destroyed == 1 && fake_destroyed[0] == 42,
	       "iommufd: an IOAS allocated here (%u) is destroyed at close, once (%u destroys)",
	       info.ioas_id, fake_nr_destroyed);
}

/* Two handles' maps and unmaps: the pinned total exact, never below zero. */
static void test_iommufd_pinned(struct prealloc_ctx *ctx, struct prealloc_region *reg)
{
	struct prealloc_vfio_opts o = { .size = sizeof(o), .backend = PREALLOC_VFIO_IOMMUFD,
					.flags = PREALLOC_VFIO_CALLER_FD, .fd = fake_iofd };
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo),
					     .flags = PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_vfio *a = NULL, *b = NULL;
	uint64_t p0 = vfio_iommufd_pinned();
	int r;

	r = prealloc_vfio_open(ctx, &o, &a, NULL);
	if (r == 0)
		r = prealloc_vfio_open(ctx, &o, &b, NULL);
	if (r == 0)
		r = prealloc_vfio_map(a, reg, NULL, &mo, &mi, NULL);
	if (r == 0)
		r = prealloc_vfio_map(b, reg, NULL, &mo, &mi, NULL);
	tap_ok(r == 0 && vfio_iommufd_pinned() == p0 + 8 * M,
	       "iommufd: two handles map 4 MiB each: 8 MiB more pinned (%llu KiB)",
	       (unsigned long long)((vfio_iommufd_pinned() - p0) >> 10));
	r = prealloc_vfio_unmap(a, reg);
	tap_ok(r == 0 && vfio_iommufd_pinned() == p0 + 4 * M,
	       "iommufd: one unmapped: 4 MiB pinned, the other's (%llu KiB)",
	       (unsigned long long)((vfio_iommufd_pinned() - p0) >> 10));
	fake_unmap_errno = ENOENT;
	prealloc_vfio_unmap(b, reg);
	fake_unmap_errno = 0;
	tap_ok(vfio_iommufd_pinned() == p0,
	       "iommufd: an unmap whose IOAS is gone (ENOENT) unpins too (%lld KiB over)",
	       (long long)(vfio_iommufd_pinned() - p0) / 1024);
	r = prealloc_vfio_map(a, reg, NULL, &mo, &mi, NULL);
	fake_unmap_report = p0 + 64 * M;
	if (r == 0)
		r = prealloc_vfio_unmap(a, reg);
	fake_unmap_report = 0;
	tap_ok(r == 0 && vfio_iommufd_pinned() == 0,
	       "iommufd: an unmap reported larger than all that is pinned: 0, never below (%llu)",
	       (unsigned long long)vfio_iommufd_pinned());
	prealloc_vfio_close(b);
	prealloc_vfio_close(a);
}

/* A map with the memlock check at its edge: pinned + region == limit maps, a page less refuses. */
static void memlock_edge(struct prealloc_region *reg, struct prealloc_vfio *v)
{
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo) };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	uint64_t now = vfio_iommufd_pinned();
	struct rlimit rl, keep;
	int r;

	getrlimit(RLIMIT_MEMLOCK, &keep);
	rl = keep;
	rl.rlim_cur = now + reg->length;
	r = setrlimit(RLIMIT_MEMLOCK, &rl);
	if (r == 0)
		r = prealloc_vfio_map(v, reg, NULL, &mo, &mi, NULL);
	tap_ok(r == 0 && mi.locked_now == now && mi.locked_needed == rl.rlim_cur,
	       "memlock: %llu KiB pinned + the 4 MiB region exactly the limit: maps (%d: %s)",
	       (unsigned long long)(now >> 10), r, r ? mi.message : "mapped");
	if (r == 0)
		prealloc_vfio_unmap(v, reg);
	rl.rlim_cur = now + reg->length - 4096;
	r = setrlimit(RLIMIT_MEMLOCK, &rl);
	if (r == 0)
		r = prealloc_vfio_map(v, reg, NULL, &mo, &mi, NULL);
	tap_ok(r == -ENOMEM && mi.step == PREALLOC_VFIO_STEP_MEMLOCK &&
		       mi.locked_needed == rl.rlim_cur + 4096 && vfio_iommufd_pinned() == now,
	       "memlock: a page over the limit: refused at MEMLOCK before any pin (%d: %s)", r,
	       mi.message);
	setrlimit(RLIMIT_MEMLOCK, &keep);
}

/*
 * The memlock admission on iommufd: what this process's handles pin counts,
 * without CAP_IPC_LOCK (dropped from the effective set for the case).
 */
static void test_iommufd_memlock(struct prealloc_ctx *ctx, struct prealloc_region *reg)
{
	struct prealloc_vfio_opts o = { .size = sizeof(o), .backend = PREALLOC_VFIO_IOMMUFD,
					.flags = PREALLOC_VFIO_CALLER_FD, .fd = fake_iofd };
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo),
					     .flags = PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_vfio *held = NULL, *v = NULL;
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 ||
	    (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < vfio_iommufd_pinned() + 8 * M)) {
		tap_skip("memlock: RLIMIT_MEMLOCK's hard limit is under 8 MiB here");
		return;
	}
	if (!ipc_lock_effective(false)) {
		tap_skip("memlock: cannot drop CAP_IPC_LOCK (%s)", strerror(errno));
		return;
	}
	if (tap_ok(prealloc_vfio_open(ctx, &o, &held, NULL) == 0 &&
			   prealloc_vfio_open(ctx, &o, &v, NULL) == 0 &&
			   prealloc_vfio_map(held, reg, NULL, &mo, &mi, NULL) == 0,
		   "memlock: 4 MiB pinned through another handle first"))
		memlock_edge(reg, v);
	prealloc_vfio_close(v);
	prealloc_vfio_close(held);
	ipc_lock_effective(true);
}

static void test_iommufd_fake(void)
{
	struct prealloc_region *reg = NULL;
	struct prealloc_ctx *ctx = NULL;
	char path[64];

	snprintf(path, sizeof(path), "/dev/shm/prealloc-test-iommufd.%d", (int)getpid());
	if (prealloc_ctx_new(&ctx) < 0) {
		tap_skip("iommufd: no context");
		return;
	}
	fake_iofd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	reg = shm_region(ctx, path);
	if (reg)
		test_dma_avail(ctx, reg);
	if (reg && fake_iofd >= 0) {
		test_iommufd_ioas(ctx, reg);
		test_iommufd_pinned(ctx, reg);
		test_iommufd_memlock(ctx, reg);
	}
	if (fake_iofd >= 0)
		close(fake_iofd);
	fake_iofd = -1;
	if (reg)
		prealloc_region_discard(reg);
	prealloc_ctx_free(ctx);
}

int main(void)
{
	test_place();
	test_exclude();
	test_parse();
	test_backend();
	test_iommufd_refusals();
	test_pin_locks();
	test_iommufd_fake();
	return tap_done();
}
