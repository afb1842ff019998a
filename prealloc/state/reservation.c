/* SPDX-License-Identifier: MIT */
/*
 * Reservations: the handle prealloc_admit() returns, and the ways a record
 * ends: commit (the pages are faulted and held), rollback and settling
 * (the file goes if prealloc made it, then the growth goes back).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admit.h"
#include "file_users.h"
#include "hugetlb.h"
#include "statedir.h"

struct prealloc_reservation {
	struct prealloc_ctx *ctx;
	uint64_t id;
	uint64_t page_size;
	bool in_store;		/* a record was written */
	bool finished;		/* committed or rolled back */
	unsigned int lock_timeout_ms;
	struct rec_owner holder; /* kind NONE: the file holds the growth */
};

/* Growth the other records say they added to the pool of p's node and size. */
static uint64_t others_added(const struct store *s, size_t ri, const struct rec_pool *p)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < s->nr; i++)
		for (unsigned int k = 0; i != ri && k < s->r[i].nr_pools; k++)
			if (s->r[i].pools[k].node == p->node &&
			    s->r[i].pools[k].page_size == p->page_size)
				sum += s->r[i].pools[k].added;
	return sum;
}

int record_return_growth(struct prealloc_ctx *ctx, struct store *s, size_t ri, unsigned int k,
			 uint64_t *ret_returned, uint64_t *ret_vanished)
{
	struct rec_pool *p = &s->r[ri].pools[k];
	uint64_t total = 0, free_pages = 0, others, held, give, returned = 0;
	int r;

	*ret_returned = 0;
	if (!p->added)
		return 0;
	r = hugetlb_read(ctx, p->node, p->page_size, &total, &free_pages, NULL);
	if (r < 0)
		return r;
	/*
	 * Growth the pool no longer has: an administrator wrote nr_hugepages
	 * down by hand. What this record claims beyond the pool less the other
	 * records' growth can never come back: it is settled, and said so.
	 */
	others = others_added(s, ri, p);
	held = total > others ? total - others : 0;
	if (p->added > held) {
		*ret_vanished += p->added - held;
		p->added = held;
		r = store_save(ctx, s);
		if (r < 0 || !p->added)
			return r;
	}
	/*
	 * A share still marked growing was settled by store_open() before we
	 * got here. Never take pages another run was promised and has not
	 * faulted yet.
	 */
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

/*
 * Unlinks path, if it is still the record's file, through a descriptor of
 * its directory: the directory cannot be swapped under us between the
 * check and the unlink. by_name: the file was never known by identity; its
 * name (the record's hidden name) is.
 */
static int unlink_record_file(const struct record *r, const char *path, bool by_name)
{
	char dir[PATH_MAX];
	const char *base = strrchr(path, '/');
	struct statx stx;
	int dfd, ret;

	if (!base || (size_t)(base - path) >= sizeof(dir))
		return -EINVAL;
	snprintf(dir, sizeof(dir), "%.*s", base == path ? 1 : (int)(base - path), path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	ret = file_statx(dfd, base + 1, 0, &stx);
	if (ret == 0 && (by_name ? S_ISREG(stx.stx_mode) : record_is_file(r, &stx)) &&
	    unlinkat(dfd, base + 1, 0) < 0)
		ret = -errno;
	close(dfd);
	return ret == -ENOENT ? 0 : ret;
}

/*
 * Removes the record's file if prealloc made it, by every name it has
 * (its path, its hidden name); the state says so first. *ret_in_use: a
 * process still maps or holds it, so its pages do not go back to the pool
 * with the unlink.
 */
static int settle_file(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		       bool *ret_removed, bool *ret_in_use)
{
	struct record *r = &s->r[ri];
	unsigned int unreadable, names;
	int ret;

	if (!r->has_file || !r->created)
		return 0;	/* adopted (--reuse): its data stays */
	if (r->state == PREALLOC_RECORD_READY && !remove_ready)
		return 0;
	names = record_file_names(r);
	if (names) {
		*ret_in_use = r->ino && file_user(ctx, r->dev, r->ino, 0, &unreadable) != 0;
		r->state = PREALLOC_RECORD_RELEASING;
		ret = store_save(ctx, s);
		if (ret < 0)
			return ret;
		if (names & RECORD_AT_PATH) {
			ret = unlink_record_file(r, r->path, false);
			if (ret < 0)
				return ret;
		}
		if (names & RECORD_AT_TMP) {
			ret = unlink_record_file(r, r->tmp, !r->ino);
			if (ret < 0)
				return ret;
		}
		*ret_removed = true;
	}
	/* Gone from its path: a new file there is not ours. dev/ino stay for the file-user check. */
	r->has_file = false;
	return 0;
}

/* An unlinked file of ours that a process still maps or holds: its pages are not free. */
static bool inode_in_use(const struct prealloc_ctx *ctx, const struct record *r)
{
	unsigned int unreadable;

	return !r->has_file && r->ino && file_user(ctx, r->dev, r->ino, 0, &unreadable) != 0;
}

int record_settle(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		  struct prealloc_release_info *info)
{
	bool in_use = false, removed = false;
	uint64_t left = 0;
	int r;

	r = settle_file(ctx, s, ri, remove_ready, &removed, &in_use);
	info->removed |= removed;
	if (r < 0)
		return r;
	/*
	 * Give back only what the unlink really freed: while a process still
	 * maps or holds the file, its pages stay in use and the growth stays
	 * ORPHAN for a later gc (which asks /proc again), instead of taking
	 * free pages somebody else added.
	 */
	in_use = in_use || inode_in_use(ctx, &s->r[ri]);
	for (unsigned int k = 0; k < s->r[ri].nr_pools; k++) {
		uint64_t returned = 0;

		if (!in_use) {
			r = record_return_growth(ctx, s, ri, k, &returned, &info->vanished);
			if (r < 0)
				return r;
		}
		info->returned += returned;
		left += s->r[ri].pools[k].added;
	}
	info->in_use += left;
	if (left) {
		/* Pages still in use (mapped or open elsewhere): a later gc gives them back. */
		s->r[ri].state = PREALLOC_RECORD_ORPHAN;
		s->r[ri].owner.kind = PREALLOC_OWNER_NONE;
	} else {
		store_del(s, ri);
	}
	return store_save(ctx, s);
}

void record_commit(struct record *r, const struct rec_owner *owner)
{
	unsigned int n = 0;

	/* A holder's lines stay whole: its claim counts until its guest takes it up. */
	for (unsigned int k = 0; k < r->nr_pools; k++)
		if (r->pools[k].added || (owner && owner->kind == PREALLOC_OWNER_HOLDER &&
					  !r->has_file))
			r->pools[n++] = r->pools[k];
	r->nr_pools = n;
	r->state = PREALLOC_RECORD_READY;
	if (owner && owner->kind == PREALLOC_OWNER_HOLDER)
		r->owner = *owner;
	else
		memset(&r->owner, 0, sizeof(r->owner));
	r->tmp[0] = '\0';
}

/* ---- public: the reservation handle ------------------------------------ */

static int admit_record(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			struct prealloc_reservation *resv, struct prealloc_admit_result *res)
{
	struct store s;
	struct record *rec;
	int fd = -1, r;

	r = admit_lock_load(ctx, o, &s, &fd, res);
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
		struct stat st;

		rec->has_file = true;
		snprintf(rec->path, sizeof(rec->path), "%s", o->owner);
		/* Known by identity when it exists already (set_owner names it later otherwise). */
		if (stat(o->owner, &st) == 0 && S_ISREG(st.st_mode)) {
			rec->dev = (uint64_t)st.st_dev;
			rec->ino = (uint64_t)st.st_ino;
			rec->size = (uint64_t)st.st_size;
		}
	}
	r = admit_locked(ctx, o, &s, resv->id, res);
	if (r == 0)
		resv->in_store = true;
	if (r < 0)
		admit_forget(ctx, &s, resv->id);
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
	record_commit(r, owner);
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
