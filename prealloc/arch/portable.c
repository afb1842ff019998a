/* SPDX-License-Identifier: MIT */
/* The one clear kernel every architecture has. */
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
