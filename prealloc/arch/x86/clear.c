/* SPDX-License-Identifier: MIT */
/*
 * x86 clear kernels and their table. Each kernel zeroes [dst, dst + len)
 * for any alignment and any length, and opens with its contract.
 * Non-temporal (NT) kernels write the unaligned head and tail with
 * ordinary stores, the 64-byte lines between them with NT stores, and end
 * with SFENCE so the zeroes are ordered before whatever the caller
 * publishes next (chunk done, job complete).
 *
 * The library stays baseline x86-64: the vector kernels carry their own
 * target attribute and run only after cpu.c proved the CPU and OS support
 * them. -Dvector_kernels=false builds only the C and REP STOSB kernels.
 */
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "config.h"
#include "prealloc/ctx.h"

#if PREALLOC_VECTOR_KERNELS
#include <immintrin.h>
#include <x86intrin.h>
#endif

#define LINE 64

/*
 * rep_stosb: one REP STOSB over the whole range. Cached stores, byte
 * granular, any alignment. Fast start-up with ERMS/FSRM; on recent cores a
 * long run may also skip cache allocation, so it is worth measuring large.
 */
static void clear_rep_stosb(void *dst, size_t len)
{
	__asm__ volatile("rep stosb" : "+D"(dst), "+c"(len) : "a"(0) : "memory");
}

#if PREALLOC_VECTOR_KERNELS

/* Bytes of ordinary stores before the first whole line, or len if no line fits. */
static inline size_t line_head(const void *dst, size_t len)
{
	size_t head = (size_t)(-(uintptr_t)dst & (LINE - 1));

	return len < head + LINE ? len : head;
}

/*
 * movnti: 8-byte MOVNTI (SSE2, so every x86-64 CPU) over the aligned lines.
 * No alignment needs of its own; lines are aligned so each one is written
 * whole and leaves the write-combining buffer in one burst.
 */
static void clear_movnti(void *dst, size_t len)
{
	uint8_t *p = dst;
	size_t head = line_head(p, len);

	memset(p, 0, head);
	p += head;
	len -= head;
	for (; len >= LINE; p += LINE, len -= LINE) {
		long long *q = (long long *)p;

		_mm_stream_si64(q + 0, 0);
		_mm_stream_si64(q + 1, 0);
		_mm_stream_si64(q + 2, 0);
		_mm_stream_si64(q + 3, 0);
		_mm_stream_si64(q + 4, 0);
		_mm_stream_si64(q + 5, 0);
		_mm_stream_si64(q + 6, 0);
		_mm_stream_si64(q + 7, 0);
	}
	memset(p, 0, len);
	_mm_sfence();
}

/*
 * avx2_nt: VMOVNTDQ ymm, two per line, four lines per loop. VMOVNTDQ faults
 * (#GP) on a misaligned address, so only whole aligned lines use it.
 * Needs AVX2 with the OS saving ymm state.
 */
__attribute__((target("avx2"))) static void clear_avx2_nt(void *dst, size_t len)
{
	uint8_t *p = dst;
	size_t head = line_head(p, len);
	const __m256i z = _mm256_setzero_si256();

	memset(p, 0, head);
	p += head;
	len -= head;
	for (; len >= 4 * LINE; p += 4 * LINE, len -= 4 * LINE) {
		__m256i *q = (__m256i *)p;

		_mm256_stream_si256(q + 0, z);
		_mm256_stream_si256(q + 1, z);
		_mm256_stream_si256(q + 2, z);
		_mm256_stream_si256(q + 3, z);
		_mm256_stream_si256(q + 4, z);
		_mm256_stream_si256(q + 5, z);
		_mm256_stream_si256(q + 6, z);
		_mm256_stream_si256(q + 7, z);
	}
	for (; len >= LINE; p += LINE, len -= LINE) {
		_mm256_stream_si256((__m256i *)p, z);
		_mm256_stream_si256((__m256i *)p + 1, z);
	}
	memset(p, 0, len);
	_mm_sfence();
}

/*
 * avx512_nt: VMOVNTDQ zmm, one per line, four lines per loop; 64-byte
 * aligned addresses only (#GP otherwise). Needs AVX-512F with the OS saving
 * opmask and zmm state.
 */
__attribute__((target("avx512f"))) static void clear_avx512_nt(void *dst, size_t len)
{
	uint8_t *p = dst;
	size_t head = line_head(p, len);
	const __m512i z = _mm512_setzero_si512();

	memset(p, 0, head);
	p += head;
	len -= head;
	for (; len >= 4 * LINE; p += 4 * LINE, len -= 4 * LINE) {
		_mm512_stream_si512((__m512i *)p, z);
		_mm512_stream_si512((__m512i *)p + 1, z);
		_mm512_stream_si512((__m512i *)p + 2, z);
		_mm512_stream_si512((__m512i *)p + 3, z);
	}
	for (; len >= LINE; p += LINE, len -= LINE)
		_mm512_stream_si512((__m512i *)p, z);
	memset(p, 0, len);
	_mm_sfence();
}

/*
 * clzero: AMD CLZERO zeroes the whole 64-byte line containing its address,
 * so it is used only on lines entirely inside the range. Weakly ordered
 * like NT stores, hence the SFENCE.
 */
__attribute__((target("clzero"))) static void clear_clzero(void *dst, size_t len)
{
	uint8_t *p = dst;
	size_t head = line_head(p, len);

	memset(p, 0, head);
	p += head;
	len -= head;
	for (; len >= 4 * LINE; p += 4 * LINE, len -= 4 * LINE) {
		_mm_clzero(p);
		_mm_clzero(p + LINE);
		_mm_clzero(p + 2 * LINE);
		_mm_clzero(p + 3 * LINE);
	}
	for (; len >= LINE; p += LINE, len -= LINE)
		_mm_clzero(p);
	memset(p, 0, len);
	_mm_sfence();
}

#endif /* PREALLOC_VECTOR_KERNELS */

#if PREALLOC_VECTOR_KERNELS
#define VEC(fn) (fn)
#else
#define VEC(fn) NULL
#endif

/*
 * Best first among the NT kernels; the cached ones come last. AVX2 NT and
 * AVX-512 NT were level on the Xeon guest (0xa7) once every kernel was
 * timed from the same state (AVX2 over AVX-512, medians of 15 runs:
 * 0.98-1.01 at 4-64 MiB, 0.98-1.02 at 1 GiB on one and two threads), and
 * at two threads on 1 GiB AVX2 NT led on an Emerald Rapids guest by
 * 17-20 %. (Earlier tables had AVX-512 NT 5-14 % ahead at 16-32 MiB: there
 * AVX2 NT, first in this table, was always timed right after memset and
 * met its dirty lines.) Zen 4 splits a 512-bit store in two. A calibration
 * may pick either. clzero is chosen automatically only where a quirk
 * vouches for it, and moves ahead of the vector kernels only where a quirk
 * says it beats them.
 */
const struct clear_kernel clear_kernels[] = {
	{ .name = "avx2_nt", .fn = VEC(clear_avx2_nt), .requires = PREALLOC_CPU_AVX2,
	  .nontemporal = true, .probe = "c/avx2_nt" },
	{ .name = "avx512_nt", .fn = VEC(clear_avx512_nt), .requires = PREALLOC_CPU_AVX512F,
	  .nontemporal = true, .probe = "c/avx512_nt" },
	{ .name = "clzero", .fn = VEC(clear_clzero), .requires = PREALLOC_CPU_CLZERO,
	  .nontemporal = true, .vouched = true, .probe = "c/clzero" },
	{ .name = "movnti", .fn = VEC(clear_movnti), .requires = PREALLOC_CPU_SSE2,
	  .nontemporal = true, .probe = "c/movnti" },
	{ .name = "rep_stosb", .fn = clear_rep_stosb },
	{ .name = "c", .fn = clear_c },
};
const unsigned int clear_kernels_count = ARRAY_SIZE(clear_kernels);
