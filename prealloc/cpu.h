/* SPDX-License-Identifier: MIT */
/* CPU identity and features: detected once, in cpu.c and the arch folder only. */
#ifndef PREALLOC_CPU_H
#define PREALLOC_CPU_H

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

/* Detected on first call, cached; thread safe. */
const struct cpu_id *cpu_get(void);
/*
 * The last-level cache one core shares, by vendor, family and model, for a
 * VM that hides every cache leaf: AMD Zen's per-CCX or per-CCD L3. 0 where
 * no such figure is known (the caller assumes its default). x86 only
 * (arch/x86/cpu.c).
 */
uint64_t llc_for_family(const char *vendor, unsigned int family, unsigned int model);

#endif
