/* SPDX-License-Identifier: MIT */
/* CPU identity: minimal placeholder until the clear-engine work lands. */
#include <pthread.h>
#include <string.h>

#include "internal.h"

static struct cpu_id cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void cpu_detect(void)
{
	strcpy(cpu.vendor, "unknown");
}

const struct cpu_id *cpu_get(void)
{
	pthread_once(&cpu_once, cpu_detect);
	return &cpu;
}
