/* SPDX-License-Identifier: MIT */
/*
 * Kernel selection on arm64, for CPUs we do not own (clear_select() is a
 * pure function of CPU identity, features, size, threads and calibration):
 * DC ZVA where DCZID_EL0 allows it, MOPS where HWCAP2 says so, STNP
 * everywhere, memset below the caches and a probe between, as on x86. Then
 * a calibration steers the choice the same way, a kernel the CPU lacks
 * falls back to the rules, and no CPU has a quirk. Last, this process's own
 * detection agrees with what the registers and the auxiliary vector say.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "config.h"
#include "cpu.h"
#include "clear.h"
#include "select-check.h"
#include "tap.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

#define F_ZVA PREALLOC_CPU_DCZVA
#define F_MOPS PREALLOC_CPU_MOPS

/* Altra's Neoverse N1: no cache figure in sysfs (32 MiB assumed). */
static const struct cpu_id n1 = { "ARM", "ARM Neoverse-N1", 0x41, 0xd0c, 0x31, F_ZVA, 0, "" };
/* Grace's Neoverse V2 with sysfs's 114 MiB of L3 (the probe cap applies). */
static const struct cpu_id v2 = { "NVIDIA", "ARM Neoverse-V2", 0x41, 0xd4f, 0, F_ZVA,
				  114 * MiB, "sysfs" };
/* An Armv9.3 core: DC ZVA and MOPS both. */
static const struct cpu_id mops_core = { "ARM", "ARM part 0xd8f", 0x41, 0xd8f, 0, F_ZVA | F_MOPS,
					 16 * MiB, "sysfs" };
/* A hypervisor that prohibits DC ZVA (DCZID_EL0.DZP), with and without MOPS. */
static const struct cpu_id dzp = { "ARM", "ARM Cortex-A72", 0x41, 0xd08, 0, 0, 0, "" };
static const struct cpu_id dzp_mops = { "0x00", "0x00 part 0x051", 0, 0x051, 0, F_MOPS, 0, "" };

static const struct {
	const char *what;
	const struct cpu_id *cpu;
	uint64_t size;		/* per worker */
	unsigned int threads;
	const char *expect;
} cases[] = {
	{ "N1 1 MiB", &n1, 1 * MiB, 1, "c" },
	{ "N1 8 MiB (the cached limit, inclusive)", &n1, 8 * MiB, 1, "c" },
	{ "N1 8 MiB + 4 KiB (probe against DC ZVA)", &n1, 8 * MiB + 4096, 1, "c/dc_zva" },
	{ "N1 64 MiB (twice the assumed LLC, inclusive)", &n1, 64 * MiB, 1, "c/dc_zva" },
	{ "N1 64 MiB + 4 KiB", &n1, 64 * MiB + 4096, 1, "dc_zva" },
	{ "N1 1 GiB", &n1, 1 * GiB, 1, "dc_zva" },
	{ "N1 16 MiB x 8 threads (128 MiB of footprint)", &n1, 16 * MiB, 8, "dc_zva" },
	{ "V2 128 MiB (the probe cap, inclusive)", &v2, 128 * MiB, 1, "c/dc_zva" },
	{ "V2 1 GiB", &v2, 1 * GiB, 1, "dc_zva" },
	{ "MOPS core 1 GiB (DC ZVA first in the table)", &mops_core, 1 * GiB, 1, "dc_zva" },
	{ "MOPS core 4 MiB (half its LLC: cached)", &mops_core, 4 * MiB, 1, "c" },
	{ "DZP set 1 GiB (STNP, the hint)", &dzp, 1 * GiB, 1, "stnp" },
	{ "DZP set 16 MiB (probe against STNP)", &dzp, 16 * MiB, 1, "c/stnp" },
	{ "DZP set, MOPS 1 GiB", &dzp_mops, 1 * GiB, 1, "mops" },
	{ "DZP set, MOPS 32 MiB", &dzp_mops, 32 * MiB, 1, "c/mops" },
	{ "size 0", &n1, 0, 1, "c" },
	{ "footprint overflow saturates", &n1, UINT64_MAX / 2, 4, "dc_zva" },
};

static void test_table(void)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(cases); i++) {
		const char *want = expected_built(cases[i].expect);
		char why[160] = "";
		struct clear_choice k = clear_select(cases[i].cpu, cases[i].size, cases[i].threads,
						     NULL, why, sizeof(why));

		tap_ok(k.kernel && !strcmp(k.name, want) && why[0] &&
			       !!k.nt == (strchr(want, '/') != NULL),
		       "%s: %s (%s)", cases[i].what, k.name, why);
		if (strcmp(k.name, want))
			printf("#   expected %s\n", want);
	}
}

static void test_selected_usable(void)
{
	static const struct cpu_id *cpus[] = { &n1, &v2, &mops_core, &dzp, &dzp_mops };
	bool ok = true, quirkless = true;

	for (unsigned int c = 0; c < ARRAY_SIZE(cpus); c++) {
		quirkless &= !arch_clear_quirk(cpus[c]);
		ok &= selections_usable(cpus[c]);
	}
	tap_ok(ok, "every selection is usable on its CPU");
	tap_ok(quirkless, "no arm64 CPU has a quirk (none is known)");
}

static struct clear_calibration calibration_for(const struct cpu_id *cpu, const char *small,
						const char *large)
{
	struct clear_calibration cal = { .family = cpu->family, .model = cpu->model,
					 .nr_classes = 2 };

	snprintf(cal.vendor, sizeof(cal.vendor), "%s", cpu->vendor);
	snprintf(cal.model_name, sizeof(cal.model_name), "%s", cpu->model_name);
	cal.classes[0] = (struct clear_cal_class){ .max_bytes = 64 * MiB, .gbps = 30.5 };
	cal.classes[1] = (struct clear_cal_class){ .max_bytes = UINT64_MAX, .gbps = 25.25 };
	snprintf(cal.classes[0].kernel, sizeof(cal.classes[0].kernel), "%s", small);
	snprintf(cal.classes[1].kernel, sizeof(cal.classes[1].kernel), "%s", large);
	return cal;
}

static void test_calibration(void)
{
	struct clear_calibration cal = calibration_for(&mops_core, "c/stnp", "mops");
	char why[160];
	struct clear_choice k;

	k = clear_select(&mops_core, 1 * GiB, 1, &cal, why, sizeof(why));
	tap_ok(!strcmp(k.name, expected_built("mops")) && (!k.kernel->fn || strstr(why, "calibrated")),
	       "a calibration puts MOPS over DC ZVA for the largest sizes: %s (%s)", k.name, why);
	k = clear_select(&mops_core, 1 * MiB, 1, &cal, why, sizeof(why));
	tap_ok(!strcmp(k.name, expected_built("c/stnp")),
	       "... and a probe against STNP below 64 MiB: %s (%s)", k.name, why);
	cal = calibration_for(&n1, "c", "mops");
	k = clear_select(&n1, 1 * GiB, 1, &cal, why, sizeof(why));
	tap_ok(!strcmp(k.name, expected_built("dc_zva")) && !strstr(why, "calibrated"),
	       "a calibrated MOPS on a CPU without it falls back to the rules: %s (%s)", k.name,
	       why);
	cal = calibration_for(&n1, "c", "avx2_nt");
	k = clear_select(&n1, 1 * GiB, 1, &cal, why, sizeof(why));
	tap_ok(!strcmp(k.name, expected_built("dc_zva")) && !strstr(why, "calibrated"),
	       "an x86 kernel's name is unknown here: the rules (%s)", k.name);
	cal = calibration_for(&v2, "c", "stnp");
	k = clear_select(&n1, 1 * GiB, 1, &cal, why, sizeof(why));
	tap_ok(!strcmp(k.name, expected_built("dc_zva")),
	       "a V2 calibration does not steer an N1: %s", k.name);
}

/* This process's CPU, as the emulator or the machine presents it. */
static void test_detection(void)
{
	const struct cpu_id *cpu = cpu_get();
	uint64_t dczid;
	bool mops = getauxval(AT_HWCAP2) & (UINT64_C(1) << 43);

	__asm__ volatile("mrs %0, dczid_el0" : "=r"(dczid));
	tap_ok(cpu->vendor[0] && cpu->model_name[0] && strstr(cpu->model_name, cpu->vendor),
	       "this CPU: %s, \"%s\", implementer 0x%02x part 0x%03x", cpu->vendor,
	       cpu->model_name, cpu->family, cpu->model);
	tap_ok(!!(cpu->features & F_ZVA) == !(dczid & 0x10),
	       "DC ZVA usable exactly when DCZID_EL0.DZP is clear (DCZID_EL0 0x%llx, %u-byte "
	       "blocks)", (unsigned long long)dczid, 4u << (dczid & 0xf));
	tap_ok(!!(cpu->features & F_MOPS) == mops, "MOPS usable exactly when HWCAP2 bit 43 says so (%s)",
	       mops ? "set" : "clear");
}

int main(void)
{
	/* Never the machine's own calibration: these tests say which one applies. */
	setenv("PREALLOC_CALIBRATION", "/nonexistent/prealloc-calibration", 1);
	test_table();
	test_selected_usable();
	test_calibration();
	test_detection();
	return tap_done();
}
