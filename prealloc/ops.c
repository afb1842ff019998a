/* SPDX-License-Identifier: MIT */
/*
 * Ops: what a worker does to one piece of a chunk, one table entry per
 * public op. Populate faults pages in (MADV_POPULATE_WRITE, or one store per
 * page under a SIGBUS guard where the kernel lacks it), clear runs a store
 * kernel, verify does nothing (the engine's check phase reads back).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "clear.h"
#include "engine.h"

struct populate_state {
	uint64_t touch_step;	/* bytes between touches */
	atomic_int touch;	/* fell back to (or forced) touching */
	pthread_mutex_t lock;
	bool guard;		/* SIGBUS guard installed, under lock */
};

/*
 * The SIGBUS guard for the touch fallback is process-wide, and an embedding
 * VMM may have its own SIGBUS handler (memory errors): install it only when
 * a job really touches, once per job, before any worker touches.
 */
static int populate_guard(struct populate_state *st)
{
	int r = 0;

	pthread_mutex_lock(&st->lock);
	if (!st->guard) {
		r = touch_guard_install();
		st->guard = r == 0;
	}
	pthread_mutex_unlock(&st->lock);
	return r;
}

static int populate_setup(const struct job_op_args *args, void **ret_state)
{
	struct populate_state *st = calloc(1, sizeof(*st));
	int r;

	if (!st)
		return -ENOMEM;
	pthread_mutex_init(&st->lock, NULL);
	/* A THP region may fall back to 4K pages, so touch each 4K. */
	st->touch_step = args->region->backing == PREALLOC_BACKING_ANON_THP
				 ? PREALLOC_PAGE_4K
				 : args->region->page_size;
	if (args->opts->flags & PREALLOC_JOB_TOUCH) {
		st->touch = 1;
		r = populate_guard(st);
		if (r < 0) {
			pthread_mutex_destroy(&st->lock);
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
	/* No MADV_POPULATE_WRITE here (before 5.14): touch instead. */
	r = populate_guard(st);
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

	if (st->guard)
		touch_guard_remove();
	pthread_mutex_destroy(&st->lock);
	free(st);
}

/* The clear state: what to run, chosen once per job, and what the probe chose. */
struct clear_state {
	struct clear_choice choice;
	atomic_uint_fast64_t cached_bytes;	/* cleared with the cached kernel */
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
	*ret_state = st;
	return 0;
}

static int clear_piece(void *state, uint8_t *p, uint64_t len)
{
	struct clear_state *st = state;

	atomic_fetch_add(&st->cached_bytes, clear_choice_run(&st->choice, p, len));
	return 0;
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
		.teardown = free,
	},
	[PREALLOC_OP_VERIFY] = {
		.name = "verify",
		.op = PREALLOC_OP_VERIFY,
		.piece = verify_piece,
		.method = verify_method,
	},
	/* Nothing in parallel: a job that only runs its serial op (a DMA map). */
	[PREALLOC_OP_NONE] = {
		.name = "none",
		.op = PREALLOC_OP_NONE,
		.piece = verify_piece,
		.method = verify_method,
	},
};

const struct job_op *job_op_find(int op)
{
	if (op < 0 || (size_t)op >= ARRAY_SIZE(job_ops) || !job_ops[op].piece)
		return NULL;
	return &job_ops[op];
}
