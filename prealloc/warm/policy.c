/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's policy (docs/warm.md, "Policy"): the choices its
 * mechanism leaves open. Which file a take gets (pick), which file goes
 * first when a target holds more than its limit (drop), which goes, and
 * how much, under memory pressure (pressure_pick, pressure_step), and
 * what a target's next file is (refill). Take, find, the pass and serve
 * ask through struct warm_policy only; the default below is the warm pool's
 * policy as it has been, and a second policy fills the same struct.
 */
#include "warm.h"

#define PRESSURE_STEP (UINT64_C(1) << 30)	/* warm.conf's pressure_step, unset */

uint64_t warm_target_held(const struct store *s, const struct warm_conf *conf,
			  const uint64_t *devs, long want)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (r->warm != WARM_NONE && r->warm != PREALLOC_WARM_QUARANTINED &&
		    !(r->warm == PREALLOC_WARM_CLEARING && !r->tenant[0]) &&
		    warm_target_of(conf, devs, r) == want)
			sum += r->size;
	}
	return sum;
}

uint64_t warm_target_other_size(const struct store *s, const struct warm_conf *conf,
				const uint64_t *devs, long want, uint64_t keep_size)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if ((r->warm == PREALLOC_WARM_READY || r->warm == PREALLOC_WARM_DIRTY) &&
		    r->size != keep_size && warm_target_of(conf, devs, r) == want)
			sum += r->size;
	}
	return sum;
}

/* DIRTY before READY (a dirty one saves its clear); of READY ones, the last in the store. */
static long drop_dirty_first(const struct store *s, const struct warm_conf *conf,
			     const uint64_t *devs, long want, uint64_t keep_size)
{
	long ready = -1;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (r->warm == WARM_NONE || r->size == keep_size ||
		    warm_target_of(conf, devs, r) != want)
			continue;
		if (r->warm == PREALLOC_WARM_DIRTY)
			return (long)i;
		if (r->warm == PREALLOC_WARM_READY)
			ready = (long)i;
	}
	return ready;
}

/* Files no target wants (untargeted), then a DIRTY one anywhere, then the fullest target's. */
static long pressure_fullest(const struct store *s, const struct warm_conf *conf,
			     const uint64_t *devs, bool untargeted, long *ret_from)
{
	long i = -1, from = -1;
	uint64_t most = 0;

	if (untargeted)
		i = drop_dirty_first(s, conf, devs, -1, 0);
	for (long t = 0; i < 0 && t < (long)conf->nr; t++) {
		long d = drop_dirty_first(s, conf, devs, t, 0);

		if (d >= 0 && s->r[d].warm == PREALLOC_WARM_DIRTY) {
			i = d;
			from = t;
		}
	}
	for (long t = 0; i < 0 && t < (long)conf->nr; t++) {
		uint64_t held = warm_target_held(s, conf, devs, t);

		if (held > most && drop_dirty_first(s, conf, devs, t, 0) >= 0) {
			most = held;
			from = t;
		}
	}
	if (i < 0 && from >= 0)
		i = drop_dirty_first(s, conf, devs, from, 0);
	*ret_from = from;
	return i;
}

/* One more file of the target's size while it fits under the limit. */
static uint64_t refill_whole_files(const struct warm_target *t, uint64_t held, uint64_t limit)
{
	return held + t->file_bytes > limit ? 0 : t->file_bytes;
}

static uint64_t pressure_step_conf(const struct warm_conf *conf)
{
	return warm_setting(conf->set.pressure_step, PRESSURE_STEP);
}

static const struct warm_policy policy_default = {
	.name = "default",
	.pick = warm_pick,
	.drop = drop_dirty_first,
	.pressure_pick = pressure_fullest,
	.pressure_step = pressure_step_conf,
	.refill = refill_whole_files,
};

const struct warm_policy *warm_policy_of(const struct prealloc_ctx *ctx)
{
	(void)ctx;	/* one policy for now: the seam a second one fills */
	return &policy_default;
}
