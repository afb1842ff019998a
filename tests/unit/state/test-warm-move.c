/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's one table of state moves (state/warm_move.c), read
 * against the diagram of docs/warm.md written out here a second time: every
 * move of it is allowed (warm_move, or warm_move_back for a write-ahead
 * taken back), every other pair of states refused by both calls with the
 * record unchanged; and a move with a store is written ahead (the store on
 * disk says the new state), a refused one writes nothing.
 */
#include <stdio.h>
#include <string.h>

#include "state.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define P(x) PREALLOC_WARM_##x
#define NR (PREALLOC_WARM_QUARANTINED + 1)

static const char *const names[NR] = { "NONE", "POPULATING", "READY", "HANDED", "RETURNING",
				       "DIRTY", "CLEARING", "QUARANTINED" };

/* The diagram's moves: from, to, and whether only as a write-ahead taken back. */
static const struct {
	int from, to;
	bool back;
} diagram[] = {
	{ WARM_NONE, P(POPULATING), false },	{ P(POPULATING), P(READY), false },
	{ P(READY), P(HANDED), false },		{ P(HANDED), P(RETURNING), false },
	{ P(RETURNING), P(DIRTY), false },	{ P(DIRTY), P(CLEARING), false },
	{ P(CLEARING), P(READY), false },	{ P(CLEARING), P(DIRTY), false },
	{ P(READY), P(DIRTY), false },		{ P(QUARANTINED), P(QUARANTINED), false },
	{ P(POPULATING), P(QUARANTINED), false }, { P(READY), P(QUARANTINED), false },
	{ P(HANDED), P(QUARANTINED), false },	{ P(RETURNING), P(QUARANTINED), false },
	{ P(DIRTY), P(QUARANTINED), false },	{ P(CLEARING), P(QUARANTINED), false },
	{ P(HANDED), P(READY), true },		{ P(DIRTY), P(READY), true },
	{ P(QUARANTINED), P(READY), true },
};

/* 0: not in the diagram; 1: a move; 2: a move back. */
static int in_diagram(int from, int to)
{
	for (size_t k = 0; k < sizeof(diagram) / sizeof(diagram[0]); k++)
		if (diagram[k].from == from && diagram[k].to == to)
			return diagram[k].back ? 2 : 1;
	return 0;
}

static void test_table(void)
{
	unsigned int wrong = 0, allowed = 0;

	for (int from = 0; from < NR; from++) {
		for (int to = 0; to < NR; to++) {
			struct record r = { .warm = from };
			struct record b = { .warm = from };
			int want = in_diagram(from, to);
			int on = warm_move(NULL, NULL, &r, to);
			int back = warm_move_back(NULL, NULL, &b, to);
			bool ok = want == 1   ? on == 0 && r.warm == to && back == -EINVAL && b.warm == from
				  : want == 2 ? back == 0 && b.warm == to && on == -EINVAL && r.warm == from
					      : on == -EINVAL && back == -EINVAL && r.warm == from &&
						b.warm == from;

			allowed += want != 0;
			if (!ok) {
				wrong++;
				printf("# %s -> %s: diagram %d, warm_move %d (now %s), warm_move_back "
					 "%d (now %s)\n", names[from], names[to], want, on,
					 names[r.warm], back, names[b.warm]);
			}
		}
	}
	tap_ok(wrong == 0, "all %d pairs of states: the diagram's %u moves allowed (back ones "
	       "only by warm_move_back), the rest refused and nothing changed (%u wrong)",
	       NR * NR, allowed, wrong);
	/* The moves that would break the pool's promise, named. */
	tap_ok(warm_move_kind(P(DIRTY), P(READY)) != WARM_MOVE_ON &&
		       warm_move_kind(P(RETURNING), P(READY)) == WARM_MOVE_NO &&
		       warm_move_kind(P(HANDED), P(HANDED)) == WARM_MOVE_NO &&
		       warm_move_kind(P(QUARANTINED), P(HANDED)) == WARM_MOVE_NO &&
		       warm_move_kind(P(DIRTY), P(HANDED)) == WARM_MOVE_NO &&
		       warm_move_kind(WARM_NONE, P(READY)) == WARM_MOVE_NO &&
		       warm_move_kind(P(READY), 99) == WARM_MOVE_NO &&
		       warm_move_kind(-1, P(READY)) == WARM_MOVE_NO,
	       "never DIRTY or RETURNING to READY by a move, nothing to HANDED but READY, no "
	       "state out of range");
}

/* The state of record id as the store on disk says; -1 none. */
static int state_on_disk(struct prealloc_ctx *ctx, uint64_t id)
{
	struct record r;

	return record_on_disk(ctx, id, &r) ? r.warm : -1;
}

static void test_written(struct prealloc_ctx *ctx, const char *dir)
{
	uint64_t id = add_warm_in(dir, ctx, "w", 0, PREALLOC_PAGE_4K, 1 << 20, 0);
	struct store s;
	long i = -1;
	int r1, r2;

	if (!tap_ok(id && store_load(ctx, &s) == 0 && (i = store_find(&s, id)) >= 0,
		    "a READY warm file in the store"))
		return;
	r1 = warm_move(ctx, &s, &s.r[i], P(HANDED));
	tap_ok(r1 == 0 && state_on_disk(ctx, id) == P(HANDED), "READY -> HANDED is written "
	       "ahead: %d, on disk %d", r1, state_on_disk(ctx, id));
	r2 = warm_move(ctx, &s, &s.r[i], P(CLEARING));
	tap_ok(r2 == -EINVAL && s.r[i].warm == P(HANDED) && state_on_disk(ctx, id) == P(HANDED),
	       "HANDED -> CLEARING is refused, nothing written: %d, on disk %d", r2,
	       state_on_disk(ctx, id));
	store_free(&s);
}

/*
 * What a dead take or give left busy (warm_busy_settle): a take's HANDED
 * file RETURNING, its tenant gone; a give's RETURNING no longer busy; one
 * whose process lives (the same start time) untouched; a pid reused by
 * another process (another start time) is dead; a record that is no warm
 * file untouched.
 */
static void test_busy(struct prealloc_ctx *ctx, struct fakeroot *fr)
{
	static const struct {
		int warm, pid;
		uint64_t start;
		int want;
		bool busy_after;
		const char *what;
	} c[] = {
		{ P(HANDED), 4242, 100, P(HANDED), true, "a take whose process lives: untouched" },
		{ P(HANDED), 4243, 200, P(RETURNING), false,
		  "a take whose pid another process reuses: given back" },
		{ P(HANDED), 4244, 300, P(RETURNING), false, "a take whose process is gone: given back" },
		{ P(RETURNING), 4244, 300, P(RETURNING), false,
		  "a give whose process is gone: RETURNING, no longer busy" },
		{ P(READY), 0, 0, P(READY), false, "a READY file, never busy: untouched" },
	};
	struct store s = { 0 }, back;
	int r;

	fr_set_process(fr, 4242, 100);
	fr_set_process(fr, 4243, 100);
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		struct record *rec = store_add(&s, k + 1);

		rec->warm = c[k].warm;
		rec->busy_pid = c[k].pid;
		rec->busy_start = c[k].start;
		snprintf(rec->tenant, sizeof(rec->tenant), "acme");
	}
	store_add(&s, 99)->busy_pid = 0;	/* no warm file */
	r = warm_busy_settle(ctx, &s);
	tap_ok(r == 0 && store_load(ctx, &back) == 0, "warm_busy_settle saves (%d)", r);
	for (size_t k = 0; r == 0 && k < sizeof(c) / sizeof(c[0]); k++) {
		const struct record *b = &back.r[store_find(&back, k + 1)];
		bool given = c[k].warm == P(HANDED) && c[k].want == P(RETURNING);

		tap_ok(b->warm == c[k].want && (b->busy_pid != 0) == c[k].busy_after &&
		       !strcmp(b->tenant, given ? "" : "acme"),
		       "%s (%s, busy %d, tenant '%s')", c[k].what, names[b->warm], b->busy_pid,
		       b->tenant);
	}
	if (r == 0)
		store_free(&back);
	store_free(&s);
}

int main(void)
{
	struct prealloc_ctx *ctx;
	struct fakeroot fr;

	test_table();
	ctx = warm_test_ctx(&fr, 1);
	if (!ctx)
		return tap_done();
	test_written(ctx, fr.dir);
	test_busy(ctx, &fr);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
