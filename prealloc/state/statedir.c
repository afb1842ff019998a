/* SPDX-License-Identifier: MIT */
/*
 * The state directory (ctx.c says where it is): whether to trust it, its
 * locks, and whole-file atomic writes into it. statedir_open() resolves
 * it once, to an fd checked ours alone; the *_at calls work in that fd,
 * never through the path again: the store opens it once per open
 * (store_lock.c). The calls by path are each one open, one call, one close.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

int statedir_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *leaf)
{
	int n = snprintf(buf, len, "%s/%s", ctx->state_dir, leaf);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * The state directory must be ours alone: a directory (not a link), owned
 * by us, writable by nobody else. A /tmp fallback another user created
 * first could otherwise feed us a store or links to overwrite.
 */
static int statedir_trusted(int dfd)
{
	struct stat st;

	if (fstat(dfd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

/* Every missing directory on the way, 0700. */
static int statedir_make(const char *dir)
{
	char buf[PATH_MAX];

	if ((size_t)snprintf(buf, sizeof(buf), "%s", dir) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int open_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	/* A link, or no directory, where the state directory should be: not ours. */
	return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
}

int statedir_open(const struct prealloc_ctx *ctx, bool create, int *ret_dfd)
{
	int fd, r;

	*ret_dfd = -1;
	fd = open_dir(ctx->state_dir);
	if (fd == -ENOENT && create) {
		r = statedir_make(ctx->state_dir);
		if (r < 0)
			return r;
		fd = open_dir(ctx->state_dir);
	}
	if (fd < 0)
		return fd;
	r = statedir_trusted(fd);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_dfd = fd;
	return 0;
}

int statedir_check(const struct prealloc_ctx *ctx)
{
	int fd, r = statedir_open(ctx, false, &fd);

	if (r == 0)
		close(fd);
	return r;
}

int statedir_ensure(const struct prealloc_ctx *ctx)
{
	int fd, r = statedir_open(ctx, true, &fd);

	if (r == 0)
		close(fd);
	return r;
}

int statedir_lock_at(int dfd, const char *leaf, unsigned int timeout_ms, int cancel_fd,
		     int *ret_fd)
{
	double deadline = now_seconds() + timeout_ms / 1000.0;
	int fd, r;

	fd = openat(dfd, leaf, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* Poll rather than block: callers such as a libvirt hook must stay bounded. */
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		struct pollfd pfd = { .fd = cancel_fd, .events = POLLIN };

		if (errno != EWOULDBLOCK && errno != EINTR) {
			r = -errno;
			close(fd);
			return r;
		}
		if (now_seconds() >= deadline) {
			close(fd);
			return -ETIMEDOUT;
		}
		/* 5 ms between tries (poll skips a negative fd); cancel ends the wait. */
		if (poll(&pfd, 1, 5) > 0 && (pfd.revents & (POLLIN | POLLHUP))) {
			close(fd);
			return -ECANCELED;
		}
	}
	*ret_fd = fd;
	return 0;
}

int statedir_lock_leaf(const struct prealloc_ctx *ctx, const char *leaf, unsigned int timeout_ms,
		       int cancel_fd, int *ret_fd)
{
	int dfd, r = statedir_open(ctx, true, &dfd);

	if (r < 0)
		return r;
	r = statedir_lock_at(dfd, leaf, timeout_ms, cancel_fd, ret_fd);
	close(dfd);
	return r;
}

void statedir_unlock(int fd)
{
	if (fd < 0)
		return;
	flock(fd, LOCK_UN);
	close(fd);
}

int statedir_write_at(int dfd, const char *leaf, const char *buf, size_t len)
{
	char tmp[PATH_MAX];
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", leaf, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	unlinkat(dfd, tmp, 0);	/* a crashed run of the same pid's leftover; then follow no link */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Whole or not at all: on disk before the rename, the rename on disk before we go on. */
	r = fd_write_all(fd, buf, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(dfd, tmp, dfd, leaf) < 0)
		r = -errno;
	if (r < 0) {
		unlinkat(dfd, tmp, 0);
		return r;
	}
	return fsync(dfd) < 0 ? -errno : 0;
}

int statedir_write(const struct prealloc_ctx *ctx, const char *leaf, const char *buf, size_t len)
{
	int dfd, r = statedir_open(ctx, true, &dfd);

	if (r < 0)
		return r;
	r = statedir_write_at(dfd, leaf, buf, len);
	close(dfd);
	return r;
}

/* All of fd, NUL-terminated (*ret_buf to free). */
static int read_whole(int fd, char **ret_buf, size_t *ret_len)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 16384);

			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(buf);
			return -errno;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int statedir_read_at(int dfd, const char *leaf, char **ret_buf, size_t *ret_len,
		     struct statx *ret_id)
{
	struct statx stx;
	int fd, r;

	*ret_buf = NULL;
	*ret_len = 0;
	fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Read only what we would write: a file of ours alone. */
	r = statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &stx) < 0 ? -errno : 0;
	if (r == 0 && (!S_ISREG(stx.stx_mode) || stx.stx_uid != geteuid() || (stx.stx_mode & 022)))
		r = -EPERM;
	if (r == 0)
		r = read_whole(fd, ret_buf, ret_len);
	close(fd);
	if (r == 0 && ret_id)
		*ret_id = stx;
	return r;
}

int statedir_read(const struct prealloc_ctx *ctx, const char *leaf, char **ret_buf,
		  size_t *ret_len)
{
	int dfd, r;

	*ret_buf = NULL;
	*ret_len = 0;
	r = statedir_open(ctx, false, &dfd);
	if (r < 0)
		return r;
	r = statedir_read_at(dfd, leaf, ret_buf, ret_len, NULL);
	close(dfd);
	return r;
}
