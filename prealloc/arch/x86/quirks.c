/* SPDX-License-Identifier: MIT */
/*
 * x86 quirks: what is published or measured per CPU model about its
 * stores. The vouched kernel here is clzero (AMD, Hygon): auto uses it
 * only where a quirk says it is a good NT store, and first only where it
 * beats the vector NT stores.
 */
#include <string.h>

#include "arch.h"

/* Published and measured per-model behaviour; first match wins. */
static const struct clear_quirk clear_quirks[] = {
	/* Skylake-SP, Cascade Lake, Cooper Lake: NT 6.3 vs REP STOSB 6.5 GB/s. */
	{ "GenuineIntel", 0x6, 0x55, 0x55, QUIRK_NT_SLOW, "Skylake-SP/Cascade Lake" },
	/* Zen, Zen+, Zen 2: MOVNTI 16.3 vs REP STOS 11.3 GB/s; CLZERO the NT store to use. */
	{ "AuthenticAMD", 0x17, 0x00, 0xff, QUIRK_VOUCH_OK | QUIRK_VOUCH_FIRST, "AMD Zen/Zen 2" },
	/* Zen 4 (Genoa, Raphael, Phoenix, Bergamo): VMOVNTDQ ymm 60 vs CLZERO 57 GB/s, measured. */
	{ "AuthenticAMD", 0x19, 0x10, 0x1f, QUIRK_VOUCH_OK, "AMD Zen 4" },
	{ "AuthenticAMD", 0x19, 0x60, 0x7f, QUIRK_VOUCH_OK, "AMD Zen 4" },
	{ "AuthenticAMD", 0x19, 0xa0, 0xaf, QUIRK_VOUCH_OK, "AMD Zen 4" },
	/* Zen 3 (the rest of family 0x19): CLZERO 39-46 GB/s per core on Milan. */
	{ "AuthenticAMD", 0x19, 0x00, 0xff, QUIRK_VOUCH_OK | QUIRK_VOUCH_FIRST, "AMD Zen 3" },
	/* Zen 5: full-width 512-bit stores; the vector NT kernels lead, CLZERO behind. */
	{ "AuthenticAMD", 0x1a, 0x00, 0xff, QUIRK_VOUCH_OK, "AMD Zen 5" },
	/* Hygon Dhyana is a Zen derivative. */
	{ "HygonGenuine", 0x18, 0x00, 0xff, QUIRK_VOUCH_OK | QUIRK_VOUCH_FIRST, "Hygon Dhyana" },
};

const struct clear_quirk *arch_clear_quirk(const struct cpu_id *cpu)
{
	for (unsigned int i = 0; i < ARRAY_SIZE(clear_quirks); i++) {
		const struct clear_quirk *q = &clear_quirks[i];

		if (!strcmp(q->vendor, cpu->vendor) && q->family == cpu->family &&
		    cpu->model >= q->model_min && cpu->model <= q->model_max)
			return q;
	}
	return NULL;
}
