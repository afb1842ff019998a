/* SPDX-License-Identifier: MIT */
/* The state directory: trust, lock, atomic whole-file writes. Never installed. */
#ifndef PREALLOC_STATEDIR_H
#define PREALLOC_STATEDIR_H

#include "internal.h"

/* "<state dir>/<leaf>". */
int statedir_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *leaf);
/* Creates it (0700) if missing; -EPERM unless a directory of ours nobody else may write. */
int statedir_ensure(const struct prealloc_ctx *ctx);
/* Whether the state directory is ours alone: 0, -EPERM, -ENOENT (not made yet). */
int statedir_check(const struct prealloc_ctx *ctx);
/*
 * The one lock; waits up to timeout_ms, then -ETIMEDOUT, or until cancel_fd
 * (-1: none; polled, never read) turns readable, then -ECANCELED.
 */
int statedir_lock(const struct prealloc_ctx *ctx, unsigned int timeout_ms, int cancel_fd,
		  int *ret_fd);
/* The same for another lock file in the state dir (0.1's pool.lock while converting). */
int statedir_lock_leaf(const struct prealloc_ctx *ctx, const char *leaf, unsigned int timeout_ms,
		       int cancel_fd, int *ret_fd);
void statedir_unlock(int fd);
/* Replaces leaf whole: temp file, fsync, rename, fsync of the directory. */
int statedir_write(const struct prealloc_ctx *ctx, const char *leaf, const char *buf, size_t len);
/* All of leaf, NUL-terminated (*ret_buf to free); -ENOENT when missing. */
int statedir_read(const struct prealloc_ctx *ctx, const char *leaf, char **ret_buf,
		  size_t *ret_len);

#endif
