/* SPDX-License-Identifier: MIT */
/*
 * A prepare request refused before any memory is touched (prepare_req.c),
 * through prealloc_prepare over a fake three-node sysfs/procfs and a
 * private directory on /dev/shm: each bad option, node or size with its
 * exact errno, step and whole message, and nothing left (prepare-case.h).
 *
 * What no other test holds: the options only the API can send (a page
 * size no name has, an empty path or holder, a holder at and past its 255
 * bytes, a holder check of PATH_MAX, more nodes than there can be, a node
 * count without its array, node sizes that wrap past 2^64), a node that
 * exists without memory and a negative one, a per-node size that is not
 * whole pages on a node past the first, fewer pages than the policy's
 * nodes. The CLI's bad-input test (integration, root) reaches only what
 * its parser lets through.
 */
#include "prepare-case.h"

/* ---- the options (prepare_request) --------------------------------------- */

static void c_page_8k(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->page_size = 8192;
	snprintf(want, len, "invalid prepare options: page_size is none of auto, thp, 4k, 2M and 1G");
}

static void c_path_empty(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->path = "";
	snprintf(want, len, "invalid prepare options: path is empty");
}

static void c_holder_empty(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->holder = "";
	snprintf(want, len, "invalid prepare options: holder is empty");
}

static char long_name[PATH_MAX + 1];

/* 256 bytes: one past the record's field. */
static void c_holder_256(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	memset(long_name, 'h', 256);
	long_name[256] = '\0';
	o->holder = long_name;
	snprintf(want, len, "invalid prepare options: holder is longer than 255 bytes");
}

/* 255 bytes fit: the request goes on to its size, which is what is refused. */
static void c_holder_255(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	memset(long_name, 'h', 255);
	long_name[255] = '\0';
	o->holder = long_name;
	o->length = 0;
	snprintf(want, len, "size must be greater than zero");
}

static void c_check_long(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	memset(long_name, 'c', PATH_MAX);
	long_name[PATH_MAX] = '\0';
	o->holder = "vm1";
	o->holder_check = long_name;
	snprintf(want, len, "invalid prepare options: holder_check is longer than PATH_MAX");
}

/* ---- nodes and sizes (request_nodes, request_sizes) ------------------------ */

static void c_too_many_nodes(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->nr_nodes = PREALLOC_MAX_NODES + 1;
	snprintf(want, len, "nr_nodes %d is more than %d", PREALLOC_MAX_NODES + 1, PREALLOC_MAX_NODES);
}

static void c_nodes_null(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->nodes = NULL;
	snprintf(want, len, "nr_nodes %u with no nodes array", o->nr_nodes);
}

static const int node01[] = { 0, 1 };

/* UINT64_MAX and one page: the sum wraps to 4095 unless caught. */
static void c_sizes_wrap(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	static const uint64_t bytes[] = { UINT64_MAX, K4 };

	o->nr_nodes = 2;
	o->nodes = node01;
	o->node_bytes = bytes;
	o->length = 0;
	snprintf(want, len, "the node sizes add up to more than 16 EiB");
}

static void c_sizes_sum(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	static const uint64_t bytes[] = { MIB, 2 * MIB };

	o->nr_nodes = 2;
	o->nodes = node01;
	o->node_bytes = bytes;
	o->length = 4 * MIB;
	snprintf(want, len, "the node sizes add up to 3 MiB, not the size given (4 MiB)");
}

static void c_size_zero(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->length = 0;
	snprintf(want, len, "size must be greater than zero");
}

static void c_node_missing(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	static const int nodes[] = { 0, 7 };

	o->nr_nodes = 2;
	o->nodes = nodes;
	snprintf(want, len, "node 7 does not exist or is offline (nodes with memory: 0-2)");
}

static void c_node_no_memory(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	static const int nodes[] = { 3 };

	o->nodes = nodes;
	snprintf(want, len, "node 3 has no memory (nodes with memory: 0-2)");
}

static void c_node_negative(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	static const int nodes[] = { -1 };

	o->nodes = nodes;
	snprintf(want, len, "node -1 does not exist or is offline (nodes with memory: 0-2)");
}

static void c_size_partial(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->length = 6144;
	snprintf(want, len, "size 6 KiB is not a multiple of the 4k page size");
}

/* Whole pages in all, not on node 1 (nor 2): each node's share is checked, not the first. */
static void c_node_partial(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	static const int nodes[] = { 0, 1, 2 };
	static const uint64_t bytes[] = { K4, 6144, 2048 };

	o->nr_nodes = 3;
	o->nodes = nodes;
	o->node_bytes = bytes;
	o->length = 0;
	snprintf(want, len, "node 1's size 6 KiB is not a multiple of the 4k page size");
}

/* The policy's nodes (0 to 2 here) and two pages between them. */
static void c_fewer_pages(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->nr_nodes = 0;
	o->nodes = NULL;
	o->length = 2 * K4;
	snprintf(want, len, "size 8 KiB is fewer than one 4k page per node");
}

static const struct req_case request_cases[] = {
	{ "page size 8192 (no such size)", c_page_8k, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "an empty path", c_path_empty, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "an empty holder", c_holder_empty, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "a holder of 256 bytes", c_holder_256, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "a holder of 255 bytes passes", c_holder_255, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "a holder check of PATH_MAX bytes", c_check_long, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "1025 nodes", c_too_many_nodes, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "one node, no array", c_nodes_null, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "node sizes that wrap", c_sizes_wrap, -EOVERFLOW, PREALLOC_STEP_REQUEST },
	{ "node sizes against the size", c_sizes_sum, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "size 0", c_size_zero, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "node 7", c_node_missing, -ENODEV, PREALLOC_STEP_REQUEST },
	{ "node 3, no memory", c_node_no_memory, -ENODEV, PREALLOC_STEP_REQUEST },
	{ "node -1", c_node_negative, -ENODEV, PREALLOC_STEP_REQUEST },
	{ "6 KiB of 4k pages", c_size_partial, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "half a page on node 1", c_node_partial, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "two pages, three nodes", c_fewer_pages, -EINVAL, PREALLOC_STEP_REQUEST },
};

int main(void)
{
	const char *why;

	if (prepare_case_start(&why) < 0)
		return tap_skip_all("%s", why);
	if (!ctx)
		return tap_done();
	RUN_ALL(request_cases);
	prealloc_ctx_free(ctx);
	return tap_done();
}
