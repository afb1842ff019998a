/* SPDX-License-Identifier: MIT */
/* Any architecture without its own folder: the C library's memset alone, no quirks. */
#include "arch.h"

const struct clear_kernel clear_kernels[] = {
	{ .name = "c", .fn = clear_c },
};
const unsigned int clear_kernels_count = sizeof(clear_kernels) / sizeof(clear_kernels[0]);

const struct clear_quirk *arch_clear_quirk(const struct cpu_id *cpu)
{
	(void)cpu;
	return NULL;
}
