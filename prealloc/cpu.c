/* SPDX-License-Identifier: MIT */
/*
 * CPU identity and features, detected once per process: the architecture
 * says who the CPU is and what this process may use (arch/<arch>/cpu.c).
 * The size of one last-level cache comes from sysfs under a ctx's root
 * (the host's own /sys without one), else from the architecture's own
 * sources, else is left unknown (callers assume 32 MiB).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "cpu.h"
#include "internal.h"

#define CPU0_CACHE "/devices/system/cpu/cpu0/cache"

/* Highest-level data or unified cache ctx's sysfs lists for cpu0; 0 if none. */
static uint64_t llc_from_sysfs(const struct prealloc_ctx *ctx)
{
	unsigned int best_level = 0;
	uint64_t best = 0;

	for (unsigned int i = 0; i < 16; i++) {
		char path[PATH_MAX], buf[32], *end;
		uint64_t level, size;

		if (sys_path(ctx, path, sizeof(path), CPU0_CACHE "/index%u/level", i) < 0 ||
		    read_file_u64(path, &level) < 0)
			break;
		if (sys_path(ctx, path, sizeof(path), CPU0_CACHE "/index%u/type", i) < 0 ||
		    read_file_str(path, buf, sizeof(buf)) < 0 || !strncmp(buf, "Instruction", 11))
			continue;
		if (sys_path(ctx, path, sizeof(path), CPU0_CACHE "/index%u/size", i) < 0 ||
		    read_file_str(path, buf, sizeof(buf)) < 0)
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

static struct cpu_id ident;	/* the architecture's: identity and features */
static struct cpu_id host;	/* ... with the LLC under the host's own /sys */
static pthread_once_t ident_once = PTHREAD_ONCE_INIT, host_once = PTHREAD_ONCE_INIT;

static void ident_detect(void)
{
	arch_cpu_identify(&ident);
}

static void cpu_detect(const struct prealloc_ctx *ctx, struct cpu_id *ret)
{
	pthread_once(&ident_once, ident_detect);
	*ret = ident;
	snprintf(ret->llc_source, sizeof(ret->llc_source), "sysfs");
	ret->llc_bytes = llc_from_sysfs(ctx);
	if (!ret->llc_bytes)
		arch_cpu_llc(ret);
	if (!ret->llc_bytes)
		snprintf(ret->llc_source, sizeof(ret->llc_source), "none (assumed 32 MiB)");
}

static void host_detect(void)
{
	cpu_detect(NULL, &host);
}

const struct cpu_id *cpu_get(void)
{
	pthread_once(&host_once, host_detect);
	return &host;
}

/* A ctx over the host's own /sys reads what cpu_get read once for the process. */
void cpu_read(const struct prealloc_ctx *ctx, struct cpu_id *ret)
{
	if (!ctx || !strcmp(ctx->sys_root, HOST_SYS_ROOT))
		*ret = *cpu_get();
	else
		cpu_detect(ctx, ret);
}
