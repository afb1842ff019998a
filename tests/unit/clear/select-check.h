/* SPDX-License-Identifier: MIT */
/* What test-select.c (x86) and test-select-arm64.c both ask of clear_select(). */
#ifndef PREALLOC_TEST_SELECT_CHECK_H
#define PREALLOC_TEST_SELECT_CHECK_H

#include <stdbool.h>
#include <string.h>

#include "cpu.h"
#include "clear.h"

/*
 * name ("c", "avx2_nt", a probe's "c/dc_zva") where this build has its
 * kernel, else "c": without the vector kernels (-Dvector_kernels=false)
 * every NT expectation, and every probe, becomes memset.
 */
static inline const char *expected_built(const char *name)
{
	const char *slash = strchr(name, '/');
	const struct clear_kernel *k = clear_kernel_find(slash ? slash + 1 : name);

	return k && k->fn ? name : "c";
}

/* Whatever the size and threads, the pick (and a probe's NT kernel) runs on cpu. */
static inline bool selections_usable(const struct cpu_id *cpu)
{
	bool ok = true;

	for (uint64_t size = 1; size && size < UINT64_MAX / 4; size <<= 3)
		for (unsigned int t = 0; t < 300; t = t * 4 + 1) {
			struct clear_choice k = clear_select(cpu, size, t, NULL, NULL, 0);

			ok &= k.kernel && clear_kernel_usable(k.kernel, cpu->features) &&
			      (!k.nt || clear_kernel_usable(k.nt, cpu->features));
		}
	return ok;
}

#endif
