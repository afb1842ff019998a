/* SPDX-License-Identifier: MIT */
/*
 * Regions: memory made by backing.c, its extents (split over the nodes, or
 * adopted from where the pages already are), each extent bound to its node
 * with MPOL_BIND before any page is touched, and the region's lifetime.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <numaif.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "memory.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

static int bind_extent(struct prealloc_region *r, const struct prealloc_extent *e, int mode)
{
	unsigned long mask[PREALLOC_MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
	const unsigned int bits = 8 * sizeof(unsigned long);

	if (e->node < 0 || e->node >= PREALLOC_MAX_NODES)
		return -EINVAL;
	mask[e->node / bits] |= 1UL << (e->node % bits);
	if (mbind(r->addr + e->offset, e->length, mode, mode == MPOL_DEFAULT ? NULL : mask,
		  mode == MPOL_DEFAULT ? 0 : PREALLOC_MAX_NODES + 1, 0) < 0)
		return -errno;
	return 0;
}

bool region_policy_by_workers(const struct prealloc_region *r)
{
	return r->bound && r->page_size == PREALLOC_PAGE_4K && r->fd >= 0 &&
	       (r->backing == PREALLOC_BACKING_MEMFD || r->backing == PREALLOC_BACKING_FILE);
}

int region_bind(struct prealloc_region *r, bool on)
{
	int ret = 0;

	for (unsigned int i = 0; ret == 0 && i < r->nr_extents; i++)
		ret = bind_extent(r, &r->extents[i], on ? MPOL_BIND : MPOL_DEFAULT);
	return ret;
}

int thread_bind(int node)
{
	unsigned long mask[PREALLOC_MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
	const unsigned int bits = 8 * sizeof(unsigned long);

	if (node < 0 || node >= PREALLOC_MAX_NODES)
		return -EINVAL;
	mask[node / bits] |= 1UL << (node % bits);
	return set_mempolicy(MPOL_BIND, mask, PREALLOC_MAX_NODES + 1) < 0 ? -errno : 0;
}

/* Appends [off, off + len) on node, merging with the previous extent. */
static int extent_append(struct prealloc_region *r, unsigned int *cap, int node, uint64_t off,
			 uint64_t len)
{
	struct prealloc_extent *last = r->nr_extents ? &r->extents[r->nr_extents - 1] : NULL;

	if (last && last->node == node && last->offset + last->length == off) {
		last->length += len;
		return 0;
	}
	if (r->nr_extents == *cap) {
		unsigned int ncap = *cap ? *cap * 2 : 16;
		struct prealloc_extent *n = realloc(r->extents, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		r->extents = n;
		*cap = ncap;
	}
	r->extents[r->nr_extents++] = (struct prealloc_extent){ node, off, len };
	return 0;
}

/* Appends extents for [off, off + len) from where each page is now. */
static int adopt_range(struct prealloc_region *r, unsigned int *cap, uint64_t off, uint64_t len)
{
	enum { BATCH = 1024 };
	void *pages[BATCH];
	int status[BATCH];
	uint64_t npages = len / r->page_size;
	int ret;

	for (uint64_t done = 0; done < npages;) {
		unsigned int n = (unsigned int)MIN(npages - done, (uint64_t)BATCH);

		for (unsigned int i = 0; i < n; i++)
			pages[i] = r->addr + off + (done + i) * r->page_size;
		if (move_pages(0, n, pages, NULL, status, 0) < 0)
			return -errno;
		for (unsigned int i = 0; i < n; i++) {
			ret = extent_append(r, cap, status[i] >= 0 ? status[i] : -1,
					    off + (done + i) * r->page_size, r->page_size);
			if (ret < 0)
				return ret;
		}
		done += n;
	}
	return 0;
}

/*
 * Extents from where each page of the region is now. move_pages looks at
 * this process's page tables, and a fresh mapping of a file has none: so
 * map the file's data first (MADV_POPULATE_READ maps pages that exist and
 * changes no content). Holes (SEEK_HOLE, on tmpfs) stay holes: they read as
 * zero already, and become node -1 extents that jobs skip. hugetlbfs reports
 * no holes, so a hole there is allocated (zeroed) by the read fault.
 */
static int adopt_placement(struct prealloc_region *r)
{
	unsigned int cap = 0;
	uint64_t off = 0;
	int ret;

	if (r->fd < 0)
		return adopt_range(r, &cap, 0, r->length);	/* the caller's own mapping */
	while (off < r->length) {
		off_t data = lseek(r->fd, (off_t)off, SEEK_DATA), hole;

		if (data < 0 && errno != ENXIO)
			return -errno;
		if (data < 0 || (uint64_t)data >= r->length)
			data = (off_t)r->length;	/* no more data */
		data = (off_t)ALIGN_DOWN((uint64_t)data, r->page_size);
		if ((uint64_t)data > off) {
			ret = extent_append(r, &cap, -1, off, (uint64_t)data - off);
			if (ret < 0)
				return ret;
			off = (uint64_t)data;
			continue;
		}
		hole = lseek(r->fd, (off_t)off, SEEK_HOLE);
		if (hole < 0 || (uint64_t)hole > r->length)
			hole = (off_t)r->length;
		hole = (off_t)ALIGN_UP((uint64_t)hole, r->page_size);
		if ((uint64_t)hole > r->length)
			hole = (off_t)r->length;
		if (madvise(r->addr + off, (uint64_t)hole - off, MADV_POPULATE_READ) < 0)
			return -errno;
		ret = adopt_range(r, &cap, off, (uint64_t)hole - off);
		if (ret < 0)
			return ret;
		off = (uint64_t)hole;
	}
	return 0;
}

/* Mode flags get_mempolicy reports OR'd into the mode. */
#define POLICY_MODE_FLAGS ((1 << 15) | (1 << 14) | (1 << 13)) /* static, relative, balancing */
#ifndef MPOL_PREFERRED_MANY
#define MPOL_PREFERRED_MANY 5
#endif

/* Nodes of the calling thread's policy (or all nodes) when none are named. */
static int default_nodes(struct prealloc_ctx *ctx, int *nodes, unsigned int *nr)
{
	unsigned long mask[PREALLOC_MAX_NODES / (8 * sizeof(unsigned long))] = { 0 };
	const unsigned int bits = 8 * sizeof(unsigned long);
	int mode;

	*nr = 0;
	if (get_mempolicy(&mode, mask, PREALLOC_MAX_NODES + 1, NULL, 0) == 0) {
		mode &= ~POLICY_MODE_FLAGS;
		if (mode == MPOL_BIND || mode == MPOL_PREFERRED || mode == MPOL_INTERLEAVE ||
		    mode == MPOL_PREFERRED_MANY) {
			for (unsigned int i = 0; i < ctx->nr_nodes; i++) {
				int n = ctx->nodes[i].node;

				if (mask[n / bits] & (1UL << (n % bits)))
					nodes[(*nr)++] = n;
			}
		}
	}
	if (*nr == 0)
		for (unsigned int i = 0; i < ctx->nr_nodes; i++)
			nodes[(*nr)++] = ctx->nodes[i].node;
	return 0;
}

EXPORT int prealloc_default_nodes(struct prealloc_ctx *ctx, int *ret_nodes, unsigned int max)
{
	int *all;
	unsigned int nr;

	if (!ctx || (max && !ret_nodes))
		return -EINVAL;
	all = calloc(MAX(ctx->nr_nodes, 1u), sizeof(*all));
	if (!all)
		return -ENOMEM;
	default_nodes(ctx, all, &nr);
	for (unsigned int i = 0; i < nr && i < max; i++)
		ret_nodes[i] = all[i];
	free(all);
	return (int)nr;
}

/* The options checked: a length, and nodes that exist, none named twice. */
static int region_opts_check(struct prealloc_ctx *ctx, const struct prealloc_region_opts *o)
{
	if (!o->length || (o->nr_nodes && !o->nodes) || o->nr_nodes > PREALLOC_MAX_NODES)
		return -EINVAL;
	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		if (!topo_node(ctx, o->nodes[i]))
			return -ENODEV;
		for (unsigned int j = 0; j < i; j++)
			if (o->nodes[i] == o->nodes[j])
				return -EINVAL;
	}
	return 0;
}

/* A region with nothing made yet: region_release frees it whole. */
static int region_alloc(struct prealloc_ctx *ctx, const struct prealloc_region_opts *o,
			int dir_fd, struct prealloc_region **ret)
{
	struct prealloc_region *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->jobs_lock, NULL);
	pthread_cond_init(&r->jobs_done, NULL);
	r->ctx = ctx;
	r->backing = o->backing;
	r->length = o->length;
	r->fd = -1;
	r->dir_fd = dir_fd == AT_FDCWD ? AT_FDCWD : fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
	*ret = r;
	return r->dir_fd == -1 ? -errno : 0;
}

/* Extents over the nodes o names (or the default ones), each bound unless NO_BIND. */
static int region_place(struct prealloc_region *r, const struct prealloc_region_opts *o)
{
	struct prealloc_ctx *ctx = r->ctx;
	unsigned int nr = o->nr_nodes;
	int *nodes, ret;

	nodes = calloc(MAX(ctx->nr_nodes, nr), sizeof(*nodes));
	r->extents = calloc(MAX(ctx->nr_nodes, nr), sizeof(*r->extents));
	if (!nodes || !r->extents) {
		free(nodes);
		return -ENOMEM;
	}
	if (nr)
		memcpy(nodes, o->nodes, nr * sizeof(*nodes));
	else
		default_nodes(ctx, nodes, &nr);
	ret = extents_split(r->length, r->page_size, nodes, nr ? o->node_bytes : NULL, nr,
			   r->extents);
	free(nodes);
	if (ret < 0)
		return ret;
	r->nr_extents = nr;
	for (unsigned int i = 0; !(o->flags & PREALLOC_REGION_NO_BIND) && i < nr; i++) {
		ret = bind_extent(r, &r->extents[i], MPOL_BIND);
		if (ret < 0)
			return ret;
	}
	r->bound = !(o->flags & PREALLOC_REGION_NO_BIND);
	return 0;
}

int region_new_at(struct prealloc_ctx *ctx, const struct prealloc_region_opts *opts, int dir_fd,
		  struct prealloc_region **ret_region)
{
	struct prealloc_region_opts o;
	struct prealloc_region *r = NULL;
	int ret;

	if (!ctx || !opts || !ret_region)
		return -EINVAL;
	ret = copy_sized_in(&o, sizeof(o), opts);
	if (ret == 0)
		ret = region_opts_check(ctx, &o);
	if (ret < 0)
		return ret;
	ret = region_alloc(ctx, &o, dir_fd, &r);
	if (ret == 0)
		ret = backing_map(r, &o);
	if (ret == 0 && (o.flags & PREALLOC_REGION_ADOPT_PLACEMENT))
		ret = o.nr_nodes ? -EINVAL : adopt_placement(r);
	else if (ret == 0)
		ret = region_place(r, &o);
	if (ret < 0) {
		if (r)
			prealloc_region_discard(r);
		return ret;
	}
	*ret_region = r;
	return 0;
}

EXPORT int prealloc_region_new(struct prealloc_ctx *ctx, const struct prealloc_region_opts *opts,
			       struct prealloc_region **ret_region)
{
	return region_new_at(ctx, opts, AT_FDCWD, ret_region);
}

/*
 * Freeing a region a job still works on would unmap memory under its
 * workers: wait for them instead (the library never aborts its caller),
 * and say so through the ctx's log, since it is the caller's bug.
 */
static void region_wait_jobs(struct prealloc_region *r)
{
	pthread_mutex_lock(&r->jobs_lock);
	if (r->jobs)
		ctx_log(r->ctx, PREALLOC_LOG_WARNING,
			"a prealloc region was freed while %u job(s) still ran on it; waiting for "
			"them to finish (call prealloc_job_wait() before freeing the region)", r->jobs);
	while (r->jobs)
		pthread_cond_wait(&r->jobs_done, &r->jobs_lock);
	pthread_mutex_unlock(&r->jobs_lock);
}

static void region_release(struct prealloc_region *r, bool unlink_file)
{
	region_wait_jobs(r);
	if (r->owns_mapping && r->addr)
		munmap(r->addr, r->length);
	if (unlink_file && r->created_file && r->path && r->fd >= 0) {
		struct stat mine, there;

		/* Only the file we created: not one put at its path since. */
		if (fstat(r->fd, &mine) == 0 &&
		    fstatat(r->dir_fd, r->path, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
		    mine.st_dev == there.st_dev && mine.st_ino == there.st_ino)
			unlinkat(r->dir_fd, r->path, 0);
	}
	if (r->fd >= 0)
		close(r->fd);
	if (r->dir_fd >= 0)
		close(r->dir_fd);
	free(r->path);
	free(r->extents);
	pthread_cond_destroy(&r->jobs_done);
	pthread_mutex_destroy(&r->jobs_lock);
	free(r);
}

EXPORT void prealloc_region_free(struct prealloc_region *region)
{
	if (region)
		region_release(region, false);
}

EXPORT int prealloc_region_discard(struct prealloc_region *region)
{
	if (!region)
		return -EINVAL;
	region_release(region, true);
	return 0;
}

EXPORT void *prealloc_region_addr(const struct prealloc_region *region)
{
	return region ? region->addr : NULL;
}

EXPORT uint64_t prealloc_region_length(const struct prealloc_region *region)
{
	return region ? region->length : 0;
}

EXPORT uint64_t prealloc_region_page_size(const struct prealloc_region *region)
{
	return region ? region->page_size : 0;
}

EXPORT int prealloc_region_fd(const struct prealloc_region *region)
{
	return region ? region->fd : -1;
}

EXPORT int prealloc_region_created_file(const struct prealloc_region *region)
{
	return region && region->created_file ? 1 : 0;
}

EXPORT int prealloc_region_extents(const struct prealloc_region *region,
				   struct prealloc_extent *ret, unsigned int max)
{
	if (!region || (max && !ret))
		return -EINVAL;
	for (unsigned int i = 0; i < region->nr_extents && i < max; i++)
		ret[i] = region->extents[i];
	return (int)region->nr_extents;
}
