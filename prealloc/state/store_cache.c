/* SPDX-License-Identifier: MIT */
/*
 * The store read without its lock, once per version of its file: the ctx
 * keeps what it read last (under its records lock) while the file is the
 * one it was read from (every save renames a new file into place) and no
 * save of this process came since. A front end asking what a holder holds,
 * which warm file a take would get and who shares a uid reads and parses
 * the store once, not once a question (tests/unit/frontend/
 * test-guest-reads.c counts it). store_open() under the lock always reads.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

struct record_list {
	struct store s;
	struct statx id;	/* of the store file it was read from */
	unsigned long saves;	/* store_saves() when it was read */
};

static void record_list_free(struct prealloc_ctx *ctx)
{
	if (!ctx->records)
		return;
	store_free(&ctx->records->s);
	free(ctx->records);
	ctx->records = NULL;
}

/* The store as it is now, into ctx->records (under its lock); a store of 0.1's files is not kept. */
static int record_list_load(struct prealloc_ctx *ctx)
{
	const struct record_list *had = ctx->records;
	struct record_list *now;
	int r;

	now = calloc(1, sizeof(*now));
	if (!now)
		return -ENOMEM;
	now->saves = store_saves();
	r = store_load_since(ctx, &now->s, had && had->saves == now->saves ? &had->id : NULL,
			     &now->id);
	if (r != 0) {
		free(now);
		return r < 0 ? r : 0;	/* 1: the copy kept is the store's file still */
	}
	record_list_free(ctx);
	ctx->records = now;
	ctx->records_drop = record_list_free;
	return 0;
}

int store_cache_hold(struct prealloc_ctx *ctx, const struct store **ret)
{
	int r;

	pthread_mutex_lock(&ctx->records_lock);
	r = record_list_load(ctx);
	if (r < 0) {
		pthread_mutex_unlock(&ctx->records_lock);
		return r;
	}
	*ret = &ctx->records->s;
	return 0;
}

void store_cache_release(struct prealloc_ctx *ctx)
{
	pthread_mutex_unlock(&ctx->records_lock);
}

/* A copy of from, its own pools; no directory, no notes. */
static int store_copy(const struct store *from, struct store *to)
{
	memset(to, 0, sizeof(*to));
	to->legacy = from->legacy;
	if (!from->nr)
		return 0;
	to->r = malloc(from->nr * sizeof(*to->r));
	if (!to->r)
		return -ENOMEM;
	to->cap = from->nr;
	for (size_t i = 0; i < from->nr; i++) {
		const struct record *r = &from->r[i];

		to->r[i] = *r;
		to->r[i].pools = r->nr_pools ? malloc(r->nr_pools * sizeof(*r->pools)) : NULL;
		to->nr = i + 1;
		if (r->nr_pools && !to->r[i].pools) {
			to->r[i].nr_pools = 0;
			store_free(to);
			return -ENOMEM;
		}
		if (r->nr_pools)
			memcpy(to->r[i].pools, r->pools, r->nr_pools * sizeof(*r->pools));
	}
	return 0;
}

int store_load(struct prealloc_ctx *ctx, struct store *s)
{
	const struct store *now;
	int r;

	memset(s, 0, sizeof(*s));
	r = store_cache_hold(ctx, &now);
	if (r < 0)
		return r;
	r = store_copy(now, s);
	store_cache_release(ctx);
	return r;
}
