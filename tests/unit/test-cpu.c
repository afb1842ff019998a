/* SPDX-License-Identifier: MIT */
/*
 * The CPU's last-level cache is read under the ctx's sysfs root, never
 * the machine's own /sys (docs/design.md: every sysfs and procfs path goes
 * through the ctx's roots): over a fake tree whose cache sizes no real CPU
 * has, the ctx reports the fake tree's; the highest level wins, an
 * instruction cache never counts; a tree that lists no cache leaves the
 * LLC to the architecture, and a ctx without roots given is the host's,
 * as cpu_get() (no ctx) sees it.
 */
#include <string.h>

#include "cpu.h"
#include "internal.h"
#include "fakeroot.h"
#include "tap.h"

#define CACHE "devices/system/cpu/cpu0/cache"

/* index i of cpu0's caches: level, type, size as sysfs writes them. */
static int cache(struct fakeroot *fr, unsigned int i, unsigned int level, const char *type,
		 const char *size)
{
	char rel[128];
	int r;

	snprintf(rel, sizeof(rel), CACHE "/index%u/level", i);
	r = fr_write(fr->sys, rel, "%u\n", level);
	snprintf(rel, sizeof(rel), CACHE "/index%u/type", i);
	r |= fr_write(fr->sys, rel, "%s\n", type);
	snprintf(rel, sizeof(rel), CACHE "/index%u/size", i);
	return r | fr_write(fr->sys, rel, "%s\n", size);
}

/* The CPU a ctx over fr reports; 0 or -errno. */
static int info_of(struct fakeroot *fr, struct prealloc_cpu_info *ret)
{
	struct prealloc_ctx *ctx = fakeroot_ctx(fr);
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->size = sizeof(*ret);
	if (!ctx)
		return -EIO;
	r = prealloc_cpu_info(ctx, ret);
	prealloc_ctx_free(ctx);
	return r;
}

static void test_fake_caches(void)
{
	struct prealloc_cpu_info ci;
	struct fakeroot fr = { 0 };
	int r;

	r = fakeroot_make(&fr, 1);
	tap_remove_at_exit(fr.dir);
	r |= cache(&fr, 0, 1, "Data", "48K") | cache(&fr, 1, 1, "Instruction", "32K");
	r |= cache(&fr, 2, 2, "Unified", "2048K") | cache(&fr, 3, 3, "Unified", "12345K");
	r |= cache(&fr, 4, 4, "Instruction", "99M");
	if (!tap_ok(r == 0 && info_of(&fr, &ci) == 0, "a ctx over a fake sysfs with cpu0's caches"))
		return;
	tap_ok(ci.llc_bytes == UINT64_C(12345) << 10 && !strcmp(ci.llc_source, "sysfs"),
	       "the LLC is the fake tree's highest data or unified cache, 12345K: %llu (%s)",
	       (unsigned long long)ci.llc_bytes, ci.llc_source);

	r = cache(&fr, 3, 3, "Unified", "7M");
	r |= info_of(&fr, &ci);
	tap_ok(r == 0 && ci.llc_bytes == UINT64_C(7) << 20,
	       "an M size: 7M is %llu", (unsigned long long)ci.llc_bytes);
	fakeroot_remove(&fr);
}

static void test_no_caches(void)
{
	struct prealloc_cpu_info ci;
	struct fakeroot fr = { 0 };
	int r;

	r = fakeroot_make(&fr, 1);
	tap_remove_at_exit(fr.dir);
	r |= cache(&fr, 0, 1, "Instruction", "32K");
	if (!tap_ok(r == 0 && info_of(&fr, &ci) == 0, "a ctx over a fake sysfs with no data cache"))
		return;
	tap_ok(strcmp(ci.llc_source, "sysfs") && (ci.llc_bytes || strstr(ci.llc_source, "none")),
	       "no LLC from sysfs: the architecture's, or none (%llu, %s)",
	       (unsigned long long)ci.llc_bytes, ci.llc_source);
	fakeroot_remove(&fr);
}

static void test_host(void)
{
	const struct cpu_id *host = cpu_get();
	struct prealloc_cpu_info ci = { .size = sizeof(ci) };
	struct prealloc_ctx *ctx = NULL;
	int r;

	if (prealloc_ctx_new(&ctx) < 0) {
		tap_skip("no ctx over the host's own roots (no NUMA sysfs here)");
		return;
	}
	r = prealloc_cpu_info(ctx, &ci);
	tap_ok(r == 0 && ci.llc_bytes == host->llc_bytes &&
		       !strcmp(ci.llc_source, host->llc_source) && ci.features == host->features &&
		       !strcmp(ci.vendor, host->vendor),
	       "a ctx over the host's roots sees the CPU cpu_get() sees: %llu (%s)",
	       (unsigned long long)ci.llc_bytes, ci.llc_source);
	prealloc_ctx_free(ctx);
}

int main(void)
{
	test_fake_caches();
	test_no_caches();
	test_host();
	return tap_done();
}
