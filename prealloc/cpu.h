/* SPDX-License-Identifier: MIT */
/* CPU identity and features: detected once, in cpu.c and the arch folder only. */
#ifndef PREALLOC_CPU_H
#define PREALLOC_CPU_H

#include "arch/cpu_id.h"

/* Detected on first call, cached; thread safe. */
const struct cpu_id *cpu_get(void);

#endif
