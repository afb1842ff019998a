/* SPDX-License-Identifier: MIT */
/* Where pages are (move_pages query), and whether memory reads as zero. */
#include <numaif.h>
#include <string.h>

#include "internal.h"

#define QUERY_BATCH 1024

int placement_query(uint8_t *addr, uint64_t len, uint64_t page_size, int node,
		    uint64_t *ret_on, uint64_t *ret_off, uint64_t *ret_missing)
{
	void *pages[QUERY_BATCH];
	int status[QUERY_BATCH];
	uint64_t on = 0, off = 0, missing = 0;
	uint64_t npages = len / page_size;

	for (uint64_t done = 0; done < npages;) {
		unsigned int n = (unsigned int)MIN(npages - done, QUERY_BATCH);

		for (unsigned int i = 0; i < n; i++)
			pages[i] = addr + (done + i) * page_size;
		/* nodes == NULL: only report where each page is. */
		if (move_pages(0, n, pages, NULL, status, 0) < 0)
			return -errno;
		for (unsigned int i = 0; i < n; i++) {
			if (status[i] == node)
				on++;
			else if (status[i] >= 0)
				off++;
			else
				missing++;
		}
		done += n;
	}
	*ret_on += on;
	*ret_off += off;
	*ret_missing += missing;
	return 0;
}

uint64_t zero_check(const uint8_t *addr, uint64_t len)
{
	uint64_t i = 0;

	/* 64 bytes at a time; the compiler vectorises the OR. */
	for (; i + 64 <= len; i += 64) {
		const uint64_t *q = (const uint64_t *)(addr + i);
		uint64_t acc = 0;

		for (int k = 0; k < 8; k++)
			acc |= q[k];
		if (acc)
			break;
	}
	for (; i < len; i++)
		if (addr[i])
			return i;
	return len;
}
