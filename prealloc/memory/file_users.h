/* SPDX-License-Identifier: MIT */
/* Which processes use a file: by mapping or by an open descriptor. Never installed. */
#ifndef PREALLOC_FILE_USERS_H
#define PREALLOC_FILE_USERS_H

#include <sys/types.h>

#include "internal.h"

/*
 * The first process other than skip that maps the file dev/ino or holds it
 * open (also once it is unlinked), from <proc>/PID/maps and <proc>/PID/fd.
 * Returns its pid, 0 when none, or a negative errno when <proc> cannot be
 * read; *ret_unreadable counts processes that could not be looked at.
 */
pid_t file_user(const struct prealloc_ctx *ctx, uint64_t dev, uint64_t ino, pid_t skip,
		  unsigned int *ret_unreadable);

#endif
