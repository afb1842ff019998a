/* SPDX-License-Identifier: MIT */
/*
 * x86 zero scans (arch.h's contract). Each reads 256 bytes a round into
 * four ORs of its own, so that no load waits behind one accumulator, and
 * tests once a round; what is left under 256 bytes goes to the portable
 * scan. Unaligned loads: on aligned memory they cost what aligned ones do.
 *
 * The read-back of a warm file's fresh pages right after their fault
 * (engine/check.c) is what they are for: on the Zen 2 guest of issue 52,
 * 2 MiB anonymous THP faults each read back at once ran at 0.81 of the
 * faults alone with AVX2 and 0.48 with the portable scan (docs/warm.md).
 */
#include <stdint.h>

#include "arch.h"
#include "config.h"
#include "prealloc/ctx.h"

#if PREALLOC_VECTOR_KERNELS
#include <immintrin.h>

#define ROUND 256

/* sse2: sixteen 16-byte loads a round; every x86-64 CPU has SSE2. */
static uint64_t zero_scan_sse2(const uint8_t *addr, uint64_t len)
{
	uint64_t i = 0;

	for (; i + ROUND <= len; i += ROUND) {
		const __m128i_u *q = (const __m128i_u *)(addr + i);
		__m128i a = _mm_or_si128(_mm_loadu_si128(q + 0), _mm_loadu_si128(q + 1));
		__m128i b = _mm_or_si128(_mm_loadu_si128(q + 2), _mm_loadu_si128(q + 3));
		__m128i c = _mm_or_si128(_mm_loadu_si128(q + 4), _mm_loadu_si128(q + 5));
		__m128i d = _mm_or_si128(_mm_loadu_si128(q + 6), _mm_loadu_si128(q + 7));

		for (int k = 8; k < 16; k += 4) {
			a = _mm_or_si128(a, _mm_loadu_si128(q + k));
			b = _mm_or_si128(b, _mm_loadu_si128(q + k + 1));
			c = _mm_or_si128(c, _mm_loadu_si128(q + k + 2));
			d = _mm_or_si128(d, _mm_loadu_si128(q + k + 3));
		}
		a = _mm_or_si128(_mm_or_si128(a, b), _mm_or_si128(c, d));
		if (_mm_movemask_epi8(_mm_cmpeq_epi8(a, _mm_setzero_si128())) != 0xffff)
			return i;
	}
	return i + zero_scan_c(addr + i, len - i);
}

/* avx2: eight 32-byte loads a round. Needs AVX2 with the OS saving ymm state. */
__attribute__((target("avx2"))) static uint64_t zero_scan_avx2(const uint8_t *addr, uint64_t len)
{
	uint64_t i = 0;

	for (; i + ROUND <= len; i += ROUND) {
		const __m256i_u *q = (const __m256i_u *)(addr + i);
		__m256i a = _mm256_or_si256(_mm256_loadu_si256(q + 0), _mm256_loadu_si256(q + 1));
		__m256i b = _mm256_or_si256(_mm256_loadu_si256(q + 2), _mm256_loadu_si256(q + 3));
		__m256i c = _mm256_or_si256(_mm256_loadu_si256(q + 4), _mm256_loadu_si256(q + 5));
		__m256i d = _mm256_or_si256(_mm256_loadu_si256(q + 6), _mm256_loadu_si256(q + 7));

		a = _mm256_or_si256(_mm256_or_si256(a, b), _mm256_or_si256(c, d));
		if (!_mm256_testz_si256(a, a))
			return i;
	}
	return i + zero_scan_c(addr + i, len - i);
}

#define VEC(fn) (fn)
#else
#define VEC(fn) NULL
#endif /* PREALLOC_VECTOR_KERNELS */

const struct zero_scan zero_scans[] = {
	{ .name = "avx2", .fn = VEC(zero_scan_avx2), .requires = PREALLOC_CPU_AVX2 },
	{ .name = "sse2", .fn = VEC(zero_scan_sse2), .requires = PREALLOC_CPU_SSE2 },
	{ .name = "c", .fn = zero_scan_c },
};
const unsigned int zero_scans_count = ARRAY_SIZE(zero_scans);
