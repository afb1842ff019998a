/* SPDX-License-Identifier: MIT */
/*
 * Ops: what a worker does to one piece of a chunk, one table entry per
 * public op. Populate faults pages in (MADV_POPULATE_WRITE, or one store per
 * page under the SIGBUS guard where the kernel lacks it), clear runs a store
 * kernel, verify does nothing (the engine's check phase reads back). Each
 * op's setup also installs the SIGBUS guard (populate.c) for a job whose
 * memory can fault under it; its teardown removes it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clear.h"
#include "cpu.h"
#include "engine.h"

/* A job's hold on the SIGBUS guard: taken at most once, dropped at teardown. */
struct op_guard {
	pthread_mutex_t lock;
	bool on;		/* installed, under lock */
};

static int guard_take(struct op_guard *g)
{
	int r = 0;

	pthread_mutex_lock(&g->lock);
	if (!g->on) {
		r = sigbus_guard_install();
		g->on = r == 0;
	}
	pthread_mutex_unlock(&g->lock);
	return r;
}

static void guard_init(struct op_guard *g)
{
	pthread_mutex_init(&g->lock, NULL);
	g->on = false;
}

/* At the job's end (or a failed setup): the guard goes if this job took it. */
static void guard_fini(struct op_guard *g)
{
	if (g->on)
		sigbus_guard_remove();
	pthread_mutex_destroy(&g->lock);
}

/*
 * Whether a job's memory can SIGBUS under its workers though it is all
 * there: a file's pages (FILE, MEMFD, and a caller's mapping, which may be
 * one) vanish when its owner truncates it. Clear stores into them (writes),
 * and the check phase of VERIFY reads them all back; anonymous memory only
 * faults so when poisoned, and pays nothing for that.
 */
static bool guard_needed(const struct job_op_args *args, bool writes)
{
	bool reads = (args->opts->flags & PREALLOC_JOB_VERIFY) ||
		     args->opts->op == PREALLOC_OP_VERIFY;

	if (args->region->backing == PREALLOC_BACKING_ANON ||
	    args->region->backing == PREALLOC_BACKING_ANON_THP)
		return false;
	return writes || reads;
}

struct populate_state {
	uint64_t touch_step;	/* bytes between touches */
	atomic_int touch;	/* fell back to (or forced) touching */
	struct op_guard guard;	/* touching, or reading a file back */
};

static int populate_setup(const struct job_op_args *args, void **ret_state)
{
	struct populate_state *st = calloc(1, sizeof(*st));
	int r;

	if (!st)
		return -ENOMEM;
	guard_init(&st->guard);
	/* A THP region may fall back to 4K pages, so touch each 4K. */
	st->touch_step = args->region->backing == PREALLOC_BACKING_ANON_THP
				 ? PREALLOC_PAGE_4K
				 : args->region->page_size;
	st->touch = !!(args->opts->flags & PREALLOC_JOB_TOUCH);
	/* MADV_POPULATE_WRITE reports a SIGBUS fault itself: only touching needs the guard. */
	if (st->touch || guard_needed(args, false)) {
		r = guard_take(&st->guard);
		if (r < 0) {
			guard_fini(&st->guard);
			free(st);
			return r;
		}
	}
	*ret_state = st;
	return 0;
}

static int populate_piece(void *state, uint8_t *p, uint64_t len)
{
	struct populate_state *st = state;
	int r;

	if (atomic_load(&st->touch))
		return populate_chunk(p, len, st->touch_step, true);
	r = populate_chunk(p, len, st->touch_step, false);
	if (r != -EINVAL)
		return r;
	/* No MADV_POPULATE_WRITE here (before 5.14): touch instead, guarded. */
	r = guard_take(&st->guard);
	if (r < 0)
		return r;
	atomic_store(&st->touch, 1);
	return populate_chunk(p, len, st->touch_step, true);
}

static int populate_method(const void *state)
{
	const struct populate_state *st = state;

	return atomic_load(&st->touch) ? PREALLOC_METHOD_TOUCH : PREALLOC_METHOD_POPULATE_WRITE;
}

static void populate_teardown(void *state)
{
	struct populate_state *st = state;

	guard_fini(&st->guard);
	free(st);
}

/* The clear state: what to run, chosen once per job, and what the probe chose. */
struct clear_state {
	struct clear_choice choice;
	atomic_uint_fast64_t cached_bytes;	/* cleared with the cached kernel */
	struct op_guard guard;
};

static int clear_setup(const struct job_op_args *args, void **ret_state)
{
	const char *name = args->opts->clear_kernel;
	struct clear_state *st;
	struct clear_choice c;
	char why[160];
	int r;

	if (!name || !strcmp(name, "auto")) {
		c = clear_select_region(args->region, args->opts->threads, why, sizeof(why));
	} else {
		r = clear_choice_find(name, cpu_get()->features, &c);
		if (r < 0)
			return r;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return -ENOMEM;
	st->choice = c;
	guard_init(&st->guard);
	if (guard_needed(args, true)) {
		r = guard_take(&st->guard);
		if (r < 0) {
			guard_fini(&st->guard);
			free(st);
			return r;
		}
	}
	*ret_state = st;
	return 0;
}

struct clear_call {
	struct clear_state *st;
	uint8_t *p;
	uint64_t len;
};

static int clear_run(void *arg)
{
	struct clear_call *c = arg;

	atomic_fetch_add(&c->st->cached_bytes, clear_choice_run(&c->st->choice, c->p, c->len));
	return 0;
}

/* A SIGBUS under the stores (the file shrank) fails the job at this piece. */
static int clear_piece(void *state, uint8_t *p, uint64_t len)
{
	struct clear_call c = { state, p, len };

	return sigbus_guarded(p, len, clear_run, &c, NULL);
}

static int clear_method(const void *state)
{
	(void)state;
	return PREALLOC_METHOD_CLEAR;
}

static const char *clear_name(const void *state)
{
	const struct clear_state *st = state;

	return st ? st->choice.name : NULL;
}

static uint64_t clear_cached(const void *state)
{
	const struct clear_state *st = state;

	return st ? atomic_load(&st->cached_bytes) : 0;
}

static void clear_teardown(void *state)
{
	struct clear_state *st = state;

	guard_fini(&st->guard);
	free(st);
}

/*
 * Verify (and none, which may still VERIFY) work nothing in parallel; their
 * state is the guard for the check phase's read-back, NULL when not needed.
 */
static int guard_setup(const struct job_op_args *args, void **ret_state)
{
	struct op_guard *g;
	int r;

	if (!guard_needed(args, false))
		return 0;
	g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	guard_init(g);
	r = guard_take(g);
	if (r < 0) {
		guard_fini(g);
		free(g);
		return r;
	}
	*ret_state = g;
	return 0;
}

static void guard_teardown(void *state)
{
	guard_fini(state);
	free(state);
}

static int verify_piece(void *state, uint8_t *p, uint64_t len)
{
	(void)state;
	(void)p;
	(void)len;
	return 0;
}

static int verify_method(const void *state)
{
	(void)state;
	return PREALLOC_METHOD_NONE;
}

/* Indexed by enum prealloc_op. */
static const struct job_op job_ops[] = {
	[PREALLOC_OP_POPULATE] = {
		.name = "populate",
		.op = PREALLOC_OP_POPULATE,
		.setup = populate_setup,
		.piece = populate_piece,
		.method = populate_method,
		.teardown = populate_teardown,
	},
	[PREALLOC_OP_CLEAR] = {
		.name = "clear",
		.op = PREALLOC_OP_CLEAR,
		.setup = clear_setup,
		.piece = clear_piece,
		.method = clear_method,
		.kernel = clear_name,
		.cached_bytes = clear_cached,
		.teardown = clear_teardown,
	},
	[PREALLOC_OP_VERIFY] = {
		.name = "verify",
		.op = PREALLOC_OP_VERIFY,
		.setup = guard_setup,
		.piece = verify_piece,
		.method = verify_method,
		.teardown = guard_teardown,
	},
	/* Nothing in parallel: a job that only runs its serial op (a DMA map). */
	[PREALLOC_OP_NONE] = {
		.name = "none",
		.op = PREALLOC_OP_NONE,
		.setup = guard_setup,
		.piece = verify_piece,
		.method = verify_method,
		.teardown = guard_teardown,
	},
};

const struct job_op *job_op_find(int op)
{
	if (op < 0 || (size_t)op >= ARRAY_SIZE(job_ops) || !job_ops[op].piece)
		return NULL;
	return &job_ops[op];
}
