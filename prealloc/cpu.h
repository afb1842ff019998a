/* SPDX-License-Identifier: MIT */
/* CPU identity and features: detected once, in cpu.c and the arch folder only. */
#ifndef PREALLOC_CPU_H
#define PREALLOC_CPU_H

#include "cpu_id.h"

struct prealloc_ctx;

/*
 * The CPU with its last-level cache as ctx's sysfs root lists it (NULL:
 * the host's own /sys), else as the architecture finds it. The identity
 * and features are detected once per process; thread safe.
 */
void cpu_read(const struct prealloc_ctx *ctx, struct cpu_id *ret);

/* cpu_read(NULL), on first call, cached: for the calls that have no ctx. */
const struct cpu_id *cpu_get(void);

#endif
