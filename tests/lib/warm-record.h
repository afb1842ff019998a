/* SPDX-License-Identifier: MIT */
/*
 * A READY warm file and its record, for the unit tests over a fake tree
 * (fakeroot.h): the tests that need one include this after state.h.
 */
#ifndef PREALLOC_TEST_WARM_RECORD_H
#define PREALLOC_TEST_WARM_RECORD_H

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "state.h"
#include "fakeroot.h"
#include "tap.h"

/*
 * A READY warm file dir/name of bytes on node, page size ps, whose growth added
 * pages to node's pool: a sparse file in the fake tree and its record, as
 * prepare commits one (READY, no owner, the staged name its pool link).
 */
static inline uint64_t add_warm_in(const char *dir, struct prealloc_ctx *ctx, const char *name,
				   int node, uint64_t ps, uint64_t bytes, uint64_t added)
{
	struct rec_pool line = { .node = node, .page_size = ps, .pages = bytes / ps,
				 .added = added };
	char path[PATH_MAX];
	struct statx stx;
	struct record *r;
	struct store s;
	uint64_t id = record_new_id();
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return 0;
	if (ftruncate(fd, (off_t)bytes) < 0 || file_statx(fd, "", AT_EMPTY_PATH, &stx) < 0 ||
	    store_load(ctx, &s) < 0) {
		close(fd);
		return 0;
	}
	close(fd);
	r = store_add(&s, id);
	r->state = PREALLOC_RECORD_READY;
	r->has_file = r->created = true;
	record_set_identity(r, &stx);
	r->size = bytes;
	r->page_size = ps;
	snprintf(r->tmp, sizeof(r->tmp), "%s", path);
	r->warm = PREALLOC_WARM_READY;
	r->warm_node = node;
	if (added)
		record_add_pool(r, &line);
	if (store_save(ctx, &s) < 0)
		id = 0;
	store_free(&s);
	return id;
}

/* Record id as the store on disk says (its pools not kept), in *ret; false when it is not there. */
static inline bool record_on_disk(struct prealloc_ctx *ctx, uint64_t id, struct record *ret)
{
	struct store s;
	long i;

	if (store_load(ctx, &s) < 0)
		return false;
	i = store_find(&s, id);
	if (i >= 0) {
		*ret = s.r[i];
		ret->pools = NULL;
		ret->nr_pools = 0;
	}
	store_free(&s);
	return i >= 0;
}

/*
 * Record id made a file cleared in place under a single-tenant declaration
 * (WARM_TENANT_SINGLE) by the warm.conf at conf, whose text (written there
 * first; NULL: written by the caller) the pass read: what warm/clear.c
 * records. 0, or -1.
 */
static inline int declare_warm(struct prealloc_ctx *ctx, uint64_t id, const char *conf,
			       const char *text)
{
	struct store s;
	FILE *f;
	long i;
	int r = -1;

	if (text && (!(f = fopen(conf, "we")) || fputs(text, f) < 0 || fclose(f) != 0))
		return -1;
	if (store_load(ctx, &s) < 0)
		return -1;
	i = store_find(&s, id);
	if (i >= 0) {
		snprintf(s.r[i].tenant, sizeof(s.r[i].tenant), "%s", "@single-tenant");
		snprintf(s.r[i].declared, sizeof(s.r[i].declared), "%s", conf);
		s.r[i].declared_sum = text ? fnv1a(text, strlen(text)) : 0;
		r = store_save(ctx, &s);
	}
	store_free(&s);
	return r < 0 ? -1 : 0;
}

/*
 * The warm unit tests' start: a fake tree of nodes nodes in fr (removed at
 * exit) and a ctx over it; NULL, with a failed check said, when either
 * cannot be made.
 */
static inline struct prealloc_ctx *warm_test_ctx(struct fakeroot *fr, int nodes)
{
	struct prealloc_ctx *ctx;

	if (fakeroot_make(fr, nodes) < 0) {
		tap_ok(0, "cannot build the fake tree in /tmp");
		return NULL;
	}
	tap_remove_at_exit(fr->dir);
	ctx = fakeroot_ctx(fr);
	if (!tap_ok(ctx != NULL, "a ctx over the fake sysfs and procfs (%d node%s)", nodes,
		    nodes == 1 ? "" : "s")) {
		fakeroot_remove(fr);
		return NULL;
	}
	return ctx;
}

#endif
