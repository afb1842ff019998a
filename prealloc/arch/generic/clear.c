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

/* The portable scan alone (arch.h). */
const struct zero_scan zero_scans[] = {
	{ .name = "c", .fn = zero_scan_c },
};
const unsigned int zero_scans_count = ARRAY_SIZE(zero_scans);
