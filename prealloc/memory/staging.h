/* SPDX-License-Identifier: MIT */
/* The staging directory of a mount (staging.c). Never installed. */
#ifndef PREALLOC_STAGING_H
#define PREALLOC_STAGING_H

#include "internal.h"

#define STAGING_NAME ".prealloc"

/*
 * Opens (making it when missing) the caller's staging directory on the
 * mount of dir_fd, whose path is dir_path; its path goes to ret_path.
 * Returns the directory's descriptor, or a negative errno with why[]:
 * -EPERM when the name is taken by something that is not the caller's own
 * directory (never used then, never changed).
 */
int staging_open(const struct prealloc_ctx *ctx, int dir_fd, const char *dir_path,
		 char *ret_path, size_t len, char *why, size_t why_len);

#endif
