/* SPDX-License-Identifier: MIT */
/*
 * What the container tells of its IOMMU: the page sizes, usable IOVA ranges
 * and dma_avail from VFIO_IOMMU_GET_INFO and its capability chain (parsed
 * by a pure function), or an IOAS's ranges and alignment from
 * IOMMU_IOAS_IOVA_RANGES (iommufd), read at open, before every map and on
 * request; and the failure record every step of open and map fills in.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include <linux/vfio.h>

#include "iommufd_uapi.h"
#include "vfio.h"

int vfio_note_failure(int *ret_step, int *ret_error, char *msg, size_t len, int step, int err,
		      const char *fmt, ...)
{
	va_list ap;

	*ret_step = step;
	*ret_error = err;
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return err;
}

/* ---- VFIO_IOMMU_GET_INFO ----------------------------------------------- */

static int parse_iova_cap(const uint8_t *cap, size_t room, struct prealloc_vfio_info *ret)
{
	const struct vfio_iommu_type1_info_cap_iova_range *c = (const void *)cap;

	if (room < sizeof(*c) || (room - sizeof(*c)) / sizeof(c->iova_ranges[0]) < c->nr_iovas)
		return -EBADMSG;
	ret->nr_ranges = 0;
	for (uint32_t i = 0; i < c->nr_iovas && ret->nr_ranges < PREALLOC_VFIO_MAX_RANGES; i++) {
		ret->ranges[ret->nr_ranges].start = c->iova_ranges[i].start;
		ret->ranges[ret->nr_ranges++].last = c->iova_ranges[i].end;
	}
	return 0;
}

int vfio_info_parse(const void *buf, size_t len, struct prealloc_vfio_info *ret)
{
	const struct vfio_iommu_type1_info *info = buf;
	const uint8_t *base = buf;
	uint32_t off;
	int hops = 0, r;

	if (len < sizeof(*info))
		return -EBADMSG;
	ret->pgsize_bitmap = (info->flags & VFIO_IOMMU_INFO_PGSIZES) ? info->iova_pgsizes : 0;
	ret->dma_avail = UINT32_MAX;
	ret->nr_ranges = 0;
	if (!(info->flags & VFIO_IOMMU_INFO_CAPS))
		return 0;
	for (off = info->cap_offset; off; hops++) {
		const struct vfio_info_cap_header *h = (const void *)(base + off);

		/* Every capability lies past the fixed part, inside the reply, aligned. */
		if (off < sizeof(*info) || off > len || len - off < sizeof(*h) || off % 4 || hops > 64)
			return -EBADMSG;
		if (h->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
			r = parse_iova_cap(base + off, len - off, ret);
			if (r < 0)
				return r;
		} else if (h->id == VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL) {
			const struct vfio_iommu_type1_info_dma_avail *d = (const void *)h;

			if (len - off < sizeof(*d))
				return -EBADMSG;
			ret->dma_avail = d->avail;
		}
		off = h->next;
	}
	return 0;
}

/*
 * The IOAS's usable ranges (as many as fit: the rest are left out, as
 * type1's beyond the array are) and its IOVA alignment, the smallest page
 * a mapping may start on. iommufd keeps no mapping budget: dma_avail is
 * "not reported".
 */
static int iommufd_info_read(struct prealloc_vfio *v)
{
	struct iofd_iova_range r[PREALLOC_VFIO_MAX_RANGES];
	struct iofd_ioas_iova_ranges q = { .size = sizeof(q), .ioas_id = v->ioas,
					   .num_iovas = PREALLOC_VFIO_MAX_RANGES,
					   .allowed_iovas = (uintptr_t)r };
	unsigned int n;

	if (ioctl(v->container, IOFD_IOAS_IOVA_RANGES, &q) < 0 && errno != EMSGSIZE)
		return -errno;
	/* EMSGSIZE: more ranges than room; the kernel filled the first ones and says how many. */
	n = MIN(q.num_iovas, PREALLOC_VFIO_MAX_RANGES);
	if (!n)		/* here 0 ranges would read as "all of it" */
		return -ENOSPC;
	for (unsigned int i = 0; i < n; i++)
		v->info.ranges[i] = (struct prealloc_iova_range){ r[i].start, r[i].last };
	v->info.nr_ranges = n;
	v->info.pgsize_bitmap = q.out_iova_alignment ? q.out_iova_alignment : 4096;
	v->info.dma_avail = UINT32_MAX;
	v->info.iommu_type = 0;
	return 0;
}

int vfio_info_read(struct prealloc_vfio *v)
{
	struct vfio_iommu_type1_info probe = { .argsz = sizeof(probe) };
	size_t len;
	void *buf;
	int r;

	if (v->backend == PREALLOC_VFIO_IOMMUFD)
		return iommufd_info_read(v);
	if (ioctl(v->container, VFIO_IOMMU_GET_INFO, &probe) < 0)
		return -errno;
	/* The kernel says how much room the capability chain needs. */
	len = MAX(probe.argsz, (uint32_t)sizeof(probe));
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	((struct vfio_iommu_type1_info *)buf)->argsz = (uint32_t)len;
	r = ioctl(v->container, VFIO_IOMMU_GET_INFO, buf) < 0 ? -errno : 0;
	if (r == 0)
		r = vfio_info_parse(buf, len, &v->info);
	free(buf);
	return r;
}

EXPORT int prealloc_vfio_info(struct prealloc_vfio *vfio, struct prealloc_vfio_info *ret_info)
{
	int r;

	if (!vfio || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	r = vfio_info_read(vfio);
	copy_sized_out(ret_info, &vfio->info, sizeof(vfio->info));
	return r;
}
