/* SPDX-License-Identifier: MIT */
/*
 * arm64 clear kernels and their table. Each kernel zeroes [dst, dst + len)
 * for any alignment and any length, and opens with its contract. The
 * large-clear kernels write what their instruction cannot cover (the
 * unaligned head and tail, or a range too short) with ordinary stores, and
 * end with DMB ISHST so that the zeroes are ordered before whatever the
 * caller publishes next (chunk done, job complete), as x86's end with
 * SFENCE.
 *
 * No quirk table: none is known until a CPU shows one. -Dvector_kernels=
 * false builds memset alone.
 */
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "config.h"
#include "prealloc/ctx.h"

#define LINE 64

#if PREALLOC_VECTOR_KERNELS

static inline void store_fence(void)
{
	__asm__ volatile("dmb ishst" : : : "memory");
}

/* Bytes of ordinary stores before the first whole aligned block, or len if none fits. */
static inline size_t block_head(const void *dst, size_t len, size_t block)
{
	size_t head = (size_t)(-(uintptr_t)dst & (block - 1));

	return len < head + block ? len : head;
}

/*
 * dc_zva: DC ZVA zeroes one whole naturally aligned block, its size read
 * from DCZID_EL0 (4 << BS bytes: 64 on most cores), without reading it
 * first; what Linux clears its pages with. Only blocks entirely inside the
 * range get it. Needs DCZID_EL0.DZP clear (PREALLOC_CPU_DCZVA).
 */
static void clear_dc_zva(void *dst, size_t len)
{
	uint8_t *p = dst;
	uint64_t dczid;
	size_t block, head;

	__asm__ volatile("mrs %0, dczid_el0" : "=r"(dczid));
	block = (size_t)4 << (dczid & 0xf);
	head = block_head(p, len, block);
	memset(p, 0, head);
	p += head;
	len -= head;
	for (; len >= 4 * block; p += 4 * block, len -= 4 * block)
		__asm__ volatile("dc zva, %0\n\t"
				 "dc zva, %1\n\t"
				 "dc zva, %2\n\t"
				 "dc zva, %3"
				 : : "r"(p), "r"(p + block), "r"(p + 2 * block), "r"(p + 3 * block)
				 : "memory");
	for (; len >= block; p += block, len -= block)
		__asm__ volatile("dc zva, %0" : : "r"(p) : "memory");
	memset(p, 0, len);
	store_fence();
}

/*
 * stnp: STNP of a zero q register pair, two per 64-byte line, over the
 * aligned lines: the non-temporal hint, which the core may honour or not.
 * Baseline AArch64, no feature needed.
 */
static void clear_stnp(void *dst, size_t len)
{
	uint8_t *p = dst;
	size_t head = block_head(p, len, LINE), lines;

	memset(p, 0, head);
	p += head;
	len -= head;
	lines = len & ~(size_t)(LINE - 1);
	if (lines)
		__asm__ volatile("movi v0.2d, #0\n"
				 "1:\n\t"
				 "stnp q0, q0, [%0]\n\t"
				 "stnp q0, q0, [%0, #32]\n\t"
				 "add %0, %0, #64\n\t"
				 "subs %1, %1, #64\n\t"
				 "b.ne 1b"
				 : "+r"(p), "+r"(lines) : : "v0", "memory", "cc");
	memset(p, 0, len & (LINE - 1));
	store_fence();
}

/*
 * mops: FEAT_MOPS's SETP/SETM/SETE, one memset the core carries out its
 * own way (Armv8.8 and 9.3), over the whole range, any alignment. Needs
 * HWCAP2_MOPS. Written as .inst words, so that any assembler builds it:
 * SETP [x0]!, x1!, xzr; SETM ...; SETE ... (size in x1, value XZR).
 */
static void clear_mops(void *dst, size_t len)
{
	register void *x0 __asm__("x0") = dst;
	register size_t x1 __asm__("x1") = len;

	__asm__ volatile(".inst 0x19df0420\n\t"	/* setp [x0]!, x1!, xzr */
			 ".inst 0x19df4420\n\t"		/* setm [x0]!, x1!, xzr */
			 ".inst 0x19df8420"		/* sete [x0]!, x1!, xzr */
			 : "+r"(x0), "+r"(x1) : : "memory", "cc");
	store_fence();
}

#define VEC(fn) (fn)
#else
#define VEC(fn) NULL
#endif /* PREALLOC_VECTOR_KERNELS */

/*
 * Best first for clears past the caches. DC ZVA is what Linux and glibc's
 * memset clear large ranges with, and needs no read for ownership; MOPS
 * matched it on a big core and trailed it 4x on a small one (an emulator
 * project's cycle figures); STNP is only a hint. The measured ranking
 * (clear/rank.c) reorders them on a real machine; calibration may pick
 * any. arm64 speed figures need real hardware: under TCG they mean
 * nothing.
 */
const struct clear_kernel clear_kernels[] = {
	{ .name = "dc_zva", .fn = VEC(clear_dc_zva), .requires = PREALLOC_CPU_DCZVA,
	  .nontemporal = true, .probe = "c/dc_zva" },
	{ .name = "mops", .fn = VEC(clear_mops), .requires = PREALLOC_CPU_MOPS,
	  .nontemporal = true, .probe = "c/mops" },
	{ .name = "stnp", .fn = VEC(clear_stnp), .nontemporal = true, .probe = "c/stnp" },
	{ .name = "c", .fn = clear_c },
};
const unsigned int clear_kernels_count = ARRAY_SIZE(clear_kernels);

const struct clear_quirk *arch_clear_quirk(const struct cpu_id *cpu)
{
	(void)cpu;
	return NULL;
}

/* The portable scan alone (arch.h). */
const struct zero_scan zero_scans[] = {
	{ .name = "c", .fn = zero_scan_c },
};
const unsigned int zero_scans_count = ARRAY_SIZE(zero_scans);
