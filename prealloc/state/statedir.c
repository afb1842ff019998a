/* SPDX-License-Identifier: MIT */
/*
 * The state directory (ctx.c says where it is): whether to trust it, its
 * one lock, and whole-file atomic writes into it.
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
static int statedir_trusted(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

int statedir_check(const struct prealloc_ctx *ctx)
{
	return statedir_trusted(ctx->state_dir);
}

int statedir_ensure(const struct prealloc_ctx *ctx)
{
	char buf[PATH_MAX];

	if ((size_t)snprintf(buf, sizeof(buf), "%s", ctx->state_dir) >= sizeof(buf))
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
	return statedir_trusted(buf);
}

int statedir_lock(const struct prealloc_ctx *ctx, unsigned int timeout_ms, int cancel_fd,
		  int *ret_fd)
{
	return statedir_lock_leaf(ctx, "lock", timeout_ms, cancel_fd, ret_fd);
}

int statedir_lock_leaf(const struct prealloc_ctx *ctx, const char *leaf, unsigned int timeout_ms,
		       int cancel_fd, int *ret_fd)
{
	char path[PATH_MAX];
	double deadline = now_seconds() + timeout_ms / 1000.0;
	int fd, r;

	r = statedir_ensure(ctx);
	if (r < 0)
		return r;
	r = statedir_path(ctx, path, sizeof(path), leaf);
	if (r < 0)
		return r;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
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

void statedir_unlock(int fd)
{
	if (fd < 0)
		return;
	flock(fd, LOCK_UN);
	close(fd);
}

int statedir_write(const struct prealloc_ctx *ctx, const char *leaf, const char *buf, size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	int fd, dfd, r;

	r = statedir_ensure(ctx);
	if (r < 0)
		return r;
	r = statedir_path(ctx, path, sizeof(path), leaf);
	if (r < 0)
		return r;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	unlink(tmp);	/* a crashed run of the same pid's leftover; then follow no link */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Whole or not at all: on disk before the rename, the rename on disk before we go on. */
	r = fd_write_all(fd, buf, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	dfd = open(ctx->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) < 0)
			r = -errno;
		close(dfd);
	}
	return r;
}

int statedir_read(const struct prealloc_ctx *ctx, const char *leaf, char **ret_buf,
		  size_t *ret_len)
{
	char path[PATH_MAX], *buf = NULL;
	size_t len = 0, cap = 0;
	struct stat st;
	int fd, r;

	*ret_buf = NULL;
	*ret_len = 0;
	/* Read only what we would write: a directory, and a file, of ours alone. */
	r = statedir_trusted(ctx->state_dir);
	if (r == 0)
		r = statedir_path(ctx, path, sizeof(path), leaf);
	if (r < 0)
		return r;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	for (;;) {
		ssize_t n;

		if (len + 4096 + 1 > cap) {
			char *nb = realloc(buf, cap = cap ? cap * 2 : 16384);

			if (!nb) {
				r = -ENOMEM;
				goto fail;
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*ret_buf = buf;
	*ret_len = len;
	return 0;
fail:
	close(fd);
	free(buf);
	return r;
}
