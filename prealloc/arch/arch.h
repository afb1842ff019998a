/* SPDX-License-Identifier: MIT */
/*
 * What each architecture supplies, in its own folder (arch/x86/,
 * arch/arm64/, arch/generic/ for the rest); meson.build builds one of
 * them. The CPU's identity and features (cpu.c asks), its clear kernels
 * and their table, best first (the memory layer chooses among them), the
 * per-model quirks that reorder them, and a cache flush for the ranking.
 * The arch folders call nothing in the library: they sit below it, over
 * common/ (the CPU identity they fill, cpu_id.h).
 */
#ifndef PREALLOC_ARCH_H
#define PREALLOC_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu_id.h"

/* The same as internal.h's, which the arch folders, below the root, do not include. */
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* Zeroes [dst, dst + len); any alignment, any length; NT kernels end with a store fence. */
typedef void (*clear_fn)(void *dst, size_t len);

struct clear_kernel {
	const char *name;
	clear_fn fn;		/* NULL: not built (-Dvector_kernels=false) */
	uint64_t requires;	/* PREALLOC_CPU_* bits */
	/*
	 * A kernel for clears past the caches (NT stores; on arm64 also DC ZVA
	 * and MOPS, which zero whole blocks without reading them first).
	 */
	bool nontemporal;
	/* Auto picks it only where a quirk vouches for it (x86: clzero). */
	bool vouched;
	const char *probe;	/* NT kernels: the name of the probe of memset against it */
};

/* The architecture's table, best first for large clears; cached kernels last. */
extern const struct clear_kernel clear_kernels[];
extern const unsigned int clear_kernels_count;

/* c: the C library's memset, on every architecture (arch/portable.c). */
void clear_c(void *dst, size_t len);

/*
 * A zero scan reads [addr, addr + len) (any alignment) and returns an
 * offset before which every byte is zero: the start of the first block
 * of its own (at most 256 bytes) holding a non-zero byte, or where its
 * whole blocks end (at most 63 bytes short of len). The bytes from there
 * on are the caller's to read one by one (memory/placement.c's
 * zero_check), so a scan decides nothing but how fast a zero is passed.
 */
typedef uint64_t (*zero_scan_fn)(const uint8_t *addr, uint64_t len);

struct zero_scan {
	const char *name;
	zero_scan_fn fn;	/* NULL: not built (-Dvector_kernels=false) */
	uint64_t requires;	/* PREALLOC_CPU_* bits */
};

/* The architecture's scans, fastest first; the last is zero_scan_c. */
extern const struct zero_scan zero_scans[];
extern const unsigned int zero_scans_count;

/* c: 64 bytes a round, eight words OR'd (arch/portable.c). */
uint64_t zero_scan_c(const uint8_t *addr, uint64_t len);

enum clear_quirk_flags {
	QUIRK_NT_SLOW = 1u << 0,	/* NT stores no faster than cached: never pick NT */
	QUIRK_VOUCH_OK = 1u << 1,	/* the vouched kernel is a good NT store here */
	QUIRK_VOUCH_FIRST = 1u << 2,	/* ... and beats the others */
};

struct clear_quirk {
	const char *vendor;
	unsigned int family;
	unsigned int model_min, model_max; /* display model range, inclusive */
	unsigned int flags;
	const char *what;
};

/* The first quirk known for cpu's vendor, family and model; NULL: none. */
const struct clear_quirk *arch_clear_quirk(const struct cpu_id *cpu);

/*
 * Fills id's vendor, family, model, stepping, model_name and features (the
 * ones this process may use: the OS's consent included).
 */
void arch_cpu_identify(struct cpu_id *id);

/*
 * Where sysfs lists no cache: the architecture's own sources for
 * id->llc_bytes and id->llc_source; leaves 0 where it has none.
 */
void arch_cpu_llc(struct cpu_id *id);

/*
 * The last-level cache one core shares, by vendor, family and model, for a
 * VM that hides every cache leaf: AMD Zen's per-CCX or per-CCD L3. 0 where
 * no such figure is known (the caller assumes its default). x86 only
 * (arch/x86/cpu.c, whose arch_cpu_llc asks; the unit tests check its table).
 */
uint64_t llc_for_family(const char *vendor, unsigned int family, unsigned int model);

/*
 * arch_cpu_llc's last resort on x86, where no cache leaf answered: id's
 * family figure (llc_for_family), at most l3_socket (the L3 that leaf
 * 0x80000006 gives for the socket, 0: none), its source named as the
 * family's; id->llc_bytes 0 and the source untouched where none is known.
 */
void x86_llc_by_family(struct cpu_id *id, uint64_t l3_socket);

/*
 * The registers x86's features are read from: cpuid leaf 1's ECX and EDX,
 * leaf 7's EBX, ECX and EDX, leaf 0x80000008's EBX, and XCR0 (0 where the
 * OS has no XSAVE). x86_features_decode gives the PREALLOC_CPU_* bits they
 * say, AVX ones only with the OS's state saving; x86 only (arch/x86/cpu.c
 * reads the registers; the unit tests feed it CPUs this one is not).
 */
struct x86_feature_regs {
	unsigned int l1c, l1d, l7b, l7c, l7d, e8b;
	uint64_t xcr0;
};
uint64_t x86_features_decode(const struct x86_feature_regs *r);

/* p's lines out of every cache, written back if dirty; a no-op where the ISA cannot. */
void arch_cache_flush(const void *p, uint64_t len);

#endif
