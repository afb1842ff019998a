/* SPDX-License-Identifier: MIT */
/* Any architecture without its own folder: the C library's memset alone, no quirks. */
#include "arch.h"

const struct clear_kernel clear_kernels[] = {
	{ .name = "c", .fn = clear_c },
};
const unsigned int clear_kernels_count = ARRAY_SIZE(clear_kernels);

const struct clear_quirk *arch_clear_quirk(const struct cpu_id *cpu)
{
	(void)cpu;
	return NULL;
}
