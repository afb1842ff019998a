/* SPDX-License-Identifier: MIT */
/*
 * Pinning a region's pages for the device: the serial job op that walks
 * every node's chunks in order and calls VFIO_IOMMU_MAP_DMA per piece
 * (VFIO_MAP_STEP at most, never across a segment), counting bytes and
 * seconds per node, and noting each call that succeeded so that a failed
 * map undoes exactly those; and VFIO_IOMMU_UNMAP_DMA of a whole mapping.
 * Type1 takes the container's lock for each call and pins (and, for pages
 * not yet present, faults and zeroes) on the calling thread, so the op is
 * serial. iommufd pins the same way through IOMMU_IOAS_MAP (the address),
 * or IOMMU_IOAS_MAP_FILE (the region's file and offset, 6.13+) where the
 * kernel has it. The flow around it is map.c's.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/ioctl.h>

#include <linux/vfio.h>

#include "iommufd_uapi.h"
#include "vfio.h"

/* What this process's iommufd handles hold pinned (iommufd charges the user, not VmLck). */
static _Atomic uint64_t iommufd_pinned;

uint64_t vfio_iommufd_pinned(void)
{
	return atomic_load(&iommufd_pinned);
}

/* Less n, never below zero, however many handles unmap at once. */
static void pinned_sub(uint64_t n)
{
	uint64_t old = atomic_load(&iommufd_pinned);

	while (!atomic_compare_exchange_weak(&iommufd_pinned, &old, old - MIN(n, old)))
		;
}

bool iommufd_use_map_file(int region_fd, bool refused)
{
	return region_fd >= 0 && !refused;
}

bool iommufd_map_file_lacking(int err)
{
	return err == -ENOTTY || err == -EOPNOTSUPP;
}

static int unmap_range(struct prealloc_vfio *v, uint64_t iova, uint64_t size)
{
	struct vfio_iommu_type1_dma_unmap u = { .argsz = sizeof(u), .iova = iova, .size = size };
	struct iofd_ioas_unmap iu = { .size = sizeof(iu), .ioas_id = v->ioas, .iova = iova,
				      .length = size };

	if (v->backend != PREALLOC_VFIO_IOMMUFD)
		return ioctl(v->container, VFIO_IOMMU_UNMAP_DMA, &u) < 0 ? -errno : 0;
	if (ioctl(v->container, IOFD_IOAS_UNMAP, &iu) < 0) {
		/* ENOENT: the IOAS or the mapping is gone (its owner destroyed it): unpinned too. */
		if (errno == ENOENT)
			pinned_sub(size);
		return -errno;
	}
	pinned_sub(iu.length);
	return 0;
}

int vfio_unmap_segments(struct prealloc_vfio *v, const struct vfio_mapping *m)
{
	int ret = 0, r;

	for (unsigned int i = 0; i < m->nr_segments; i++) {
		r = unmap_range(v, m->segments[i].iova, m->segments[i].length);
		if (r < 0 && !ret)
			ret = r;
	}
	return ret;
}

/* Notes a MAP_DMA that succeeded; where that cannot be noted, it is undone. */
static int calls_add(struct vfio_map_flow *f, uint64_t iova, uint64_t size)
{
	if (f->nr_calls == f->cap_calls) {
		size_t cap = f->cap_calls ? f->cap_calls * 2 : 16;
		struct vfio_map_call *c = realloc(f->calls, cap * sizeof(*c));

		if (!c) {
			unmap_range(f->v, iova, size);
			return -ENOMEM;
		}
		f->calls = c;
		f->cap_calls = cap;
	}
	f->calls[f->nr_calls++] = (struct vfio_map_call){ iova, size };
	return 0;
}

/* Undoes this flow's MAP_DMA calls, newest first. */
void vfio_pin_undo(struct vfio_map_flow *f)
{
	while (f->nr_calls) {
		const struct vfio_map_call *c = &f->calls[--f->nr_calls];

		unmap_range(f->v, c->iova, c->size);
	}
}

/* The info.nodes slot of the extent holding region offset off. */
static struct prealloc_vfio_node_map *node_slot(struct vfio_map_flow *f, uint64_t off)
{
	const struct prealloc_region *reg = f->region;
	int node = -1;

	for (unsigned int e = 0; e < reg->nr_extents; e++)
		if (off - reg->extents[e].offset < reg->extents[e].length)
			node = reg->extents[e].node;
	for (unsigned int i = 0; i < f->info.nr_nodes; i++)
		if (f->info.nodes[i].node == node)
			return &f->info.nodes[i];
	return &f->info.nodes[f->info.nr_nodes - 1];	/* more than 64 nodes: the last slot */
}

static const struct prealloc_vfio_segment *segment_of(const struct vfio_mapping *m, uint64_t off)
{
	for (unsigned int i = 0; i < m->nr_segments; i++)
		if (off - m->segments[i].offset < m->segments[i].length)
			return &m->segments[i];
	return NULL;
}

/*
 * iommufd: [p, p + n) at iova, by the region's file where the kernel has
 * IOMMU_IOAS_MAP_FILE (its first refusal turns it off for the handle),
 * else by address. *ret_file: which it was.
 */
static int iommufd_map(struct vfio_map_flow *f, uint8_t *p, uint64_t n, uint64_t iova,
		       bool *ret_file)
{
	struct prealloc_vfio *v = f->v;
	uint32_t flags = IOFD_MAP_FIXED_IOVA | IOFD_MAP_READABLE |
			 (f->readonly ? 0 : IOFD_MAP_WRITEABLE);
	struct iofd_ioas_map m = { .size = sizeof(m), .flags = flags, .ioas_id = v->ioas,
				   .user_va = (uintptr_t)p, .length = n, .iova = iova };

	*ret_file = false;
	if (iommufd_use_map_file(f->region->fd, v->no_map_file)) {
		struct iofd_ioas_map_file mf = { .size = sizeof(mf), .flags = flags,
						 .ioas_id = v->ioas, .fd = f->region->fd,
						 .start = (uint64_t)(p - f->region->addr),
						 .length = n, .iova = iova };

		if (ioctl(v->container, IOFD_IOAS_MAP_FILE, &mf) == 0) {
			*ret_file = true;
			goto mapped;
		}
		if (!iommufd_map_file_lacking(-errno))
			return -errno;
		v->no_map_file = true;
	}
	if (ioctl(v->container, IOFD_IOAS_MAP, &m) < 0)
		return -errno;
mapped:
	atomic_fetch_add(&iommufd_pinned, n);
	return 0;
}

/* One mapping call of [p, p + n) at iova, whichever the backend. */
static int dma_map(struct vfio_map_flow *f, uint8_t *p, uint64_t n, uint64_t iova, bool *ret_file)
{
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | (f->readonly ? 0 : VFIO_DMA_MAP_FLAG_WRITE),
		.vaddr = (uintptr_t)p,
		.iova = iova,
		.size = n,
	};

	*ret_file = false;
	if (f->v->backend == PREALLOC_VFIO_IOMMUFD)
		return iommufd_map(f, p, n, iova, ret_file);
	return ioctl(f->v->container, VFIO_IOMMU_MAP_DMA, &map) < 0 ? -errno : 0;
}

static int map_setup(const struct job_op_args *args, void **ret_state)
{
	*ret_state = args->arg;
	return 0;
}

/* [p, p + len): one MAP_DMA per segment it touches (a piece never crosses an extent). */
static int map_piece(void *state, uint8_t *p, uint64_t len)
{
	struct vfio_map_flow *f = state;
	uint64_t off = (uint64_t)(p - f->region->addr);
	struct prealloc_vfio_node_map *slot = node_slot(f, off);

	while (len) {
		const struct prealloc_vfio_segment *s = segment_of(f->m, off);
		uint64_t n, iova;
		bool file;
		double t0;
		int r;

		if (!s)
			return -ERANGE;
		n = MIN(len, s->offset + s->length - off);
		iova = s->iova + (off - s->offset);
		t0 = now_seconds();
		r = dma_map(f, p, n, iova, &file);
		if (r < 0)
			return r;
		t0 = now_seconds() - t0;
		r = calls_add(f, iova, n);
		if (r < 0)
			return r;
		f->info.map_file = file && (f->info.mappings == 0 || f->info.map_file);
		slot->bytes += n;
		slot->seconds += t0;
		f->info.bytes += n;
		f->info.seconds += t0;
		f->info.mappings++;
		p += n;
		off += n;
		len -= n;
	}
	return 0;
}

static int map_method(const void *state)
{
	(void)state;
	return PREALLOC_METHOD_NONE;
}

const struct job_op vfio_pin_op = {
	.name = "vfio-map",
	.op = -1,
	.serial = true,
	.step = VFIO_MAP_STEP,
	.setup = map_setup,
	.piece = map_piece,
	.method = map_method,
};
