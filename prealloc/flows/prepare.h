/* SPDX-License-Identifier: MIT */
/* The prepare flow's request as it is resolved, shared by its files. Never installed. */
#ifndef PREALLOC_PREPARE_H
#define PREALLOC_PREPARE_H

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"
#include "records.h"

#define PREPARE_MAGIC 0x70726570u	/* "prep": a job's flow arg is a prepare_req */

struct prepare_req {
	uint32_t magic;
	struct prealloc_ctx *ctx;
	struct prealloc_prepare_opts o;
	struct prealloc_prepare_info info;
	/* The request, resolved. */
	uint64_t length;
	unsigned int nr_nodes;
	int nodes[PREALLOC_MAX_NODES];
	uint64_t node_bytes[PREALLOC_MAX_NODES];
	bool sized;		/* node_bytes given by the caller, not split */
	const char *path;	/* o.path or NULL */
	char dir[PATH_MAX];
	int dir_fd;		/* the final directory, opened once located */
	int stage_fd;		/* the staging directory (staging.c) */
	char stage_name[24];	/* the file's name in it: the record id in hex */
	unsigned long fs_magic;
	uint64_t fs_page;	/* hugetlbfs: its page size */
	uint64_t page;		/* resolved: 4K, 2M, 1G or PREALLOC_PAGE_THP */
	bool exists;		/* REUSE: the file was there */
	/* What the run made, for commit and rollback. */
	char final[PATH_MAX];
	char tmp[PATH_MAX];	/* the staged file: the staging dir's path and stage_name */
	uint64_t id;
	bool recorded;
	struct prealloc_region *region;
	struct rec_owner owner;
};

/* Fills info.step and info.message (inline: every prepare file fails the request). */
static inline __attribute__((format(printf, 3, 4))) void
prepare_fail(struct prepare_req *req, int step, const char *fmt, ...)
{
	va_list ap;

	req->info.step = step;
	va_start(ap, fmt);
	vsnprintf(req->info.message, sizeof(req->info.message), fmt, ap);
	va_end(ap);
}

/* location.c: where the file goes and the page size (req->dir, req->page, req->exists). */
int prepare_locate(struct prepare_req *req);
/* prepare_request.c: the request checked and resolved; admission and the record. */
int prepare_request(struct prepare_req *req);
/* "0-3,5": nodes as ranges, in the given order. */
void node_ranges(const int *nodes, unsigned int nr, char *buf, size_t len);
/* "512M", "1G", or bytes when no binary suffix is exact. */
void size_token(uint64_t bytes, char *buf, size_t len);
int prepare_admit(struct prepare_req *req);
/* admit_message.c: the admission failure in one line. */
void admit_message(const struct prealloc_admit_result *res, int err, bool reserve, char *buf,
		   size_t len);

#endif
