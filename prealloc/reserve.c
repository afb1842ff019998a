/* SPDX-License-Identifier: MIT */
/*
 * Reservations: the handle prealloc_admit() returns, and the ways a record
 * ends: commit (the pages are faulted and held), rollback and settling
 * (the file goes if prealloc made it, then the growth goes back).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit.h"
#include "hugetlb.h"
#include "statedir.h"

struct prealloc_reservation {
	struct prealloc_ctx *ctx;
	uint64_t id;
	uint64_t page_size;
	bool in_store;		/* hugetlb: a record was written */
	bool finished;		/* committed or rolled back */
	unsigned int lock_timeout_ms;
	struct rec_owner holder; /* kind NONE: the file holds the growth */
};

int record_return_growth(struct prealloc_ctx *ctx, struct store *s, size_t ri, unsigned int k,
			 uint64_t *ret_returned)
{
	struct rec_pool *p = &s->r[ri].pools[k];
	uint64_t free_pages = 0, others, give, returned = 0;
	int r;

	uint64_t nr = 0;

	*ret_returned = 0;
	if (!p->added)
		return 0;
	r = hugetlb_read(ctx, p->node, p->page_size, &nr, &free_pages, NULL);
	if (r < 0)
		return r;
	if (p->growing) {
		/* Its run died around the pool write: the pool says how much it really grew. */
		p->added = MIN(p->added, nr > p->grow_from ? nr - p->grow_from : 0);
		p->growing = false;
		if (!p->added)
			return 0;
	}
	/* Never take pages another run was promised and has not faulted yet. */
	others = store_node_outstanding(ctx, s, p->node, p->page_size, s->r[ri].id);
	give = free_pages > others ? MIN(p->added, free_pages - others) : 0;
	if (!give)
		return 0;
	/*
	 * Write ahead: record the pages as returned before returning them. A
	 * crash in between leaves growth in the pool (an administrator sees
	 * it) rather than a store that would shrink the pool a second time.
	 */
	p->added -= give;
	r = store_save(ctx, s);
	if (r < 0) {
		s->r[ri].pools[k].added += give;
		return r;
	}
	r = hugetlb_shrink(ctx, p->node, p->page_size, give, &returned);
	returned = r < 0 ? 0 : MIN(returned, give);
	if (returned < give) {
		s->r[ri].pools[k].added += give - returned; /* what the kernel kept is still ours */
		store_save(ctx, s);
	}
	*ret_returned = returned;
	return r < 0 ? r : 0;
}

/* Removes the record's file if prealloc made it; the state says so first. */
static int settle_file(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		       bool *ret_removed)
{
	struct record *r = &s->r[ri];
	int where, ret;

	if (!r->has_file || !r->created)
		return 0;	/* adopted (--reuse): its data stays */
	if (r->state == PREALLOC_RECORD_READY && !remove_ready)
		return 0;
	where = record_file_where(r);
	if (where) {
		r->state = PREALLOC_RECORD_RELEASING;
		ret = store_save(ctx, s);
		if (ret < 0)
			return ret;
		if (unlink(where == 1 ? r->path : r->tmp) < 0 && errno != ENOENT)
			return -errno;
		*ret_removed = true;
	}
	/* Gone: a new file at the same path is not ours. */
	r->has_file = false;
	return 0;
}

int record_settle(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		  uint64_t *ret_returned, uint64_t *ret_left, bool *ret_removed)
{
	uint64_t left = 0;
	int r;

	*ret_removed = false;
	r = settle_file(ctx, s, ri, remove_ready, ret_removed);
	if (r < 0)
		return r;
	for (unsigned int k = 0; k < s->r[ri].nr_pools; k++) {
		uint64_t returned = 0;

		r = record_return_growth(ctx, s, ri, k, &returned);
		if (r < 0)
			return r;
		*ret_returned += returned;
		left += s->r[ri].pools[k].added;
	}
	*ret_left += left;
	if (left) {
		/* Pages still in use (mapped or open elsewhere): a later gc gives them back. */
		s->r[ri].state = PREALLOC_RECORD_ORPHAN;
		s->r[ri].owner.kind = PREALLOC_OWNER_NONE;
	} else {
		store_del(s, ri);
	}
	return store_save(ctx, s);
}

void record_commit(struct record *r, const struct rec_owner *holder)
{
	unsigned int n = 0;

	/* A holder's lines stay whole: its claim counts until its guest takes it up. */
	for (unsigned int k = 0; k < r->nr_pools; k++)
		if (r->pools[k].added || (holder && holder->kind == PREALLOC_OWNER_HOLDER &&
					  !r->has_file))
			r->pools[n++] = r->pools[k];
	r->nr_pools = n;
	r->state = PREALLOC_RECORD_READY;
	if (holder && holder->kind == PREALLOC_OWNER_HOLDER)
		r->owner = *holder;
	else
		memset(&r->owner, 0, sizeof(r->owner));
	r->tmp[0] = '\0';
}

/* ---- public: the reservation handle ------------------------------------ */

static void holder_from(const struct prealloc_admit_opts *o, struct rec_owner *h)
{
	memset(h, 0, sizeof(*h));
	if (!o->holder)
		return;
	h->kind = PREALLOC_OWNER_HOLDER;
	snprintf(h->holder, sizeof(h->holder), "%s", o->holder);
	snprintf(h->check, sizeof(h->check), "%s", o->holder_check ? o->holder_check : "");
	h->expires = o->holder_expires;
}

static int admit_hugetlb(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			 struct prealloc_reservation *resv, struct prealloc_admit_result *res)
{
	struct store s;
	struct record *rec;
	int fd = -1, r;

	r = admit_lock_load(ctx, o->lock_timeout_ms, &s, &fd, res);
	if (r < 0)
		return r;
	rec = store_add(&s, resv->id);
	if (!rec) {
		r = -ENOMEM;
		goto out;
	}
	rec->state = PREALLOC_RECORD_PREPARING;
	owner_self(ctx, &rec->owner);
	rec->page_size = o->page_size;
	if (o->owner && o->owner[0] == '/') {
		rec->has_file = true;
		snprintf(rec->path, sizeof(rec->path), "%s", o->owner);
	}
	r = admit_locked(ctx, o, &s, resv->id, res);
	if (r == 0)
		resv->in_store = true;
	if (r < 0 && store_find(&s, resv->id) >= 0) {
		/* Refused: the record goes too (if this save fails, gc finds a dead run's). */
		store_del(&s, (size_t)store_find(&s, resv->id));
		store_save(ctx, &s);
	}
out:
	store_free(&s);
	statedir_unlock(fd);
	return r;
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
	holder_from(&o, &resv->holder);
	res.page_size = o.page_size;
	if (o.page_size == PREALLOC_PAGE_4K)
		r = admit_memory(ctx, &o, &res);
	else
		r = admit_hugetlb(ctx, &o, resv, &res);
	if (r == -EACCES || r == -EPERM || r == -EROFS || r == -EBADMSG)
		res.reason = PREALLOC_ADMIT_ACCESS;
	if (ret_result && ret_result->size >= sizeof(size_t))
		copy_sized_out(ret_result, &res, sizeof(res));
	if (r < 0) {
		free(resv);
		return r;
	}
	*ret_resv = resv;
	return 0;
}

/* Applies fn to the reservation's record under the lock and saves. */
static int resv_update(struct prealloc_reservation *resv,
		       int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg),
		       void *arg)
{
	struct store s;
	long ri;
	int fd = -1, r;

	r = statedir_lock(resv->ctx, resv->lock_timeout_ms, &fd);
	if (r < 0)
		return r;
	r = store_load(resv->ctx, &s);
	if (r == 0) {
		ri = store_find(&s, resv->id);
		r = ri < 0 ? 0 : fn(resv->ctx, &s, (size_t)ri, arg);
		store_free(&s);
	}
	statedir_unlock(fd);
	return r;
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
	struct record *r = &s->r[ri];

	record_commit(r, arg);
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
	uint64_t left = 0;
	bool removed;

	/* The caller's own file stays: only prealloc's own files are removed by settling. */
	s->r[ri].created = false;
	return record_settle(ctx, s, ri, false, arg, &left, &removed);
}

EXPORT int prealloc_reservation_rollback(struct prealloc_reservation *resv, uint64_t *ret_returned)
{
	uint64_t total = 0;
	int r = 0;

	if (ret_returned)
		*ret_returned = 0;
	if (!resv)
		return -EINVAL;
	if (resv->finished)
		return -EALREADY;
	if (resv->in_store)
		r = resv_update(resv, rollback_fn, &total);
	if (ret_returned)
		*ret_returned = total;
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
