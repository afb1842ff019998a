/* SPDX-License-Identifier: MIT */
/*
 * arm64 CPU identity and features. Who the CPU is comes from MIDR_EL1
 * (sysfs for cpu0, else the MRS that Linux emulates where HWCAP_CPUID says
 * so); the model name is made from it, since arm64's /proc/cpuinfo has
 * none. What this process may use: DC ZVA where DCZID_EL0 does not prohibit
 * it, FEAT_MOPS where HWCAP2 says so. Nothing here names a cache size: EL0
 * cannot read CLIDR/CCSIDR, so sysfs is the only source (cpu.c).
 */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include "arch.h"
#include "prealloc/ctx.h"

#ifndef HWCAP_CPUID
#define HWCAP_CPUID (UINT64_C(1) << 11)
#endif
/* Debian 12's headers predate FEAT_MOPS. */
#ifndef HWCAP2_MOPS
#define HWCAP2_MOPS (UINT64_C(1) << 43)
#endif

#define DCZID_DZP (1u << 4)	/* DC ZVA prohibited */
#define DCZID_BS_MAX 9		/* 4 << 9 = 2 KiB, the largest block the architecture allows */

static const struct {
	unsigned int code;
	const char *name;
} implementers[] = {
	{ 0x41, "ARM" },      { 0x42, "Broadcom" }, { 0x43, "Cavium" },  { 0x46, "Fujitsu" },
	{ 0x48, "HiSilicon" }, { 0x4e, "NVIDIA" },  { 0x50, "APM" },     { 0x51, "Qualcomm" },
	{ 0x61, "Apple" },    { 0x6d, "Microsoft" }, { 0xc0, "Ampere" },
};

/* Parts a VM host is likely to run on; the rest are named by number. */
static const struct {
	unsigned int implementer, part;
	const char *name;
} parts[] = {
	{ 0x41, 0xd03, "Cortex-A53" },	 { 0x41, 0xd07, "Cortex-A57" },
	{ 0x41, 0xd08, "Cortex-A72" },	 { 0x41, 0xd0b, "Cortex-A76" },
	{ 0x41, 0xd0c, "Neoverse-N1" }, { 0x41, 0xd40, "Neoverse-V1" },
	{ 0x41, 0xd49, "Neoverse-N2" }, { 0x41, 0xd4f, "Neoverse-V2" },
	{ 0x41, 0xd84, "Neoverse-V3" }, { 0x41, 0xd8e, "Neoverse-N3" },
	{ 0xc0, 0xac3, "Ampere-1" },	 { 0xc0, 0xac4, "Ampere-1a" },
};

static uint64_t read_midr(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "re");
	unsigned long long v = 0;

	if (f) {
		if (fscanf(f, "%llx", &v) != 1)
			v = 0;
		fclose(f);
	}
	if (!v && (getauxval(AT_HWCAP) & HWCAP_CPUID)) {
		uint64_t m;

		__asm__ volatile("mrs %0, midr_el1" : "=r"(m));
		v = m;
	}
	return v;
}

static uint64_t read_dczid(void)
{
	uint64_t v;

	__asm__ volatile("mrs %0, dczid_el0" : "=r"(v));
	return v;
}

static void name_cpu(struct cpu_id *id)
{
	const char *part = NULL;

	snprintf(id->vendor, sizeof(id->vendor), "0x%02x", id->family);
	for (unsigned int i = 0; i < ARRAY_SIZE(implementers); i++)
		if (implementers[i].code == id->family)
			snprintf(id->vendor, sizeof(id->vendor), "%s", implementers[i].name);
	for (unsigned int i = 0; i < ARRAY_SIZE(parts); i++)
		if (parts[i].implementer == id->family && parts[i].part == id->model)
			part = parts[i].name;
	if (part)
		snprintf(id->model_name, sizeof(id->model_name), "%s %s", id->vendor, part);
	else
		snprintf(id->model_name, sizeof(id->model_name), "%s part 0x%03x", id->vendor,
			 id->model);
}

void arch_cpu_identify(struct cpu_id *id)
{
	uint64_t midr = read_midr(), dczid = read_dczid();

	id->family = (unsigned int)(midr >> 24) & 0xff;
	id->model = (unsigned int)(midr >> 4) & 0xfff;
	id->stepping = ((unsigned int)(midr >> 20) & 0xf) << 4 | ((unsigned int)midr & 0xf);
	name_cpu(id);
	if (!(dczid & DCZID_DZP) && (dczid & 0xf) <= DCZID_BS_MAX)
		id->features |= PREALLOC_CPU_DCZVA;
	if (getauxval(AT_HWCAP2) & HWCAP2_MOPS)
		id->features |= PREALLOC_CPU_MOPS;
}

void arch_cpu_llc(struct cpu_id *id)
{
	(void)id;
}

/* The smallest data cache line, from CTR_EL0.DminLine (log2 of 4-byte words). */
static uint64_t dcache_line(void)
{
	uint64_t ctr;

	__asm__ volatile("mrs %0, ctr_el0" : "=r"(ctr));
	return UINT64_C(4) << ((ctr >> 16) & 0xf);
}

/* DC CIVAC, which Linux lets EL0 issue (SCTLR_EL1.UCI), then DSB to complete it. */
void arch_cache_flush(const void *p, uint64_t len)
{
	uint64_t line = dcache_line();
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)(line - 1), end = (uintptr_t)p + len;

	for (; a < end; a += line)
		__asm__ volatile("dc civac, %0" : : "r"(a) : "memory");
	__asm__ volatile("dsb ish" : : : "memory");
}
