/* SPDX-License-Identifier: MIT */
/*
 * Reservations: the handle prealloc_admit() returns, its owner, commit and
 * rollback (the record's end itself is settle.c's).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"

struct prealloc_reservation {
	struct prealloc_ctx *ctx;
	uint64_t id;
	uint64_t page_size;
	bool in_store;		/* a record was written */
	bool finished;		/* committed or rolled back */
	unsigned int lock_timeout_ms;
	struct rec_owner holder; /* kind NONE: the file holds the growth */
};

struct resv_new {
	const struct prealloc_admit_opts *o;
	struct prealloc_reservation *resv;
};

static int resv_make(struct prealloc_ctx *ctx, struct store *s, void *arg)
{
	const struct resv_new *n = arg;
	struct record *rec = record_begin(s, n->resv->id);
	const char *owner = n->o->owner;

	if (!rec)
		return -ENOMEM;
	owner_self(ctx, &rec->owner);
	rec->page_size = n->o->page_size;
	if (owner && owner[0] == '/') {
		struct stat st;

		rec->has_file = true;
		snprintf(rec->path, sizeof(rec->path), "%s", owner);
		/* Known by identity when it exists already (set_owner names it later otherwise). */
		if (stat(owner, &st) == 0 && S_ISREG(st.st_mode)) {
			rec->dev = (uint64_t)st.st_dev;
			rec->ino = (uint64_t)st.st_ino;
			rec->size = (uint64_t)st.st_size;
		}
	}
	return 0;
}

static int resv_admitted(struct prealloc_ctx *ctx, struct store *s, void *arg)
{
	struct resv_new *n = arg;

	(void)ctx;
	(void)s;
	n->resv->in_store = true;
	return 0;
}

static int admit_record(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			struct prealloc_reservation *resv, struct prealloc_admit_result *res)
{
	static const struct admit_new_ops ops = { .make = resv_make, .admitted = resv_admitted };
	struct resv_new n = { .o = o, .resv = resv };

	return admit_new(ctx, o, resv->id, &ops, &n, res);
}

EXPORT int prealloc_admit(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *opts,
			  struct prealloc_reservation **ret_resv,
			  struct prealloc_admit_result *ret_result)
{
	struct prealloc_admit_result res = { .size = sizeof(res), .node = -1 };
	struct prealloc_admit_opts o;
	struct prealloc_reservation *resv;
	int r;

	if (!ctx || !opts || !ret_resv)
		return -EINVAL;
	r = admit_check_opts(ctx, opts, &o);
	if (r < 0)
		return r;
	resv = calloc(1, sizeof(*resv));
	if (!resv)
		return -ENOMEM;
	resv->ctx = ctx;
	resv->id = record_new_id();
	resv->page_size = o.page_size;
	resv->lock_timeout_ms = o.lock_timeout_ms;
	if (o.holder)
		owner_holder(&resv->holder, o.holder, o.holder_check, o.holder_expires);
	res.page_size = o.page_size;
	r = admit_record(ctx, &o, resv, &res);
	if (r < 0)
		res.reason = admit_reason(r, res.reason);
	if (ret_result && ret_result->size >= sizeof(size_t))
		copy_sized_out(ret_result, &res, sizeof(res));
	if (r < 0) {
		free(resv);
		return r;
	}
	*ret_resv = resv;
	return 0;
}

/* Applies fn to the reservation's record under the lock (fn saves); no record: nothing to do. */
static int resv_update(struct prealloc_reservation *resv,
		       int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg),
		       void *arg)
{
	int r = store_update(resv->ctx, resv->lock_timeout_ms, resv->id, fn, arg);

	return r == -ENOENT ? 0 : r;
}

static int set_owner_fn(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	const char *owner = arg;
	struct record *r = &s->r[ri];
	char abs[PATH_MAX];
	struct stat st;

	snprintf(r->path, sizeof(r->path), "%s", owner);
	r->has_file = owner[0] == '/';
	/* A file is known by its identity too, so a reused path is not mistaken for it. */
	if (stat(owner, &st) == 0 && S_ISREG(st.st_mode) && realpath(owner, abs)) {
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

EXPORT int prealloc_reservation_set_owner(struct prealloc_reservation *resv, const char *owner)
{
	if (!resv || !owner || !*owner || strchr(owner, '\n') || strlen(owner) >= PATH_MAX)
		return -EINVAL;
	if (!resv->in_store)
		return 0;
	return resv_update(resv, set_owner_fn, (void *)owner);
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

EXPORT int prealloc_reservation_commit(struct prealloc_reservation *resv)
{
	int r = 0;

	if (!resv)
		return -EINVAL;
	if (resv->finished)
		return -EALREADY;
	if (resv->in_store)
		r = resv_update(resv, commit_fn, &resv->holder);
	if (r == 0)
		resv->finished = true;
	return r;
}

static int rollback_fn(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg)
{
	struct prealloc_release_info *info = arg;

	/* The caller's own file stays: only prealloc's own files are removed by settling. */
	s->r[ri].created = false;
	return record_settle(ctx, s, ri, false, info);
}

EXPORT int prealloc_reservation_rollback(struct prealloc_reservation *resv, uint64_t *ret_returned)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	int r = 0;

	if (ret_returned)
		*ret_returned = 0;
	if (!resv)
		return -EINVAL;
	if (resv->finished)
		return -EALREADY;
	if (resv->in_store)
		r = resv_update(resv, rollback_fn, &info);
	if (ret_returned)
		*ret_returned = info.returned;
	if (r == 0)
		resv->finished = true;
	return r;
}

EXPORT void prealloc_reservation_abandon(struct prealloc_reservation *resv)
{
	/* The store keeps the record; pool --gc settles it once we are gone. */
	free(resv);
}

EXPORT void prealloc_reservation_free(struct prealloc_reservation *resv)
{
	if (!resv)
		return;
	if (!resv->finished)
		prealloc_reservation_rollback(resv, NULL);
	free(resv);
}
