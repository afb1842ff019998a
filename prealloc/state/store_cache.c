/* SPDX-License-Identifier: MIT */
/*
 * The store read without its lock, parsed once per version of its file:
 * the ctx keeps what it parsed last, the text it came from and the file's
 * identity (under its records lock). While the file is the one read, and
 * was written well before it was read, nothing is read again (a statx); a
 * file written just before the read may share its identity with the next
 * (an inode reused, the same size, within one tick of the clock), so it is
 * read again and compared: the same text is not parsed again. A front end asking what a holder holds,
 * which warm file a take would get and who shares a uid reads and parses
 * the store once, not once a question (tests/unit/frontend/
 * test-guest-reads.c counts it). store_open() under the lock always reads.
 */
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

struct record_list {
	struct store s;
	struct store_known known;	/* its text (allocated) and file */
};

/* A file older than this when read has no later file of its identity. */
#define SETTLED_NS 200000000LL

static bool settled(const struct statx *id)
{
	struct timespec now;

	if (!id->stx_ino || clock_gettime(CLOCK_REALTIME, &now) < 0)
		return false;
	return (now.tv_sec - id->stx_mtime.tv_sec) * 1000000000LL +
		       (now.tv_nsec - (long long)id->stx_mtime.tv_nsec) > SETTLED_NS;
}

static void record_list_free(struct prealloc_ctx *ctx)
{
	if (!ctx->records)
		return;
	store_free(&ctx->records->s);
	free((char *)ctx->records->known.text);
	free(ctx->records);
	ctx->records = NULL;
}

/* The store as it is now, into ctx->records (under its lock); a store of 0.1's files is not kept. */
static int record_list_load(struct prealloc_ctx *ctx)
{
	struct record_list *had = ctx->records, *now;
	char *text = NULL;
	struct statx id;
	int r;

	now = calloc(1, sizeof(*now));
	if (!now)
		return -ENOMEM;
	r = store_load_since(ctx, &now->s, had ? &had->known : NULL, &text, &now->known.len, &id);
	if (r == 1 && id.stx_ino) {
		had->known.id = id;	/* the same text in a file read now */
		had->known.settled = settled(&id);
	}
	if (r != 0) {
		free(now);
		return r < 0 ? r : 0;	/* 1: the copy kept is the store's file still */
	}
	now->known.text = text;
	now->known.id = id;
	now->known.settled = settled(&id);
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
