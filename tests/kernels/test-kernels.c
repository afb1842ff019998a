/* SPDX-License-Identifier: MIT */
/*
 * Every clear kernel this CPU has, called directly (no selection): for each
 * size class and every start misalignment 0..63, a range inside a buffer
 * with PROT_NONE guard pages on both sides and canary bytes around it is
 * filled non-zero, cleared, then compared byte for byte: the range all
 * zero, every canary intact. The range is also placed flush against each
 * guard page, so a single byte written or read outside faults.
 * Kernels the CPU lacks (or the build left out) are reported as skipped.
 * Then the probe (clear_choice_run with a cached and an NT kernel): the same
 * byte checks at sizes around its spots, and its pick between two kernels
 * whose speeds the test sets: the slower one clears only its own slices,
 * and cached stores far ahead at two places end the probing there.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"
#include "clear.h"
#include "other-kernel.h"
#include "tap.h"

#define CANARY 0xa5
#define CANARY_BYTES 256	/* each side, a multiple of 64 */
#define MISALIGN 64

static const size_t sizes[] = {
	0, 1, 63, 64, 65, 255, 256, 257,	/* one and four 64-byte lines or DC ZVA blocks */
	2047, 2048, 2049,		/* the largest DC ZVA block */
	4095, 4096, 4097,
	(2u << 20) - 1, 2u << 20, (2u << 20) + 1,
	(24u << 20) + 123,	/* ~24 MiB, beyond most per-core caches, odd tail */
};

struct guarded {
	uint8_t *map;		/* whole mapping, guards included */
	size_t map_len;
	uint8_t *inner;		/* accessible, page aligned */
	size_t inner_len;
};

static size_t page;

static int guarded_alloc(struct guarded *g, size_t need)
{
	g->inner_len = ALIGN_UP(need, page);
	g->map_len = g->inner_len + 2 * page;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		return -1;
	g->inner = g->map + page;
	if (mprotect(g->map, page, PROT_NONE) < 0 ||
	    mprotect(g->inner + g->inner_len, page, PROT_NONE) < 0) {
		munmap(g->map, g->map_len);
		return -1;
	}
	return 0;
}

/* Offset of the first byte in [p, p+len) that is not v, or len. Word-wise for speed. */
static size_t first_not(const uint8_t *p, size_t len, uint8_t v)
{
	uint64_t word = v * UINT64_C(0x0101010101010101);
	size_t i = 0;

	for (; i < len && ((uintptr_t)(p + i) & 7); i++)
		if (p[i] != v)
			return i;
	for (; i + 8 <= len; i += 8)
		if (*(const uint64_t *)(p + i) != word)
			break;
	for (; i < len; i++)
		if (p[i] != v)
			return i;
	return len;
}

/*
 * Clears [start, start+len) inside g after filling all of g->inner with the
 * canary; false (with a TAP diagnostic) on any wrong byte.
 */
static bool check_one(const struct clear_kernel *k, const struct guarded *g, uint8_t *start,
		      size_t len, const char *where)
{
	size_t before = (size_t)(start - g->inner), bad;
	size_t after = g->inner_len - before - len;

	memset(g->inner, CANARY, g->inner_len);
	k->fn(start, len);
	bad = first_not(g->inner, before, CANARY);
	if (bad < before) {
		printf("# %s len %zu %s: canary before the range changed %zu bytes ahead\n",
		       k->name, len, where, before - bad);
		return false;
	}
	bad = first_not(start, len, 0);
	if (bad < len) {
		printf("# %s len %zu %s: byte %zu not zero (0x%02x)\n", k->name, len, where, bad,
		       start[bad]);
		return false;
	}
	bad = first_not(start + len, after, CANARY);
	if (bad < after) {
		printf("# %s len %zu %s: canary after the range changed at +%zu\n", k->name, len,
		       where, bad);
		return false;
	}
	return true;
}

static void test_kernel_size(const struct clear_kernel *k, size_t len)
{
	struct guarded g;
	bool ok = true;
	char where[32];

	if (guarded_alloc(&g, CANARY_BYTES + MISALIGN + len + CANARY_BYTES) < 0) {
		tap_ok(0, "%s size %zu: guarded buffer", k->name, len);
		return;
	}
	for (unsigned int m = 0; ok && m < MISALIGN; m++) {
		snprintf(where, sizeof(where), "misalign %u", m);
		ok = check_one(k, &g, g.inner + CANARY_BYTES + m, len, where);
	}
	/* Flush against the leading and the trailing guard page. */
	if (ok)
		ok = check_one(k, &g, g.inner, len, "at the leading guard");
	if (ok)
		ok = check_one(k, &g, g.inner + g.inner_len - len, len, "at the trailing guard");
	munmap(g.map, g.map_len);
	tap_ok(ok, "%s size %zu: %u misalignments, canaries, guard pages", k->name, len, MISALIGN);
}

static const char *missing_reason(const struct clear_kernel *k, uint64_t features)
{
	uint64_t lack = k->requires & ~features;

	if (!k->fn)
		return "not built (-Dvector_kernels=false)";
	if (lack & PREALLOC_CPU_AVX512F)
		return "CPU or OS lacks AVX-512F with zmm state";
	if (lack & PREALLOC_CPU_AVX2)
		return "CPU or OS lacks AVX2 with ymm state";
	if (lack & PREALLOC_CPU_CLZERO)
		return "CPU lacks CLZERO";
	if (lack & PREALLOC_CPU_SSE2)
		return "CPU lacks SSE2";
	if (lack & PREALLOC_CPU_DCZVA)
		return "DC ZVA prohibited (DCZID_EL0.DZP)";
	if (lack & PREALLOC_CPU_MOPS)
		return "CPU lacks FEAT_MOPS (HWCAP2)";
	return "CPU lacks a required feature";
}

/* The public entry point: auto, by name, and its errors. */
static void test_clear_range(uint64_t features)
{
	static uint8_t buf[8192];
	const struct clear_kernel *unusable = NULL;
	int r;

	memset(buf, CANARY, sizeof(buf));
	r = prealloc_clear_range(buf + 3, sizeof(buf) - 7, NULL);
	tap_ok(r == 0 && buf[2] == CANARY && first_not(buf + 3, sizeof(buf) - 7, 0) == sizeof(buf) - 7 &&
		       first_not(buf + sizeof(buf) - 4, 4, CANARY) == 4,
	       "prealloc_clear_range auto clears exactly its range (%d)", r);
	memset(buf, CANARY, sizeof(buf));
	r = prealloc_clear_range(buf, sizeof(buf), other_kernel());
	tap_ok(r == 0 && first_not(buf, sizeof(buf), 0) == sizeof(buf),
	       "prealloc_clear_range by name: %s (%d)", other_kernel(), r);
	tap_ok(prealloc_clear_range(buf, 1, "no-such-kernel") == -ENOENT,
	       "prealloc_clear_range unknown name: -ENOENT");
	tap_ok(prealloc_clear_range(NULL, 1, NULL) == -EINVAL, "prealloc_clear_range NULL: -EINVAL");
	tap_ok(prealloc_clear_range(NULL, 0, NULL) == 0, "prealloc_clear_range empty: 0");
	for (unsigned int i = 0; i < clear_kernels_count; i++)
		if (!clear_kernel_usable(&clear_kernels[i], features))
			unusable = &clear_kernels[i];
	if (unusable)
		tap_ok(prealloc_clear_range(buf, 1, unusable->name) == -EOPNOTSUPP,
		       "prealloc_clear_range %s (unusable here): -EOPNOTSUPP", unusable->name);
	else
		tap_skip("every kernel is usable here: no -EOPNOTSUPP case");
}

/* The probe under the byte checks: a kernel whose fn runs the pair. */
static struct clear_choice probe_pair;

static void clear_probe_pair(void *dst, size_t len)
{
	clear_choice_run(&probe_pair, dst, len);
}

/* Sizes that start every spot count, with odd tails. */
static const size_t probe_sizes[] = {
	(2u << 20) - 1, 2u << 20, (8u << 20) + 4097, (16u << 20) + 123, (24u << 20) + 4095,
};

static void test_probe_bytes(uint64_t features)
{
	const struct clear_kernel k = { .name = "probe c/NT", .fn = clear_probe_pair };
	bool found = false;

	/* The first NT kernel of the table with a probe: c/avx2_nt on x86, c/dc_zva on arm64. */
	for (unsigned int i = 0; i < clear_kernels_count && !found; i++)
		found = clear_kernels[i].probe &&
			clear_choice_find(clear_kernels[i].probe, features, &probe_pair) == 0;
	if (!found) {
		tap_skip("probe: no NT kernel built or usable here");
		return;
	}
	tap_ok(probe_pair.nt && probe_pair.nt->nontemporal && !probe_pair.kernel->nontemporal,
	       "probe: %s is a cached and an NT kernel", probe_pair.name);
	for (unsigned int s = 0; s < ARRAY_SIZE(probe_sizes); s++)
		test_kernel_size(&k, probe_sizes[s]);
}

/* Kernels of set speeds: one memset, one memset after 200 us. */
static void clear_fast(void *dst, size_t len)
{
	memset(dst, 0, len);
}

static void clear_slow(void *dst, size_t len)
{
	struct timespec ts = { 0, 200 * 1000 };

	nanosleep(&ts, NULL);
	memset(dst, 0, len);
}

static void test_probe_pick(void)
{
	const struct clear_kernel fast_cached = { .name = "fast cached", .fn = clear_fast };
	const struct clear_kernel slow_cached = { .name = "slow cached", .fn = clear_slow };
	const struct clear_kernel fast_nt = { .name = "fast nt", .fn = clear_fast, .nontemporal = true };
	const struct clear_kernel slow_nt = { .name = "slow nt", .fn = clear_slow, .nontemporal = true };
	const size_t len = 16u << 20, slices = CLEAR_PROBE_SPOTS * CLEAR_PROBE_SLICE;
	struct clear_choice c = { .name = "test" };
	uint8_t *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t cached;

	if (buf == MAP_FAILED) {
		tap_ok(0, "probe pick: buffer");
		return;
	}
	c.kernel = &slow_cached;
	c.nt = &fast_nt;
	cached = clear_choice_run(&c, buf, len);
	tap_ok(cached == slices, "probe pick: NT faster: cached stores only on their %zu slices (%llu)",
	       slices, (unsigned long long)cached);
	c.kernel = &fast_cached;
	c.nt = &slow_nt;
	cached = clear_choice_run(&c, buf, len);
	tap_ok(cached == len - 2 * CLEAR_PROBE_SLICE,
	       "probe pick: cached far faster: decided after two places, all but NT's two slices "
	       "(%llu of %zu)", (unsigned long long)cached, len);
	cached = clear_choice_run(&c, buf, CLEAR_PROBE_MIN - 4096);
	tap_ok(cached == CLEAR_PROBE_MIN - 4096, "probe pick: a piece under %llu KiB is not probed",
	       (unsigned long long)(CLEAR_PROBE_MIN >> 10));
	c.kernel = &fast_nt;
	c.nt = NULL;
	tap_ok(clear_choice_run(&c, buf, len) == 0, "no probe, NT kernel: no cached bytes");
	c.kernel = &fast_cached;
	tap_ok(clear_choice_run(&c, buf, len) == len, "no probe, cached kernel: all cached");
	munmap(buf, len);
}

/*
 * PREALLOC_TEST_EXPECT_KERNELS=a,b,...: the CPU model the runner chose has
 * these (setup.sh's arm64 runs under qemu-user: MOPS on -cpu max), so a
 * detection that loses one fails here instead of skipping its checks.
 */
static void test_expected_kernels(uint64_t features)
{
	const char *want = getenv("PREALLOC_TEST_EXPECT_KERNELS");
	char list[256], *save = NULL;

	if (!want || !*want)
		return;
	snprintf(list, sizeof(list), "%s", want);
	for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
		const struct clear_kernel *k = clear_kernel_find(name);

		tap_ok(k && clear_kernel_usable(k, features), "expected kernel %s is usable here%s%s%s",
		       name, k ? "" : " (unknown)", k && !clear_kernel_usable(k, features) ? ": " : "",
		       k && !clear_kernel_usable(k, features) ?
		       missing_reason(k, features) : "");
	}
}

int main(void)
{
	const struct cpu_id *cpu = cpu_get();

	page = (size_t)sysconf(_SC_PAGESIZE);
	printf("# cpu: %s family 0x%x model 0x%x \"%s\", features 0x%llx, llc %llu KiB, "
	       "vector kernels %s\n",
	       cpu->vendor, cpu->family, cpu->model, cpu->model_name,
	       (unsigned long long)cpu->features, (unsigned long long)(cpu->llc_bytes >> 10),
	       PREALLOC_VECTOR_KERNELS ? "built" : "not built");
	for (unsigned int i = 0; i < clear_kernels_count; i++) {
		const struct clear_kernel *k = &clear_kernels[i];

		if (!clear_kernel_usable(k, cpu->features)) {
			tap_skip("%s: %s", k->name, missing_reason(k, cpu->features));
			continue;
		}
		for (unsigned int s = 0; s < ARRAY_SIZE(sizes); s++)
			test_kernel_size(k, sizes[s]);
	}
	test_expected_kernels(cpu->features);
	test_clear_range(cpu->features);
	test_probe_bytes(cpu->features);
	test_probe_pick();
	return tap_done();
}
