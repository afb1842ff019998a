/* SPDX-License-Identifier: MIT */
/* Clear kernels: placeholder table until the clear-engine work lands. */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "clear.h"

static void clear_c(void *dst, size_t len)
{
	memset(dst, 0, len);
}

const struct clear_kernel clear_kernels[] = {
	{ .name = "c", .fn = clear_c },
};
const unsigned int clear_kernels_count = ARRAY_SIZE(clear_kernels);

const struct clear_kernel *clear_kernel_find(const char *name)
{
	for (unsigned int i = 0; i < clear_kernels_count; i++)
		if (!strcmp(clear_kernels[i].name, name))
			return &clear_kernels[i];
	return NULL;
}

bool clear_kernel_usable(const struct clear_kernel *k, uint64_t features)
{
	return (k->requires & features) == k->requires;
}

const struct clear_kernel *clear_select(const struct cpu_id *cpu, uint64_t size,
					unsigned int threads, char *why, size_t why_len)
{
	(void)cpu, (void)size, (void)threads;
	snprintf(why, why_len, "only kernel");
	return &clear_kernels[0];
}
