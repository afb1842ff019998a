/* SPDX-License-Identifier: MIT */
/*
 * x86 CPU identity and features: vendor and display family/model/stepping
 * from cpuid, the model name from /proc/cpuinfo (the brand string where it
 * is unreadable), the PREALLOC_CPU_* features this process may really use
 * (AVX bits count only when the OS saves the register state, per XGETBV),
 * and one core's last-level cache where sysfs lists none.
 */
#include <cpuid.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "prealloc/ctx.h"

/* XCR0 bits the OS must enable: SSE+AVX state for ymm; plus opmask, zmm for AVX-512. */
#define XCR0_YMM 0x06u
#define XCR0_ZMM 0xe6u

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

uint64_t x86_features_decode(const struct x86_feature_regs *r)
{
	uint64_t f = 0;

	if (r->l1d & bit_SSE2)
		f |= PREALLOC_CPU_SSE2;
	if (r->l7b & (1u << 9))	/* ERMS */
		f |= PREALLOC_CPU_ERMS;
	if (r->l7d & (1u << 4))	/* FSRM */
		f |= PREALLOC_CPU_FSRM;
	if ((r->l1c & bit_AVX) && (r->l7b & bit_AVX2) && (r->xcr0 & XCR0_YMM) == XCR0_YMM)
		f |= PREALLOC_CPU_AVX2;
	if ((r->l7b & bit_AVX512F) && (r->xcr0 & XCR0_ZMM) == XCR0_ZMM)
		f |= PREALLOC_CPU_AVX512F;
	if (r->l7c & (1u << 28))	/* MOVDIR64B */
		f |= PREALLOC_CPU_MOVDIR64B;
	if (r->e8b & 1u)	/* CLZERO */
		f |= PREALLOC_CPU_CLZERO;
	return f;
}

static void cpu_read_features(struct cpu_id *id, unsigned int max_leaf, unsigned int max_ext)
{
	struct regs l1 = cpuid(1, 0);
	struct regs l7 = max_leaf >= 7 ? cpuid(7, 0) : (struct regs){ 0 };
	struct x86_feature_regs r = {
		.l1c = l1.c, .l1d = l1.d, .l7b = l7.b, .l7c = l7.c, .l7d = l7.d,
		.e8b = max_ext >= 0x80000008 ? cpuid(0x80000008, 0).b : 0,
	};

	/* Without OSXSAVE, XGETBV itself is #UD and no AVX state is saved. */
	if (l1.c & bit_OSXSAVE)
		r.xcr0 = xgetbv0();
	id->features |= x86_features_decode(&r);
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

/*
 * One core's last-level cache from cpuid's deterministic cache leaves: 4 on Intel, 0x8000001D
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

void x86_llc_by_family(struct cpu_id *id, uint64_t l3_socket)
{
	id->llc_bytes = llc_for_family(id->vendor, id->family, id->model);
	if (l3_socket && id->llc_bytes > l3_socket)
		id->llc_bytes = l3_socket;
	if (id->llc_bytes)
		snprintf(id->llc_source, sizeof(id->llc_source), "family 0x%x's per-CCX L3",
			 id->family);
}

/*
 * Where sysfs is silent: the deterministic cache leaves, else the family's
 * known per-CCX size (a VM may hide TOPOEXT, leaving 0x8000001D all zero),
 * capped by 0x80000006's L3 size, which is the whole socket's and so only
 * an upper bound.
 */
void arch_cpu_llc(struct cpu_id *id)
{
	unsigned int max_leaf = cpuid(0, 0).a, max_ext = cpuid(0x80000000, 0).a;
	uint64_t l3_socket = 0;

	if (max_ext < 0x80000000)
		max_ext = 0;
	if (!strcmp(id->vendor, "GenuineIntel") && max_leaf >= 4) {
		snprintf(id->llc_source, sizeof(id->llc_source), "cpuid leaf 4");
		id->llc_bytes = llc_from_cpuid(4);
	}
	if (!id->llc_bytes && max_ext >= 0x8000001d && (cpuid(0x80000001, 0).c & (1u << 22))) {
		snprintf(id->llc_source, sizeof(id->llc_source), "cpuid 0x8000001d");
		id->llc_bytes = llc_from_cpuid(0x8000001d);
	}
	if (id->llc_bytes)
		return;
	if (max_ext >= 0x80000006)
		l3_socket = (uint64_t)(cpuid(0x80000006, 0).d >> 18) * (512 << 10);
	x86_llc_by_family(id, l3_socket);
}

void arch_cpu_identify(struct cpu_id *id)
{
	struct regs l0 = cpuid(0, 0), l1;
	unsigned int max_ext = cpuid(0x80000000, 0).a, base_family;

	memcpy(id->vendor, &l0.b, 4);
	memcpy(id->vendor + 4, &l0.d, 4);
	memcpy(id->vendor + 8, &l0.c, 4);
	id->vendor[12] = '\0';
	if (!id->vendor[0])
		strcpy(id->vendor, "unknown");
	if (max_ext < 0x80000000)
		max_ext = 0;

	/* Display family/model as Intel and AMD define them. */
	l1 = cpuid(1, 0);
	base_family = (l1.a >> 8) & 0xf;
	id->family = base_family;
	if (base_family == 0xf)
		id->family += (l1.a >> 20) & 0xff;
	id->model = (l1.a >> 4) & 0xf;
	if (base_family == 0x6 || base_family == 0xf)
		id->model |= ((l1.a >> 16) & 0xf) << 4;
	id->stepping = l1.a & 0xf;

	cpu_read_features(id, l0.a, max_ext);
	cpu_read_model_name(id, max_ext);
}

void arch_cache_flush(const void *p, uint64_t len)
{
	for (uint64_t off = 0; off < len; off += 64)
		__builtin_ia32_clflush((const char *)p + off);
	__builtin_ia32_mfence();
}
