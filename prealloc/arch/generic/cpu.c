/* SPDX-License-Identifier: MIT */
/*
 * Any architecture without its own folder: nothing is known of the CPU
 * beyond what sysfs says of its caches (cpu.c), and no feature is claimed.
 */
#include <string.h>

#include "arch.h"

void arch_cpu_identify(struct cpu_id *id)
{
	strcpy(id->vendor, "unknown");
}

void arch_cpu_llc(struct cpu_id *id)
{
	(void)id;
}

void arch_cache_flush(const void *p, uint64_t len)
{
	(void)p;
	(void)len;
}
