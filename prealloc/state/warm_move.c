/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's states (docs/warm.md, "States"): one table of the moves a
 * warm file's record may make, and the one call that makes them, checked
 * against it and written ahead (the store saved before the step the state
 * names). A move the table does not hold is refused (-EINVAL) and changes
 * nothing: a DIRTY file never becomes READY without CLEARING, a
 * QUARANTINED one is never handed out again.
 */
#include "state.h"

#define NR_WARM (PREALLOC_WARM_QUARANTINED + 1)

/*
 * [from][to]. ON: a move of the diagram. BACK: a write-ahead taken back
 * (warm_move_back only), the step it guarded never having reached anything
 * a holder could see: a take undone before its link existed, admission's
 * cut undone, or done (the file its own, shorter). Every state may go to
 * QUARANTINED: never handed out again is always safe.
 */
static const unsigned char warm_moves[NR_WARM][NR_WARM] = {
	[WARM_NONE] = {
		[PREALLOC_WARM_POPULATING] = WARM_MOVE_ON,	/* prepare's flow, warm */
	},
	[PREALLOC_WARM_POPULATING] = {
		[PREALLOC_WARM_READY] = WARM_MOVE_ON,		/* populated, verified */
		[PREALLOC_WARM_QUARANTINED] = WARM_MOVE_ON,
	},
	[PREALLOC_WARM_READY] = {
		[PREALLOC_WARM_HANDED] = WARM_MOVE_ON,		/* take, or reserve */
		[PREALLOC_WARM_DIRTY] = WARM_MOVE_ON,		/* admission's cut; a tenant's no more */
		[PREALLOC_WARM_QUARANTINED] = WARM_MOVE_ON,
	},
	[PREALLOC_WARM_HANDED] = {
		[PREALLOC_WARM_READY] = WARM_MOVE_BACK,		/* a take undone, never linked */
		[PREALLOC_WARM_RETURNING] = WARM_MOVE_ON,	/* give, or its holder gone */
		[PREALLOC_WARM_QUARANTINED] = WARM_MOVE_ON,
	},
	[PREALLOC_WARM_RETURNING] = {
		[PREALLOC_WARM_DIRTY] = WARM_MOVE_ON,	/* back, the warm pool's link alone */
		[PREALLOC_WARM_QUARANTINED] = WARM_MOVE_ON,
	},
	[PREALLOC_WARM_DIRTY] = {
		[PREALLOC_WARM_READY] = WARM_MOVE_BACK,		/* admission's cut */
		[PREALLOC_WARM_CLEARING] = WARM_MOVE_ON,	/* fill */
		[PREALLOC_WARM_QUARANTINED] = WARM_MOVE_ON,
	},
	[PREALLOC_WARM_CLEARING] = {
		[PREALLOC_WARM_READY] = WARM_MOVE_ON,		/* cleared in place, verified */
		[PREALLOC_WARM_DIRTY] = WARM_MOVE_ON,		/* stopped, or its fill died */
		[PREALLOC_WARM_QUARANTINED] = WARM_MOVE_ON,
	},
	[PREALLOC_WARM_QUARANTINED] = {
		[PREALLOC_WARM_READY] = WARM_MOVE_BACK,		/* admission's cut undone */
		[PREALLOC_WARM_QUARANTINED] = WARM_MOVE_ON,	/* its pages still in use */
	},
};

int warm_move_kind(int from, int to)
{
	if (from < 0 || from >= NR_WARM || to < 0 || to >= NR_WARM)
		return WARM_MOVE_NO;
	return warm_moves[from][to];
}

static int move(const struct prealloc_ctx *ctx, struct store *s, struct record *r, int to,
		int kind)
{
	if (warm_move_kind(r->warm, to) != kind)
		return -EINVAL;
	r->warm = to;
	return s ? store_save(ctx, s) : 0;
}

int warm_move(const struct prealloc_ctx *ctx, struct store *s, struct record *r, int to)
{
	return move(ctx, s, r, to, WARM_MOVE_ON);
}

int warm_move_back(const struct prealloc_ctx *ctx, struct store *s, struct record *r, int to)
{
	return move(ctx, s, r, to, WARM_MOVE_BACK);
}

int warm_busy_settle(const struct prealloc_ctx *ctx, struct store *s)
{
	unsigned int n = 0;

	for (size_t i = 0; i < s->nr; i++) {
		struct record *r = &s->r[i];

		if (r->warm == WARM_NONE || !r->busy_pid || record_busy(ctx, r))
			continue;
		/* A take that died: given back (its holder may have opened it), never READY. */
		if (r->warm == PREALLOC_WARM_HANDED) {
			r->tenant[0] = '\0';
			move(ctx, NULL, r, PREALLOC_WARM_RETURNING, WARM_MOVE_ON);
		}
		record_set_busy(ctx, r, false);
		n++;
	}
	return n ? store_save(ctx, s) : 0;
}
