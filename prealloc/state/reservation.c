/* SPDX-License-Identifier: MIT */
/*
 * Claims: the handle prealloc_admit() returns, its tag, commit and
 * rollback (the record's end itself is settle.c's). 0.1 called a claim a
 * reservation: the old names are exported as aliases (docs/abi.md).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"

struct prealloc_claim {
	struct prealloc_ctx *ctx;
	uint64_t id;
	uint64_t page_size;
	bool in_store;		/* a record was written */
	bool finished;		/* committed or rolled back */
	unsigned int lock_timeout_ms;
	struct rec_owner holder; /* kind NONE: the file holds the growth */
};

struct claim_new {
	const struct prealloc_admit_opts *o;
	struct prealloc_claim *claim;
};

static int claim_make(struct prealloc_ctx *ctx, struct store *s, void *arg)
{
	const struct claim_new *n = arg;
	struct record *rec = record_begin(s, n->claim->id);
	const char *tag = n->o->tag;

	if (!rec)
		return -ENOMEM;
	owner_self(ctx, &rec->owner);
	rec->page_size = n->o->page_size;
	if (tag && tag[0] == '/') {
		struct stat st;

		rec->has_file = true;
		snprintf(rec->path, sizeof(rec->path), "%s", tag);
		/* Known by identity when it exists already (set_tag names it later otherwise). */
		if (stat(tag, &st) == 0 && S_ISREG(st.st_mode)) {
			rec->dev = (uint64_t)st.st_dev;
			rec->ino = (uint64_t)st.st_ino;
			rec->size = (uint64_t)st.st_size;
		}
	}
	return 0;
}

static int claim_admitted(struct prealloc_ctx *ctx, struct store *s, void *arg)
{
	struct claim_new *n = arg;

	(void)ctx;
	(void)s;
	n->claim->in_store = true;
	return 0;
}

static int admit_record(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			struct prealloc_claim *claim, struct prealloc_admit_result *res)
{
	static const struct admit_new_ops ops = { .make = claim_make, .admitted = claim_admitted };
	struct claim_new n = { .o = o, .claim = claim };

	return admit_new(ctx, o, claim->id, &ops, &n, res);
}

EXPORT int prealloc_admit(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *opts,
			  struct prealloc_claim **ret_resv,
			  struct prealloc_admit_result *ret_result)
{
	struct prealloc_admit_result res = { .size = sizeof(res), .node = -1 };
	struct prealloc_admit_opts o;
	struct prealloc_claim *claim;
	int r;

	if (!ctx || !opts || !ret_resv)
		return -EINVAL;
	r = admit_check_opts(ctx, opts, &o);
	if (r < 0)
		return r;
	claim = calloc(1, sizeof(*claim));
	if (!claim)
		return -ENOMEM;
	claim->ctx = ctx;
	claim->id = record_new_id();
	claim->page_size = o.page_size;
	claim->lock_timeout_ms = o.lock_timeout_ms;
	if (o.holder)
		owner_holder(&claim->holder, o.holder, o.holder_check, o.holder_expires);
	res.page_size = o.page_size;
	r = admit_record(ctx, &o, claim, &res);
	if (r < 0)
		res.reason = admit_reason(r, res.reason);
	if (ret_result && ret_result->size >= sizeof(size_t))
		copy_sized_out(ret_result, &res, sizeof(res));
	if (r < 0) {
		free(claim);
		return r;
	}
	*ret_resv = claim;
	return 0;
}

/* Applies fn to the claim's record under the lock (fn saves); no record: nothing to do. */
static int claim_update(struct prealloc_claim *claim,
		       int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg),
		       void *arg)
{
	int r = store_update(claim->ctx, claim->lock_timeout_ms, claim->id, fn, arg);

	return r == -ENOENT ? 0 : r;
}

static int set_tag_fn(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	const char *tag = arg;
	struct record *r = &s->r[ri];
	char abs[PATH_MAX];
	struct stat st;

	snprintf(r->path, sizeof(r->path), "%s", tag);
	r->has_file = tag[0] == '/';
	/* A file is known by its identity too, so a reused path is not mistaken for it. */
	if (stat(tag, &st) == 0 && S_ISREG(st.st_mode) && realpath(tag, abs)) {
		snprintf(r->path, sizeof(r->path), "%s", abs);
		r->has_file = true;
		r->dev = (uint64_t)st.st_dev;
		r->ino = (uint64_t)st.st_ino;
		r->size = (uint64_t)st.st_size;
		for (unsigned int k = 0; k < r->nr_pools; k++)
			r->pools[k].base = (uint64_t)st.st_blocks * 512 / r->pools[k].page_size;
	}
	return store_save(ctx, s);
}

EXPORT int prealloc_claim_set_tag(struct prealloc_claim *claim, const char *tag)
{
	if (!claim || !tag || !*tag || strchr(tag, '\n') || strlen(tag) >= PATH_MAX)
		return -EINVAL;
	if (!claim->in_store)
		return 0;
	return claim_update(claim, set_tag_fn, (void *)tag);
}

static int commit_fn(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	const struct rec_owner *owner = arg;
	struct record *r = &s->r[ri];
	bool grew = false;

	for (unsigned int k = 0; k < r->nr_pools; k++)
		grew |= r->pools[k].added > 0;
	/* Growth nobody could ever give back: name a file or a holder first. */
	if (grew && !r->has_file && owner->kind != PREALLOC_OWNER_HOLDER)
		return -EINVAL;
	if (record_commit(r, owner) < 0)
		return -EINVAL;
	/* Only growth (or a holder's claim) needs remembering. */
	if (!r->nr_pools && r->owner.kind != PREALLOC_OWNER_HOLDER)
		store_del(s, ri);
	return store_save(ctx, s);
}

EXPORT int prealloc_claim_commit(struct prealloc_claim *claim)
{
	int r = 0;

	if (!claim)
		return -EINVAL;
	if (claim->finished)
		return -EALREADY;
	if (claim->in_store)
		r = claim_update(claim, commit_fn, &claim->holder);
	if (r == 0)
		claim->finished = true;
	return r;
}

static int rollback_fn(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	struct prealloc_release_info *info = arg;

	/* The caller's own file stays: only prealloc's own files are removed by settling. */
	s->r[ri].created = false;
	return record_settle(ctx, s, ri, false, info);
}

EXPORT int prealloc_claim_rollback(struct prealloc_claim *claim, uint64_t *ret_returned)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	int r = 0;

	if (ret_returned)
		*ret_returned = 0;
	if (!claim)
		return -EINVAL;
	if (claim->finished)
		return -EALREADY;
	if (claim->in_store)
		r = claim_update(claim, rollback_fn, &info);
	if (ret_returned)
		*ret_returned = info.returned;
	if (r == 0)
		claim->finished = true;
	return r;
}

EXPORT void prealloc_claim_abandon(struct prealloc_claim *claim)
{
	/* The store keeps the record; prealloc gc settles it once we are gone. */
	free(claim);
}

EXPORT void prealloc_claim_free(struct prealloc_claim *claim)
{
	if (!claim)
		return;
	if (!claim->finished)
		prealloc_claim_rollback(claim, NULL);
	free(claim);
}

/* 0.1's names, still exported at PREALLOC_0.1 (docs/abi.md). */
#undef prealloc_reservation_set_owner
#undef prealloc_reservation_commit
#undef prealloc_reservation_rollback
#undef prealloc_reservation_abandon
#undef prealloc_reservation_free
EXPORT_ALIAS(prealloc_reservation_set_owner, prealloc_claim_set_tag);
EXPORT_ALIAS(prealloc_reservation_commit, prealloc_claim_commit);
EXPORT_ALIAS(prealloc_reservation_rollback, prealloc_claim_rollback);
EXPORT_ALIAS(prealloc_reservation_abandon, prealloc_claim_abandon);
EXPORT_ALIAS(prealloc_reservation_free, prealloc_claim_free);
