/* SPDX-License-Identifier: MIT */
/*
 * A record's lifecycle, one table (state/record_move.c), read against the
 * lifecycle of docs/records.md written out here a second time: every move
 * of it allowed by record_move, every other pair of states (a new record's
 * among them) refused with the record unchanged; record_begin the only way
 * in (PREPARING); record_commit refused for what may not become READY; a
 * move with a store written ahead, a refused one writing nothing.
 */
#include <stdio.h>
#include <string.h>

#include "state.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define P(x) PREALLOC_RECORD_##x
#define NR (RECORD_NEW + 1)

static const char *const names[NR] = { "PREPARING", "READY", "RELEASING", "ORPHAN", "NEW" };

/* The lifecycle's moves, from and to. */
static const struct {
	int from, to;
} lifecycle[] = {
	{ RECORD_NEW, P(PREPARING) },
	{ P(PREPARING), P(READY) },	{ P(PREPARING), P(RELEASING) },	{ P(PREPARING), P(ORPHAN) },
	{ P(READY), P(RELEASING) },	{ P(READY), P(ORPHAN) },
	{ P(RELEASING), P(RELEASING) }, { P(RELEASING), P(ORPHAN) },
	{ P(ORPHAN), P(RELEASING) },	{ P(ORPHAN), P(ORPHAN) },
};

static bool in_lifecycle(int from, int to)
{
	for (size_t k = 0; k < sizeof(lifecycle) / sizeof(lifecycle[0]); k++)
		if (lifecycle[k].from == from && lifecycle[k].to == to)
			return true;
	return false;
}

static void test_table(void)
{
	unsigned int wrong = 0, allowed = 0;

	for (int from = 0; from < NR; from++) {
		for (int to = 0; to < NR; to++) {
			struct record r = { .state = from };
			bool want = in_lifecycle(from, to);
			int got = record_move(NULL, NULL, &r, to);
			bool ok = want ? got == 0 && r.state == to : got == -EINVAL && r.state == from;

			allowed += want;
			if (!ok) {
				wrong++;
				printf("# %s -> %s: lifecycle %d, record_move %d (now %d)\n",
				       names[from], names[to], want, got, r.state);
			}
		}
	}
	tap_ok(wrong == 0, "all %d pairs of states: the lifecycle's %u moves allowed, the rest "
	       "refused and nothing changed (%u wrong)", NR * NR, allowed, wrong);
	tap_ok(!record_move_allowed(P(RELEASING), P(READY)) &&
		       !record_move_allowed(P(ORPHAN), P(READY)) &&
		       !record_move_allowed(P(READY), P(PREPARING)) &&
		       !record_move_allowed(RECORD_NEW, P(READY)) &&
		       !record_move_allowed(P(READY), RECORD_NEW) &&
		       !record_move_allowed(-1, P(READY)) && !record_move_allowed(P(READY), 99),
	       "never READY again once released or orphaned, nothing back to PREPARING, no "
	       "state out of range");
}

static void test_begin_commit(void)
{
	struct rec_owner holder = { .kind = PREALLOC_OWNER_HOLDER };
	struct store s = { 0 };
	struct record *r = record_begin(&s, 7);
	int c1, c2;

	tap_ok(r && r->state == P(PREPARING) && s.nr == 1, "record_begin: a new record, PREPARING");
	c1 = r ? record_commit(r, &holder) : -1;
	tap_ok(c1 == 0 && r->state == P(READY), "record_commit: PREPARING -> READY (%d)", c1);
	if (r)
		r->state = P(RELEASING);
	c2 = r ? record_commit(r, &holder) : -1;
	tap_ok(c2 == -EINVAL && r->state == P(RELEASING),
	       "record_commit of a RELEASING record: refused, unchanged (%d)", c2);
	store_free(&s);
}

/* The state of record id as the store on disk says; -1 none. */
static int state_on_disk(struct prealloc_ctx *ctx, uint64_t id)
{
	struct record r;

	return record_on_disk(ctx, id, &r) ? r.state : -1;
}

static void test_written(struct prealloc_ctx *ctx)
{
	struct store s = { 0 };
	struct record *r = record_begin(&s, 42);
	int r1, r2;

	if (!tap_ok(r && record_commit(r, NULL) == 0 && store_save(ctx, &s) == 0,
		    "a READY record in the store"))
		return;
	r1 = record_move(ctx, &s, r, P(RELEASING));
	tap_ok(r1 == 0 && state_on_disk(ctx, 42) == P(RELEASING),
	       "READY -> RELEASING is written ahead: %d, on disk %d", r1, state_on_disk(ctx, 42));
	r2 = record_move(ctx, &s, r, P(READY));
	tap_ok(r2 == -EINVAL && r->state == P(RELEASING) &&
		       state_on_disk(ctx, 42) == P(RELEASING),
	       "RELEASING -> READY is refused, nothing written: %d, on disk %d", r2,
	       state_on_disk(ctx, 42));
	store_free(&s);
}

int main(void)
{
	struct fakeroot fr;
	struct prealloc_ctx *ctx;

	test_table();
	test_begin_commit();
	if (fakeroot_make(&fr, 1) < 0)
		return tap_ok(0, "cannot build the fake tree in /tmp"), tap_done();
	tap_remove_at_exit(fr.dir);
	ctx = fakeroot_ctx(&fr);
	if (tap_ok(ctx != NULL, "a ctx over the fake tree"))
		test_written(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
