/* SPDX-License-Identifier: MIT */
/*
 * prealloc/arch/ on the CPU this runs on, against what the kernel says of
 * it, read here independently. The kernels test clears with every kernel
 * and the select tests replay CPU identities we do not own; neither asks
 * whether the identity of THIS CPU is read right, which is what selection
 * and `prealloc info` start from. Held here and nowhere else:
 * - x86: vendor, display family and model, stepping and model name equal
 *   /proc/cpuinfo's first processor; each PREALLOC_CPU_* bit is set exactly
 *   when the kernel lists the flag of the same meaning (the kernel drops
 *   avx2 and avx512f where it saves no ymm/zmm state: the XGETBV rule),
 *   and no arm64 bit is ever set;
 * - x86: the LLC from cpuid's cache leaves is the size sysfs (which Linux
 *   fills from the same leaves) gives for cpu0's highest cache; where the
 *   host has no leaf for an identity, the family's per-CCX figure or
 *   nothing, and nothing leaves llc_source untouched (x86's tables at
 *   their edges are test-arch-tables.c's);
 * - arm64: family, model and stepping are MIDR_EL1's fields as read here,
 *   and the names follow from them; arch_cpu_llc fills nothing there;
 * - everywhere: arch_cache_flush keeps the bytes it flushes and touches
 *   nothing past the range (a guard page after it). The clock, which was
 *   here, is common/'s (tests/unit/common/test-clock.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "arch.h"
#include "prealloc/ctx.h"
#include "tap.h"

#define MiB (UINT64_C(1) << 20)

/* x86's feature bits: all x86 may set, and none arm64 may. */
#define X86_BITS                                                                                   \
	(PREALLOC_CPU_SSE2 | PREALLOC_CPU_ERMS | PREALLOC_CPU_FSRM | PREALLOC_CPU_AVX2 |           \
	 PREALLOC_CPU_AVX512F | PREALLOC_CPU_CLZERO | PREALLOC_CPU_MOVDIR64B)

/*
 * Flushing a range keeps its bytes (written back, not dropped), at any
 * alignment and length, and touches no line past its end: the range ends
 * at a PROT_NONE page, which a flush of one line too many faults on.
 */
static void test_cache_flush(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *guard;
	static const size_t lens[] = { 1, 63, 64, 100, 4095, 4096 };
	bool intact = true;

	if (!tap_ok(map != MAP_FAILED && !mprotect(map + page, page, PROT_NONE),
		    "a page with a guard page after it"))
		return;
	guard = map + page;
	for (size_t i = 0; i < page; i++)
		map[i] = (unsigned char)(i * 7 + 1);
	for (size_t i = 0; i < ARRAY_SIZE(lens); i++) {
		if (lens[i] > page)
			continue;
		/* Each length once ending exactly at the guard, once one byte into the page. */
		arch_cache_flush(guard - lens[i], lens[i]);
		arch_cache_flush(map + 1, lens[i] - 1);
	}
	arch_cache_flush(guard, 0);	/* nothing: not even the guard's first line */
	for (size_t i = 0; i < page; i++)
		intact &= map[i] == (unsigned char)(i * 7 + 1);
	tap_ok(intact, "arch_cache_flush keeps every byte it flushed and stops at the range's end "
		       "(no fault on the guard page; a length of 0 flushes nothing)");
	munmap(map, 2 * page);
}

#if defined(__x86_64__)
/* The first processor's fields in /proc/cpuinfo, as the kernel prints them. */
struct cpuinfo {
	char vendor[64], model_name[128], flags[4096];
	long family, model, stepping;
};

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

static void cpuinfo_field(struct cpuinfo *ci, const char *key, const char *val)
{
	if (!strcmp(key, "vendor_id"))
		snprintf(ci->vendor, sizeof(ci->vendor), "%s", val);
	else if (!strcmp(key, "model name"))
		snprintf(ci->model_name, sizeof(ci->model_name), "%s", val);
	else if (!strcmp(key, "flags"))
		snprintf(ci->flags, sizeof(ci->flags), " %s ", val);
	else if (!strcmp(key, "cpu family"))
		ci->family = strtol(val, NULL, 10);
	else if (!strcmp(key, "model"))
		ci->model = strtol(val, NULL, 10);
	else if (!strcmp(key, "stepping"))
		ci->stepping = strtol(val, NULL, 10);
}

static int cpuinfo_read(struct cpuinfo *ci)
{
	char line[8192];
	FILE *f = fopen("/proc/cpuinfo", "re");

	memset(ci, 0, sizeof(*ci));
	ci->family = ci->model = ci->stepping = -1;
	if (!f)
		return -errno;
	/* The first processor's block ends at the first empty line. */
	while (fgets(line, sizeof(line), f) && line[0] != '\n') {
		char *colon = strchr(line, ':');

		if (!colon)
			continue;
		*colon = '\0';
		cpuinfo_field(ci, trim(line), trim(colon + 1));
	}
	fclose(f);
	return ci->vendor[0] && ci->flags[0] ? 0 : -ENODATA;
}

static bool has_flag(const struct cpuinfo *ci, const char *flag)
{
	char word[64];

	snprintf(word, sizeof(word), " %s ", flag);
	return strstr(ci->flags, word) != NULL;
}

static void test_identity(const struct cpu_id *id, const struct cpuinfo *ci)
{
	tap_ok(!strcmp(id->vendor, ci->vendor), "vendor %s is cpuinfo's %s", id->vendor,
	       ci->vendor);
	tap_ok((long)id->family == ci->family, "display family 0x%x is cpuinfo's %ld", id->family,
	       ci->family);
	tap_ok((long)id->model == ci->model,
	       "display model 0x%x (extended bits included) is cpuinfo's %ld", id->model,
	       ci->model);
	tap_ok((long)id->stepping == ci->stepping, "stepping %u is cpuinfo's %ld", id->stepping,
	       ci->stepping);
	tap_ok(!strcmp(id->model_name, ci->model_name),
	       "model name \"%s\" is cpuinfo's \"%s\" (no space or newline around it)",
	       id->model_name, ci->model_name);
}

static void test_features(const struct cpu_id *id, const struct cpuinfo *ci)
{
	static const struct {
		uint64_t bit;
		const char *flag;
	} map[] = {
		{ PREALLOC_CPU_SSE2, "sse2" },	     { PREALLOC_CPU_ERMS, "erms" },
		{ PREALLOC_CPU_FSRM, "fsrm" },	     { PREALLOC_CPU_AVX2, "avx2" },
		{ PREALLOC_CPU_AVX512F, "avx512f" }, { PREALLOC_CPU_CLZERO, "clzero" },
		{ PREALLOC_CPU_MOVDIR64B, "movdir64b" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
		bool got = id->features & map[i].bit, want = has_flag(ci, map[i].flag);

		tap_ok(got == want, "feature %s: %s, as cpuinfo's flags say", map[i].flag,
		       got ? "set" : "not set");
	}
	tap_ok(!(id->features & ~X86_BITS), "no bit beyond x86's own (features 0x%llx)",
	       (unsigned long long)id->features);
}

/* cpu0's highest data or unified cache in the host's sysfs, in bytes; 0: none listed. */
static uint64_t sysfs_llc(void)
{
	uint64_t best = 0;
	unsigned int best_level = 0;

	for (unsigned int i = 0; i < 16; i++) {
		char path[128], type[32] = "";
		unsigned int level = 0;
		unsigned long long kib = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/level", i);
		f = fopen(path, "re");
		if (!f)
			break;
		level = fscanf(f, "%u", &level) == 1 ? level : 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/type", i);
		f = fopen(path, "re");
		if (f && fscanf(f, "%31s", type) != 1)
			type[0] = '\0';
		if (f)
			fclose(f);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%u/size", i);
		f = fopen(path, "re");
		if (f && fscanf(f, "%lluK", &kib) != 1)
			kib = 0;
		if (f)
			fclose(f);
		if (strcmp(type, "Instruction") && level > best_level && kib) {
			best_level = level;
			best = (uint64_t)kib << 10;
		}
	}
	return best;
}

/* Whether this host answers cpuid 0x8000001d (AMD's cache leaf: TOPOEXT). */
static bool host_has_amd_leaf(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x8000001d)
		return false;
	return __get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 22));
}

/* The socket's L3 per cpuid 0x80000006 (0 where the leaf says nothing, as on Intel). */
static uint64_t host_l3_socket(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000006)
		return 0;
	__get_cpuid(0x80000006, &a, &b, &c, &d);
	return (uint64_t)(d >> 18) * (512 << 10);
}

/* The real identity's LLC from cpuid's own cache leaves is sysfs's figure. */
static void test_llc_real(const struct cpu_id *host)
{
	struct cpu_id id = *host;
	uint64_t want = sysfs_llc();
	bool intel = !strcmp(id.vendor, "GenuineIntel");

	if (!want || (!intel && !host_has_amd_leaf())) {
		tap_skip("no cache leaf, or no cache in sysfs, to compare (%s)", id.vendor);
		return;
	}
	id.llc_bytes = 0;
	id.llc_source[0] = '\0';
	arch_cpu_llc(&id);
	tap_ok(id.llc_bytes == want &&
		       !strcmp(id.llc_source, intel ? "cpuid leaf 4" : "cpuid 0x8000001d"),
	       "the LLC from cpuid's cache leaves, %llu KiB (%s), is sysfs's %llu KiB",
	       (unsigned long long)id.llc_bytes >> 10, id.llc_source,
	       (unsigned long long)want >> 10);
}

/*
 * Identities this host has no cache leaf for (an AMD name on an Intel
 * host, as a VM that hides every cache leaf shows): the family's figure,
 * capped by the socket's L3 where cpuid gives one; none, and llc_source
 * left as it was, for a vendor or family with no figure.
 */
static void test_llc_no_leaf(void)
{
	static const struct {
		const char *vendor;
		unsigned int family, model;
		uint64_t bytes;
		const char *source;
	} t[] = {
		{ "AuthenticAMD", 0x19, 0x01, 32 * MiB, "family 0x19's per-CCX L3" },
		{ "AuthenticAMD", 0x17, 0x31, 16 * MiB, "family 0x17's per-CCX L3" },
		{ "AuthenticAMD", 0x15, 0x02, 0, "" },
		{ "CentaurHauls", 0x06, 0x0f, 0, "" },
	};
	uint64_t cap = host_l3_socket();

	if (host_has_amd_leaf()) {
		tap_skip("this host answers cpuid 0x8000001d: every identity has a cache leaf");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct cpu_id id = { .family = t[i].family, .model = t[i].model };
		uint64_t want = cap && t[i].bytes > cap ? cap : t[i].bytes;

		snprintf(id.vendor, sizeof(id.vendor), "%s", t[i].vendor);
		arch_cpu_llc(&id);
		tap_ok(id.llc_bytes == want && !strcmp(id.llc_source, t[i].source),
		       "no cache leaf for %s family 0x%x: %llu MiB from \"%s\" (want %llu, \"%s\")",
		       t[i].vendor, t[i].family, (unsigned long long)id.llc_bytes >> 20,
		       id.llc_source, (unsigned long long)want >> 20, t[i].source);
	}
}

static void test_arch(void)
{
	struct cpu_id id;
	struct cpuinfo ci;
	int r;

	memset(&id, 0, sizeof(id));
	arch_cpu_identify(&id);
	r = cpuinfo_read(&ci);
	if (r < 0) {
		tap_skip("no /proc/cpuinfo to compare with (%s)", strerror(-r));
	} else {
		test_identity(&id, &ci);
		test_features(&id, &ci);
	}
	test_llc_real(&id);
	test_llc_no_leaf();
}
#elif defined(__aarch64__)
#ifndef HWCAP_CPUID
#define HWCAP_CPUID (UINT64_C(1) << 11)
#endif

/* MIDR_EL1 as Linux offers it to EL0: sysfs for cpu0, else the emulated MRS; 0 where neither. */
static uint64_t midr(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "re");
	unsigned long long v = 0;
	uint64_t m;

	if (f) {
		if (fscanf(f, "%llx", &v) != 1)
			v = 0;
		fclose(f);
	}
	if (v || !(getauxval(AT_HWCAP) & HWCAP_CPUID))
		return v;
	__asm__ volatile("mrs %0, midr_el1" : "=r"(m));
	return m;
}

/*
 * Under qemu-user the CPU is QEMU's (and /proc/cpuinfo the host's): only
 * what follows from MIDR itself is checked, never a model by name.
 */
static void test_arch(void)
{
	struct cpu_id id, before;
	uint64_t m = midr();
	char hex[8], prefix[24];

	memset(&id, 0, sizeof(id));
	arch_cpu_identify(&id);
	tap_ok(id.family == ((m >> 24) & 0xff) && id.model == ((m >> 4) & 0xfff),
	       "implementer 0x%02x and part 0x%03x are MIDR 0x%llx's", id.family, id.model,
	       (unsigned long long)m);
	tap_ok(id.stepping == (((m >> 20) & 0xf) << 4 | (m & 0xf)),
	       "stepping 0x%02x is MIDR's variant << 4 | revision", id.stepping);
	snprintf(hex, sizeof(hex), "0x%02x", id.family);
	tap_ok(id.vendor[0] && (!strcmp(id.vendor, hex) || strncmp(id.vendor, "0x", 2)),
	       "the vendor is the implementer's name, or its code %s where unknown: %s", hex,
	       id.vendor);
	snprintf(prefix, sizeof(prefix), "%s ", id.vendor);
	tap_ok(!strncmp(id.model_name, prefix, strlen(prefix)),
	       "the model name starts with the vendor: \"%s\"", id.model_name);
	tap_ok(!(id.features & X86_BITS), "no x86 bit (features 0x%llx)",
	       (unsigned long long)id.features);
	before = id;
	arch_cpu_llc(&id);
	tap_ok(!memcmp(&id, &before, sizeof(id)),
	       "arch_cpu_llc names no cache (EL0 cannot read CCSIDR; sysfs is the source)");
}
#else
static void test_arch(void)
{
	struct cpu_id id, before;

	memset(&id, 0, sizeof(id));
	arch_cpu_identify(&id);
	tap_ok(!strcmp(id.vendor, "unknown") && !id.features,
	       "an architecture of its own: vendor unknown, no feature (%s)", id.vendor);
	before = id;
	arch_cpu_llc(&id);
	tap_ok(!memcmp(&id, &before, sizeof(id)), "arch_cpu_llc names no cache");
}
#endif

int main(void)
{
	/* A flush past the guard page faults: every check before it stays on record. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_arch();
	test_cache_flush();
	return tap_done();
}
