/* SPDX-License-Identifier: MIT */
/*
 * A record's lifecycle (docs/records.md): one table of the moves its state
 * may make, as state/warm_move.c holds the warm pool's, and the one call
 * that makes a move, checked against it and written ahead (the store saved
 * before the step the state names). A move the table does not hold is
 * refused (-EINVAL) and changes nothing: a record enters PREPARING only, a
 * RELEASING or ORPHAN one is never READY again. Reading a store (records.c,
 * store_v1.c) sets the states it finds: a load, not a move.
 */
#include "state.h"

/*
 * [from][to]: 1, a move. RECORD_NEW: a record store_add just made, which
 * no store ever holds.
 */
static const unsigned char record_moves[RECORD_NEW + 1][RECORD_NEW + 1] = {
	[RECORD_NEW] = {
		[PREALLOC_RECORD_PREPARING] = 1,	/* admission: a run's or a claim's */
	},
	[PREALLOC_RECORD_PREPARING] = {
		[PREALLOC_RECORD_READY] = 1,		/* committed */
		[PREALLOC_RECORD_RELEASING] = 1,	/* rolled back, or its run died: the file goes */
		[PREALLOC_RECORD_ORPHAN] = 1,		/* settled, its pages still in use */
	},
	[PREALLOC_RECORD_READY] = {
		[PREALLOC_RECORD_RELEASING] = 1,	/* released: the file goes, then the growth */
		[PREALLOC_RECORD_ORPHAN] = 1,
	},
	[PREALLOC_RECORD_RELEASING] = {
		[PREALLOC_RECORD_RELEASING] = 1,	/* a release cut short, settled again */
		[PREALLOC_RECORD_ORPHAN] = 1,
	},
	[PREALLOC_RECORD_ORPHAN] = {
		[PREALLOC_RECORD_RELEASING] = 1,	/* a name of its file left (0.1's) goes */
		[PREALLOC_RECORD_ORPHAN] = 1,		/* settled again, still in use */
	},
};

bool record_move_allowed(int from, int to)
{
	if (from < 0 || from > RECORD_NEW || to < 0 || to > RECORD_NEW)
		return false;
	return record_moves[from][to];
}

int record_move(const struct prealloc_ctx *ctx, struct store *s, struct record *r, int to)
{
	if (!record_move_allowed(r->state, to))
		return -EINVAL;
	r->state = to;
	return s ? store_save(ctx, s) : 0;
}

struct record *record_begin(struct store *s, uint64_t id)
{
	struct record *r = store_add(s, id);

	if (!r)
		return NULL;
	r->state = RECORD_NEW;
	record_move(NULL, NULL, r, PREALLOC_RECORD_PREPARING);
	return r;
}
