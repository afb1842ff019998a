/* SPDX-License-Identifier: MIT */
/*
 * How a record ends. Commit: READY, held by its file or its holder.
 * Settling, once its owner is gone or it is released: the file goes if
 * prealloc made it, then the growth goes back to the pool, as far as free
 * pages nobody else was promised allow (written ahead: the store forgets
 * the pages before they go back). settle_matching settles every record a
 * flow picks (gc, a holder's release) under one lock.
 */
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"

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
 * A descriptor of the record's file by the first of its names, under a
 * write lease: the kernel grants one only while no other open file
 * description of the inode exists (another process's descriptor, a
 * mapping, a descriptor in flight), and breaks it if one is opened while
 * it is held. -EAGAIN: in use (refused, or someone's own lease stops the
 * open); any other error: not provable (fail closed: in use as well).
 * Never a /proc walk: its cost is every other user's processes and
 * descriptors, and this runs under the store's lock.
 */
static int lease_names(const struct record *r, unsigned int names, int *ret_fd)
{
	const char *name = names & RECORD_AT_TMP ? r->tmp : r->path;
	int fd = open(name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC), err;
	struct statx stx;

	if (fd < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	err = file_statx(fd, "", AT_EMPTY_PATH, &stx);
	if (err == 0 && !(r->ino ? record_is_file(r, &stx) : S_ISREG(stx.stx_mode)))
		err = -ESTALE;
	if (err == 0)
		err = file_lease_take(fd);
	if (err < 0) {
		close(fd);
		return err;
	}
	*ret_fd = fd;
	return 0;
}

/* Every page of fd's file let go, to its end as it is now (a holder may have grown it). */
static void punch_all(int fd)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && st.st_size > 0)
		(void)!fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, st.st_size);
}

/*
 * Removes the record's file if prealloc made it, by every name it has
 * (its path, its hidden name); the state says so first. *ret_in_use: its
 * pages do not go back to the pool with the unlink: a write lease held
 * across the unlinks was refused or broken (another process maps or holds
 * it, or opened it meanwhile), or could not be taken at all.
 */
static int settle_file(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		       bool *ret_removed, bool *ret_in_use)
{
	struct record *r = &s->r[ri];
	unsigned int names;
	int ret, fd = -1;

	if (!r->has_file || !r->created)
		return 0;	/* adopted (--reuse): its data stays */
	if (r->state == PREALLOC_RECORD_READY && !remove_ready)
		return 0;
	names = record_file_names(r);
	if (names) {
		*ret_in_use = lease_names(r, names, &fd) < 0;
		ret = record_move(ctx, s, r, PREALLOC_RECORD_RELEASING);
		test_pause("settle-releasing");
		if (ret == 0 && (names & RECORD_AT_PATH))
			ret = unlink_record_file(r, r->path, false);
		if (ret == 0 && (names & RECORD_AT_TMP))
			ret = unlink_record_file(r, r->tmp, !r->ino);
		if (fd >= 0) {
			*ret_in_use |= !file_lease_held(fd);	/* opened meanwhile */
			/*
			 * Nobody else opens or maps it: its pages go now, even
			 * while an O_PATH descriptor (which no lease sees) keeps
			 * the inode, so that the growth given back is free.
			 */
			if (!*ret_in_use)
				punch_all(fd);
			file_lease_drop(fd);
			close(fd);
		}
		if (ret < 0)
			return ret;
		*ret_removed = true;
	} else if (r->ino) {
		/* No name left to lease: in use until a walk of /proc finds it free. */
		*ret_in_use = true;
	}
	/* Gone from its path: a new file there is not ours. dev/ino stay for the file-user check. */
	r->has_file = false;
	return 0;
}

/*
 * A file of ours with no name left (settled before while in use, or
 * removed by hand): only a walk of /proc can say whether its pages are free.
 */
static bool unnamed_file(const struct record *r)
{
	return r->ino && (!r->has_file || (r->created && !record_file_names(r)));
}

/*
 * Record ri's file is free, yet pool k's growth could not all go back: its
 * pages were freed and then taken, before this settle, by a file made from
 * free pages (a cold take, a prepare), whose record counts them as found,
 * not grown. The growth follows the pages: moved to such records (pages
 * beyond their growth), so that it goes back when they do, instead of this
 * record staying, shown, for good. What no record took stays here. A walk
 * of /proc that missed a reference (a pipe's page, a pin) makes this move
 * growth whose pages are still held: the sum of growth is kept, and the
 * record it moved to gives back only pages that are free, so the rest
 * stays recorded with it.
 */
static void growth_follow_pages(struct store *s, size_t ri, unsigned int k)
{
	struct rec_pool *p = &s->r[ri].pools[k];

	for (size_t j = 0; p->added && j < s->nr; j++) {
		struct record *o = &s->r[j];

		if (j == ri || o->state == PREALLOC_RECORD_ORPHAN || !o->has_file)
			continue;
		for (unsigned int m = 0; p->added && m < o->nr_pools; m++) {
			struct rec_pool *q = &o->pools[m];
			uint64_t move;

			if (q->node != p->node || q->page_size != p->page_size || q->pages <= q->added)
				continue;
			move = MIN(p->added, q->pages - q->added);
			q->added += move;
			p->added -= move;
		}
	}
}

static int settle_record(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
			 bool unnamed_free, struct prealloc_release_info *info)
{
	bool in_use = false, removed = false, unnamed = unnamed_file(&s->r[ri]);
	uint64_t left = 0;
	int r;

	r = settle_file(ctx, s, ri, remove_ready, &removed, &in_use);
	info->removed |= removed;
	if (r < 0)
		return r;
	/*
	 * Give back only what the unlink really freed: while a process still
	 * maps or holds the file, its pages stay in use and the growth stays
	 * ORPHAN instead of taking free pages somebody else added. A file
	 * with no name left cannot be leased: only a walk of /proc, done
	 * without the lock, finds it free (unnamed_free).
	 */
	if (unnamed)
		in_use = !unnamed_free;
	for (unsigned int k = 0; k < s->r[ri].nr_pools; k++) {
		uint64_t returned = 0;

		if (!in_use) {
			r = record_return_growth(ctx, s, ri, k, &returned, &info->vanished);
			if (r < 0)
				return r;
		}
		info->returned += returned;
		if (!in_use)
			growth_follow_pages(s, ri, k);
		left += s->r[ri].pools[k].added;
	}
	info->in_use += left;
	if (left) {
		/*
		 * Pages still in use (mapped or open elsewhere): a later gc gives
		 * them back. A warm file's record is never READY (or anything a
		 * take or a target counts) once its file is gone: QUARANTINED,
		 * which the next fill settles again.
		 */
		r = record_move(ctx, NULL, &s->r[ri], PREALLOC_RECORD_ORPHAN);
		if (r < 0)
			return r;
		s->r[ri].owner.kind = PREALLOC_OWNER_NONE;
		if (s->r[ri].warm != WARM_NONE)
			return warm_move(ctx, s, &s->r[ri], PREALLOC_WARM_QUARANTINED);
	} else {
		store_del(s, ri);
	}
	return store_save(ctx, s);
}

int record_settle(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		  struct prealloc_release_info *info)
{
	return settle_record(ctx, s, ri, remove_ready, false, info);
}

int record_settle_as(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool remove_ready,
		     bool unnamed_free, struct prealloc_release_info *info)
{
	return settle_record(ctx, s, ri, remove_ready, unnamed_free, info);
}

/* A record whose file has no name left and whose growth waits on its last user. */
static bool orphaned(const struct record *r)
{
	for (unsigned int k = 0; k < r->nr_pools; k++)
		if (r->pools[k].added)
			return unnamed_file(r);
	return false;
}

/* The orphans no process maps or holds, as a walk of /proc found them. */
struct orphan_walk {
	uint64_t *ids, *inos;
	size_t n;
};

/*
 * The walk, over a snapshot of the store and WITHOUT its lock: its cost is
 * every other user's processes and descriptors. procfs misses what it
 * cannot read, which here costs no isolation, only growth given back while
 * pages are still held, and record_return_growth gives back free pages
 * only. Nothing walked when no record waits.
 */
static int orphans_walk(struct prealloc_ctx *ctx, struct orphan_walk *w)
{
	struct store s;
	int r = store_load(ctx, &s);

	if (r < 0)
		return r;
	w->ids = calloc(s.nr + 1, sizeof(*w->ids));
	w->inos = calloc(s.nr + 1, sizeof(*w->inos));
	for (size_t i = 0; w->ids && w->inos && i < s.nr; i++) {
		unsigned int unreadable;

		if (orphaned(&s.r[i]) && file_user(ctx, s.r[i].dev, s.r[i].ino, 0, &unreadable) == 0) {
			w->ids[w->n] = s.r[i].id;
			w->inos[w->n++] = s.r[i].ino;
		}
	}
	store_free(&s);
	return w->ids && w->inos ? 0 : -ENOMEM;
}

/* Whether r (under the lock) is still as the walk found it free: no name came back, its inode. */
static bool walk_free(const struct orphan_walk *w, const struct record *r)
{
	for (size_t k = 0; k < w->n; k++)
		if (w->ids[k] == r->id)
			return orphaned(r) && w->inos[k] == r->ino;
	return false;
}

static bool pick_orphan(struct prealloc_ctx *ctx, const struct record *r, const void *arg,
			bool *ret_remove_ready)
{
	(void)ctx;
	(void)arg;
	*ret_remove_ready = true;
	return orphaned(r);
}

int settle_orphans(struct prealloc_ctx *ctx, unsigned int timeout_ms,
		   struct prealloc_release_info *info)
{
	unsigned int matched;

	return settle_matching(ctx, timeout_ms, pick_orphan, NULL, info, &matched);
}

int record_commit(struct record *r, const struct rec_owner *owner)
{
	unsigned int n = 0;

	if (!record_move_allowed(r->state, PREALLOC_RECORD_READY))
		return -EINVAL;

	/* A holder's lines stay whole: its claim counts until its guest takes it up. */
	for (unsigned int k = 0; k < r->nr_pools; k++)
		if (r->pools[k].added || (owner && owner->kind == PREALLOC_OWNER_HOLDER &&
					  !r->has_file))
			r->pools[n++] = r->pools[k];
	r->nr_pools = n;
	record_move(NULL, NULL, r, PREALLOC_RECORD_READY);
	if (owner && owner->kind == PREALLOC_OWNER_HOLDER)
		r->owner = *owner;
	else
		memset(&r->owner, 0, sizeof(r->owner));
	r->tmp[0] = '\0';
	return 0;
}

/* What gc removed, said through the log once the lock is released. */
struct removal {
	char what[PATH_MAX + 32];
	bool died;		/* a run that died before its file was ready */
	uint64_t vanished;	/* growth no longer in the pool, settled */
};

/* What settle_matching removed, said once the lock is dropped (the log may call back in). */
static void say_removals(struct prealloc_ctx *ctx, const struct removal *gone, size_t nr)
{
	for (size_t k = 0; k < nr; k++) {
		if (gone[k].vanished)
			ctx_log(ctx, PREALLOC_LOG_WARNING,
				"%s: %llu hugepages it had added were no longer in the pool (taken "
				"back by hand): settled", gone[k].what,
				(unsigned long long)gone[k].vanished);
		else
			ctx_log(ctx, PREALLOC_LOG_INFO, "removed %s: %s", gone[k].what,
				gone[k].died ? "its run died before it was ready" : "released");
	}
}

/*
 * Settles every record pick() selects; counts what went back and the
 * records that left the store (one that stays, ORPHAN with pages in use, is
 * not settled). A record that cannot be settled (say, its pool is gone)
 * does not stop the others: the first error is returned.
 */
int settle_matching(struct prealloc_ctx *ctx, unsigned int timeout_ms, settle_pick_fn pick,
		    const void *arg, struct prealloc_release_info *info, unsigned int *ret_matched)
{
	struct orphan_walk walk = { 0 };
	struct removal *gone = NULL;
	uint64_t *ids = NULL;
	struct store s;
	size_t nr = 0, nr_gone = 0;
	int fd, r, first = 0;

	*ret_matched = 0;
	r = orphans_walk(ctx, &walk);
	if (r == 0)
		r = store_open(ctx, timeout_ms, &s, &fd);
	if (r < 0) {
		free(walk.ids);
		free(walk.inos);
		return r;
	}
	ids = calloc(s.nr + 1, sizeof(*ids));
	gone = calloc(s.nr + 1, sizeof(*gone));
	if (!ids || !gone) {
		first = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s.nr; i++)
		ids[nr++] = s.r[i].id;
	for (size_t k = 0; k < nr; k++) {
		long i = store_find(&s, ids[k]);
		struct prealloc_release_info one = { .size = sizeof(one) };
		bool remove_ready;
		struct removal rm;

		if (i < 0 || !pick(ctx, &s.r[i], arg, &remove_ready))
			continue;
		snprintf(rm.what, sizeof(rm.what), "%s", owner_label(&s.r[i]));
		rm.died = s.r[i].state == PREALLOC_RECORD_PREPARING;
		r = settle_record(ctx, &s, (size_t)i, remove_ready, walk_free(&walk, &s.r[i]), &one);
		if (r < 0 && !first)
			first = r;
		info->removed |= one.removed;
		info->returned += one.returned;
		info->in_use += one.in_use;
		info->vanished += one.vanished;
		if (store_find(&s, ids[k]) < 0)
			(*ret_matched)++;
		rm.vanished = one.vanished;
		if (r == 0 && (one.removed || one.vanished))
			gone[nr_gone++] = rm;
	}
out:
	store_close(&s, fd);
	say_removals(ctx, gone, nr_gone);
	free(gone);
	free(ids);
	free(walk.ids);
	free(walk.inos);
	return first;
}
