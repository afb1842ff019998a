/* SPDX-License-Identifier: MIT */
/* The one clear kernel and the one zero scan every architecture has. */
#include <string.h>

#include "arch.h"

/*
 * c: the C library's memset. Cached stores, no alignment needs; the
 * portable fallback and the reference the others are measured against.
 */
void clear_c(void *dst, size_t len)
{
	memset(dst, 0, len);
}

uint64_t zero_scan_c(const uint8_t *addr, uint64_t len)
{
	uint64_t i = 0;

	for (; i + 64 <= len; i += 64) {
		uint64_t q[8], acc = 0;

		memcpy(q, addr + i, sizeof(q));	/* any alignment */
		for (int k = 0; k < 8; k++)
			acc |= q[k];
		if (acc)
			break;
	}
	return i;
}
