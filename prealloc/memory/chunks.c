/* SPDX-License-Identifier: MIT */
/*
 * Chunks: a region's bytes split over nodes (extents), and each extent cut into
 * page-aligned chunks that workers take from a queue. Pure code: no system
 * calls, unit-tested in tests/unit/memory/test-chunks.c.
 */
#include "memory.h"

#define CHUNK_MAX (UINT64_C(1) << 30)	/* big regions: about 1 GiB */
#define CHUNK_MIN (UINT64_C(2) << 20)	/* small regions: not below 2 MiB */
#define CHUNKS_PER_THREAD 4		/* enough for the queue to balance */

int extents_split(uint64_t length, uint64_t page_size, const int *nodes,
		 const uint64_t *node_bytes, unsigned int nr, struct prealloc_extent *ret)
{
	uint64_t offset = 0;

	if (!nr || !page_size || length % page_size)
		return -EINVAL;
	if (node_bytes) {
		for (unsigned int i = 0; i < nr; i++) {
			if (!node_bytes[i] || node_bytes[i] % page_size)
				return -EINVAL;
			if (node_bytes[i] > length - offset)
				return -EINVAL;
			ret[i] = (struct prealloc_extent){ nodes[i], offset, node_bytes[i] };
			offset += node_bytes[i];
		}
		return offset == length ? 0 : -EINVAL;
	}

	uint64_t pages = length / page_size;
	uint64_t each = pages / nr, extra = pages % nr;

	if (each == 0)
		return -EINVAL;	/* fewer pages than nodes: some node would get none */
	for (unsigned int i = 0; i < nr; i++) {
		uint64_t len = (each + (i < extra ? 1 : 0)) * page_size;

		ret[i] = (struct prealloc_extent){ nodes[i], offset, len };
		offset += len;
	}
	return 0;
}

uint64_t chunk_size_for(uint64_t extent_len, uint64_t page_size, unsigned int threads)
{
	uint64_t size;

	if (!threads)
		threads = 1;
	size = extent_len / ((uint64_t)threads * CHUNKS_PER_THREAD);
	size = MAX(size, CHUNK_MIN);
	size = MIN(size, CHUNK_MAX);
	size = ALIGN_DOWN(size, page_size);
	return MAX(size, page_size);
}

size_t chunks_cut(const struct prealloc_extent *extents, unsigned int nr_extents,
		   uint64_t page_size, uint64_t chunk_size, struct chunk *ret)
{
	size_t n = 0;

	chunk_size = MAX(ALIGN_DOWN(chunk_size, page_size), page_size);
	for (unsigned int e = 0; e < nr_extents; e++) {
		uint64_t end = extents[e].offset + extents[e].length;

		for (uint64_t off = extents[e].offset; off < end; off += chunk_size) {
			if (ret)
				ret[n] = (struct chunk){ off, MIN(chunk_size, end - off), e };
			n++;
		}
	}
	return n;
}
