/* SPDX-License-Identifier: MIT */
/* The clear-file flow's state, shared by clear_file.c and clear_checks.c. Never installed. */
#ifndef PREALLOC_CLEAR_FILE_H
#define PREALLOC_CLEAR_FILE_H

#include <sys/stat.h>

#include "internal.h"
#include "clear.h"

#define CLEAR_FLOW_MAGIC 0x636c7266u	/* "clrf": a job's flow arg is a clear_flow */

/*
 * What the flow opened and mapped; the job's once it has started (its
 * destroy frees it at prealloc_job_free), else freed by the start call.
 */
struct clear_flow {
	uint32_t magic;			/* first, as in every flow's arg */
	struct prealloc_ctx *ctx;
	struct prealloc_clear_file_opts opts;
	struct prealloc_clear_file_info info;
	struct stat st;
	bool in_memory;			/* hugetlbfs or tmpfs */
	int fd;
	void *map;			/* our own mapping (partial last page, disk), or NULL */
	uint64_t map_len;
	struct prealloc_region *region;
	struct clear_choice choice;	/* name NULL until chosen */
	struct job_range *swapped;	/* swapped-out tmpfs pages: the job's extra ranges */
	size_t nr_swapped;
	int result;			/* set by the job's finish */
};

static inline int flow_fail(struct clear_flow *flow, int step, int err)
{
	flow->info.error_step = step;
	return err;
}

/*
 * clear_checks.c: that it is the file the caller meant. Each returns 0 or
 * a negative errno with info.error_step set.
 */
/* The kernel: the one named, or (once the region exists) the one auto picks. */
int clear_check_kernel(struct clear_flow *flow);
/* Before opening: not a link, a regular file, the filesystem, other mappers. */
int clear_check_file(struct clear_flow *flow, const char *path);
/* Opens the file checked into flow->fd; -ESTALE when another took its place. */
int clear_open_checked(struct clear_flow *flow, const char *path);

#endif
