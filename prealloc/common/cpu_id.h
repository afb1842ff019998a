/* SPDX-License-Identifier: MIT */
/*
 * The CPU's identity, shared by all (common/, the floor): what an
 * architecture's arch_cpu_identify and arch_cpu_llc fill (arch/arch.h),
 * what a ctx holds (internal.h), and what the root's cpu_read and cpu_get
 * hand the library (cpu.h). The feature bits are the public PREALLOC_CPU_*
 * (prealloc/ctx.h).
 */
#ifndef PREALLOC_COMMON_CPU_ID_H
#define PREALLOC_COMMON_CPU_ID_H

#include <stdint.h>

struct cpu_id {
	char vendor[16];	/* x86: cpuid's; arm64: the implementer's name */
	char model_name[64];
	unsigned int family;	/* x86: display family (base + extended); arm64: implementer */
	unsigned int model;	/* x86: display model; arm64: MIDR's part number */
	unsigned int stepping;	/* arm64: variant << 4 | revision */
	uint64_t features;	/* PREALLOC_CPU_* */
	uint64_t llc_bytes;	/* one last-level cache; 0 unknown */
	char llc_source[48];	/* where llc_bytes came from (prealloc info says) */
};

#endif
