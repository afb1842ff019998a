/* SPDX-License-Identifier: MIT */
/*
 * What a node could give a hugepage pool at most, before any pool write.
 * There is no per-node MemAvailable: the estimate is the node's free
 * memory plus what reclaim could free quickly (file cache, reclaimable
 * slab), and a margin stays with the host so that a --reserve never turns
 * the memory running guests and the host itself need into hugepages.
 */
#include <stdio.h>
#include <string.h>

#include "host_limits.h"

#define CAPACITY_MARGIN_MIN (UINT64_C(256) << 20)

/* The keys of <sys>/devices/system/node/nodeN/meminfo the estimate uses, in bytes. */
static int node_meminfo_read(const struct prealloc_ctx *ctx, int node, struct node_capacity *c)
{
	static const char *const keys[] = { "MemTotal", "MemFree", "Active(file)",
					    "Inactive(file)", "SReclaimable" };
	uint64_t *const slots[] = { &c->mem_total, &c->mem_free, &c->file, &c->file, &c->slab };

	return node_meminfo_sum(ctx, node, keys, slots, ARRAY_SIZE(keys));
}

/* A /proc file's first number, or a "Key: N kB" line's N in bytes; 0 when absent. */
static uint64_t proc_value(const struct prealloc_ctx *ctx, const char *rel, const char *key)
{
	char path[PATH_MAX], line[256];
	uint64_t v = 0;
	FILE *f;

	if (proc_path(ctx, path, sizeof(path), "%s", rel) < 0 || !(f = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long n;
		size_t kl = key ? strlen(key) : 0;

		if (!key && sscanf(line, "%llu", &n) == 1) {
			v = n;
			break;
		}
		if (key && !strncmp(line, key, kl) && line[kl] == ':' &&
		    sscanf(line + kl + 1, "%llu", &n) == 1) {
			v = (uint64_t)n << 10;
			break;
		}
	}
	fclose(f);
	return v;
}

/*
 * The margin: max(256 MiB, 2% of the node, the node's share of
 * vm.min_free_kbytes). 256 MiB keeps a small host's kernel, sshd, libvirtd
 * and the QEMU processes' own (non-guest) memory alive; 2% scales that with
 * the node, whose page tables, slab and page cache grow with it; the
 * min_free_kbytes share (spread over nodes by size, as the kernel spreads
 * its watermarks) is the floor the kernel defends itself: below it every
 * allocation on the node reclaims directly or fails.
 */
static uint64_t capacity_margin(const struct prealloc_ctx *ctx, const struct node_capacity *c)
{
	uint64_t min_free = proc_value(ctx, "/sys/vm/min_free_kbytes", NULL) << 10;
	uint64_t all = 0, share = min_free;

	for (unsigned int n = 0; n < ctx->nr_nodes; n++)
		all += ctx->nodes[n].mem_total;
	if (all > c->mem_total && c->mem_total)
		share = (uint64_t)((double)min_free * ((double)c->mem_total / (double)all));
	return MAX(MAX(CAPACITY_MARGIN_MIN, c->mem_total / 50), share);
}

int node_capacity(const struct prealloc_ctx *ctx, int node, struct node_capacity *ret)
{
	int r;

	memset(ret, 0, sizeof(*ret));
	r = node_meminfo_read(ctx, node, ret);
	if (r < 0)
		return r;
	ret->estimate = ret->mem_free + ret->file + ret->slab;
	/*
	 * One node: its meminfo can miss hotplugged memory (a VM reports its
	 * boot memory there), as for 4K admission; the system's figure counts.
	 */
	if (ctx->nr_nodes == 1)
		ret->estimate = MAX(ret->estimate, proc_value(ctx, "/meminfo", "MemAvailable"));
	ret->margin = capacity_margin(ctx, ret);
	return 0;
}
