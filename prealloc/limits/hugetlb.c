/* SPDX-License-Identifier: MIT */
/*
 * Hugepage pools, per node, through sysfs. Writes are absolute (never a
 * read-modify-write outside the lock) and every change is read back: the
 * kernel may allocate fewer pages than asked.
 */
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host_limits.h"

#define NODE_SYSFS "/devices/system/node"
#define HP_SYSFS "/kernel/mm/hugepages"

/* sysfs file of node's pool, or the system-wide one where nodes are not exposed. */
static int pool_path(const struct prealloc_ctx *ctx, char *buf, size_t len, int node,
		     uint64_t page_size, const char *leaf)
{
	unsigned long long kb = page_size >> 10;
	char dir[PATH_MAX];

	if (sys_path(ctx, dir, sizeof(dir), NODE_SYSFS) == 0 && access(dir, F_OK) == 0)
		return sys_path(ctx, buf, len, NODE_SYSFS "/node%d/hugepages/hugepages-%llukB/%s",
				node, kb, leaf);
	return sys_path(ctx, buf, len, HP_SYSFS "/hugepages-%llukB/%s", kb, leaf);
}

static int read_one(const struct prealloc_ctx *ctx, int node, uint64_t page_size,
		    const char *leaf, uint64_t *ret)
{
	char path[PATH_MAX];
	int r = pool_path(ctx, path, sizeof(path), node, page_size, leaf);

	return r < 0 ? r : read_file_u64(path, ret);
}

int hugetlb_read(const struct prealloc_ctx *ctx, int node, uint64_t page_size,
		 uint64_t *ret_total, uint64_t *ret_free, uint64_t *ret_surplus)
{
	uint64_t total = 0, free_pages = 0, surplus = 0;
	int r;

	r = read_one(ctx, node, page_size, "nr_hugepages", &total);
	if (r < 0)
		return r;
	r = read_one(ctx, node, page_size, "free_hugepages", &free_pages);
	if (r < 0)
		return r;
	read_one(ctx, node, page_size, "surplus_hugepages", &surplus);
	if (ret_total)
		*ret_total = total;
	if (ret_free)
		*ret_free = free_pages;
	if (ret_surplus)
		*ret_surplus = surplus;
	return 0;
}

int hugetlb_global(const struct prealloc_ctx *ctx, uint64_t page_size, uint64_t *ret_free,
		   uint64_t *ret_resv)
{
	unsigned long long kb = page_size >> 10;
	char path[PATH_MAX];
	int r;

	r = sys_path(ctx, path, sizeof(path), HP_SYSFS "/hugepages-%llukB/free_hugepages", kb);
	if (r == 0)
		r = read_file_u64(path, ret_free);
	if (r == 0)
		r = sys_path(ctx, path, sizeof(path), HP_SYSFS "/hugepages-%llukB/resv_hugepages", kb);
	return r < 0 ? r : read_file_u64(path, ret_resv);
}

static int pool_write(const struct prealloc_ctx *ctx, int node, uint64_t page_size, uint64_t nr)
{
	char path[PATH_MAX], val[32];
	int fd, r, len;

	r = pool_path(ctx, path, sizeof(path), node, page_size, "nr_hugepages");
	if (r < 0)
		return r;
	len = snprintf(val, sizeof(val), "%" PRIu64 "\n", nr);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write(fd, val, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return r;
}

/* Asks the kernel to compact node's memory so higher-order pages form. */
static void node_compact(const struct prealloc_ctx *ctx, int node)
{
	char path[PATH_MAX];
	int fd = -1;

	if (sys_path(ctx, path, sizeof(path), NODE_SYSFS "/node%d/compact", node) == 0)
		fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 && proc_path(ctx, path, sizeof(path), "/sys/vm/compact_memory") == 0)
		fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) < 0) {
		/* Compaction is a best effort; the read-back decides. */
	}
	close(fd);
}

/* A growth of more than this many pages goes in steps: max(1 GiB, 5% of the node). */
static uint64_t grow_step_pages(const struct prealloc_ctx *ctx, int node, uint64_t page_size)
{
	const struct topo_node *n = topo_node(ctx, node);
	uint64_t bytes = MAX(UINT64_C(1) << 30, n ? n->mem_total / 20 : 0);

	return MAX(bytes / page_size, 1);
}

/* cancel_fd readable: the caller wants the growth stopped (polled, never read). */
static bool grow_cancelled(int cancel_fd)
{
	struct pollfd pfd = { .fd = cancel_fd, .events = POLLIN };

	return cancel_fd >= 0 && poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLIN | POLLHUP));
}

int hugetlb_grow(const struct prealloc_ctx *ctx, int node, uint64_t page_size, uint64_t pages,
		 double deadline, int cancel_fd, struct grow_result *ret)
{
	uint64_t nr = 0, step = grow_step_pages(ctx, node, page_size), target;
	double start = now_seconds();
	int r;

	memset(ret, 0, sizeof(*ret));
	r = read_one(ctx, node, page_size, "nr_hugepages", &ret->before);
	if (r < 0)
		return r;
	ret->requested = ret->before + pages;
	target = ret->before + MIN(pages, step);
	/*
	 * In steps, each an absolute write read back, so that the kernel never
	 * holds a huge unfulfilled target it would keep draining the node for.
	 */
	for (;;) {
		if (grow_cancelled(cancel_fd)) {
			r = -ECANCELED;
			goto undo;
		}
		r = pool_write(ctx, node, page_size, target);
		if (r < 0 && r != -ENOMEM)
			goto undo;
		/* The kernel may allocate fewer than asked: believe only the read-back. */
		r = read_one(ctx, node, page_size, "nr_hugepages", &nr);
		if (r < 0)
			goto undo;
		if (nr >= ret->requested)
			break;
		if (nr >= target) {
			test_pause("grow-step");
			target = MIN(target + step, ret->requested);
			continue;
		}
		if (now_seconds() >= deadline)
			break;
		node_compact(ctx, node);
	}
	ret->got = nr;
	ret->seconds = now_seconds() - start;
	if (nr >= ret->requested) {
		ret->added = nr - ret->before;
		return 0;
	}
	r = -ENOMEM;
undo:
	/* All or nothing: a partial growth helps nobody and would leak. */
	ret->got = MAX(ret->got, nr);
	pool_write(ctx, node, page_size, ret->before);
	ret->seconds = now_seconds() - start;
	return r;
}

int hugetlb_shrink(const struct prealloc_ctx *ctx, int node, uint64_t page_size, uint64_t pages,
		   uint64_t *ret_returned)
{
	uint64_t before, after;
	int r;

	*ret_returned = 0;
	if (!pages)
		return 0;
	r = read_one(ctx, node, page_size, "nr_hugepages", &before);
	if (r < 0)
		return r;
	r = pool_write(ctx, node, page_size, before > pages ? before - pages : 0);
	if (r < 0)
		return r;
	r = read_one(ctx, node, page_size, "nr_hugepages", &after);
	if (r < 0)
		return r;
	*ret_returned = before > after ? before - after : 0;
	return 0;
}
