/* SPDX-License-Identifier: MIT */
/*
 * The zero scans (arch.h) and zero_check over them (memory/placement.c),
 * each scan this CPU can run called directly, so that one the table puts
 * after a faster one (sse2 behind avx2 here) is held to the contract as
 * well:
 * - all zero: the offset is at most 63 bytes short of len, never past it,
 *   and nothing past len is read (a guard page follows the buffer);
 * - one non-zero byte (each position of every length up to 600, each
 *   buffer ending at the guard, so that its start takes all 64 alignments;
 *   the high bit and the low in turn): every byte before the offset
 *   is zero (offset <= the byte) and the scan stopped in the byte's own
 *   block (offset > the byte - 256);
 * - zero_check finds that byte exactly, and len where there is none,
 *   over 2 MiB as the read-back of a step calls it as well;
 * - zero_scan_pick gives the first scan whose features are there, the
 *   portable one where none are.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch.h"
#include "config.h"
#include "cpu.h"
#include "memory.h"
#include "prealloc/ctx.h"
#include "tap.h"

#define MAXLEN 600
#define BIG (UINT64_C(2) << 20)

static bool usable(const struct zero_scan *s, uint64_t features)
{
	return s->fn && (s->requires & features) == s->requires;
}

/*
 * Every buffer ends at the guard page, so its start takes every alignment
 * mod 64 as len goes from 0 to MAXLEN; the area is zero outside each case.
 */
static void scan_one(const struct zero_scan *s, uint8_t *end)
{
	unsigned int bad_zero = 0, bad_byte = 0, runs = 0;

	for (uint64_t len = 0; len <= MAXLEN; len++) {
		uint8_t *p = end - len;
		uint64_t r = s->fn(p, len);

		if (r > len || r + 63 < len)
			bad_zero++;
		for (uint64_t at = 0; at < len; at++) {
			p[at] = at & 1 ? 0x80 : 0x01;
			r = s->fn(p, len);
			if (r > at || r + 256 <= at)
				bad_byte++;
			p[at] = 0;
			runs++;
		}
	}
	tap_ok(!bad_zero, "%s: all zero, the offset within 63 bytes of len, never past it, nothing read past the end (%u wrong)",
	       s->name, bad_zero);
	tap_ok(!bad_byte, "%s: a non-zero byte stops the scan in its own block, every byte before it zero (%u of %u wrong)",
	       s->name, bad_byte, runs);
}

/* zero_check over 2 MiB (a read-back step) at its edges and inside, and short ranges. */
static void check_exact(uint8_t *end)
{
	static const uint64_t at[] = { 0, 1, 63, 64, 255, 256, 4095, 4096, BIG / 2 + 17, BIG - 257,
				       BIG - 64, BIG - 2, BIG - 1 };
	uint8_t *p = end - BIG;
	unsigned int bad = 0;

	if (!tap_ok(zero_check(p, BIG) == BIG, "zero_check: 2 MiB of zeroes reads len"))
		return;
	for (unsigned int i = 0; i < ARRAY_SIZE(at); i++) {
		p[at[i]] = 0x40;
		if (zero_check(p, BIG) != at[i])
			bad++;
		if (at[i] > 0 && zero_check(p, at[i]) != at[i])	/* the byte just past len: unseen */
			bad++;
		p[at[i]] = 0;
	}
	tap_ok(!bad, "zero_check: the exact offset of one non-zero byte in 2 MiB, none seen past len (%u wrong)",
	       bad);
	for (uint64_t len = 1; len <= 300; len++) {
		uint8_t *q = end - len;

		q[len - 1] = 0xff;
		if (zero_check(q, len) != len - 1)
			bad++;
		q[len - 1] = 0;
	}
	tap_ok(!bad, "zero_check: the last byte of every length up to 300, at every alignment (%u wrong)", bad);
}

int main(void)
{
	uint64_t page = (uint64_t)getpagesize(), area_len = BIG + 2 * page, features = cpu_get()->features;
	uint8_t *area = mmap(NULL, area_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *end;
	unsigned int ran = 0;

	if (area == MAP_FAILED || mprotect(area + area_len - page, page, PROT_NONE) < 0) {
		perror("mmap");
		return 1;
	}
	end = area + area_len - page;
	tap_ok(zero_scans_count > 0 && zero_scans[zero_scans_count - 1].fn == zero_scan_c &&
	       !zero_scans[zero_scans_count - 1].requires, "the table ends with the portable scan, which needs nothing");
	for (unsigned int i = 0; i < zero_scans_count; i++) {
		if (!usable(&zero_scans[i], features)) {
			tap_skip("%s: %s", zero_scans[i].name,
				 zero_scans[i].fn ? "this CPU lacks its features" : "not built");
			continue;
		}
		scan_one(&zero_scans[i], end);
		ran++;
	}
	for (unsigned int i = 0; i < zero_scans_count; i++)
		if (usable(&zero_scans[i], features)) {
			tap_ok(zero_scan_pick(features) == zero_scans[i].fn,
			       "zero_scan_pick picks %s, the first this CPU runs", zero_scans[i].name);
			break;
		}
	tap_ok(zero_scan_pick(0) == zero_scan_c, "zero_scan_pick with no features picks the portable scan");
	check_exact(end);
#if defined(__x86_64__) && PREALLOC_VECTOR_KERNELS
	/* x86-64 has SSE2 always: at least it and the portable scan ran. */
	tap_ok(ran >= 2, "every x86-64 CPU runs sse2 and c (%u ran)", ran);
#else
	tap_ok(ran >= 1, "the portable scan ran (%u ran)", ran);
#endif
	return tap_done();
}
