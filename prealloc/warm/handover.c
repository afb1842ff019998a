/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's hand-over (docs/warm.md): take links a READY file at a
 * holder's path, give takes it back; find says which file a take would
 * get, by the take's own pick, changing nothing. Take and give write the
 * state they move to before the step it names, so that a run killed at
 * any instruction leaves the file in a state that is never READY unless
 * the file is: a file at a holder's path is HANDED before the link
 * exists, and RETURNING before the holder's link goes.
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
	warm_move(ctx, s, r, PREALLOC_WARM_QUARANTINED);
	if (r->warm != PREALLOC_WARM_QUARANTINED)	/* never picked again and again */
		return take_fail(info, -EINVAL, "warm file %s cannot be quarantined", r->tmp);
	return take_fail(info, -EMLINK, "warm file %s is not the pool's alone (%s): quarantined",
			 r->tmp, why);
}

/*
 * A take that failed: a file whose link at the holder's path existed
 * (exposed) may have been opened by the holder meanwhile: given back as
 * give does (RETURNING written, the link gone if still ours, then DIRTY,
 * or QUARANTINED), never READY again as it is. One never seen outside the
 * root-only staging directory is READY again (or the holder's reservation).
 */
static void take_undo(struct prealloc_ctx *ctx, struct store *s, struct record *r, int fd, int dir,
		      const char *base, bool linked, bool exposed, bool reserved)
{
	if (!exposed)
		(void)!fchown(fd, 0, 0);
	close(fd);
	r->path[0] = '\0';
	if (exposed) {
		r->tenant[0] = '\0';
		warm_move(ctx, s, r, PREALLOC_WARM_RETURNING);
		if (linked)
			unlinkat(dir, base, 0);
		warm_returned(r, warm_check(ctx, r));
	} else if (!reserved) {
		/* Its tenant as it was (the caller restored it): a tenant's file stays its. */
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
static int take_link(const struct record *r, const struct stat *st, int dir, const char *base,
		     bool *ret_linked, bool *ret_exposed)
{
	struct stat there;

	*ret_linked = false;
	if (linkat(AT_FDCWD, r->tmp, dir, base, 0) < 0)
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

/*
 * Hands record ri's file to the caller: HANDED written first, then its
 * owner, its size, the link at path. On failure: take_undo.
 */
static int take_file(struct prealloc_ctx *ctx, struct store *s, size_t ri, int dir,
		     const struct prealloc_warm_take_opts *o, struct prealloc_warm_take_info *info)
{
	struct record *r = &s->r[ri];
	bool reserve = o->flags & PREALLOC_WARM_TAKE_RESERVE, linked = false, exposed = false;
	const char *base = reserve ? NULL : strrchr(o->path, '/') + 1;
	char tenant_was[TENANT_MAX];
	struct stat st;
	int fd, err;

	info->message[0] = '\0';	/* an earlier file's quarantine is not this one's failure */
	fd = take_open(ctx, s, r, &st, info);
	if (fd < 0)
		return fd;
	info->file_bytes = r->size;
	snprintf(r->path, sizeof(r->path), "%s", reserve ? "" : o->path);
	/* A fresh file becomes the taker's tenant's; one cleared for a tenant stays its. */
	snprintf(tenant_was, sizeof(tenant_was), "%s", r->tenant);
	if (!r->tenant[0] && o->tenant)
		snprintf(r->tenant, sizeof(r->tenant), "%s", o->tenant);
	if (o->holder)
		owner_holder(&r->owner, o->holder, o->holder_check, o->holder_expires);
	r->has_uid = !reserve && (o->flags & PREALLOC_WARM_TAKE_CHOWN);	/* written with HANDED */
	r->uid = o->uid, r->gid = o->gid;
	err = warm_move(ctx, s, r, PREALLOC_WARM_HANDED);	/* with its path, tenant, owner */
	test_pause("warm-take-recorded");
	if (err == 0 && !reserve && (o->flags & PREALLOC_WARM_TAKE_CHOWN) &&
	    fchown(fd, o->uid, o->gid) < 0)
		err = -errno;
	if (err == 0 && r->size > o->length && ftruncate(fd, (off_t)o->length) < 0)
		err = -errno;
	if (err == 0 && r->size > o->length)
		r->size = o->length;
	if (err == 0 && r->size < o->length)
		err = grow_admitted(ctx, s, r, o->length, info);
	if (err == 0 && r->size < o->length)
		err = warm_grow(ctx, r, fd, o->length);
	if (err == 0 && !reserve)
		err = take_link(r, &st, dir, base, &linked, &exposed);
	if (err == 0)
		err = store_save(ctx, s);	/* the size, after a cut */
	if (err < 0) {
		memcpy(r->tenant, tenant_was, sizeof(r->tenant));
		take_undo(ctx, s, r, fd, dir, base, linked, exposed, false);
		/* The growth's refusal says it best. */
		return info->message[0] ? err
					: take_fail(info, err, "cannot hand over the warm file at %s: %s",
						    o->path, strerror(-err));
	}
	info->fd = fd;
	info->id = r->id;
	return 0;
}

/*
 * RESERVED: the holder's reserved file linked at path. Its path written
 * first (HANDED there, as a take writes it), then its owner, the link;
 * on failure (take_undo) the holder's reserved file again, unless its
 * link was seen at path: then given back.
 */
static int take_reserved(struct prealloc_ctx *ctx, struct store *s, size_t ri, int dir,
			 const struct prealloc_warm_take_opts *o,
			 struct prealloc_warm_take_info *info)
{
	struct record *r = &s->r[ri];
	const char *base = strrchr(o->path, '/') + 1;
	struct stat st;
	int fd = take_open(ctx, s, r, &st, info), err;
	bool linked = false, exposed = false;

	if (fd < 0)
		return fd;
	info->file_bytes = r->size;
	snprintf(r->path, sizeof(r->path), "%s", o->path);
	r->has_uid = o->flags & PREALLOC_WARM_TAKE_CHOWN;	/* written with its path */
	r->uid = o->uid, r->gid = o->gid;
	err = store_save(ctx, s);
	test_pause("warm-take-recorded");
	if (err == 0 && (o->flags & PREALLOC_WARM_TAKE_CHOWN) && fchown(fd, o->uid, o->gid) < 0)
		err = -errno;
	if (err == 0)
		err = take_link(r, &st, dir, base, &linked, &exposed);
	if (err < 0) {
		take_undo(ctx, s, r, fd, dir, base, linked, exposed, true);
		return take_fail(info, err, "cannot link the reserved warm file at %s: %s", o->path,
				 strerror(-err));
	}
	info->fd = fd;
	info->id = r->id;
	return 0;
}

/* Under the lock: the best READY file handed over (quarantined ones skipped). */
static int take_locked(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o,
		       uint64_t dev, int dir, struct prealloc_warm_take_info *info)
{
	struct store s;
	int lock = -1, r;
	long ri;

	r = store_open(ctx, o->lock_timeout_ms ? o->lock_timeout_ms : ADMIT_LOCK_TIMEOUT_MS, &s,
		       &lock);
	while (r == 0) {
		ri = warm_policy_of(ctx)->pick(&s, o, dev, NULL);
		if (ri < 0) {
			r = warm_pick_miss(o, info->message, sizeof(info->message));
			break;
		}
		r = (o->flags & PREALLOC_WARM_TAKE_RESERVED)
			    ? take_reserved(ctx, &s, (size_t)ri, dir, o, info)
			    : take_file(ctx, &s, (size_t)ri, dir, o, info);
		if (r == -EMLINK)
			r = 0;	/* quarantined: the next one */
		else
			break;
	}
	if (lock >= 0)
		store_close(&s, lock);
	return r;
}

EXPORT int prealloc_warm_take(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *opts,
			      struct prealloc_warm_take_info *ret_info)
{
	struct prealloc_warm_take_info info = { .size = sizeof(info), .fd = -1 };
	struct prealloc_warm_take_opts o = { .size = sizeof(o) };
	double t0 = now_seconds();
	int dir = -1, r, hit = PREALLOC_WARM_HIT;
	uint64_t dev = 0;

	if (!ctx || !opts || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	r = copy_sized_in(&o, sizeof(o), opts);
	if (r == 0)
		r = warm_take_check(ctx, &o, info.message, sizeof(info.message), &dev, &dir);
	if (r == 0)
		r = take_locked(ctx, &o, dev, dir, &info);
	/* FALLBACK: a file made now, populated and proven zero as fill would, then taken. */
	if (r == -ENOENT && (o.flags & PREALLOC_WARM_TAKE_FALLBACK)) {
		hit = PREALLOC_WARM_COLD;
		r = warm_create(ctx, o.node, o.page_size, warm_mount(ctx, o.mount, o.page_size),
				o.length, &(struct warm_pace){ .stop_fd = -1 }, info.message,
				sizeof(info.message), NULL);
		if (r == 0)
			r = take_locked(ctx, &o, dev, dir, &info);
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
	counter_take(ctx, dev, o.node, o.page_size, r, info.hit);
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

/* ---- give ----------------------------------------------------------------- */

/*
 * One HANDED record back: RETURNING first (with the tenant kept only when
 * the give names the take's), then the link, then what the file says.
 */
static int give_one(struct prealloc_ctx *ctx, struct store *s, size_t ri, bool by_path,
		    const char *tenant, struct prealloc_warm_give_info *info)
{
	struct record *r = &s->r[ri];
	int err, check;

	if (!tenant || strcmp(tenant, r->tenant))
		r->tenant[0] = '\0';
	err = warm_move(ctx, s, r, PREALLOC_WARM_RETURNING);
	test_pause("warm-give-recorded");
	if (err == 0)
		err = warm_unlink_path(r, by_path);
	test_pause("warm-give-unlinked");
	if (err < 0)
		return err;
	check = warm_check(ctx, r);
	warm_returned(r, check);
	info->files++;
	info->returning += check == -EBUSY;
	info->quarantined += r->warm == PREALLOC_WARM_QUARANTINED;
	return store_save(ctx, s);
}

/* by path: the link must be this file's before anything is written. */
static int give_match(const struct record *r, const char *path, const char *holder)
{
	struct statx stx;

	if (r->warm != PREALLOC_WARM_HANDED)
		return 0;
	if (holder)
		return r->owner.kind == PREALLOC_OWNER_HOLDER && !strcmp(r->owner.holder, holder);
	if (strcmp(r->path, path))
		return 0;
	if (file_statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, &stx) < 0 || !record_is_file(r, &stx))
		return -ESTALE;
	return 1;
}

EXPORT int prealloc_warm_give_with(struct prealloc_ctx *ctx,
				   const struct prealloc_warm_give_opts *opts,
				   struct prealloc_warm_give_info *ret_info)
{
	struct prealloc_warm_give_info info = { .size = sizeof(info) };
	struct prealloc_warm_give_opts o = { .size = sizeof(o) };
	int lock, r, m, first = 0;
	struct store s;

	if (!ctx || !opts || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	r = copy_sized_in(&o, sizeof(o), opts);
	if (r < 0)
		return r;
	if ((!o.path) == (!o.holder) || (o.path && o.path[0] != '/') || o.flags ||
	    (o.tenant && !tenant_valid(o.tenant)))
		return -EINVAL;
	r = store_open(ctx, ADMIT_LOCK_TIMEOUT_MS, &s, &lock);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s.nr; i++) {
		m = give_match(&s.r[i], o.path, o.holder);
		if (m < 0 && !first)
			snprintf(info.message, sizeof(info.message),
				 "%s is not the link its take made (another file is there)", o.path);
		if (m < 0 && !first)
			first = m;
		if (m <= 0)
			continue;
		r = give_one(ctx, &s, i, o.path != NULL, o.tenant, &info);
		if (r < 0 && !first) {
			first = r;
			snprintf(info.message, sizeof(info.message), "cannot give back %.400s: %s",
				 s.r[i].path[0] ? s.r[i].path : s.r[i].tmp, strerror(-r));
		}
	}
	store_close(&s, lock);
	if (!first && !info.files) {
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
