/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's default policy (prealloc/warm/policy.c, docs/warm.md,
 * "Policy") over a store built in memory: no file, no tree, no lock. Each
 * choice alone, so that a second policy has the default's contract to
 * read and to hold itself to:
 * - pick: the smallest READY file that fits, else (unless NO_GROW) the
 *   largest smaller one; never a file that is not READY, nor another
 *   tenant's; its count of files chosen among;
 * - drop: a DIRTY file of the target first, else its last READY one, a
 *   kept size staying; none while every file is out; files of no target;
 * - pressure_pick: files no target wants first, then a DIRTY one anywhere,
 *   then the fullest target's, and whose target it was;
 * - pressure_step and refill: warm.conf's step or 1 GiB; one more whole
 *   file while it fits under the limit;
 * - warm_target_held: what a target holds, quarantined files and files
 *   being renewed left out.
 */
#include <string.h>

#include "warm.h"
#include "tap.h"

#define K4 PREALLOC_PAGE_4K
#define MIB (UINT64_C(1) << 20)
#define DEV 10	/* the one mount every target here is on */

static struct warm_target targets[] = {
	{ .node = 0, .page_size = K4, .file_bytes = 8 * MIB, .files = 3, .bytes = 24 * MIB },
	{ .node = 1, .page_size = K4, .file_bytes = 8 * MIB, .files = 2, .bytes = 16 * MIB },
};
static const uint64_t devs[] = { DEV, DEV };
static struct warm_conf conf = { .t = targets, .nr = 2 };

/* A warm file's record on node (2: no target's), of bytes, in warm state w. */
static long rec(struct store *s, int node, uint64_t bytes, int w, const char *tenant)
{
	struct record *r = store_add(s, s->nr + 1);

	r->state = PREALLOC_RECORD_READY;
	r->warm = w;
	r->warm_node = node;
	r->page_size = K4;
	r->dev = DEV;
	r->size = bytes;
	snprintf(r->tenant, sizeof(r->tenant), "%s", tenant ? tenant : "");
	return (long)s->nr - 1;
}

static struct prealloc_warm_take_opts take(uint64_t length, unsigned int flags, const char *tenant)
{
	return (struct prealloc_warm_take_opts){ .size = sizeof(struct prealloc_warm_take_opts),
						 .flags = flags, .node = 0, .page_size = K4,
						 .length = length, .tenant = tenant };
}

static void test_pick(const struct warm_policy *p)
{
	struct store s = { 0 };
	struct prealloc_warm_take_opts o = take(8 * MIB, 0, NULL);
	unsigned int n = 0;
	long big, exact, small, mine, got;

	rec(&s, 0, 8 * MIB, PREALLOC_WARM_HANDED, NULL);
	rec(&s, 0, 8 * MIB, PREALLOC_WARM_DIRTY, NULL);
	rec(&s, 1, 8 * MIB, PREALLOC_WARM_READY, NULL);
	big = rec(&s, 0, 16 * MIB, PREALLOC_WARM_READY, NULL);
	exact = rec(&s, 0, 8 * MIB, PREALLOC_WARM_READY, NULL);
	small = rec(&s, 0, 4 * MIB, PREALLOC_WARM_READY, NULL);
	mine = rec(&s, 0, 6 * MIB, PREALLOC_WARM_READY, "tenant-a");
	got = p->pick(&s, &o, DEV, &n);
	tap_ok(got == exact && n == 3,
	       "pick: the exact size over a larger one; HANDED, DIRTY, node 1's and another tenant's "
	       "skipped (%u chosen among)", n);
	o.length = 12 * MIB;
	tap_ok(p->pick(&s, &o, DEV, NULL) == big, "pick: no exact size: the smallest larger, cut");
	o.length = 32 * MIB;
	got = p->pick(&s, &o, DEV, &n);
	tap_ok(got == big && n == 3, "pick: none fits: the largest smaller one, grown (%u chosen among)",
	       n);
	o.tenant = "tenant-a";
	o.length = 6 * MIB;
	tap_ok(p->pick(&s, &o, DEV, NULL) == mine, "pick: a tenant's own file, by its size");
	o = take(32 * MIB, PREALLOC_WARM_TAKE_NO_GROW, NULL);
	got = p->pick(&s, &o, DEV, &n);
	tap_ok(got == -1 && n == 0, "pick: NO_GROW and none fits: none");
	o = take(8 * MIB, 0, NULL);
	tap_ok(p->pick(&s, &o, DEV + 1, NULL) == -1, "pick: files of another mount are not seen");
	o.length = 4 * MIB;
	tap_ok(p->pick(&s, &o, DEV, NULL) == small, "pick: the smallest that fits, exactly");
	store_free(&s);
}

static void test_drop(const struct warm_policy *p)
{
	struct store s = { 0 };
	long ready1, dirty, ready2, other;

	rec(&s, 0, 8 * MIB, PREALLOC_WARM_HANDED, NULL);
	tap_ok(p->drop(&s, &conf, devs, 0, 0) == -1, "drop: every file out: none can go");
	ready1 = rec(&s, 0, 8 * MIB, PREALLOC_WARM_READY, NULL);
	ready2 = rec(&s, 0, 16 * MIB, PREALLOC_WARM_READY, NULL);
	tap_ok(p->drop(&s, &conf, devs, 0, 0) == ready2, "drop: no DIRTY: the last READY in the store");
	tap_ok(p->drop(&s, &conf, devs, 0, 16 * MIB) == ready1, "drop: the kept size stays");
	dirty = rec(&s, 0, 8 * MIB, PREALLOC_WARM_DIRTY, NULL);
	tap_ok(p->drop(&s, &conf, devs, 0, 0) == dirty, "drop: a DIRTY file first (it saves its clear)");
	tap_ok(p->drop(&s, &conf, devs, 1, 0) == -1, "drop: target 1 holds none");
	other = rec(&s, 2, 8 * MIB, PREALLOC_WARM_READY, NULL);
	tap_ok(p->drop(&s, &conf, devs, -1, 0) == other, "drop: of no target (-1): node 2's file");
	store_free(&s);
}

static void test_pressure(const struct warm_policy *p)
{
	struct store s = { 0 };
	long from = 7, full, dirty, other, got;

	rec(&s, 1, 8 * MIB, PREALLOC_WARM_READY, NULL);
	rec(&s, 0, 8 * MIB, PREALLOC_WARM_READY, NULL);
	full = rec(&s, 0, 8 * MIB, PREALLOC_WARM_READY, NULL);
	got = p->pressure_pick(&s, &conf, devs, true, &from);
	tap_ok(got == full && from == 0,
	       "pressure: no DIRTY, no untargeted: the fullest target's last READY (from %ld)", from);
	dirty = rec(&s, 1, 8 * MIB, PREALLOC_WARM_DIRTY, NULL);
	got = p->pressure_pick(&s, &conf, devs, true, &from);
	tap_ok(got == dirty && from == 1,
	       "pressure: a DIRTY file anywhere before the fullest target's (from %ld)", from);
	other = rec(&s, 2, 8 * MIB, PREALLOC_WARM_READY, NULL);
	got = p->pressure_pick(&s, &conf, devs, true, &from);
	tap_ok(got == other && from == -1,
	       "pressure: a file no target wants first, its limit not cut (from %ld)", from);
	tap_ok(p->pressure_pick(&s, &conf, devs, false, &from) == dirty && from == 1,
	       "pressure: untargeted files kept when not allowed to go");
	store_free(&s);
	s = (struct store){ 0 };
	rec(&s, 0, 8 * MIB, PREALLOC_WARM_HANDED, NULL);
	tap_ok(p->pressure_pick(&s, &conf, devs, true, &from) == -1, "pressure: all out: none can go");
	store_free(&s);

	conf.set.pressure_step = WARM_UNSET;
	tap_ok(p->pressure_step(&conf) == (UINT64_C(1) << 30), "pressure step: 1 GiB unset");
	conf.set.pressure_step = 256 * MIB;
	tap_ok(p->pressure_step(&conf) == 256 * MIB, "pressure step: warm.conf's");
	conf.set.pressure_step = WARM_UNSET;
}

static void test_refill_and_held(const struct warm_policy *p)
{
	struct store s = { 0 };
	long clearing;

	tap_ok(p->refill(&targets[0], 16 * MIB, 24 * MIB) == 8 * MIB,
	       "refill: one more whole file while it fits");
	tap_ok(p->refill(&targets[0], 20 * MIB, 24 * MIB) == 0, "refill: none past the limit");
	rec(&s, 0, 8 * MIB, PREALLOC_WARM_READY, NULL);
	rec(&s, 0, 8 * MIB, PREALLOC_WARM_HANDED, NULL);
	rec(&s, 0, 8 * MIB, PREALLOC_WARM_QUARANTINED, NULL);
	clearing = rec(&s, 0, 8 * MIB, PREALLOC_WARM_CLEARING, NULL);
	rec(&s, 1, 8 * MIB, PREALLOC_WARM_READY, NULL);
	tap_ok(warm_target_held(&s, &conf, devs, 0) == 16 * MIB,
	       "held: READY and HANDED count; quarantined and renewing (CLEARING, no tenant) not");
	snprintf(s.r[clearing].tenant, sizeof(s.r[clearing].tenant), "tenant-a");
	tap_ok(warm_target_held(&s, &conf, devs, 0) == 24 * MIB,
	       "held: a file cleared in place for its tenant counts");
	rec(&s, 0, 4 * MIB, PREALLOC_WARM_READY, NULL);
	rec(&s, 0, 4 * MIB, PREALLOC_WARM_DIRTY, NULL);
	rec(&s, 0, 4 * MIB, PREALLOC_WARM_HANDED, NULL);
	rec(&s, 1, 4 * MIB, PREALLOC_WARM_READY, NULL);
	tap_ok(warm_target_other_size(&s, &conf, devs, 0, 8 * MIB) == 8 * MIB,
	       "other size: READY and DIRTY files of another size of this target, not one handed out");
	store_free(&s);
}

int main(void)
{
	/* One policy for now, whatever the ctx: the default. */
	const struct warm_policy *p = warm_policy_of(NULL);

	tap_ok(p && !strcmp(p->name, "default"), "the default policy");
	test_pick(p);
	test_drop(p);
	test_pressure(p);
	test_refill_and_held(p);
	return tap_done();
}
