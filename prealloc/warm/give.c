/* SPDX-License-Identifier: MIT */
/*
 * A warm file coming back from its holder (docs/warm.md, "States" and "The
 * store's lock"): give, a take undone after its link existed (handover.c),
 * and the pass (a holder gone; a take or a give that died between its steps). Under the
 * store's lock runs only what is the warm pool's own: the record, written
 * ahead (RETURNING, and busy: this process is at it, by pid and start
 * time), and the file by its link in the root-only staging directory.
 * What lies in the holder's world runs with the lock dropped: the removal
 * of its link (a lookup in a directory the holder may control), whether a
 * holder without a name still has its path, whether a named one lives.
 * While a record is busy by a live process nobody else moves it; once that
 * process is gone, the next pass finishes what it left.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

/* r in state, with the same move under way as copy c (busy by the same process, or none). */
static bool still_ours(const struct record *r, const struct record *c, int state)
{
	return r->warm == state && r->busy_pid == c->busy_pid && r->busy_start == c->busy_start;
}

/* Its holder's link could not be taken back: RETURNING still, for the next pass. */
#define LINK_KEPT 1

/*
 * The lock's part of the end: each record of c[0..n) that is still this
 * process's RETURNING file DIRTY or QUARANTINED as check[] says (LINK_KEPT:
 * left RETURNING), busy cleared, one save.
 */
static int returns_record(struct prealloc_ctx *ctx, unsigned int timeout_ms,
			  const struct record *c, const int *check, size_t n,
			  struct warm_returned_count *count)
{
	struct store s;
	int lock, err;

	err = store_open(ctx, timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	for (size_t k = 0; k < n; k++) {
		long i = store_find(&s, c[k].id);
		struct record *r = i >= 0 ? &s.r[i] : NULL;

		if (!r || !still_ours(r, &c[k], PREALLOC_WARM_RETURNING))
			continue;
		record_set_busy(ctx, r, false);
		if (check[k] == LINK_KEPT)
			continue;
		warm_returned(ctx, &s, r, check[k]);
		counter_add(ctx, r->dev, r->warm_node, r->page_size, COUNTER_GIVES, 1);
		count->files++;
		count->in_use += check[k] == -EBUSY;
		count->dirty += r->warm == PREALLOC_WARM_DIRTY;
		count->quarantined += r->warm == PREALLOC_WARM_QUARANTINED;
	}
	err = store_save(ctx, &s);
	store_close(&s, lock);
	return err;
}

int warm_returns_finish(struct prealloc_ctx *ctx, unsigned int timeout_ms, const struct record *c,
			size_t n, bool must, const char *pause, struct warm_returned_count *count)
{
	int *check = calloc(n + 1, sizeof(*check)), err, first = 0;

	if (!check)
		return -ENOMEM;
	/* The holder's link first, then the file seized and checked: no lock held. */
	for (size_t k = 0; k < n; k++) {
		err = warm_unlink_path(&c[k], must);
		check[k] = err < 0 ? LINK_KEPT : 0;
		if (err < 0 && !first)
			first = err;
	}
	if (pause)
		test_pause(pause);
	for (size_t k = 0; k < n; k++) {
		struct record r = c[k];

		if (check[k] == 0)
			check[k] = warm_check(ctx, &r);
	}
	err = returns_record(ctx, timeout_ms, c, check, n, count);
	free(check);
	return first ? first : err;
}

/* ---- the pass: holders gone, takes and gives that died -------------------- */

/* What the pass does with warm record r of a snapshot (no lock held). */
enum handed_fate { KEEP, RETURN, RETURN_IF_FREE };

static enum handed_fate handed_fate(struct prealloc_ctx *ctx, const struct record *r)
{
	struct statx stx;

	if (r->warm != PREALLOC_WARM_HANDED && r->warm != PREALLOC_WARM_RETURNING)
		return KEEP;
	if (r->busy_pid)	/* a take or a give under way: finished once its run died */
		return record_busy(ctx, r) ? KEEP : RETURN;
	if (r->warm == PREALLOC_WARM_RETURNING)
		return RETURN;	/* a give of before busy marks, or one that let go */
	if (r->owner.kind == PREALLOC_OWNER_HOLDER)
		return owner_alive(ctx, &r->owner) ? KEEP : RETURN;
	/* No holder: its path gone, and (under the lock) nothing opens or maps it. */
	if (file_statx(AT_FDCWD, r->path, AT_SYMLINK_NOFOLLOW, &stx) == 0 && record_is_file(r, &stx))
		return KEEP;
	return RETURN_IF_FREE;
}

/*
 * r as the snapshot saw it (seen): the same state, move under way, holder
 * and path, not a file given back, cleared and handed out again since.
 */
static bool as_seen(const struct record *r, const struct record *seen)
{
	return still_ours(r, seen, seen->warm) && r->owner.kind == seen->owner.kind &&
	       !strcmp(r->owner.holder, seen->owner.holder) && !strcmp(r->path, seen->path);
}

/* Under the lock: nothing opens or maps r's file (its lease granted; fail closed). */
static bool handed_unused(struct prealloc_ctx *ctx, const struct record *r)
{
	struct stat st;
	bool used;
	int fd;

	/* Root's first: the holder can take no lease of its own, nor reopen it. */
	warm_seize(r);
	fd = warm_open(r, &st);
	if (fd == -EWOULDBLOCK)
		return false;	/* a lease of the holder's: in use */
	if (fd < 0)
		return true;	/* gone from the warm pool too: settled as returned */
	used = warm_in_use(ctx, r, fd);
	close(fd);
	return !used;
}

/*
 * Under the lock: the records of ids[0..n) (with their fates) still as the
 * snapshot saw them made RETURNING and busy by this process; their copies
 * in c, how many in *ret_n.
 */
static int returns_mark(struct prealloc_ctx *ctx, unsigned int timeout_ms,
			const struct record *snap, const enum handed_fate *fate, size_t n,
			struct record *c, size_t *ret_n)
{
	struct store s;
	int lock, err;

	*ret_n = 0;
	err = store_open(ctx, timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	for (size_t k = 0; k < n; k++) {
		long i = store_find(&s, snap[k].id);
		struct record *r = i >= 0 ? &s.r[i] : NULL;

		if (!r || !as_seen(r, &snap[k]) ||
		    (fate[k] == RETURN_IF_FREE && !handed_unused(ctx, r)))
			continue;
		if (r->warm == PREALLOC_WARM_HANDED) {
			r->tenant[0] = '\0';	/* not given back by its tenant */
			warm_move(ctx, NULL, r, PREALLOC_WARM_RETURNING);
		}
		record_set_busy(ctx, r, true);
		c[*ret_n] = *r;
		c[*ret_n].pools = NULL;	/* the copy does not own them */
		c[(*ret_n)++].nr_pools = 0;
	}
	err = *ret_n ? store_save(ctx, &s) : 0;
	store_close(&s, lock);
	return err;
}

int warm_returns_pass(struct prealloc_ctx *ctx, unsigned int timeout_ms,
		      struct prealloc_warm_fill_info *info)
{
	struct warm_returned_count count = { 0 };
	struct record *snap = NULL, *c = NULL;
	enum handed_fate *fate = NULL;
	size_t n = 0, marked = 0;
	struct store s;
	int err;

	/* Who is gone, decided on a snapshot with no lock held (holders' paths, checks). */
	err = store_load(ctx, &s);
	if (err < 0)
		return err;
	snap = calloc(s.nr + 1, sizeof(*snap));
	c = calloc(s.nr + 1, sizeof(*c));
	fate = calloc(s.nr + 1, sizeof(*fate));
	for (size_t i = 0; snap && c && fate && i < s.nr; i++) {
		enum handed_fate f = handed_fate(ctx, &s.r[i]);

		if (f == KEEP)
			continue;
		fate[n] = f;
		snap[n] = s.r[i];
		snap[n].pools = NULL;
		snap[n++].nr_pools = 0;
	}
	store_free(&s);
	err = !snap || !c || !fate ? -ENOMEM : 0;
	if (err == 0 && n)
		err = returns_mark(ctx, timeout_ms, snap, fate, n, c, &marked);
	if (err == 0 && marked)
		err = warm_returns_finish(ctx, timeout_ms, c, marked, false, NULL, &count);
	info->returned += count.dirty;
	free(fate);
	free(c);
	free(snap);
	return err;
}

/* ---- give ----------------------------------------------------------------- */

/*
 * Whether record r is what the give names: HANDED (and no take or give of
 * another process under way on it), to the holder, or at path and still
 * the file there (stx: the path's file, looked up before the lock, or
 * NULL: none there). -ESTALE: the path is r's, another file is there.
 */
static int give_match(struct prealloc_ctx *ctx, const struct record *r, const char *path,
		      const char *holder, const struct statx *stx)
{
	if (r->warm != PREALLOC_WARM_HANDED || record_busy_elsewhere(ctx, r))
		return 0;
	if (holder)
		return r->owner.kind == PREALLOC_OWNER_HOLDER && !strcmp(r->owner.holder, holder);
	if (strcmp(r->path, path))
		return 0;
	return stx && record_is_file(r, stx) ? 1 : -ESTALE;
}

/*
 * Under the lock: every record the give names made RETURNING (its tenant
 * kept only when the give names the take's) and busy by this process, in
 * one save before any link goes; their copies in c (room for s.nr), how
 * many in *ret_n.
 */
static int give_mark(struct prealloc_ctx *ctx, const struct prealloc_warm_give_opts *o,
		     const struct statx *stx, struct record **ret_c, size_t *ret_n,
		     struct prealloc_warm_give_info *info)
{
	int lock, err, m, first = 0;
	struct store s;

	*ret_n = 0;
	err = store_open(ctx, ADMIT_LOCK_TIMEOUT_MS, &s, &lock);
	if (err < 0)
		return err;
	*ret_c = calloc(s.nr + 1, sizeof(**ret_c));
	for (size_t i = 0; *ret_c && i < s.nr; i++) {
		struct record *r = &s.r[i];

		m = give_match(ctx, r, o->path, o->holder, stx);
		if (m < 0 && !first) {
			first = m;
			snprintf(info->message, sizeof(info->message),
				 stx ? "%s is not the link its take made (another file is there)"
				     : "%s is gone (removed after its take): nothing to give by it; "
				       "warm fill takes the file back once its holder lets go",
				 o->path);
		}
		if (m <= 0)
			continue;
		if (!o->tenant || strcmp(o->tenant, r->tenant))
			r->tenant[0] = '\0';
		warm_move(ctx, NULL, r, PREALLOC_WARM_RETURNING);
		record_set_busy(ctx, r, true);
		(*ret_c)[*ret_n] = *r;
		(*ret_c)[*ret_n].pools = NULL;	/* the copy does not own them */
		(*ret_c)[(*ret_n)++].nr_pools = 0;
	}
	err = !*ret_c ? -ENOMEM : *ret_n ? store_save(ctx, &s) : 0;
	store_close(&s, lock);
	if (err < 0)
		*ret_n = 0;
	return err < 0 ? err : first;
}

EXPORT int prealloc_warm_give_with(struct prealloc_ctx *ctx,
				   const struct prealloc_warm_give_opts *opts,
				   struct prealloc_warm_give_info *ret_info)
{
	struct prealloc_warm_give_info info = { .size = sizeof(info) };
	struct prealloc_warm_give_opts o = { .size = sizeof(o) };
	struct warm_returned_count count = { 0 };
	struct record *c = NULL;
	struct statx stx;
	bool there = false;
	int r, first;
	size_t n = 0;

	if (!ctx || !opts || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	r = copy_sized_in(&o, sizeof(o), opts);
	if (r < 0)
		return r;
	if ((!o.path) == (!o.holder) || (o.path && o.path[0] != '/') || o.flags ||
	    (o.tenant && !tenant_valid(o.tenant)))
		return -EINVAL;
	/* By path: the file there, looked up before the lock (the holder's directory). */
	there = o.path && file_statx(AT_FDCWD, o.path, AT_SYMLINK_NOFOLLOW, &stx) == 0;
	first = give_mark(ctx, &o, there ? &stx : NULL, &c, &n, &info);
	test_pause("warm-give-recorded");
	if (n) {
		/* The holders' links and the checks with the lock dropped, then DIRTY or QUARANTINED. */
		r = warm_returns_finish(ctx, ADMIT_LOCK_TIMEOUT_MS, c, n, o.path != NULL,
					"warm-give-unlinked", &count);
		if (r < 0 && !first) {
			first = r;
			snprintf(info.message, sizeof(info.message), "cannot give back %.400s: %s",
				 o.path ? o.path : o.holder, strerror(-r));
		}
	}
	free(c);
	info.files = count.files;
	info.returning = count.in_use;
	info.quarantined = count.quarantined;
	if (first == -ETIMEDOUT || first == -ENOMEM)
		snprintf(info.message, sizeof(info.message), "cannot give back: %s", strerror(-first));
	if (!first && !n) {
		first = -ENOENT;
		snprintf(info.message, sizeof(info.message), "%s%s holds no warm file",
			 o.path ? o.path : "holder ", o.path ? "" : o.holder);
	}
	if (ret_info)
		copy_sized_out(ret_info, &info, sizeof(info));
	return first;
}

EXPORT int prealloc_warm_give(struct prealloc_ctx *ctx, const char *path, const char *holder,
			      struct prealloc_warm_give_info *ret_info)
{
	struct prealloc_warm_give_opts o = { .size = sizeof(o), .path = path, .holder = holder };

	return prealloc_warm_give_with(ctx, &o, ret_info);
}
