/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's hand-over (docs/warm.md): take links a READY file at a
 * holder's path (give.c takes it back); find says which file a take would
 * get, by the take's own pick, changing nothing. A take writes HANDED
 * before the step it names, so that a run killed at any instruction leaves
 * the file in a state that is never READY unless the file is: a file at a
 * holder's path is HANDED, and busy by the take's process, before the link
 * exists. The link itself is made with the store's lock dropped (the
 * holder's directory is the holder's to make slow): a take that dies
 * there is given back by the next pass (give.c).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "warm.h"

/* ---- take ----------------------------------------------------------------- */

/* A failed take's why, in info->message (pick.c's warm_fail). */
#define take_fail(info, err, ...) \
	warm_fail((info)->message, sizeof((info)->message), err, __VA_ARGS__)

/*
 * The warm pool's link of r opened for a take, checked to be r's file with no
 * other link and of the size its record says; else r is QUARANTINED (gone,
 * replaced, linked elsewhere, resized: never handed out as what it is not)
 * and -EMLINK tells the caller to try the next one.
 */
static int take_open(struct prealloc_ctx *ctx, struct store *s, struct record *r,
		     struct stat *ret_st, struct prealloc_warm_take_info *info)
{
	int fd = warm_open(r, ret_st);
	const char *why = fd < 0 ? strerror(-fd) : "another link";

	if (fd >= 0 && ret_st->st_nlink == 1 && (uint64_t)ret_st->st_size == r->size)
		return fd;
	if (fd >= 0 && ret_st->st_nlink == 1)
		why = "its size is not its record's";
	if (fd >= 0)
		close(fd);
	warm_quarantine(ctx, s, r, why);
	/* Never picked again and again. */
	if (r->warm != PREALLOC_WARM_QUARANTINED || store_save(ctx, s) < 0)
		return take_fail(info, -EINVAL, "warm file %s cannot be quarantined", r->tmp);
	return take_fail(info, -EMLINK, "warm file %s is not the pool's alone (%s): quarantined",
			 r->tmp, why);
}

/* A take under way between its steps under the lock and its link outside it. */
struct take_run {
	struct record c;	/* the record as written HANDED (no pools), its size once cut */
	int fd;			/* the file, for the caller */
	struct stat st;		/* as take_open found it */
	char tenant_was[TENANT_MAX];
	bool link;		/* a link to make at the holder's path, the lock dropped */
};

/*
 * Under the lock, a take that failed before its link existed: the file as
 * it was, root's again, READY (or its holder's reservation: reserved),
 * with the size it has now. fd is closed.
 */
static void take_undo(struct prealloc_ctx *ctx, struct store *s, struct record *r, int fd,
		      const char *tenant_was, bool reserved)
{
	(void)!fchown(fd, 0, 0);
	close(fd);
	r->path[0] = '\0';
	r->has_uid = false;
	record_set_busy(ctx, r, false);
	/* Its tenant as it was: a tenant's file stays its. */
	memcpy(r->tenant, tenant_was, sizeof(r->tenant));
	if (!reserved) {
		memset(&r->owner, 0, sizeof(r->owner));
		warm_move_back(ctx, NULL, r, PREALLOC_WARM_READY);
	}
	store_save(ctx, s);
}

/*
 * r's file (st: as take_open found it) linked as base in dir, and seen
 * there: -ESTALE when another file took the name at once (that name is not
 * ours to remove). *ret_linked says whether base is ours to unlink,
 * *ret_exposed whether a link at the holder's path existed at all.
 */
static int take_link(const struct stat *st, const char *tmp, int dir, const char *base,
		     bool *ret_linked, bool *ret_exposed)
{
	struct stat there;

	*ret_linked = false;
	if (linkat(AT_FDCWD, tmp, dir, base, 0) < 0)
		return -errno;
	*ret_exposed = true;
	test_pause("warm-take-linked");
	if (fstatat(dir, base, &there, AT_SYMLINK_NOFOLLOW) < 0 || there.st_ino != st->st_ino ||
	    there.st_dev != st->st_dev)
		return -ESTALE;
	*ret_linked = true;
	return 0;
}

/*
 * A partial hit's growth, admitted as a prepare's pages are: the node's
 * free hugepages less those other runs were promised and have not faulted
 * yet must hold it; else -ENOMEM with why. (4K: the kernel's memory, as
 * the populate itself finds it.)
 */
static int grow_admitted(struct prealloc_ctx *ctx, const struct store *s, const struct record *r,
			 uint64_t length, struct prealloc_warm_take_info *info)
{
	uint64_t need = (length - r->size) / r->page_size, free_pages = 0, promised;

	if (r->page_size == PREALLOC_PAGE_4K)
		return 0;
	if (hugetlb_read(ctx, r->warm_node, r->page_size, NULL, &free_pages, NULL) < 0)
		free_pages = 0;
	promised = store_node_outstanding(ctx, s, r->warm_node, r->page_size, r->id);
	if (free_pages >= promised + need)
		return 0;
	return take_fail(info, -ENOMEM, "growing warm file %llu needs %llu %s pages on node %d, "
			 "which has %llu free, %llu of them promised to other runs",
			 (unsigned long long)r->id, (unsigned long long)need,
			 prealloc_page_name(r->page_size), r->warm_node,
			 (unsigned long long)free_pages, (unsigned long long)promised);
}

/* run's copy of r, taken once the lock's steps are done. */
static void take_keep(struct take_run *run, const struct record *r, int fd, bool link)
{
	run->c = *r;
	run->c.pools = NULL;	/* the copy does not own them */
	run->c.nr_pools = 0;
	run->fd = fd;
	run->link = link;
}

/*
 * Under the lock, record ri's file handed to the caller: HANDED written
 * first (with its path, tenant, owner, uid, and busy: this process links
 * it once the lock is dropped), then its owner, its size; RESERVE ends
 * here. On failure: take_undo.
 */
static int take_file(struct prealloc_ctx *ctx, struct store *s, size_t ri,
		     const struct prealloc_warm_take_opts *o, struct prealloc_warm_take_info *info,
		     struct take_run *run)
{
	struct record *r = &s->r[ri];
	bool reserve = o->flags & PREALLOC_WARM_TAKE_RESERVE;
	bool chown_to = !reserve && (o->flags & PREALLOC_WARM_TAKE_CHOWN);
	int fd, err;

	info->message[0] = '\0';	/* an earlier file's quarantine is not this one's failure */
	fd = take_open(ctx, s, r, &run->st, info);
	if (fd < 0)
		return fd;
	info->file_bytes = r->size;
	snprintf(r->path, sizeof(r->path), "%s", reserve ? "" : o->path);
	/* A fresh file becomes the taker's tenant's; one cleared for a tenant stays its. */
	snprintf(run->tenant_was, sizeof(run->tenant_was), "%s", r->tenant);
	if (!r->tenant[0] && o->tenant)
		snprintf(r->tenant, sizeof(r->tenant), "%s", o->tenant);
	if (o->holder)
		owner_holder(&r->owner, o->holder, o->holder_check, o->holder_expires);
	r->has_uid = chown_to;
	r->uid = chown_to ? o->uid : 0;
	r->gid = chown_to ? o->gid : 0;
	record_set_busy(ctx, r, !reserve);
	err = warm_move(ctx, s, r, PREALLOC_WARM_HANDED);	/* with all of the above */
	test_pause("warm-take-recorded");
	if (err == 0 && chown_to && fchown(fd, o->uid, o->gid) < 0)
		err = -errno;
	if (err == 0 && r->size > o->length && ftruncate(fd, (off_t)o->length) < 0)
		err = -errno;
	if (err == 0 && r->size > o->length)
		r->size = o->length;
	if (err == 0 && r->size < o->length)
		err = grow_admitted(ctx, s, r, o->length, info);
	if (err == 0 && r->size < o->length)
		err = warm_grow(ctx, r, fd, o->length);
	/*
	 * The size, after a cut or a growth, saved before the lock goes: a take
	 * killed before its link leaves a record of the file's size, never one
	 * the status under-counts (only a kill inside the growth does, busy).
	 */
	if (err == 0 && (reserve || r->size != info->file_bytes))
		err = store_save(ctx, s);
	if (err < 0) {
		take_undo(ctx, s, r, fd, run->tenant_was, false);
		/* The growth's refusal says it best. */
		return info->message[0] ? err
					: take_fail(info, err, "cannot hand over the warm file at %s: %s",
						    o->path ? o->path : "(reserved)", strerror(-err));
	}
	take_keep(run, r, fd, !reserve);
	return 0;
}

/*
 * Under the lock, RESERVED: the holder's reserved file, its path written
 * (HANDED there, as a take writes it, and busy), then its owner; the
 * link follows with the lock dropped.
 */
static int take_reserved(struct prealloc_ctx *ctx, struct store *s, size_t ri,
			 const struct prealloc_warm_take_opts *o,
			 struct prealloc_warm_take_info *info, struct take_run *run)
{
	struct record *r = &s->r[ri];
	bool chown_to = o->flags & PREALLOC_WARM_TAKE_CHOWN;
	int fd = take_open(ctx, s, r, &run->st, info), err;

	if (fd < 0)
		return fd;
	info->file_bytes = r->size;
	snprintf(r->path, sizeof(r->path), "%s", o->path);
	snprintf(run->tenant_was, sizeof(run->tenant_was), "%s", r->tenant);
	r->has_uid = chown_to;
	r->uid = chown_to ? o->uid : 0;
	r->gid = chown_to ? o->gid : 0;
	record_set_busy(ctx, r, true);
	err = store_save(ctx, s);
	test_pause("warm-take-recorded");
	if (err == 0 && chown_to && fchown(fd, o->uid, o->gid) < 0)
		err = -errno;
	if (err < 0) {
		take_undo(ctx, s, r, fd, run->tenant_was, true);
		return take_fail(info, err, "cannot link the reserved warm file at %s: %s", o->path,
				 strerror(-err));
	}
	take_keep(run, r, fd, true);
	return 0;
}

/* Under the lock: the best READY file handed over (quarantined ones skipped). */
static int take_locked(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o,
		       uint64_t dev, struct prealloc_warm_take_info *info, struct take_run *run)
{
	struct store s;
	int lock = -1, r;
	long ri;

	r = store_open(ctx, o->lock_timeout_ms ? o->lock_timeout_ms : ADMIT_LOCK_TIMEOUT_MS, &s,
		       &lock);
	if (r == 0)	/* a withdrawn declaration's in-place files: not handed out */
		r = warm_declared_check(ctx, &s, o, dev, true);
	while (r == 0) {
		ri = warm_policy_of(ctx)->pick(&s, o, dev, NULL);
		if (ri < 0) {
			r = warm_pick_miss(o, info->message, sizeof(info->message));
			break;
		}
		r = (o->flags & PREALLOC_WARM_TAKE_RESERVED)
			    ? take_reserved(ctx, &s, (size_t)ri, o, info, run)
			    : take_file(ctx, &s, (size_t)ri, o, info, run);
		if (r == -EMLINK)
			r = 0;	/* quarantined: the next one */
		else
			break;
	}
	if (lock >= 0)
		store_close(&s, lock);
	return r;
}

/*
 * Under the lock again, after the link (err: how it went): the take done
 * (busy cleared, the size after a cut); or undone before the link existed,
 * as take_undo; or (exposed: the holder may have opened it meanwhile)
 * RETURNING written, for take_link_end to give it back. 0, or the failure.
 */
static int take_end(struct prealloc_ctx *ctx, unsigned int timeout, struct take_run *run, int err,
		    bool exposed, bool reserved)
{
	struct record *r;
	struct store s;
	int lock, r_;
	long i;

	r_ = store_open(ctx, timeout, &s, &lock);
	if (r_ < 0)
		return err ? err : r_;	/* busy by this process still: its end is the next pass's */
	i = store_find(&s, run->c.id);
	r = i >= 0 ? &s.r[i] : NULL;
	if (!r || r->warm != PREALLOC_WARM_HANDED || r->busy_pid != run->c.busy_pid ||
	    r->busy_start != run->c.busy_start) {
		err = err ? err : -ESTALE;	/* not this take's any more: nothing to write */
	} else if (err == 0) {
		r->size = run->c.size;
		record_set_busy(ctx, r, false);
		err = store_save(ctx, &s);
	} else if (!exposed) {
		r->size = run->c.size;
		take_undo(ctx, &s, r, run->fd, run->tenant_was, reserved);
		run->fd = -1;
	} else {
		r->tenant[0] = '\0';
		r->has_uid = false;
		r_ = warm_move(ctx, &s, r, PREALLOC_WARM_RETURNING);
		run->c = *r;
		run->c.pools = NULL;
		run->c.nr_pools = 0;
		run->link = r_ == 0;	/* RETURNING written: the link may go */
	}
	store_close(&s, lock);
	return err;
}

/*
 * The link at the holder's path, the lock dropped (a directory the holder
 * may control: dir, opened by warm_take_check), then take_end. A failure
 * after the link existed gives the file back as give does: RETURNING
 * written, the link taken back if still this file's, then DIRTY or
 * QUARANTINED, never READY as it is.
 */
static int take_link_end(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o,
			 int dir, struct take_run *run, struct prealloc_warm_take_info *info)
{
	unsigned int timeout = o->lock_timeout_ms ? o->lock_timeout_ms : ADMIT_LOCK_TIMEOUT_MS;
	struct warm_returned_count count = { 0 };
	const char *base = strrchr(o->path, '/') + 1;
	bool linked = false, exposed = false;
	struct stat there;
	int err;

	err = take_link(&run->st, run->c.tmp, dir, base, &linked, &exposed);
	if (err == 0)
		err = take_end(ctx, timeout, run, 0, false, false);
	if (err == 0)
		return 0;
	run->link = false;
	take_end(ctx, timeout, run, err, exposed, (o->flags & PREALLOC_WARM_TAKE_RESERVED) != 0);
	if (run->link) {
		if (linked && fstatat(dir, base, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
		    there.st_ino == run->st.st_ino && there.st_dev == run->st.st_dev)
			unlinkat(dir, base, 0);
		run->c.path[0] = '\0';	/* taken back above, by the directory opened */
		warm_returns_finish(ctx, timeout, &run->c, 1, false, NULL, &count);
	}
	if (run->fd >= 0)
		close(run->fd);
	run->fd = -1;
	if (!info->message[0])
		take_fail(info, err, "cannot hand over the warm file at %s: %s", o->path,
			  strerror(-err));
	return err;
}

/* The take: its steps under the lock, then (a path to link) its link. */
static int take_hand(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o,
		     uint64_t dev, int dir, struct prealloc_warm_take_info *info)
{
	struct take_run run = { .fd = -1 };
	int r = take_locked(ctx, o, dev, info, &run);

	if (r == 0 && run.link)
		r = take_link_end(ctx, o, dir, &run, info);
	if (r == 0) {
		info->fd = run.fd;
		info->id = run.c.id;
	}
	return r;
}

/*
 * Whether a take's end (r) is counted: one start, one count, whichever
 * front end. A request refused by its check, or a path that exists, is the
 * caller's error, not a take. A front end reserves (RESERVE) and then
 * links (RESERVED): the reserve counts what it found (full, cut, partial,
 * cold) and the link counts only its failure (a miss: no file was
 * reserved, the start is cold; or a refusal), so that a warm start counts
 * one hit and a cold one one miss.
 */
static bool take_counted(const struct prealloc_warm_take_opts *o, bool checked, int r)
{
	if (!checked || r == -EEXIST)
		return false;
	if (o->flags & PREALLOC_WARM_TAKE_RESERVE)
		return r == 0;
	if (o->flags & PREALLOC_WARM_TAKE_RESERVED)
		return r < 0;
	return true;
}

EXPORT int prealloc_warm_take(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *opts,
			      struct prealloc_warm_take_info *ret_info)
{
	struct prealloc_warm_take_info info = { .size = sizeof(info), .fd = -1 };
	struct prealloc_warm_take_opts o = { .size = sizeof(o) };
	double t0 = now_seconds();
	int dir = -1, r, hit = PREALLOC_WARM_HIT;
	uint64_t dev = 0;
	bool checked;

	if (!ctx || !opts || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	r = copy_sized_in(&o, sizeof(o), opts);
	if (r == 0)
		r = warm_take_check(ctx, &o, info.message, sizeof(info.message), &dev, &dir);
	checked = r == 0;
	if (r == 0)
		r = take_hand(ctx, &o, dev, dir, &info);
	/* FALLBACK: a file made now, populated and proven zero as fill would, then taken. */
	if (r == -ENOENT && (o.flags & PREALLOC_WARM_TAKE_FALLBACK)) {
		hit = PREALLOC_WARM_COLD;
		r = warm_create(ctx, o.node, o.page_size, warm_mount(ctx, o.mount, o.page_size),
				o.length, &(struct warm_pace){ .stop_fd = -1 }, info.message,
				sizeof(info.message), NULL, NULL);
		if (r == 0)
			r = take_hand(ctx, &o, dev, dir, &info);
	}
	if (dir >= 0)
		close(dir);
	if (r == 0) {
		info.message[0] = '\0';
		info.hit = hit == PREALLOC_WARM_COLD ? hit : warm_hit_of(info.file_bytes, o.length);
		info.seconds = now_seconds() - t0;
		snprintf(info.path, sizeof(info.path), "%s", o.path ? o.path : "");
		warm_take_shared(ctx, &o, &info);	/* holders of one uid: said, not parted */
	}
	if (take_counted(&o, checked, r))
		counter_take(ctx, dev, o.node, o.page_size, r, info.hit, info.seconds);
	if (ret_info)
		copy_sized_out(ret_info, &info, sizeof(info));
	else if (info.fd >= 0)
		close(info.fd);
	return r;
}

/* ---- find: the take's pick, nothing changed --------------------------------- */

EXPORT int prealloc_warm_find(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *opts,
			      struct prealloc_warm_find_info *ret_info)
{
	struct prealloc_warm_find_info info = { .size = sizeof(info) };
	struct prealloc_warm_take_opts o = { .size = sizeof(o) };
	struct store s;
	uint64_t dev = 0;
	long ri = -1;
	int r;

	if (!ctx || !opts || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	r = copy_sized_in(&o, sizeof(o), opts);
	if (r == 0)
		r = warm_take_check(ctx, &o, info.message, sizeof(info.message), &dev, NULL);
	/* The store as it is, no lock: a take may still find another (it picks again). */
	if (r == 0)
		r = store_load(ctx, &s);
	if (r == 0) {
		warm_declared_check(ctx, &s, &o, dev, false);	/* as a take would see it */
		ri = warm_policy_of(ctx)->pick(&s, &o, dev, &info.files);
		if (ri >= 0) {
			info.id = s.r[ri].id;
			info.file_bytes = s.r[ri].size;
			info.hit = warm_hit_of(info.file_bytes, o.length);
			info.reserved = (o.flags & PREALLOC_WARM_TAKE_RESERVED) != 0;
		}
		store_free(&s);
	}
	if (r == 0 && ri < 0)
		r = warm_pick_miss(&o, info.message, sizeof(info.message));
	copy_sized_out(ret_info, &info, sizeof(info));
	return r;
}
