/* SPDX-License-Identifier: MIT */
/*
 * Release: remove a file prealloc created (also one whose run died before
 * it was ready) and give back its pool growth. The record says RELEASING
 * before the file goes, so a release killed half way is finished by gc.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flows.h"

/*
 * A file DMA-mapped by prealloc_vfio_map carries a shared flock while
 * mapped: its pages are pinned for a device, so it is not removed under it.
 * 0 when no such lock is held (or the file cannot be opened: nothing to
 * protect), -EBUSY when one is. The probe's descriptor is closed at once:
 * held across the release it would make the file look in use to the
 * file-user check, and its growth would never be given back. A map that
 * starts after the probe is seen by that check instead (mapped: the
 * growth stays ORPHAN until it is unmapped).
 */
static int pin_lock(struct prealloc_ctx *ctx, const char *abs, struct prealloc_release_info *info)
{
	unsigned int unreadable;
	int fd = open(abs, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	if (fd < 0)
		return 0;
	if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
		close(fd);
		return 0;
	}
	info->pinned = 1;
	if (fstat(fd, &st) == 0)
		info->pid = file_user(ctx, st.st_dev, st.st_ino, getpid(), &unreadable);
	close(fd);
	return -EBUSY;
}

/* The absolute path of path, which may no longer exist (its directory must). */
static int absolute_path(const char *path, char *buf, size_t len)
{
	char dir[PATH_MAX], base[PATH_MAX], real[PATH_MAX];

	if (realpath(path, real))
		return (size_t)snprintf(buf, len, "%s", real) < len ? 0 : -ENAMETOOLONG;
	if (errno != ENOENT || strlen(path) >= sizeof(dir))
		return -errno;
	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(base, sizeof(base), "%s", path);
	if (!realpath(dirname(dir), real))
		return -errno;
	return (size_t)snprintf(buf, len, "%s/%s", strcmp(real, "/") ? real : "",
				basename(base)) < len
		       ? 0
		       : -ENAMETOOLONG;
}

/*
 * The record of the file at abs: by identity when the file exists (a file
 * put at the path since is not ours), else by path (a run that died before
 * its file took the name). -ENOENT: none, or an adopted file; -EXFULL: a
 * file of the warm pool.
 */
static long find_file_record(const struct store *s, const char *abs, const struct statx *stx,
			     bool exists)
{
	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (!r->has_file || strcmp(r->path, abs))
			continue;
		/* By identity: a file put at the path since, even on our inode number, is not ours. */
		if (exists && !record_is_file(r, stx))
			continue;
		/* A warm file goes back with prealloc_warm_give, never removed by a release. */
		if (r->warm != WARM_NONE)
			return -EXFULL;
		return r->created ? (long)i : -ENOENT;
	}
	return -ENOENT;
}

static int release_locked(struct prealloc_ctx *ctx, struct store *s, const char *abs,
			  struct prealloc_release_info *info)
{
	struct statx stx;
	bool exists = file_statx(AT_FDCWD, abs, 0, &stx) == 0;
	long i = find_file_record(s, abs, &stx, exists);
	struct record *r;

	if (i == -EXFULL) {
		info->warm = 1;
		return -EBUSY;
	}
	if (i < 0)
		return (int)i;
	r = &s->r[i];
	if (r->state == PREALLOC_RECORD_PREPARING && owner_alive(ctx, &r->owner)) {
		info->pid = r->owner.pid;
		return -EBUSY;
	}
	/* Ours, but changed since: the user should look before it goes. */
	if (exists && r->state == PREALLOC_RECORD_READY && stx.stx_size != r->size)
		return -ESTALE;
	r = NULL;
	int lock = exists ? pin_lock(ctx, abs, info) : 0;

	if (lock < 0)
		return lock;
	return record_settle(ctx, s, (size_t)i, true, info);
}

EXPORT int prealloc_release(struct prealloc_ctx *ctx, const char *path,
			    struct prealloc_release_info *ret_info)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	char abs[PATH_MAX];
	struct stat st;
	struct store s;
	int fd = -1, r;

	if (!ctx || !path || !*path)
		return -EINVAL;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		r = S_ISLNK(st.st_mode) ? -ELOOP : -EINVAL;
		goto out;
	}
	r = absolute_path(path, abs, sizeof(abs));
	if (r < 0)
		goto out;
	r = store_open(ctx, ADMIT_LOCK_TIMEOUT_MS, &s, &fd);
	if (r < 0)
		goto out;
	r = release_locked(ctx, &s, abs, &info);
	store_close(&s, fd);
out:
	if (ret_info && ret_info->size >= sizeof(size_t))
		copy_sized_out(ret_info, &info, sizeof(info));
	return r;
}

static bool pick_holder(struct prealloc_ctx *ctx, const struct record *r, const void *arg,
			bool *ret_remove_ready)
{
	(void)ctx;
	*ret_remove_ready = true;
	return r->owner.kind == PREALLOC_OWNER_HOLDER && r->warm == WARM_NONE &&
	       !strcmp(r->owner.holder, arg);
}

EXPORT int prealloc_release_holder(struct prealloc_ctx *ctx, const char *holder,
				   struct prealloc_release_info *ret_info)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	unsigned int matched = 0;
	int r;

	if (!ctx || !holder || !*holder)
		return -EINVAL;
	r = settle_matching(ctx, ADMIT_LOCK_TIMEOUT_MS, pick_holder, holder, &info, &matched);
	if (r == 0 && !matched)
		r = -ENOENT;
	if (ret_info && ret_info->size >= sizeof(size_t))
		copy_sized_out(ret_info, &info, sizeof(info));
	return r;
}
