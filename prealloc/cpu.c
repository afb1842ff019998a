/* SPDX-License-Identifier: MIT */
/*
 * CPU identity and features, detected once per process: the architecture
 * says who the CPU is and what this process may use (arch/<arch>/cpu.c),
 * and the size of one last-level cache comes from sysfs, else from the
 * architecture's own sources, else is left unknown (callers assume 32 MiB).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "internal.h"

static struct cpu_id cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

/* Highest-level data or unified cache listed by sysfs for cpu0; 0 if none. */
static uint64_t llc_from_sysfs(void)
{
	unsigned int best_level = 0;
	uint64_t best = 0;

	for (unsigned int i = 0; i < 16; i++) {
		char path[96], buf[32], *end;
		uint64_t level, size;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/level", i);
		if (read_file_u64(path, &level) < 0)
			break;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/type", i);
		if (read_file_str(path, buf, sizeof(buf)) < 0 || !strncmp(buf, "Instruction", 11))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/size", i);
		if (read_file_str(path, buf, sizeof(buf)) < 0)
			continue;
		size = strtoull(buf, &end, 10);
		if (*end == 'K')
			size <<= 10;
		else if (*end == 'M')
			size <<= 20;
		if (level > best_level && size) {
			best_level = (unsigned int)level;
			best = size;
		}
	}
	return best;
}

static void cpu_detect(void)
{
	arch_cpu_identify(&cpu);
	snprintf(cpu.llc_source, sizeof(cpu.llc_source), "sysfs");
	cpu.llc_bytes = llc_from_sysfs();
	if (!cpu.llc_bytes)
		arch_cpu_llc(&cpu);
	if (!cpu.llc_bytes)
		snprintf(cpu.llc_source, sizeof(cpu.llc_source), "none (assumed 32 MiB)");
}

const struct cpu_id *cpu_get(void)
{
	pthread_once(&cpu_once, cpu_detect);
	return &cpu;
}
