/* SPDX-License-Identifier: MIT */
/*
 * Topology: nodes with memory, their CPUs (intersected with the CPUs this
 * process may run on), memory and hugepage pools per node, hugetlbfs mounts.
 * Read once when the context is made (ctx.c).
 */
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "internal.h"

#define NODE_SYSFS "/devices/system/node"


int node_meminfo_sum(const struct prealloc_ctx *ctx, int node, const char *const *keys,
		     uint64_t *const *slots, size_t nr)
{
	char path[PATH_MAX], line[256];
	FILE *f;

	if (sys_path(ctx, path, sizeof(path), NODE_SYSFS "/node%d/meminfo", node) < 0)
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* "Node 0 MemFree:   123 kB": each key's kB, in bytes, added to its slot. */
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;
		char key[64];
		int n;

		if (sscanf(line, "Node %d %63[^:]: %llu", &n, key, &kb) != 3)
			continue;
		for (size_t k = 0; k < nr; k++)
			if (!strcmp(key, keys[k]))
				*slots[k] += (uint64_t)kb << 10;
	}
	fclose(f);
	return 0;
}

static int node_meminfo(const struct prealloc_ctx *ctx, int node, uint64_t *ret_total,
			uint64_t *ret_free)
{
	static const char *const keys[] = { "MemTotal", "MemFree" };
	uint64_t *const slots[] = { ret_total, ret_free };

	*ret_total = *ret_free = 0;
	return node_meminfo_sum(ctx, node, keys, slots, ARRAY_SIZE(keys));
}

/* The node's hugepages of one size: how many there are, how many are free. */
static void node_hugepages(const struct prealloc_ctx *ctx, int node, const char *size,
			   uint64_t *ret_total, uint64_t *ret_free)
{
	char path[PATH_MAX];

	sys_path(ctx, path, sizeof(path), NODE_SYSFS "/node%d/hugepages/hugepages-%s/nr_hugepages",
		 node, size);
	if (read_file_u64(path, ret_total) < 0)
		*ret_total = 0;
	sys_path(ctx, path, sizeof(path),
		 NODE_SYSFS "/node%d/hugepages/hugepages-%s/free_hugepages", node, size);
	if (read_file_u64(path, ret_free) < 0)
		*ret_free = 0;
}

static int node_distance(const struct prealloc_ctx *ctx, int from, int to)
{
	char path[PATH_MAX], buf[4096], *p, *end;
	int r, i = 0;

	sys_path(ctx, path, sizeof(path), NODE_SYSFS "/node%d/distance", from);
	r = read_file_str(path, buf, sizeof(buf));
	if (r < 0)
		return from == to ? 10 : 20;
	/* One entry per possible node in order, so index = node number. */
	for (p = buf; *p; p = end, i++) {
		long d = strtol(p, &end, 10);

		if (end == p)
			break;
		if (i == to)
			return (int)d;
	}
	return from == to ? 10 : 20;
}

static uint64_t default_hugepage_size(const struct prealloc_ctx *ctx)
{
	char line[128], path[PATH_MAX];
	uint64_t size = PREALLOC_PAGE_2M;
	FILE *f = NULL;

	if (proc_path(ctx, path, sizeof(path), "/meminfo") == 0)
		f = fopen(path, "re");
	if (!f)
		return size;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long kb;

		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1)
			size = kb << 10;
	}
	fclose(f);
	return size;
}

static void find_hugetlbfs_mounts(struct prealloc_ctx *ctx)
{
	uint64_t dflt = default_hugepage_size(ctx);
	char path[PATH_MAX];
	struct mntent *m;
	FILE *f;

	if (proc_path(ctx, path, sizeof(path), "/self/mounts") < 0)
		return;
	f = setmntent(path, "re");
	if (!f)
		return;
	while ((m = getmntent(f))) {
		const char *ps;
		uint64_t size = dflt;
		char *dst;

		if (strcmp(m->mnt_type, "hugetlbfs"))
			continue;
		ps = hasmntopt(m, "pagesize");
		if (ps) {
			char val[32];

			snprintf(val, sizeof(val), "%s", ps + strlen("pagesize="));
			val[strcspn(val, ",")] = '\0';
			if (prealloc_parse_size(val, &size) < 0)
				continue;
		}
		if (size == PREALLOC_PAGE_2M)
			dst = ctx->hugetlbfs_2m;
		else if (size == PREALLOC_PAGE_1G)
			dst = ctx->hugetlbfs_1g;
		else
			continue;
		/* First writable mount of a size wins. */
		if (!dst[0] && access(m->mnt_dir, W_OK) == 0)
			snprintf(dst, 256, "%s", m->mnt_dir);
	}
	endmntent(f);
}

static int single_node_fallback(struct prealloc_ctx *ctx)
{
	struct topo_node *n = calloc(1, sizeof(*n));
	long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);

	if (!n)
		return -ENOMEM;
	n->node = 0;
	n->cpu_node = 0;
	n->has_memory = true;
	n->mem_total = (uint64_t)pages * sysconf(_SC_PAGESIZE);
	n->mem_free = (uint64_t)avail * sysconf(_SC_PAGESIZE);
	n->cpus = ctx->allowed;
	n->nr_cpus = CPU_COUNT(&n->cpus);
	ctx->nodes = n;
	ctx->nr_nodes = 1;
	ctx->max_node = 0;
	return 0;
}

/* Node node's memory, pools and own allowed CPUs, into n. */
static void node_read(struct prealloc_ctx *ctx, struct topo_node *n, int node)
{
	char buf[4096], path[PATH_MAX];

	n->node = node;
	n->has_memory = true;
	node_meminfo(ctx, node, &n->mem_total, &n->mem_free);
	node_hugepages(ctx, node, "2048kB", &n->hp2m_total, &n->hp2m_free);
	node_hugepages(ctx, node, "1048576kB", &n->hp1g_total, &n->hp1g_free);
	sys_path(ctx, path, sizeof(path), NODE_SYSFS "/node%d/cpulist", node);
	if (read_file_str(path, buf, sizeof(buf)) >= 0 && parse_cpulist(buf, &n->cpus) == 0)
		CPU_AND(&n->cpus, &n->cpus, &ctx->allowed);
	else
		CPU_ZERO(&n->cpus);
	n->nr_cpus = CPU_COUNT(&n->cpus);
	n->cpu_node = node;
}

/* A node with memory but no allowed CPU borrows its nearest node's CPUs. */
static void nodes_borrow_cpus(struct prealloc_ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->nr_nodes; i++) {
		struct topo_node *n = &ctx->nodes[i];
		int best = -1, best_dist = INT_MAX;

		if (n->nr_cpus)
			continue;
		for (unsigned int j = 0; j < ctx->nr_nodes; j++) {
			struct topo_node *o = &ctx->nodes[j];
			int d;

			if (!o->nr_cpus || o->cpu_node != o->node)
				continue;
			d = node_distance(ctx, n->node, o->node);
			if (d < best_dist) {
				best_dist = d;
				best = (int)j;
			}
		}
		if (best >= 0) {
			n->cpu_node = ctx->nodes[best].node;
			n->cpus = ctx->nodes[best].cpus;
		} else {
			/* Every allowed CPU sits on a node without memory. */
			n->cpus = ctx->allowed;
		}
		n->nr_cpus = CPU_COUNT(&n->cpus);
	}
}

int topology_read(struct prealloc_ctx *ctx)
{
	cpu_set_t with_memory;
	char buf[4096], path[PATH_MAX];
	int r;

	if (sched_getaffinity(0, sizeof(ctx->allowed), &ctx->allowed) < 0)
		return -errno;
	find_hugetlbfs_mounts(ctx);

	/* cpu_set_t doubles as a node bitmap here: both are small integer sets. */
	r = sys_path(ctx, path, sizeof(path), NODE_SYSFS "/has_memory");
	if (r == 0)
		r = read_file_str(path, buf, sizeof(buf));
	if (r == -ENOENT)
		return single_node_fallback(ctx);
	if (r < 0)
		return r;
	r = parse_cpulist(buf, &with_memory);
	if (r < 0)
		return r;
	ctx->nr_nodes = CPU_COUNT(&with_memory);
	if (ctx->nr_nodes == 0)
		return single_node_fallback(ctx);
	ctx->nodes = calloc(ctx->nr_nodes, sizeof(*ctx->nodes));
	if (!ctx->nodes)
		return -ENOMEM;

	unsigned int i = 0;
	for (int node = 0; node < CPU_SETSIZE && i < ctx->nr_nodes; node++) {
		if (!CPU_ISSET(node, &with_memory))
			continue;
		node_read(ctx, &ctx->nodes[i++], node);
		ctx->max_node = node;
	}
	nodes_borrow_cpus(ctx);
	return 0;
}

const struct topo_node *topo_node(const struct prealloc_ctx *ctx, int node)
{
	for (unsigned int i = 0; i < ctx->nr_nodes; i++)
		if (ctx->nodes[i].node == node)
			return &ctx->nodes[i];
	return NULL;
}

EXPORT int prealloc_nodes(struct prealloc_ctx *ctx, int *ret_nodes, unsigned int max)
{
	if (!ctx || (max && !ret_nodes))
		return -EINVAL;
	for (unsigned int i = 0; i < ctx->nr_nodes && i < max; i++)
		ret_nodes[i] = ctx->nodes[i].node;
	return (int)ctx->nr_nodes;
}

EXPORT int prealloc_node_info(struct prealloc_ctx *ctx, int node,
			      struct prealloc_node_info *ret_info)
{
	struct prealloc_node_info info = { .size = sizeof(info) };
	const struct topo_node *n;

	if (!ctx || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	n = topo_node(ctx, node);
	if (!n)
		return -ENOENT;
	info.node = n->node;
	info.cpu_node = n->cpu_node;
	info.nr_cpus = n->nr_cpus;
	/* Pools and free memory change; read them fresh. */
	info.mem_total = n->mem_total;
	info.mem_free = n->mem_free;
	node_meminfo(ctx, node, &info.mem_total, &info.mem_free);
	node_hugepages(ctx, node, "2048kB", &info.hp2m_total, &info.hp2m_free);
	node_hugepages(ctx, node, "1048576kB", &info.hp1g_total, &info.hp1g_free);
	copy_sized_out(ret_info, &info, sizeof(info));
	return 0;
}

EXPORT int prealloc_node_cpus(struct prealloc_ctx *ctx, int node, int *ret_cpus, unsigned int max)
{
	const struct topo_node *n;
	unsigned int count = 0;

	if (!ctx || (max && !ret_cpus))
		return -EINVAL;
	n = topo_node(ctx, node);
	if (!n)
		return -ENOENT;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &n->cpus))
			continue;
		if (count < max)
			ret_cpus[count] = c;
		count++;
	}
	return (int)count;
}

EXPORT int prealloc_cpu_info(struct prealloc_ctx *ctx, struct prealloc_cpu_info *ret_info)
{
	struct prealloc_cpu_info info = { .size = sizeof(info) };

	if (!ctx || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	snprintf(info.vendor, sizeof(info.vendor), "%s", ctx->cpu.vendor);
	snprintf(info.model_name, sizeof(info.model_name), "%s", ctx->cpu.model_name);
	info.family = ctx->cpu.family;
	info.model = ctx->cpu.model;
	info.stepping = ctx->cpu.stepping;
	info.features = ctx->cpu.features;
	info.llc_bytes = ctx->cpu.llc_bytes;
	snprintf(info.llc_source, sizeof(info.llc_source), "%s",
		 ctx->cpu.llc_source[0] ? ctx->cpu.llc_source : "given");
	copy_sized_out(ret_info, &info, sizeof(info));
	return 0;
}

EXPORT const char *prealloc_hugetlbfs_mount(struct prealloc_ctx *ctx, uint64_t page_size)
{
	if (!ctx)
		return NULL;
	if (page_size == PREALLOC_PAGE_2M && ctx->hugetlbfs_2m[0])
		return ctx->hugetlbfs_2m;
	if (page_size == PREALLOC_PAGE_1G && ctx->hugetlbfs_1g[0])
		return ctx->hugetlbfs_1g;
	return NULL;
}
