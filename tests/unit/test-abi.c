/* SPDX-License-Identifier: MIT */
/* Options structs that start with their size: older and newer callers. */
#include <string.h>

#include "engine.h"
#include "tap.h"

/* Versions of one options struct; fields grow in 8-byte steps, no padding. */
struct opts_v1 {
	size_t size;
	int64_t a;
};

struct opts_v2 {
	size_t size;
	int64_t a;
	int64_t b;
	uint64_t c;
};

struct opts_v3 {
	size_t size;
	int64_t a;
	int64_t b;
	uint64_t c;
	uint64_t d;
};

int main(void)
{
	struct opts_v2 dst;
	struct opts_v1 old = { .size = sizeof(old), .a = 7 };
	struct opts_v3 newer = { .size = sizeof(newer), .a = 1, .b = 2, .c = 3 };

	memset(&dst, 0xff, sizeof(dst));
	tap_ok(copy_sized_in(&dst, sizeof(dst), &old) == 0 && dst.a == 7 && dst.b == 0 &&
		       dst.c == 0 && dst.size == sizeof(dst),
	       "an older, smaller struct is zero-extended");
	tap_ok(copy_sized_in(&dst, sizeof(dst), &newer) == 0 && dst.a == 1 && dst.c == 3,
	       "a newer struct with a zero tail is accepted");
	newer.d = 1;
	tap_ok(copy_sized_in(&dst, sizeof(dst), &newer) == -E2BIG,
	       "a newer struct with a non-zero tail is refused with E2BIG");
	struct opts_v1 bad = { .size = 0 };
	tap_ok(copy_sized_in(&dst, sizeof(dst), &bad) == -EINVAL, "size 0 is refused");

	/* Output structs: only as much as the caller's size says is written. */
	struct prealloc_node_info small = { .size = offsetof(struct prealloc_node_info, mem_total) };
	struct prealloc_node_info big = { .size = sizeof(big), .node = 3, .mem_total = 99 };
	small.mem_total = 1234;
	copy_sized_out(&small, &big, sizeof(big));
	tap_ok(small.node == 3 && small.mem_total == 1234,
	       "copy out stops at the caller's size");

	/* Public calls refuse NULL and bad sizes rather than crash. */
	struct prealloc_ctx *ctx = NULL;
	tap_ok(prealloc_ctx_new(&ctx) == 0 && ctx, "context is created");
	struct prealloc_region *r = NULL;
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = 1 << 20 };
	tap_ok(prealloc_region_new(ctx, NULL, &r) == -EINVAL, "NULL options refused");
	ro.backing = 99;
	tap_ok(prealloc_region_new(ctx, &ro, &r) == -EINVAL, "unknown backing refused");
	ro.backing = PREALLOC_BACKING_ANON;
	ro.length = 4097;
	tap_ok(prealloc_region_new(ctx, &ro, &r) == -EINVAL, "length off the page grid refused");
	ro.length = 1 << 20;
	ro.nr_nodes = 1;
	ro.nodes = (int[]){ 1000 };
	tap_ok(prealloc_region_new(ctx, &ro, &r) == -ENODEV, "unknown node refused with ENODEV");
	prealloc_ctx_free(ctx);
	return tap_done();
}
