/* SPDX-License-Identifier: MIT */
/*
 * 0.1's names of what 0.2 renamed for its words (docs/design.md, Words;
 * docs/abi.md, rule 3): code written against them still builds and reaches
 * the same code, and the structs keep 0.1's layout.
 *
 *   claim:    struct prealloc_reservation, prealloc_reservation_*(), the
 *             admission tag (prealloc_admit_opts.owner, _store_entry.owner)
 *   grow:     PREALLOC_ADMIT_RESERVE, PREALLOC_PREPARE_RESERVE, reserve_timeout_ms
 *   promised: prealloc_admit_result.reserved_others, prealloc_pool_status.reserved
 *   the holder-alive callback: prealloc_ctx_set_holder_check()
 *
 * This file is written with the old names on purpose. The structs of 0.1
 * are copied below as they were (old_*), so that each field is held to
 * the offset 0.1 gave it; the exported aliases are looked up by version
 * (name@PREALLOC_0.1) and must be the new names' code.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>

#include <prealloc.h>

#include "tap.h"

struct old_admit_opts {
	size_t size;
	unsigned int flags;
	uint64_t page_size;
	unsigned int nr_nodes;
	const int *nodes;
	const uint64_t *node_bytes;
	unsigned int reserve_timeout_ms;
	unsigned int lock_timeout_ms;
	const char *owner;
	const char *holder;
	const char *holder_check;
	int64_t holder_expires;
	int cancel_fd;
};

struct old_admit_result {
	size_t size;
	int reason;
	int node;
	uint64_t page_size, needed, available, pool_total, pool_free;
	uint64_t reserved_others;
	uint64_t grow_requested, grow_got;
	double grow_seconds;
	uint64_t added;
	char cgroup[256];
	uint64_t capacity_estimate, capacity_margin, warm_pages;
	unsigned int warm_cut, warm_removed;
};

struct old_pool_status {
	size_t size;
	int node;
	uint64_t page_size, total, free, surplus;
	uint64_t reserved;
	uint64_t added;
	unsigned int owners;
};

struct old_store_entry {
	size_t size;
	int state;
	int node;
	uint64_t page_size, pages, added, outstanding;
	int pid;
	uint64_t dev, ino;
	char owner[4096];
};

struct old_prepare_opts {
	size_t size;
	unsigned int flags;
	uint64_t page_size, length;
	unsigned int nr_nodes;
	const int *nodes;
	const uint64_t *node_bytes;
	const char *path, *dir;
	unsigned int threads;
	unsigned int reserve_timeout_ms;
	unsigned int lock_timeout_ms;
	unsigned int uid, gid, mode;
	const char *holder, *holder_check;
	int64_t holder_expires;
	const struct prealloc_completion *completion;
	int cancel_fd;
	int dir_fd;
};

#define SAME_AT(old, new, f) (offsetof(struct old, f) == offsetof(struct new, f))
#define SAME_AS(old, new, f, g) (offsetof(struct old, f) == offsetof(struct new, g))

static void test_layout(void)
{
	tap_ok(sizeof(struct old_admit_opts) == sizeof(struct prealloc_admit_opts) &&
		       SAME_AT(old_admit_opts, prealloc_admit_opts, reserve_timeout_ms) &&
		       SAME_AS(old_admit_opts, prealloc_admit_opts, reserve_timeout_ms,
			       grow_timeout_ms) &&
		       SAME_AT(old_admit_opts, prealloc_admit_opts, lock_timeout_ms) &&
		       SAME_AT(old_admit_opts, prealloc_admit_opts, owner) &&
		       SAME_AS(old_admit_opts, prealloc_admit_opts, owner, tag) &&
		       SAME_AT(old_admit_opts, prealloc_admit_opts, holder) &&
		       SAME_AT(old_admit_opts, prealloc_admit_opts, cancel_fd),
	       "prealloc_admit_opts: 0.1's layout, reserve_timeout_ms = grow_timeout_ms, "
	       "owner = tag");
	tap_ok(sizeof(struct old_admit_result) == sizeof(struct prealloc_admit_result) &&
		       SAME_AT(old_admit_result, prealloc_admit_result, reserved_others) &&
		       SAME_AS(old_admit_result, prealloc_admit_result, reserved_others,
			       promised_others) &&
		       SAME_AT(old_admit_result, prealloc_admit_result, grow_requested) &&
		       SAME_AT(old_admit_result, prealloc_admit_result, warm_removed),
	       "prealloc_admit_result: 0.1's layout, reserved_others = promised_others");
	tap_ok(sizeof(struct old_pool_status) == sizeof(struct prealloc_pool_status) &&
		       SAME_AT(old_pool_status, prealloc_pool_status, reserved) &&
		       SAME_AS(old_pool_status, prealloc_pool_status, reserved, promised) &&
		       SAME_AT(old_pool_status, prealloc_pool_status, added) &&
		       SAME_AT(old_pool_status, prealloc_pool_status, owners),
	       "prealloc_pool_status: 0.1's layout, reserved = promised");
	tap_ok(sizeof(struct old_store_entry) == sizeof(struct prealloc_store_entry) &&
		       SAME_AT(old_store_entry, prealloc_store_entry, owner) &&
		       SAME_AS(old_store_entry, prealloc_store_entry, owner, tag) &&
		       sizeof(((struct prealloc_store_entry *)0)->tag) == 4096,
	       "prealloc_store_entry: 0.1's layout, owner = tag");
	tap_ok(sizeof(struct old_prepare_opts) == sizeof(struct prealloc_prepare_opts) &&
		       SAME_AT(old_prepare_opts, prealloc_prepare_opts, reserve_timeout_ms) &&
		       SAME_AS(old_prepare_opts, prealloc_prepare_opts, reserve_timeout_ms,
			       grow_timeout_ms) &&
		       SAME_AT(old_prepare_opts, prealloc_prepare_opts, lock_timeout_ms) &&
		       SAME_AT(old_prepare_opts, prealloc_prepare_opts, dir_fd),
	       "prealloc_prepare_opts: 0.1's layout, reserve_timeout_ms = grow_timeout_ms");
}

/* Code of 0.1: its names in initialisers, flags and calls. */
static void test_old_code(void)
{
	struct prealloc_admit_opts o = { .size = sizeof(o), .flags = PREALLOC_ADMIT_RESERVE,
					 .reserve_timeout_ms = 7, .owner = "/old/owner" };
	struct prealloc_prepare_opts po = { .size = sizeof(po), .flags = PREALLOC_PREPARE_RESERVE,
					    .reserve_timeout_ms = 9 };
	struct prealloc_admit_result res = { .size = sizeof(res), .reserved_others = 3 };
	struct prealloc_pool_status st = { .size = sizeof(st), .reserved = 5 };
	struct prealloc_store_entry e = { .size = sizeof(e), .owner = "libvirt:old" };
	struct prealloc_reservation *resv = NULL;
	struct prealloc_claim *claim = resv;

	tap_ok(PREALLOC_ADMIT_RESERVE == PREALLOC_ADMIT_GROW_POOLS &&
		       PREALLOC_PREPARE_RESERVE == PREALLOC_PREPARE_GROW_POOLS,
	       "PREALLOC_ADMIT_RESERVE and PREALLOC_PREPARE_RESERVE are the GROW_POOLS flags");
	tap_ok(o.grow_timeout_ms == 7 && !strcmp(o.tag, "/old/owner") && po.grow_timeout_ms == 9,
	       "reserve_timeout_ms and owner set grow_timeout_ms and tag");
	tap_ok(res.promised_others == 3 && st.promised == 5 && !strcmp(e.tag, "libvirt:old"),
	       "reserved_others, reserved and owner are promised_others, promised and tag");
	tap_ok(claim == NULL, "struct prealloc_reservation is struct prealloc_claim");
	tap_ok(prealloc_reservation_set_owner(resv, "x") == -EINVAL &&
		       prealloc_reservation_commit(resv) == -EINVAL &&
		       prealloc_reservation_rollback(resv, NULL) == -EINVAL,
	       "prealloc_reservation_*() check their arguments, as prealloc_claim_*() do");
	prealloc_reservation_free(resv);
	prealloc_reservation_abandon(resv);
	prealloc_ctx_set_holder_check(NULL, NULL, NULL);
	tap_ok(1, "prealloc_reservation_free, _abandon, prealloc_ctx_set_holder_check take NULL");
}

/* A program linked against 0.1 binds name@PREALLOC_0.1: the new name's code. */
static void test_exported(void)
{
	static const char *const names[][2] = {
		{ "prealloc_reservation_set_owner", "prealloc_claim_set_tag" },
		{ "prealloc_reservation_commit", "prealloc_claim_commit" },
		{ "prealloc_reservation_rollback", "prealloc_claim_rollback" },
		{ "prealloc_reservation_free", "prealloc_claim_free" },
		{ "prealloc_reservation_abandon", "prealloc_claim_abandon" },
		{ "prealloc_ctx_set_holder_check", "prealloc_ctx_set_holder_alive" },
		{ "prealloc_ledger_entry", "prealloc_store_entry" },
		{ "prealloc_pool_gc", "prealloc_store_gc" },
	};

	if (!dlsym(RTLD_DEFAULT, "prealloc_admit")) {
		tap_skip("a static libprealloc exports nothing to look up");
		return;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *old = dlvsym(RTLD_DEFAULT, names[i][0], "PREALLOC_0.1");
		void *new = dlsym(RTLD_DEFAULT, names[i][1]);

		tap_ok(old && old == new, "%s@PREALLOC_0.1 is %s", names[i][0], names[i][1]);
	}
}

int main(void)
{
	test_layout();
	test_old_code();
	test_exported();
	return tap_done();
}
