/* SPDX-License-Identifier: MIT */
/*
 * A clear kernel other than memset that this build has and this CPU runs,
 * for tests that name one: rep_stosb on x86-64, stnp on arm64 (the last of
 * the table's before "c"); "c" where there is none.
 */
#ifndef PREALLOC_TEST_OTHER_KERNEL_H
#define PREALLOC_TEST_OTHER_KERNEL_H

#include <string.h>

#include "cpu.h"
#include "clear.h"

static inline const char *other_kernel(void)
{
	for (unsigned int i = clear_kernels_count; i-- > 0;)
		if (strcmp(clear_kernels[i].name, "c") &&
		    clear_kernel_usable(&clear_kernels[i], cpu_get()->features))
			return clear_kernels[i].name;
	return "c";
}

#endif
