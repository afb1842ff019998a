/* SPDX-License-Identifier: MIT */
/*
 * CPU identity and features, detected once per process: vendor and display
 * family/model/stepping from cpuid, the model name from /proc/cpuinfo, the
 * PREALLOC_CPU_* features this process may really use (AVX bits count only
 * when the OS saves the register state, per XGETBV), and the size of one
 * last-level cache.
 */
#include <cpuid.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* XCR0 bits the OS must enable: SSE+AVX state for ymm; plus opmask, zmm for AVX-512. */
#define XCR0_YMM 0x06u
#define XCR0_ZMM 0xe6u

static struct cpu_id cpu;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

struct regs {
	unsigned int a, b, c, d;
};

/* cpuid leaf/subleaf; all zero when the leaf is beyond the CPU's maximum. */
static struct regs cpuid(unsigned int leaf, unsigned int sub)
{
	struct regs r = { 0 };

	if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d))
		memset(&r, 0, sizeof(r));
	return r;
}

static uint64_t xgetbv0(void)
{
	unsigned int lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

static void cpu_read_features(struct cpu_id *id, unsigned int max_leaf, unsigned int max_ext)
{
	struct regs l1 = cpuid(1, 0);
	struct regs l7 = max_leaf >= 7 ? cpuid(7, 0) : (struct regs){ 0 };
	uint64_t xcr0 = 0;

	/* Without OSXSAVE, XGETBV itself is #UD and no AVX state is saved. */
	if (l1.c & bit_OSXSAVE)
		xcr0 = xgetbv0();
	if (l1.d & bit_SSE2)
		id->features |= PREALLOC_CPU_SSE2;
	if (l7.b & (1u << 9))	/* ERMS */
		id->features |= PREALLOC_CPU_ERMS;
	if (l7.d & (1u << 4))	/* FSRM */
		id->features |= PREALLOC_CPU_FSRM;
	if ((l1.c & bit_AVX) && (l7.b & bit_AVX2) && (xcr0 & XCR0_YMM) == XCR0_YMM)
		id->features |= PREALLOC_CPU_AVX2;
	if ((l7.b & bit_AVX512F) && (xcr0 & XCR0_ZMM) == XCR0_ZMM)
		id->features |= PREALLOC_CPU_AVX512F;
	if (l7.c & (1u << 28))	/* MOVDIR64B */
		id->features |= PREALLOC_CPU_MOVDIR64B;
	if (max_ext >= 0x80000008 && (cpuid(0x80000008, 0).b & 1u))
		id->features |= PREALLOC_CPU_CLZERO;
}

/* "model name : X" from /proc/cpuinfo; the cpuid brand string when unreadable. */
static void cpu_read_model_name(struct cpu_id *id, unsigned int max_ext)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");
	char *s = NULL;
	size_t n;

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (strncmp(line, "model name", 10))
				continue;
			s = strchr(line, ':');
			if (s)
				s++;
			break;
		}
		fclose(f);
	}
	if (!s && max_ext >= 0x80000004) {
		struct regs r[3] = { cpuid(0x80000002, 0), cpuid(0x80000003, 0), cpuid(0x80000004, 0) };

		memcpy(line, r, sizeof(r));
		line[sizeof(r)] = '\0';
		s = line;
	}
	if (!s)
		return;
	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	snprintf(id->model_name, sizeof(id->model_name), "%s", s);
}

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

/*
 * The same from cpuid's deterministic cache leaves: 4 on Intel, 0x8000001D
 * on AMD (with TOPOEXT); same register layout in both.
 */
static uint64_t llc_from_cpuid(unsigned int leaf)
{
	unsigned int best_level = 0;
	uint64_t best = 0;

	for (unsigned int i = 0; i < 16; i++) {
		struct regs r = cpuid(leaf, i);
		unsigned int type = r.a & 0x1f, level = (r.a >> 5) & 0x7;
		uint64_t ways = (r.b >> 22) + 1, parts = ((r.b >> 12) & 0x3ff) + 1;
		uint64_t line = (r.b & 0xfff) + 1, sets = (uint64_t)r.c + 1;

		if (type == 0)
			break;
		if (type == 2)	/* instruction cache */
			continue;
		if (level > best_level) {
			best_level = level;
			best = ways * parts * line * sets;
		}
	}
	return best;
}

uint64_t llc_for_family(const char *vendor, unsigned int family, unsigned int model)
{
	if (strcmp(vendor, "AuthenticAMD") && strcmp(vendor, "HygonGenuine"))
		return 0;
	/* Zen and Zen+: 8 MiB per 4-core CCX; Zen 2: 16 MiB per CCX (models 0x30 on). */
	if (family == 0x17)
		return (model >= 0x30 ? UINT64_C(16) : UINT64_C(8)) << 20;
	if (family == 0x18)	/* Hygon Dhyana, a Zen */
		return UINT64_C(8) << 20;
	/* Zen 3, 4 and 5: 32 MiB per 8-core CCD (the 3D V-Cache parts have more). */
	if (family == 0x19 || family == 0x1a)
		return UINT64_C(32) << 20;
	return 0;
}

/*
 * The LLC one core sees, and where the figure came from: sysfs, the
 * deterministic cache leaves, else the family's known per-CCX size (a VM
 * may hide TOPOEXT, leaving 0x8000001D all zero), capped by 0x80000006's
 * L3 size, which is the whole socket's and so only an upper bound.
 */
static void cpu_detect_llc(unsigned int max_leaf, unsigned int max_ext)
{
	uint64_t l3_socket = 0;

	snprintf(cpu.llc_source, sizeof(cpu.llc_source), "sysfs");
	cpu.llc_bytes = llc_from_sysfs();
	if (!cpu.llc_bytes && !strcmp(cpu.vendor, "GenuineIntel") && max_leaf >= 4) {
		snprintf(cpu.llc_source, sizeof(cpu.llc_source), "cpuid leaf 4");
		cpu.llc_bytes = llc_from_cpuid(4);
	}
	if (!cpu.llc_bytes && max_ext >= 0x8000001d && (cpuid(0x80000001, 0).c & (1u << 22))) {
		snprintf(cpu.llc_source, sizeof(cpu.llc_source), "cpuid 0x8000001d");
		cpu.llc_bytes = llc_from_cpuid(0x8000001d);
	}
	if (cpu.llc_bytes)
		return;
	if (max_ext >= 0x80000006)
		l3_socket = (uint64_t)(cpuid(0x80000006, 0).d >> 18) * (512 << 10);
	cpu.llc_bytes = llc_for_family(cpu.vendor, cpu.family, cpu.model);
	if (l3_socket && cpu.llc_bytes > l3_socket)
		cpu.llc_bytes = l3_socket;
	if (cpu.llc_bytes)
		snprintf(cpu.llc_source, sizeof(cpu.llc_source), "family 0x%x's per-CCX L3",
			 cpu.family);
	else
		snprintf(cpu.llc_source, sizeof(cpu.llc_source), "none (assumed 32 MiB)");
}

static void cpu_detect(void)
{
	struct regs l0 = cpuid(0, 0), l1;
	unsigned int max_ext = cpuid(0x80000000, 0).a, base_family;

	memcpy(cpu.vendor, &l0.b, 4);
	memcpy(cpu.vendor + 4, &l0.d, 4);
	memcpy(cpu.vendor + 8, &l0.c, 4);
	cpu.vendor[12] = '\0';
	if (!cpu.vendor[0])
		strcpy(cpu.vendor, "unknown");
	if (max_ext < 0x80000000)
		max_ext = 0;

	/* Display family/model as Intel and AMD define them. */
	l1 = cpuid(1, 0);
	base_family = (l1.a >> 8) & 0xf;
	cpu.family = base_family;
	if (base_family == 0xf)
		cpu.family += (l1.a >> 20) & 0xff;
	cpu.model = (l1.a >> 4) & 0xf;
	if (base_family == 0x6 || base_family == 0xf)
		cpu.model |= ((l1.a >> 16) & 0xf) << 4;
	cpu.stepping = l1.a & 0xf;

	cpu_read_features(&cpu, l0.a, max_ext);
	cpu_read_model_name(&cpu, max_ext);

	cpu_detect_llc(l0.a, max_ext);
}

const struct cpu_id *cpu_get(void)
{
	pthread_once(&cpu_once, cpu_detect);
	return &cpu;
}
