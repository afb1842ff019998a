/* SPDX-License-Identifier: MIT */
/* CPU identity and features: detected once (cpuid + xgetbv), in cpu.c only. */
#ifndef PREALLOC_CPU_H
#define PREALLOC_CPU_H

#include <stdint.h>

struct cpu_id {
	char vendor[16];
	char model_name[64];
	unsigned int family;	/* display family (base + extended) */
	unsigned int model;	/* display model */
	unsigned int stepping;
	uint64_t features;	/* PREALLOC_CPU_* */
	uint64_t llc_bytes;	/* one last-level cache; 0 unknown */
};

/* Detected on first call, cached; thread safe. */
const struct cpu_id *cpu_get(void);

#endif
