/* SPDX-License-Identifier: MIT */
/*
 * x86's two tables by CPU identity, at their edges: llc_for_family (the
 * LLC of a VM that hides every cache leaf) and the clear quirks. The
 * select test replays whole CPUs through them, a row or two inside each
 * range, so an off-by-one at a range's end, a vendor matched by prefix or
 * a family matched without its vendor passes there; here each quirk row is
 * checked at both ends of its model range and one model off each end (the
 * next row, or no quirk), and llc_for_family at the Zen 2 boundary, for
 * families before and after Zen and for vendors that are not quite AMD.
 * And the feature bits from cpuid's registers (x86_features_decode), each
 * alone and each missing from a CPU that has all the others, so that a bit
 * this machine's CPU lacks (ERMS on a Zen 2) is decoded all the same.
 * Pure functions of the identity: nothing of this machine is read.
 */
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "prealloc/ctx.h"
#include "tap.h"

#define MiB (UINT64_C(1) << 20)

/* Edges the select test's rows do not reach. */
static void test_llc_for_family_edges(void)
{
	static const struct {
		const char *vendor;
		unsigned int family, model;
		uint64_t mib;
	} t[] = {
		{ "AuthenticAMD", 0x17, 0x00, 8 },	/* the first Zen model */
		{ "AuthenticAMD", 0x17, 0x2f, 8 },	/* the last model before Zen 2 */
		{ "AuthenticAMD", 0x17, 0x30, 16 },	/* Zen 2 starts at 0x30 */
		{ "AuthenticAMD", 0x17, 0xff, 16 },
		{ "AuthenticAMD", 0x19, 0x00, 32 },
		{ "AuthenticAMD", 0x1a, 0xff, 32 },
		{ "HygonGenuine", 0x18, 0xff, 8 },
		{ "AuthenticAMD", 0x16, 0x30, 0 },	/* Jaguar, before Zen */
		{ "AuthenticAMD", 0x1b, 0x00, 0 },	/* a family not known yet */
		{ "GenuineIntel", 0x17, 0x31, 0 },	/* the family alone is not AMD */
		{ "GenuineIntel", 0x19, 0x01, 0 },
		{ "AuthenticAM", 0x19, 0x01, 0 },	/* the vendor exactly, not a prefix */
		{ "authenticamd", 0x19, 0x01, 0 },
		{ "", 0x19, 0x01, 0 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		uint64_t got = llc_for_family(t[i].vendor, t[i].family, t[i].model);

		tap_ok(got == t[i].mib * MiB, "llc_for_family(\"%s\", 0x%x, 0x%x): %llu MiB (want %llu)",
		       t[i].vendor, t[i].family, t[i].model, (unsigned long long)(got >> 20),
		       (unsigned long long)t[i].mib);
	}
}

#define NT_SLOW QUIRK_NT_SLOW
#define VOUCH QUIRK_VOUCH_OK
#define FIRST (QUIRK_VOUCH_OK | QUIRK_VOUCH_FIRST)

/* Each row of the quirk table at both ends of its range, and one model off each end. */
static void test_quirks(void)
{
	static const struct {
		const char *vendor;
		unsigned int family, model;
		const char *what;	/* NULL: no quirk */
		unsigned int flags;
	} t[] = {
		{ "GenuineIntel", 0x6, 0x55, "Skylake-SP/Cascade Lake", NT_SLOW },
		{ "GenuineIntel", 0x6, 0x54, NULL, 0 },
		{ "GenuineIntel", 0x6, 0x56, NULL, 0 },
		{ "GenuineIntel", 0x7, 0x55, NULL, 0 },
		{ "AuthenticAMD", 0x6, 0x55, NULL, 0 },
		{ "AuthenticAMD", 0x17, 0x00, "AMD Zen/Zen 2", FIRST },
		{ "AuthenticAMD", 0x17, 0xff, "AMD Zen/Zen 2", FIRST },
		{ "AuthenticAMD", 0x16, 0x00, NULL, 0 },
		{ "AuthenticAMD", 0x19, 0x0f, "AMD Zen 3", FIRST },
		{ "AuthenticAMD", 0x19, 0x10, "AMD Zen 4", VOUCH },
		{ "AuthenticAMD", 0x19, 0x1f, "AMD Zen 4", VOUCH },
		{ "AuthenticAMD", 0x19, 0x20, "AMD Zen 3", FIRST },
		{ "AuthenticAMD", 0x19, 0x5f, "AMD Zen 3", FIRST },
		{ "AuthenticAMD", 0x19, 0x60, "AMD Zen 4", VOUCH },
		{ "AuthenticAMD", 0x19, 0x7f, "AMD Zen 4", VOUCH },
		{ "AuthenticAMD", 0x19, 0x80, "AMD Zen 3", FIRST },
		{ "AuthenticAMD", 0x19, 0x9f, "AMD Zen 3", FIRST },
		{ "AuthenticAMD", 0x19, 0xa0, "AMD Zen 4", VOUCH },
		{ "AuthenticAMD", 0x19, 0xaf, "AMD Zen 4", VOUCH },
		{ "AuthenticAMD", 0x19, 0xb0, "AMD Zen 3", FIRST },
		{ "AuthenticAMD", 0x19, 0xff, "AMD Zen 3", FIRST },
		{ "AuthenticAMD", 0x19, 0x100, NULL, 0 },
		{ "AuthenticAMD", 0x1a, 0x00, "AMD Zen 5", VOUCH },
		{ "AuthenticAMD", 0x1a, 0xff, "AMD Zen 5", VOUCH },
		{ "AuthenticAMD", 0x1b, 0x00, NULL, 0 },
		{ "HygonGenuine", 0x18, 0x00, "Hygon Dhyana", FIRST },
		{ "HygonGenuine", 0x18, 0xff, "Hygon Dhyana", FIRST },
		{ "AuthenticAMD", 0x18, 0x00, NULL, 0 },	/* Dhyana's family, not Hygon */
		{ "HygonGenuine", 0x17, 0x00, NULL, 0 },	/* Hygon, not Dhyana's family */
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		struct cpu_id id = { .family = t[i].family, .model = t[i].model };
		const struct clear_quirk *q;

		snprintf(id.vendor, sizeof(id.vendor), "%s", t[i].vendor);
		q = arch_clear_quirk(&id);
		tap_ok(t[i].what ? q && !strcmp(q->what, t[i].what) && q->flags == t[i].flags : !q,
		       "%s family 0x%x model 0x%x: %s (flags 0x%x; want %s, 0x%x)", t[i].vendor,
		       t[i].family, t[i].model, q ? q->what : "no quirk", q ? q->flags : 0,
		       t[i].what ? t[i].what : "no quirk", t[i].flags);
	}
}

/* Each feature from its register bit; AVX2 and AVX-512F only with XCR0's state. */
static void test_features(void)
{
	static const struct {
		const char *name;
		struct x86_feature_regs r;	/* the bit alone (and what it needs besides) */
		uint64_t want;
	} t[] = {
		{ "sse2", { .l1d = 1u << 26 }, PREALLOC_CPU_SSE2 },
		{ "erms", { .l7b = 1u << 9 }, PREALLOC_CPU_ERMS },
		{ "fsrm", { .l7d = 1u << 4 }, PREALLOC_CPU_FSRM },
		{ "avx2", { .l1c = 1u << 28, .l7b = 1u << 5, .xcr0 = 0x06 }, PREALLOC_CPU_AVX2 },
		{ "avx512f", { .l7b = 1u << 16, .xcr0 = 0xe6 }, PREALLOC_CPU_AVX512F },
		{ "movdir64b", { .l7c = 1u << 28 }, PREALLOC_CPU_MOVDIR64B },
		{ "clzero", { .e8b = 1u }, PREALLOC_CPU_CLZERO },
	};
	struct x86_feature_regs all = { 0 };
	uint64_t every = 0;
	unsigned int wrong = 0;

	for (unsigned int i = 0; i < ARRAY_SIZE(t); i++) {
		uint64_t got = x86_features_decode(&t[i].r);

		if (!tap_ok(got == t[i].want, "features: %s alone decodes as %#llx (%#llx)", t[i].name,
			    (unsigned long long)t[i].want, (unsigned long long)got))
			wrong++;
		all.l1c |= t[i].r.l1c;
		all.l1d |= t[i].r.l1d;
		all.l7b |= t[i].r.l7b;
		all.l7c |= t[i].r.l7c;
		all.l7d |= t[i].r.l7d;
		all.e8b |= t[i].r.e8b;
		all.xcr0 |= t[i].r.xcr0;
		every |= t[i].want;
	}
	tap_ok(x86_features_decode(&all) == every, "features: every bit at once decodes as all of them");
	for (unsigned int i = 0; i < ARRAY_SIZE(t); i++) {
		struct x86_feature_regs r = all;

		/* Take out the bit that is this feature's own (its register's, not XCR0's). */
		r.l1d &= ~t[i].r.l1d;
		r.l7b &= ~t[i].r.l7b;
		r.l7c &= ~t[i].r.l7c;
		r.l7d &= ~t[i].r.l7d;
		r.e8b &= ~t[i].r.e8b;
		if (x86_features_decode(&r) != (every & ~t[i].want))
			wrong++;
	}
	tap_ok(!wrong, "features: each missing from a CPU with all the others is missing alone (%u wrong)",
	       wrong);
	all.xcr0 = 0x02;	/* SSE state only: no ymm, no zmm */
	tap_ok(x86_features_decode(&all) == (every & ~(PREALLOC_CPU_AVX2 | PREALLOC_CPU_AVX512F)),
	       "features: AVX2 and AVX-512F not counted where the OS saves no ymm or zmm state");
}

/* The last resort of arch_cpu_llc: the family's figure, capped, and its source named. */
static void test_llc_by_family(void)
{
	struct cpu_id id = { .vendor = "AuthenticAMD", .family = 0x17, .model = 0x31 };

	snprintf(id.llc_source, sizeof(id.llc_source), "before");
	x86_llc_by_family(&id, 0);
	tap_ok(id.llc_bytes == 16 * MiB && !strcmp(id.llc_source, "family 0x17's per-CCX L3"),
	       "llc by family: Zen 2, no socket L3 known: 16 MiB, named as the family's (%llu, '%s')",
	       (unsigned long long)id.llc_bytes, id.llc_source);
	x86_llc_by_family(&id, 8 * MiB);
	tap_ok(id.llc_bytes == 8 * MiB && !strcmp(id.llc_source, "family 0x17's per-CCX L3"),
	       "llc by family: capped by a socket L3 of 8 MiB (%llu, '%s')",
	       (unsigned long long)id.llc_bytes, id.llc_source);
	id = (struct cpu_id){ .vendor = "GenuineIntel", .family = 6, .model = 0xcf };
	snprintf(id.llc_source, sizeof(id.llc_source), "before");
	x86_llc_by_family(&id, 0);
	tap_ok(id.llc_bytes == 0 && !strcmp(id.llc_source, "before"),
	       "llc by family: none known for an Intel family: 0, the source untouched (%llu, '%s')",
	       (unsigned long long)id.llc_bytes, id.llc_source);
}

int main(void)
{
	test_llc_for_family_edges();
	test_llc_by_family();
	test_features();
	test_quirks();
	return tap_done();
}
