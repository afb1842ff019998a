/* SPDX-License-Identifier: MIT */
/*
 * Admission and gc without root, over an injected sysfs/procfs (fakeroot.h):
 * a short pool is refused with its numbers; RESERVE writes the absolute
 * target; a live run's outstanding pages are subtracted and a dead run's
 * are not; a cgroup v2 hugetlb limit refuses; gc gives back a dead run's
 * growth and keeps a live run's; a named holder keeps its growth while its
 * check path exists, or while the ctx's callback says so.
 */
#include <string.h>

#include "internal.h"
#include "records.h"
#include "fakeroot.h"
#include "tap.h"

#define MB2 PREALLOC_PAGE_2M

static struct fakeroot fr;

/* Admits pages 2M pages on node 0; flags, holder as given. */
static int admit(struct prealloc_ctx *ctx, uint64_t pages, unsigned int flags, const char *holder,
		 const char *check, struct prealloc_reservation **ret_resv,
		 struct prealloc_admit_result *res)
{
	int node = 0;
	uint64_t bytes = pages * MB2;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .flags = flags, .page_size = MB2, .nr_nodes = 1,
		.nodes = &node, .node_bytes = &bytes, .holder = holder, .holder_check = check,
	};

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	*ret_resv = NULL;
	return prealloc_admit(ctx, &o, ret_resv, res);
}

/* A record of run pid/start, PREPARING, needing pages on node 0 of which added were grown. */
static uint64_t add_run_record(struct prealloc_ctx *ctx, int pid, uint64_t start, uint64_t pages,
			       uint64_t added)
{
	struct rec_pool p = { .node = 0, .page_size = MB2, .pages = pages, .added = added };
	struct store s;
	struct record *r;
	uint64_t id = record_new_id();

	if (store_load(ctx, &s) < 0)
		return 0;
	r = store_add(&s, id);
	r->state = PREALLOC_RECORD_PREPARING;
	r->owner.kind = PREALLOC_OWNER_RUN;
	r->owner.pid = pid;
	r->owner.start = start;
	r->page_size = MB2;
	record_add_pool(r, &p);
	if (store_save(ctx, &s) < 0)
		id = 0;
	store_free(&s);
	return id;
}

static void clear_store(struct prealloc_ctx *ctx)
{
	struct store s = { 0 };

	store_save(ctx, &s);
}

static void test_pool_and_reserve(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_reservation *resv;
	uint64_t returned = 0;
	int r;

	fr_set_pool(&fr, 0, 10, 10);
	r = admit(ctx, 20, 0, NULL, NULL, &resv, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.node == 0 &&
		       res.needed == 20 && res.available == 10 && res.pool_free == 10 &&
		       res.pool_total == 10,
	       "short pool refused: -ENOMEM, POOL, node 0, needed 20, available 10 (r %d reason %d "
	       "needed %llu available %llu)",
	       r, res.reason, (unsigned long long)res.needed, (unsigned long long)res.available);
	tap_ok(fr_pool_nr(&fr, 0) == 10, "a refusal leaves the pool alone");
	tap_ok(nr_records(ctx) == 0, "a refused admission leaves no record (%u)", nr_records(ctx));

	r = admit(ctx, 20, PREALLOC_ADMIT_RESERVE, NULL, NULL, &resv, &res);
	tap_ok(r == 0 && res.added == 10, "RESERVE admits 20 pages by adding 10 (r %d added %llu)", r,
	       (unsigned long long)res.added);
	tap_ok(fr_pool_nr(&fr, 0) == 20, "nr_hugepages holds the absolute target 20 (%llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	struct prealloc_record_info info = { .size = sizeof(info) };
	tap_ok(prealloc_record(ctx, 0, &info) == 0 && info.state == PREALLOC_RECORD_PREPARING &&
		       info.owner == PREALLOC_OWNER_RUN && info.alive && info.pid == (int)getpid() &&
		       info.pages == 20 && info.added == 10 && info.outstanding == 20,
	       "the reservation is a live PREPARING record of this process: 20 pages, 10 added");
	r = resv ? prealloc_reservation_rollback(resv, &returned) : -1;
	tap_ok(r == 0 && returned == 10 && fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "rollback gives the 10 back and drops the record (nr %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	prealloc_reservation_free(resv);
}

static void test_others(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_reservation *resv;
	int other = (int)getpid() + 100000, r;

	fr_set_pool(&fr, 0, 10, 10);
	fr_set_process(&fr, other, 4242);
	add_run_record(ctx, other, 4242, 6, 0);
	r = admit(ctx, 5, 0, NULL, NULL, &resv, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.available == 4 &&
		       res.reserved_others == 6,
	       "a live run's 6 outstanding pages are subtracted: 5 refused, 4 available (%llu, "
	       "others %llu)",
	       (unsigned long long)res.available, (unsigned long long)res.reserved_others);
	r = admit(ctx, 4, 0, NULL, NULL, &resv, &res);
	tap_ok(r == 0, "4 pages fit beside the live run (%d)", r);
	prealloc_reservation_free(resv);

	/* The pid now runs another process (another start time): the record's run is dead. */
	fr_set_process(&fr, other, 4243);
	r = admit(ctx, 10, 0, NULL, NULL, &resv, &res);
	tap_ok(r == 0 && res.reserved_others == 0,
	       "a dead run's record is not outstanding: all 10 pages admitted (r %d others %llu)", r,
	       (unsigned long long)res.reserved_others);
	prealloc_reservation_free(resv);
	clear_store(ctx);
}

static void test_cgroup(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_reservation *resv;
	int r;

	fr_set_pool(&fr, 0, 10, 10);
	fr_write(fr.proc, "self/mountinfo",
		 "22 1 0:21 / /proc rw,relatime shared:12 - proc proc rw\n"
		 "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 "
		 "cgroup2 rw,nsdelegate\n");
	fr_write(fr.proc, "self/cgroup", "0::/machine/vm1\n");
	/* 8 pages allowed, 2 charged: 6 left. The parent allows more. */
	fr_write(fr.sys, "fs/cgroup/machine/vm1/hugetlb.2MB.max", "%llu\n",
		 (unsigned long long)(8 * MB2));
	fr_write(fr.sys, "fs/cgroup/machine/vm1/hugetlb.2MB.current", "%llu\n",
		 (unsigned long long)(2 * MB2));
	fr_write(fr.sys, "fs/cgroup/machine/hugetlb.2MB.max", "max\n");
	r = admit(ctx, 7, 0, NULL, NULL, &resv, &res);
	tap_ok(r == -EDQUOT && res.reason == PREALLOC_ADMIT_CGROUP && res.needed == 7 &&
		       res.available == 6 && strstr(res.cgroup, "machine/vm1/hugetlb.2MB.max"),
	       "the cgroup's 6 pages left refuse 7: -EDQUOT, CGROUP, '%s' (r %d avail %llu)",
	       res.cgroup, r, (unsigned long long)res.available);
	r = admit(ctx, 6, 0, NULL, NULL, &resv, &res);
	tap_ok(r == 0, "6 pages fit under the cgroup limit (%d)", r);
	prealloc_reservation_free(resv);
	/* A parent's tighter limit counts too. */
	fr_write(fr.sys, "fs/cgroup/machine/hugetlb.2MB.max", "%llu\n",
		 (unsigned long long)(3 * MB2));
	fr_write(fr.sys, "fs/cgroup/machine/hugetlb.2MB.current", "0\n");
	r = admit(ctx, 4, 0, NULL, NULL, &resv, &res);
	tap_ok(r == -EDQUOT && res.available == 3 && strstr(res.cgroup, "machine/hugetlb.2MB.max"),
	       "the parent's limit of 3 refuses 4 (r %d avail %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	r = admit(ctx, 20, PREALLOC_ADMIT_RESERVE, NULL, NULL, &resv, &res);
	tap_ok(r == -EDQUOT && fr_pool_nr(&fr, 0) == 10,
	       "RESERVE does not grow a pool past a cgroup limit (r %d, nr %llu)", r,
	       (unsigned long long)fr_pool_nr(&fr, 0));
	fr_write(fr.proc, "self/mountinfo", "22 1 0:21 / /proc rw,relatime - proc proc rw\n");
	clear_store(ctx);
}

/* A 4K admission of mib MiB on node 0. */
static int admit_4k(struct prealloc_ctx *ctx, uint64_t mib, struct prealloc_reservation **ret_resv,
		    struct prealloc_admit_result *res)
{
	int node = 0;
	uint64_t bytes = mib << 20;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .page_size = PREALLOC_PAGE_4K, .nr_nodes = 1, .nodes = &node,
		.node_bytes = &bytes, .owner = "/nonexistent/guest",
	};

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	*ret_resv = NULL;
	return prealloc_admit(ctx, &o, ret_resv, res);
}

/*
 * Memory cgroups for 4K (cgroup v2 here only through this fake tree: on
 * these machines the memory controller is bound to v1, which the hostile
 * integration test covers for real): the limit less the usage plus the
 * reclaimable file cache is the room, a parent's tighter room counts, and
 * v1's files are read the same way.
 */
static void test_memcg(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_reservation *resv;
	int r;

	fr_write(fr.proc, "self/mountinfo",
		 "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 "
		 "cgroup2 rw,nsdelegate\n");
	fr_write(fr.proc, "self/cgroup", "0::/machine/vm2\n");
	/* 256 MiB allowed, 200 used, 48 of it file cache: 104 MiB of room. */
	fr_write(fr.sys, "fs/cgroup/machine/vm2/memory.max", "%llu\n", 256ULL << 20);
	fr_write(fr.sys, "fs/cgroup/machine/vm2/memory.current", "%llu\n", 200ULL << 20);
	fr_write(fr.sys, "fs/cgroup/machine/vm2/memory.stat",
		 "anon 100\nfile 50331648\nactive_file 16777216\ninactive_file 33554432\n");
	fr_write(fr.sys, "fs/cgroup/machine/memory.max", "max\n");
	r = admit_4k(ctx, 128, &resv, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMCG && res.needed == 128ULL << 20 &&
		       res.available == 104ULL << 20 &&
		       strstr(res.cgroup, "machine/vm2/memory.max"),
	       "v2: 128 MiB refused with 104 MiB of room (file cache counted): MEMCG, '%s' (r %d, "
	       "room %llu MiB)", res.cgroup, r, (unsigned long long)(res.available >> 20));
	r = admit_4k(ctx, 96, &resv, &res);
	tap_ok(r == 0, "v2: 96 MiB fits in the room (%d)", r);
	prealloc_reservation_free(resv);
	fr_write(fr.sys, "fs/cgroup/machine/memory.max", "%llu\n", 64ULL << 20);
	fr_write(fr.sys, "fs/cgroup/machine/memory.current", "0\n");
	r = admit_4k(ctx, 96, &resv, &res);
	tap_ok(r == -ENOMEM && res.available == 64ULL << 20 &&
		       strstr(res.cgroup, "machine/memory.max") &&
		       !strstr(res.cgroup, "vm2"),
	       "v2: the parent's 64 MiB refuses 96 (r %d, '%s')", r, res.cgroup);
	/* v1: the memory hierarchy mounted on its own, hierarchical stats. */
	fr_write(fr.proc, "self/mountinfo",
		 "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n");
	fr_write(fr.proc, "self/cgroup", "5:cpu:/\n4:memory:/jail\n0::/\n");
	fr_write(fr.sys, "fs/cgroup/memory/jail/memory.limit_in_bytes", "%llu\n", 64ULL << 20);
	fr_write(fr.sys, "fs/cgroup/memory/jail/memory.usage_in_bytes", "%llu\n", 32ULL << 20);
	fr_write(fr.sys, "fs/cgroup/memory/jail/memory.stat",
		 "cache 0\ntotal_active_file 0\ntotal_inactive_file 8388608\n");
	fr_write(fr.sys, "fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	r = admit_4k(ctx, 48, &resv, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMCG &&
		       res.available == 40ULL << 20 &&
		       strstr(res.cgroup, "memory/jail/memory.limit_in_bytes"),
	       "v1: 48 MiB refused with 40 MiB of room under memory.limit_in_bytes (r %d, room "
	       "%llu MiB, '%s')", r, (unsigned long long)(res.available >> 20), res.cgroup);
	r = admit_4k(ctx, 40, &resv, &res);
	tap_ok(r == 0, "v1: 40 MiB fits (%d)", r);
	prealloc_reservation_free(resv);
	fr_write(fr.proc, "self/mountinfo", "22 1 0:21 / /proc rw,relatime - proc proc rw\n");
	fr_write(fr.proc, "self/cgroup", "0::/\n");
	clear_store(ctx);
}

static void test_gc_runs(struct prealloc_ctx *ctx)
{
	int live = (int)getpid() + 100001, dead = (int)getpid() + 100002;
	uint64_t returned = 0;
	unsigned int settled = 0;
	int r;

	/* 30 pages, all free: the dead run grew 8, the live one 5 (and needs 6). */
	fr_set_pool(&fr, 0, 30, 30);
	fr_set_process(&fr, live, 777);
	add_run_record(ctx, dead, 555, 10, 8);	/* no stat for dead: gone */
	uint64_t live_id = add_run_record(ctx, live, 777, 6, 5);

	r = prealloc_pool_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && returned == 8,
	       "gc settles the dead run and returns its 8 pages (r %d settled %u returned %llu)", r,
	       settled, (unsigned long long)returned);
	tap_ok(fr_pool_nr(&fr, 0) == 22, "nr_hugepages shrank by the dead run's growth: 22 (%llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	struct prealloc_record_info info = { .size = sizeof(info) };
	tap_ok(nr_records(ctx) == 1 && prealloc_record(ctx, 0, &info) == 0 && info.id == live_id &&
		       info.added == 5 && info.alive,
	       "the live run's record and growth stay");

	/* Only what is free and nobody was promised goes back. */
	clear_store(ctx);
	fr_set_pool(&fr, 0, 30, 9);
	add_run_record(ctx, dead, 555, 10, 8);
	add_run_record(ctx, live, 777, 6, 0);
	r = prealloc_pool_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && fr_pool_nr(&fr, 0) == 27,
	       "with 9 free and 6 promised to a live run, gc returns 3 of 8 (nr %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	struct prealloc_ledger_entry e = { .size = sizeof(e) };
	bool orphan = false;
	for (unsigned int k = 0; prealloc_ledger_entry(ctx, k, &e) == 0; k++)
		orphan |= e.state == PREALLOC_LEDGER_ORPHAN && e.added == 5;
	tap_ok(orphan, "the 5 still in use stay as an orphan's growth");
	clear_store(ctx);
}

static int holder_answer;
static int holder_calls;

static int holder_cb(void *userdata, const char *holder)
{
	(void)userdata;
	holder_calls++;
	return strcmp(holder, "vm:one") ? -ENOENT : holder_answer;
}

static void test_holder(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_reservation *resv;
	struct prealloc_record_info info = { .size = sizeof(info) };
	char check[400];
	unsigned int settled = 0;
	uint64_t returned = 0;
	int r;

	snprintf(check, sizeof(check), "%s/vm-one.alive", fr.dir);
	fr_write(fr.dir, "vm-one.alive", "x\n");
	fr_set_pool(&fr, 0, 10, 10);
	r = admit(ctx, 20, PREALLOC_ADMIT_RESERVE, "vm:one", check, &resv, &res);
	tap_ok(r == 0 && fr_pool_nr(&fr, 0) == 20 && resv && prealloc_reservation_commit(resv) == 0,
	       "a holder's reservation grows the pool by 10 and commits");
	prealloc_reservation_free(resv);
	tap_ok(prealloc_record(ctx, 0, &info) == 0 && info.state == PREALLOC_RECORD_READY &&
		       info.owner == PREALLOC_OWNER_HOLDER && !strcmp(info.holder, "vm:one") &&
		       info.added == 10,
	       "the committed record is READY, held by vm:one, 10 added");
	/* Our process going away does not matter: the holder holds it. */
	r = prealloc_pool_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 0 && fr_pool_nr(&fr, 0) == 20 && nr_records(ctx) == 1,
	       "gc keeps the holder's growth while its check path exists");
	unlink(check);
	r = prealloc_pool_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && returned == 10 && fr_pool_nr(&fr, 0) == 10 &&
		       nr_records(ctx) == 0,
	       "once the check path is gone gc returns the 10 and drops the record (nr %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));

	/* The ctx's callback decides over the record's own check. */
	r = admit(ctx, 20, PREALLOC_ADMIT_RESERVE, "vm:one", check, &resv, &res);
	if (r == 0)
		prealloc_reservation_commit(resv);
	prealloc_reservation_free(resv);
	prealloc_ctx_set_holder_check(ctx, holder_cb, NULL);
	holder_answer = 1;
	r = prealloc_pool_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 0 && holder_calls > 0 && fr_pool_nr(&fr, 0) == 20,
	       "the callback saying alive keeps it, though the check path is missing");
	holder_answer = -EIO;
	r = prealloc_pool_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && fr_pool_nr(&fr, 0) == 10,
	       "the callback unsure: the record's own check (missing path) decides: gone");
	fr_write(fr.dir, "vm-one.alive", "x\n");
	r = admit(ctx, 20, PREALLOC_ADMIT_RESERVE, "vm:one", check, &resv, &res);
	if (r == 0)
		prealloc_reservation_commit(resv);
	prealloc_reservation_free(resv);
	holder_answer = 0;
	r = prealloc_pool_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "the callback saying gone settles it, though the check path exists");
	prealloc_ctx_set_holder_check(ctx, NULL, NULL);
	clear_store(ctx);
}

int main(void)
{
	struct prealloc_ctx *ctx;

	if (fakeroot_make(&fr, 1) < 0) {
		tap_ok(0, "cannot build the fake tree in /tmp");
		return tap_done();
	}
	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx over the fake sysfs and procfs")) {
		fakeroot_remove(&fr);
		return tap_done();
	}
	test_pool_and_reserve(ctx);
	test_others(ctx);
	test_cgroup(ctx);
	test_memcg(ctx);
	test_gc_runs(ctx);
	test_holder(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
