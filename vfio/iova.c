/* SPDX-License-Identifier: MIT */
/*
 * Where a region goes in the device's IO virtual address space: inside the
 * usable ranges the IOMMU reports, around reserved ones (on x86 the MSI
 * window 0xfee00000-0xfeefffff splits anything that crosses 4 GiB, as QEMU
 * splits guest RAM below and above 4G). Pure code.
 */
#include <stdlib.h>
#include <string.h>

#include "vfio.h"

/* Bytes from start to last inclusive, saturating at UINT64_MAX (the whole space). */
static uint64_t range_bytes(uint64_t start, uint64_t last)
{
	return last - start == UINT64_MAX ? UINT64_MAX : last - start + 1;
}

static const struct prealloc_iova_range all_iova = { 0, UINT64_MAX };

static int place_fixed(const struct prealloc_iova_range *ranges, unsigned int nr,
		       uint64_t min_page, uint64_t length, uint64_t iova,
		       struct prealloc_vfio_segment *ret, unsigned int max)
{
	if (iova % min_page)
		return -EINVAL;
	if (iova + (length - 1) < iova)
		return -ERANGE;	/* wraps */
	for (unsigned int i = 0; i < nr; i++) {
		if (iova < ranges[i].start || iova + (length - 1) > ranges[i].last)
			continue;
		if (max < 1)
			return -E2BIG;
		ret[0] = (struct prealloc_vfio_segment){ .iova = iova, .offset = 0, .length = length };
		return 1;
	}
	return -ERANGE;
}

int iova_place(const struct prealloc_iova_range *ranges, unsigned int nr_ranges,
	       uint64_t min_page, uint64_t page_size, uint64_t length, uint64_t iova, bool fixed,
	       struct prealloc_vfio_segment *ret, unsigned int max)
{
	uint64_t done = 0, cur = iova;
	unsigned int n = 0;

	if (!min_page || !page_size || !length || length % page_size || page_size % min_page)
		return -EINVAL;
	if (!nr_ranges) {
		ranges = &all_iova;
		nr_ranges = 1;
	}
	if (fixed)
		return place_fixed(ranges, nr_ranges, min_page, length, iova, ret, max);
	for (unsigned int i = 0; i < nr_ranges && done < length; i++) {
		const struct prealloc_iova_range *r = &ranges[i];
		uint64_t s = MAX(r->start, cur), take;

		if (r->last < cur || s > UINT64_MAX - page_size)
			continue;
		s = ALIGN_UP(s, page_size);
		if (s > r->last)
			continue;
		take = MIN(length - done, ALIGN_DOWN(range_bytes(s, r->last), page_size));
		if (!take)
			continue;
		if (n == max)
			return -E2BIG;
		ret[n++] = (struct prealloc_vfio_segment){ .iova = s, .offset = done, .length = take };
		done += take;
		cur = s + take;
		if (cur < s)
			break;	/* the top of the space */
	}
	return done == length ? (int)n : -ENOSPC;
}

/*
 * The usable ranges less what is taken: each taken segment's IOVAs are cut
 * out, a range it falls inside splitting in two. The order is kept, so
 * iova_place can walk the result upward.
 */
int iova_exclude(const struct prealloc_iova_range *ranges, unsigned int nr_ranges,
		 const struct prealloc_vfio_segment *taken, unsigned int nr_taken,
		 struct prealloc_iova_range *ret, unsigned int max)
{
	unsigned int n;

	if (!nr_ranges) {
		ranges = &all_iova;
		nr_ranges = 1;
	}
	if (nr_ranges > max)
		return -E2BIG;
	memcpy(ret, ranges, nr_ranges * sizeof(*ret));
	n = nr_ranges;
	for (unsigned int t = 0; t < nr_taken; t++) {
		uint64_t a = taken[t].iova, b = a + (taken[t].length - 1);

		if (!taken[t].length || b < a)
			continue;
		for (unsigned int i = 0; i < n; i++) {
			struct prealloc_iova_range r = ret[i];

			if (b < r.start || a > r.last)
				continue;
			if (a > r.start && b < r.last) {	/* inside: split in two */
				if (n == max)
					return -E2BIG;
				memmove(&ret[i + 2], &ret[i + 1], (n - i - 1) * sizeof(*ret));
				ret[i] = (struct prealloc_iova_range){ r.start, a - 1 };
				ret[i + 1] = (struct prealloc_iova_range){ b + 1, r.last };
				n++;
				i++;
			} else if (a > r.start) {		/* cuts the top */
				ret[i].last = a - 1;
			} else if (b < r.last) {		/* cuts the bottom */
				ret[i].start = b + 1;
			} else {				/* covers it whole */
				memmove(&ret[i], &ret[i + 1], (n - i - 1) * sizeof(*ret));
				n--;
				i--;
			}
		}
	}
	return (int)n;
}

/*
 * Where the region may go: the IOMMU's usable ranges less what this handle
 * has mapped already (so two regions placed from the same IOVA land side by
 * side). Mappings made behind the handle's back are the kernel's to refuse.
 */
int iova_free_ranges(const struct prealloc_vfio_info *info, const struct vfio_mapping *maps,
		     struct prealloc_iova_range **ret)
{
	unsigned int nr_taken = 0, k = 0, max;
	struct prealloc_vfio_segment *taken;
	int n;

	for (const struct vfio_mapping *m = maps; m; m = m->next)
		nr_taken += m->nr_segments;
	taken = calloc(nr_taken + 1, sizeof(*taken));
	max = info->nr_ranges + nr_taken + 1;
	*ret = calloc(max, sizeof(**ret));
	if (!taken || !*ret) {
		free(taken);
		free(*ret);
		*ret = NULL;
		return -ENOMEM;
	}
	for (const struct vfio_mapping *m = maps; m; m = m->next)
		for (unsigned int i = 0; i < m->nr_segments; i++)
			taken[k++] = m->segments[i];
	n = iova_exclude(info->ranges, info->nr_ranges, taken, nr_taken, *ret, max);
	free(taken);
	return n;
}
