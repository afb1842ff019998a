/* SPDX-License-Identifier: MIT */
/*
 * Admission and gc without root, over an injected sysfs/procfs (fakeroot.h):
 * a short pool is refused with its numbers; GROW_POOLS writes the absolute
 * target; a live run's outstanding pages are subtracted and a dead run's
 * are not; a cgroup v2 hugetlb limit refuses; gc gives back a dead run's
 * growth and keeps a live run's; a named holder keeps its growth while its
 * check path exists, or while the ctx's callback says so.
 *
 * Then every admission limit at its edge, on one node and on three whose
 * shares differ (so that a sum over nodes that counts one node, or one
 * twice, is caught): pools (2M, 1G), the system-wide count, hugetlb cgroup
 * v2 (max, rsvd.max, their .current, the parent) and v1 files of both
 * sizes, memory cgroups, node memory less other runs' 4k shares, the
 * prepare flow's filesystem room and a reused file's credit, and the
 * one-line messages with every field told apart.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/statfs.h>

#include "engine.h"
#include "flows.h"
#include "state.h"
#include "fakeroot.h"
#include "tap.h"

#define MB2 PREALLOC_PAGE_2M
#define GB1 PREALLOC_PAGE_1G
#define K4 PREALLOC_PAGE_4K
#define MIB (UINT64_C(1) << 20)

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

static struct fakeroot fr;	/* one node */
static struct fakeroot fr3;	/* three nodes */

/* Admits pages 2M pages on node 0; flags, holder as given. */
static int admit(struct prealloc_ctx *ctx, uint64_t pages, unsigned int flags, const char *holder,
		 const char *check, struct prealloc_claim **ret_resv,
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

/*
 * A PREPARING record of run pid/start with nr shares (node, page size,
 * pages, added); path, when given, is the file whose resident pages count
 * as faulted.
 */
static uint64_t add_shares_record(struct prealloc_ctx *ctx, int pid, uint64_t start,
				  const char *path, const struct rec_pool *shares, unsigned int nr)
{
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
	r->page_size = shares[0].page_size;
	if (path) {
		r->has_file = true;
		snprintf(r->path, sizeof(r->path), "%s", path);
	}
	for (unsigned int k = 0; k < nr; k++)
		record_add_pool(r, &shares[k]);
	if (store_save(ctx, &s) < 0)
		id = 0;
	store_free(&s);
	return id;
}

/* A record of run pid/start, PREPARING, needing pages on node 0 of which added were grown. */
static uint64_t add_run_record(struct prealloc_ctx *ctx, int pid, uint64_t start, uint64_t pages,
			       uint64_t added)
{
	struct rec_pool p = { .node = 0, .page_size = MB2, .pages = pages, .added = added };

	return add_shares_record(ctx, pid, start, NULL, &p, 1);
}

static void clear_store(struct prealloc_ctx *ctx)
{
	struct store s = { 0 };

	store_save(ctx, &s);
}

static void test_pool_and_grow(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	uint64_t returned = 0;
	int r;

	fr_set_pool(&fr, 0, 10, 10);
	r = admit(ctx, 20, 0, NULL, NULL, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.node == 0 &&
		       res.needed == 20 && res.available == 10 && res.pool_free == 10 &&
		       res.pool_total == 10,
	       "short pool refused: -ENOMEM, POOL, node 0, needed 20, available 10 (r %d reason %d "
	       "needed %llu available %llu)",
	       r, res.reason, (unsigned long long)res.needed, (unsigned long long)res.available);
	tap_ok(fr_pool_nr(&fr, 0) == 10, "a refusal leaves the pool alone");
	tap_ok(nr_records(ctx) == 0, "a refused admission leaves no record (%u)", nr_records(ctx));

	r = admit(ctx, 20, PREALLOC_ADMIT_GROW_POOLS, NULL, NULL, &claim, &res);
	tap_ok(r == 0 && res.added == 10, "GROW_POOLS admits 20 pages by adding 10 (r %d added %llu)", r,
	       (unsigned long long)res.added);
	tap_ok(fr_pool_nr(&fr, 0) == 20, "nr_hugepages holds the absolute target 20 (%llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	struct prealloc_record_info info = { .size = sizeof(info) };
	tap_ok(prealloc_record(ctx, 0, &info) == 0 && info.state == PREALLOC_RECORD_PREPARING &&
		       info.owner == PREALLOC_OWNER_RUN && info.alive && info.pid == (int)getpid() &&
		       info.pages == 20 && info.added == 10 && info.outstanding == 20,
	       "the claim is a live PREPARING record of this process: 20 pages, 10 added");
	r = claim ? prealloc_claim_rollback(claim, &returned) : -1;
	tap_ok(r == 0 && returned == 10 && fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "rollback gives the 10 back and drops the record (nr %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	prealloc_claim_free(claim);
}

static void test_others(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	int other = (int)getpid() + 100000, r;

	fr_set_pool(&fr, 0, 10, 10);
	fr_set_process(&fr, other, 4242);
	add_run_record(ctx, other, 4242, 6, 0);
	r = admit(ctx, 5, 0, NULL, NULL, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.available == 4 &&
		       res.promised_others == 6,
	       "a live run's 6 outstanding pages are subtracted: 5 refused, 4 available (%llu, "
	       "others %llu)",
	       (unsigned long long)res.available, (unsigned long long)res.promised_others);
	r = admit(ctx, 4, 0, NULL, NULL, &claim, &res);
	tap_ok(r == 0, "4 pages fit beside the live run (%d)", r);
	prealloc_claim_free(claim);

	/* The pid now runs another process (another start time): the record's run is dead. */
	fr_set_process(&fr, other, 4243);
	r = admit(ctx, 10, 0, NULL, NULL, &claim, &res);
	tap_ok(r == 0 && res.promised_others == 0,
	       "a dead run's record is not outstanding: all 10 pages admitted (r %d others %llu)", r,
	       (unsigned long long)res.promised_others);
	prealloc_claim_free(claim);
	clear_store(ctx);
}

/*
 * A live run's file credits only what it gained since its share was named
 * (base): 2 pages resident over a base of 1 owe 6 - 1 = 5; a file that lost
 * pages below its base (punched since) credits none, never "more than all",
 * so the whole 6 are still owed (issue 42: a count that must not wrap).
 */
static void test_outstanding_base(struct prealloc_ctx *ctx)
{
	struct rec_pool share = { .node = 0, .page_size = MB2, .pages = 6, .base = 1 };
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	int other = (int)getpid() + 100010, fd, r;
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s/base-file", fr.dir);
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (!tap_ok(fd >= 0 && posix_fallocate(fd, 0, (off_t)(2 * MB2)) == 0 && fsync(fd) == 0,
		    "base: a file holding 2 2M pages"))
		return;
	close(fd);
	fr_set_pool(&fr, 0, 10, 10);
	fr_set_process(&fr, other, 4250);
	add_shares_record(ctx, other, 4250, file, &share, 1);
	r = admit(ctx, 5, 0, NULL, NULL, &claim, &res);
	tap_ok(r == 0 && res.promised_others == 5,
	       "base 1, 2 resident: the run owes 5, 5 of 10 fit (r %d others %llu)", r,
	       (unsigned long long)res.promised_others);
	prealloc_claim_free(claim);
	r = admit(ctx, 6, 0, NULL, NULL, &claim, &res);
	tap_ok(r == -ENOMEM && res.available == 5, "base 1: 6 refused, 5 available (r %d, %llu)", r,
	       (unsigned long long)res.available);
	clear_store(ctx);
	share.base = 4;
	add_shares_record(ctx, other, 4250, file, &share, 1);
	r = admit(ctx, 5, 0, NULL, NULL, &claim, &res);
	tap_ok(r == -ENOMEM && res.available == 4 && res.promised_others == 6,
	       "base 4, 2 resident (pages lost since): all 6 still owed, 5 refused (r %d, "
	       "available %llu, others %llu)", r, (unsigned long long)res.available,
	       (unsigned long long)res.promised_others);
	prealloc_claim_free(claim);
	unlink(file);
	clear_store(ctx);
}

static void test_cgroup(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
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
	r = admit(ctx, 7, 0, NULL, NULL, &claim, &res);
	tap_ok(r == -EDQUOT && res.reason == PREALLOC_ADMIT_CGROUP && res.needed == 7 &&
		       res.available == 6 && strstr(res.cgroup, "machine/vm1/hugetlb.2MB.max"),
	       "the cgroup's 6 pages left refuse 7: -EDQUOT, CGROUP, '%s' (r %d avail %llu)",
	       res.cgroup, r, (unsigned long long)res.available);
	r = admit(ctx, 6, 0, NULL, NULL, &claim, &res);
	tap_ok(r == 0, "6 pages fit under the cgroup limit (%d)", r);
	prealloc_claim_free(claim);
	/* A parent's tighter limit counts too. */
	fr_write(fr.sys, "fs/cgroup/machine/hugetlb.2MB.max", "%llu\n",
		 (unsigned long long)(3 * MB2));
	fr_write(fr.sys, "fs/cgroup/machine/hugetlb.2MB.current", "0\n");
	r = admit(ctx, 4, 0, NULL, NULL, &claim, &res);
	tap_ok(r == -EDQUOT && res.available == 3 && strstr(res.cgroup, "machine/hugetlb.2MB.max"),
	       "the parent's limit of 3 refuses 4 (r %d avail %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	r = admit(ctx, 20, PREALLOC_ADMIT_GROW_POOLS, NULL, NULL, &claim, &res);
	tap_ok(r == -EDQUOT && fr_pool_nr(&fr, 0) == 10,
	       "GROW_POOLS does not grow a pool past a cgroup limit (r %d, nr %llu)", r,
	       (unsigned long long)fr_pool_nr(&fr, 0));
	fr_write(fr.proc, "self/mountinfo", "22 1 0:21 / /proc rw,relatime - proc proc rw\n");
	clear_store(ctx);
}

/* A 4K admission of bytes on node 0. */
static int admit_4k_bytes(struct prealloc_ctx *ctx, uint64_t bytes,
			  struct prealloc_claim **ret_resv, struct prealloc_admit_result *res)
{
	int node = 0;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .page_size = PREALLOC_PAGE_4K, .nr_nodes = 1, .nodes = &node,
		.node_bytes = &bytes, .tag = "/nonexistent/guest",
	};

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	*ret_resv = NULL;
	return prealloc_admit(ctx, &o, ret_resv, res);
}

/* A 4K admission of mib MiB on node 0. */
static int admit_4k(struct prealloc_ctx *ctx, uint64_t mib, struct prealloc_claim **ret_resv,
		    struct prealloc_admit_result *res)
{
	return admit_4k_bytes(ctx, mib << 20, ret_resv, res);
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
	struct prealloc_claim *claim;
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
	r = admit_4k(ctx, 128, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMCG && res.needed == 128ULL << 20 &&
		       res.available == 104ULL << 20 &&
		       strstr(res.cgroup, "machine/vm2/memory.max"),
	       "v2: 128 MiB refused with 104 MiB of room (file cache counted): MEMCG, '%s' (r %d, "
	       "room %llu MiB)", res.cgroup, r, (unsigned long long)(res.available >> 20));
	r = admit_4k(ctx, 96, &claim, &res);
	tap_ok(r == 0, "v2: 96 MiB fits in the room (%d)", r);
	prealloc_claim_free(claim);
	r = admit_4k(ctx, 104, &claim, &res);
	tap_ok(r == 0, "v2: exactly the room, 104 MiB, is admitted (%d)", r);
	prealloc_claim_free(claim);
	r = admit_4k_bytes(ctx, 104 * MIB + K4, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMCG && res.needed == 104 * MIB + K4 &&
		       res.available == 104 * MIB,
	       "v2: one 4k page past the room is refused (r %d, needed %llu, room %llu)", r,
	       (unsigned long long)res.needed, (unsigned long long)res.available);
	fr_write(fr.sys, "fs/cgroup/machine/memory.max", "%llu\n", 64ULL << 20);
	fr_write(fr.sys, "fs/cgroup/machine/memory.current", "0\n");
	r = admit_4k(ctx, 96, &claim, &res);
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
	/* 64 MiB allowed, 32 used, 4 + 8 of it file cache (apart: each must count): 44 of room. */
	fr_write(fr.sys, "fs/cgroup/memory/jail/memory.stat",
		 "cache 0\ntotal_active_file 4194304\ntotal_inactive_file 8388608\n");
	fr_write(fr.sys, "fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	r = admit_4k(ctx, 48, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMCG &&
		       res.available == 44ULL << 20 &&
		       strstr(res.cgroup, "memory/jail/memory.limit_in_bytes"),
	       "v1: 48 MiB refused with 44 MiB of room under memory.limit_in_bytes (r %d, room "
	       "%llu MiB, '%s')", r, (unsigned long long)(res.available >> 20), res.cgroup);
	r = admit_4k(ctx, 44, &claim, &res);
	tap_ok(r == 0, "v1: exactly the room, 44 MiB, fits (%d)", r);
	prealloc_claim_free(claim);
	r = admit_4k_bytes(ctx, 44 * MIB + K4, &claim, &res);
	tap_ok(r == -ENOMEM && res.available == 44 * MIB,
	       "v1: one 4k page past the room is refused (r %d, room %llu)", r,
	       (unsigned long long)res.available);
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

	r = prealloc_store_gc(ctx, &returned, &settled);
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
	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && fr_pool_nr(&fr, 0) == 27,
	       "with 9 free and 6 promised to a live run, gc returns 3 of 8 (nr %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	struct prealloc_store_entry e = { .size = sizeof(e) };
	bool orphan = false;
	for (unsigned int k = 0; prealloc_store_entry(ctx, k, &e) == 0; k++)
		orphan |= e.state == PREALLOC_STORE_ORPHAN && e.added == 5;
	tap_ok(orphan, "the 5 still in use stay as an orphan's growth");
	clear_store(ctx);
}

/*
 * A dead run's growth whose pages are all taken, and not by a promise: a
 * file of ours made from free pages took them (pages beyond its growth).
 * The growth follows the pages to that file's record, the dead one goes;
 * none goes back now (nothing is free), and the sum of growth is kept.
 */
static void test_gc_growth_follows(struct prealloc_ctx *ctx)
{
	int dead = (int)getpid() + 100003;
	uint64_t returned = 0, file_id;
	unsigned int settled = 0;
	char file[300];
	struct store s;
	int r;

	snprintf(file, sizeof(file), "%s/took-free-pages", fr.dir);
	fr_write(fr.dir, "took-free-pages", "x\n");
	fr_set_pool(&fr, 0, 30, 0);
	add_run_record(ctx, dead, 555, 8, 8);	/* no stat for dead: gone */
	file_id = add_shares_record(ctx, (int)getpid() + 100004, 1,
				    file, &(struct rec_pool){ .node = 0, .page_size = MB2,
							      .pages = 10, .added = 2 }, 1);
	if (store_load(ctx, &s) == 0) {	/* READY, its run done: held by its file */
		long i = store_find(&s, file_id);

		if (i >= 0) {
			s.r[i].state = PREALLOC_RECORD_READY;
			s.r[i].owner.kind = PREALLOC_OWNER_NONE;
			store_save(ctx, &s);
		}
		store_free(&s);
	}
	r = prealloc_store_gc(ctx, &returned, &settled);
	struct prealloc_record_info info = { .size = sizeof(info) };
	int got = nr_records(ctx) == 1 ? prealloc_record(ctx, 0, &info) : -1;
	tap_ok(r == 0 && settled == 1 && returned == 0 && got == 0 && info.id == file_id &&
		       info.added == 10 && fr_pool_nr(&fr, 0) == 30,
	       "gc: a dead run's growth whose pages a file took from the free ones follows them "
	       "(settled %u, returned %llu, %u records, the file's growth %llu, nr %llu)",
	       settled, (unsigned long long)returned, nr_records(ctx),
	       (unsigned long long)info.added, (unsigned long long)fr_pool_nr(&fr, 0));
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
	struct prealloc_claim *claim;
	struct prealloc_record_info info = { .size = sizeof(info) };
	char check[400];
	unsigned int settled = 0;
	uint64_t returned = 0;
	int r;

	snprintf(check, sizeof(check), "%s/vm-one.alive", fr.dir);
	fr_write(fr.dir, "vm-one.alive", "x\n");
	fr_set_pool(&fr, 0, 10, 10);
	r = admit(ctx, 20, PREALLOC_ADMIT_GROW_POOLS, "vm:one", check, &claim, &res);
	tap_ok(r == 0 && fr_pool_nr(&fr, 0) == 20 && claim && prealloc_claim_commit(claim) == 0,
	       "a holder's claim grows the pool by 10 and commits");
	prealloc_claim_free(claim);
	tap_ok(prealloc_record(ctx, 0, &info) == 0 && info.state == PREALLOC_RECORD_READY &&
		       info.owner == PREALLOC_OWNER_HOLDER && !strcmp(info.holder, "vm:one") &&
		       info.added == 10,
	       "the committed record is READY, held by vm:one, 10 added");
	/* Our process going away does not matter: the holder holds it. */
	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 0 && fr_pool_nr(&fr, 0) == 20 && nr_records(ctx) == 1,
	       "gc keeps the holder's growth while its check path exists");
	unlink(check);
	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && returned == 10 && fr_pool_nr(&fr, 0) == 10 &&
		       nr_records(ctx) == 0,
	       "once the check path is gone gc returns the 10 and drops the record (nr %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));

	/* The ctx's callback decides over the record's own check. */
	r = admit(ctx, 20, PREALLOC_ADMIT_GROW_POOLS, "vm:one", check, &claim, &res);
	if (r == 0)
		prealloc_claim_commit(claim);
	prealloc_claim_free(claim);
	prealloc_ctx_set_holder_alive(ctx, holder_cb, NULL);
	holder_answer = 1;
	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 0 && holder_calls > 0 && fr_pool_nr(&fr, 0) == 20,
	       "the callback saying alive keeps it, though the check path is missing");
	holder_answer = -EIO;
	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && fr_pool_nr(&fr, 0) == 10,
	       "the callback unsure: the record's own check (missing path) decides: gone");
	fr_write(fr.dir, "vm-one.alive", "x\n");
	r = admit(ctx, 20, PREALLOC_ADMIT_GROW_POOLS, "vm:one", check, &claim, &res);
	if (r == 0)
		prealloc_claim_commit(claim);
	prealloc_claim_free(claim);
	holder_answer = 0;
	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && fr_pool_nr(&fr, 0) == 10 && nr_records(ctx) == 0,
	       "the callback saying gone settles it, though the check path exists");
	prealloc_ctx_set_holder_alive(ctx, NULL, NULL);
	clear_store(ctx);
}

/* Admits bytes[i] bytes of page size ps on node i, for i < nr. */
static int admit_split(struct prealloc_ctx *ctx, uint64_t ps, unsigned int nr,
		       const uint64_t *bytes, unsigned int flags,
		       struct prealloc_claim **ret_resv, struct prealloc_admit_result *res)
{
	static const int nodes[] = { 0, 1, 2, 3 };
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .flags = flags, .page_size = ps, .nr_nodes = nr,
		.nodes = nodes, .node_bytes = bytes, .tag = "/nonexistent/guest",
	};

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	*ret_resv = NULL;
	return prealloc_admit(ctx, &o, ret_resv, res);
}

/* Admits, and on success gives the claim straight back: whether it fits. */
static int admit_try(struct prealloc_ctx *ctx, uint64_t ps, unsigned int nr, const uint64_t *bytes,
		     struct prealloc_admit_result *res)
{
	struct prealloc_claim *claim;
	int r = admit_split(ctx, ps, nr, bytes, 0, &claim, res);

	prealloc_claim_free(claim);
	return r;
}

/* Pages of page size ps this process's shares in the store hold on node. */
static uint64_t own_share(struct prealloc_ctx *ctx, int node, uint64_t ps)
{
	struct prealloc_store_entry e = { .size = sizeof(e) };
	uint64_t pages = 0;

	for (unsigned int k = 0; prealloc_store_entry(ctx, k, &e) == 0; k++)
		if (e.pid == (int)getpid() && e.node == node && e.page_size == ps)
			pages += e.pages;
	return pages;
}

/*
 * One node: other programs' reservations (resv_hugepages beyond what
 * prealloc's own live runs account for) count against the free pages.
 */
static void test_foreign_one_node(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	int other = (int)getpid() + 100003, r;
	uint64_t b;

	fr_set_pool(&fr, 0, 10, 10);
	fr_set_global(&fr, MB2, 10, 4);
	b = 7 * MB2;
	r = admit_try(ctx, MB2, 1, &b, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.available == 6 &&
		       res.promised_others == 4 && res.needed == 7,
	       "one node: another program's 4 reserved pages leave 6 of 10: 7 refused (r %d, "
	       "available %llu, others %llu)", r, (unsigned long long)res.available,
	       (unsigned long long)res.promised_others);
	b = 6 * MB2;
	tap_ok(admit_try(ctx, MB2, 1, &b, &res) == 0, "one node: 6 fit beside those pages");
	/* 5 reserved system-wide, 3 of them a live run's: 2 foreign, 3 + 2 held. */
	fr_set_process(&fr, other, 4244);
	add_run_record(ctx, other, 4244, 3, 0);
	fr_set_global(&fr, MB2, 10, 5);
	r = admit_try(ctx, MB2, 1, &b, &res);
	tap_ok(r == -ENOMEM && res.available == 5 && res.promised_others == 5,
	       "one node: a run's 3 pages are not counted again among the 5 reserved: 6 refused "
	       "with 5 available (r %d, available %llu, others %llu)", r,
	       (unsigned long long)res.available, (unsigned long long)res.promised_others);
	b = 5 * MB2;
	tap_ok(admit_try(ctx, MB2, 1, &b, &res) == 0, "one node: 5 fit");
	fr_set_global(&fr, MB2, 0, 0);
	clear_store(ctx);
}

/* One node, 1G pages: the pool at its edge, every field of the refusal. */
static void test_pool_1g(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	uint64_t b = 5 * GB1;
	int r;

	fr_set_pool_of(&fr, 0, GB1, 8, 5);
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == 0, "1G: 5 pages fit 5 free (r %d)", r);
	b = 6 * GB1;
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.node == 0 &&
		       res.page_size == GB1 && res.needed == 6 && res.available == 5 &&
		       res.pool_total == 8 && res.pool_free == 5,
	       "1G: 6 pages refused: POOL, node 0, needed 6, available 5, pool 8, free 5 (r %d "
	       "needed %llu available %llu total %llu free %llu)", r,
	       (unsigned long long)res.needed, (unsigned long long)res.available,
	       (unsigned long long)res.pool_total, (unsigned long long)res.pool_free);
}

/*
 * hugetlb cgroup v2 for 1G pages: hugetlb.1GB.max less .current, then the
 * parent's, then rsvd.max; a 2M request reads the 2MB files, not these.
 */
static void test_cgroup_1g(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	char deep[300], rel[340];
	uint64_t b;
	int r;

	fr_set_pool_of(&fr, 0, GB1, 8, 8);
	fr_set_pool(&fr, 0, 10, 10);
	fr_cgroup_v2(&fr, "/machine/vm1");
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.1GB.max", 4 * GB1);
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.1GB.current", 1 * GB1);
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.2MB.max", 3 * MB2);
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.2MB.current", 0);
	fr_cg_max(&fr, "machine/hugetlb.1GB.max");
	b = 4 * GB1;
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.reason == PREALLOC_ADMIT_CGROUP && res.node == -1 &&
		       res.needed == 4 && res.available == 3 &&
		       strstr(res.cgroup, "machine/vm1/hugetlb.1GB.max"),
	       "1G: hugetlb.1GB.max of 4 with 1 charged refuses 4: CGROUP, 3 left, '%s' (r %d, "
	       "available %llu)", res.cgroup, r, (unsigned long long)res.available);
	b = 3 * GB1;
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == 0, "1G: 3 fit (max == current + needed) (r %d)", r);
	b = 4 * MB2;
	r = admit_try(ctx, MB2, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 3 && strstr(res.cgroup, "hugetlb.2MB.max"),
	       "2M beside it: the 2MB limit (3 pages) refuses 4 ('%s', available %llu)", res.cgroup,
	       (unsigned long long)res.available);
	fr_cg_bytes(&fr, "machine/hugetlb.1GB.max", 3 * GB1);
	fr_cg_bytes(&fr, "machine/hugetlb.1GB.current", 1 * GB1);
	b = 3 * GB1;
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 2 &&
		       strstr(res.cgroup, "machine/hugetlb.1GB.max") && !strstr(res.cgroup, "vm1"),
	       "1G: the parent's 3 with 1 charged refuses 3 (r %d, available %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	b = 2 * GB1;
	tap_ok(admit_try(ctx, GB1, 1, &b, &res) == 0, "1G: 2 fit under the parent");
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.1GB.rsvd.max", 2 * GB1);
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.1GB.rsvd.current", 1 * GB1);
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 1 &&
		       strstr(res.cgroup, "machine/vm1/hugetlb.1GB.rsvd.max"),
	       "1G: rsvd.max of 2 with 1 reserved refuses 2 (r %d, available %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	b = 1 * GB1;
	tap_ok(admit_try(ctx, GB1, 1, &b, &res) == 0, "1G: 1 fits under rsvd.max");
	fr_cgroup_clear(&fr);

	/* A limit file's path longer than the result's field is cut short, with "...". */
	memset(deep, 'd', 250);
	deep[0] = '/';
	deep[250] = '\0';
	fr_cgroup_v2(&fr, deep);
	snprintf(rel, sizeof(rel), "%s/hugetlb.1GB.max", deep + 1);
	fr_cg_bytes(&fr, rel, 2 * GB1);
	b = 3 * GB1;
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 2 && strlen(res.cgroup) == sizeof(res.cgroup) - 1 &&
		       !strcmp(res.cgroup + sizeof(res.cgroup) - 4, "...") &&
		       !strncmp(res.cgroup, fr.sys, strlen(fr.sys)),
	       "a limit file's path past 255 bytes is cut, ending '...' (r %d, %zu bytes, ends "
	       "'%s')",
	       r, strlen(res.cgroup), res.cgroup + MAX(strlen(res.cgroup), 3) - 3);
	fr_cgroup_clear(&fr);
	clear_store(ctx);
}

/* hugetlb cgroup v2, 2M: the tighter of max and rsvd.max is the one named. */
static void test_cgroup_rsvd(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	uint64_t b;
	int r;

	fr_set_pool(&fr, 0, 10, 10);
	fr_cgroup_v2(&fr, "/machine/vm1");
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.2MB.max", 7 * MB2);
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.2MB.current", 2 * MB2);
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.2MB.rsvd.max", 6 * MB2);
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.2MB.rsvd.current", 2 * MB2);
	b = 5 * MB2;
	r = admit_try(ctx, MB2, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 4 && strstr(res.cgroup, "hugetlb.2MB.rsvd.max"),
	       "rsvd.max leaves 4, max 5: 5 refused naming rsvd.max (r %d, available %llu, '%s')",
	       r, (unsigned long long)res.available, res.cgroup);
	b = 4 * MB2;
	tap_ok(admit_try(ctx, MB2, 1, &b, &res) == 0, "4 fit under rsvd.max");
	fr_cg_bytes(&fr, "machine/vm1/hugetlb.2MB.rsvd.current", 0);
	b = 6 * MB2;
	r = admit_try(ctx, MB2, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 5 && strstr(res.cgroup, "hugetlb.2MB.max") &&
		       !strstr(res.cgroup, "rsvd"),
	       "rsvd.max leaves 6, max 5: 6 refused naming max (r %d, available %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	fr_cgroup_clear(&fr);
	clear_store(ctx);
}

/* hugetlb cgroup v1: limit_in_bytes less usage_in_bytes, 2MB and 1GB, and the parent. */
static void test_cgroup_v1_hugetlb(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	uint64_t b;
	int r;

	fr_set_pool(&fr, 0, 10, 10);
	fr_set_pool_of(&fr, 0, GB1, 8, 8);
	fr_cgroup_v1(&fr, "hugetlb", "/machine/jail");
	fr_cg_bytes(&fr, "hugetlb/machine/jail/hugetlb.2MB.limit_in_bytes", 8 * MB2);
	fr_cg_bytes(&fr, "hugetlb/machine/jail/hugetlb.2MB.usage_in_bytes", 3 * MB2);
	fr_cg_bytes(&fr, "hugetlb/machine/jail/hugetlb.1GB.limit_in_bytes", 3 * GB1);
	fr_cg_bytes(&fr, "hugetlb/machine/jail/hugetlb.1GB.usage_in_bytes", 1 * GB1);
	fr_cg_bytes(&fr, "hugetlb/machine/hugetlb.2MB.limit_in_bytes",
		    UINT64_C(9223372036854771712));	/* v1's "unlimited" */
	b = 6 * MB2;
	r = admit_try(ctx, MB2, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.reason == PREALLOC_ADMIT_CGROUP && res.available == 5 &&
		       strstr(res.cgroup, "hugetlb/machine/jail/hugetlb.2MB.limit_in_bytes"),
	       "v1 2M: 8 allowed, 3 used: 6 refused (r %d, available %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	b = 5 * MB2;
	tap_ok(admit_try(ctx, MB2, 1, &b, &res) == 0, "v1 2M: 5 fit (limit == usage + needed)");
	b = 3 * GB1;
	r = admit_try(ctx, GB1, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 2 &&
		       strstr(res.cgroup, "hugetlb/machine/jail/hugetlb.1GB.limit_in_bytes"),
	       "v1 1G: 3 allowed, 1 used: 3 refused (r %d, available %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	b = 2 * GB1;
	tap_ok(admit_try(ctx, GB1, 1, &b, &res) == 0, "v1 1G: 2 fit");
	fr_cg_bytes(&fr, "hugetlb/machine/hugetlb.2MB.limit_in_bytes", 4 * MB2);
	fr_cg_bytes(&fr, "hugetlb/machine/hugetlb.2MB.usage_in_bytes", 0);
	b = 5 * MB2;
	r = admit_try(ctx, MB2, 1, &b, &res);
	tap_ok(r == -EDQUOT && res.available == 4 &&
		       strstr(res.cgroup, "hugetlb/machine/hugetlb.2MB.limit_in_bytes"),
	       "v1 2M: the parent's 4 refuses 5 (r %d, available %llu, '%s')", r,
	       (unsigned long long)res.available, res.cgroup);
	fr_cgroup_clear(&fr);
	clear_store(ctx);
}

/*
 * One node, 4k: the larger of the node's MemFree and MemAvailable, less
 * other live runs' 4k shares, each at its edge.
 */
static void test_memory_one_node(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	struct rec_pool share = { .node = 0, .page_size = K4, .pages = 100 * MIB / K4 };
	int other = (int)getpid() + 100004, r;
	uint64_t b;

	fr_set_meminfo(&fr, 0, 16 << 20, 600 << 10, 0, 0, 0);
	fr_write(fr.proc, "meminfo", "MemTotal: 16777216 kB\nMemAvailable: %u kB\n", 1000 << 10);
	b = 1000 * MIB;
	tap_ok(admit_try(ctx, K4, 1, &b, &res) == 0,
	       "one node: MemAvailable 1000 MiB over MemFree 600: 1000 MiB fit");
	b += K4;
	r = admit_try(ctx, K4, 1, &b, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMORY && res.node == 0 &&
		       res.needed == b && res.available == 1000 * MIB,
	       "one node: a 4k page more is refused: MEMORY, node 0, 1000 MiB available (r %d, "
	       "%llu)", r, (unsigned long long)res.available);
	fr_set_meminfo(&fr, 0, 16 << 20, 700 << 10, 0, 0, 0);
	fr_write(fr.proc, "meminfo", "MemTotal: 16777216 kB\nMemAvailable: %u kB\n", 500 << 10);
	b = 700 * MIB;
	tap_ok(admit_try(ctx, K4, 1, &b, &res) == 0,
	       "one node: MemFree 700 MiB over MemAvailable 500: 700 MiB fit");
	b += K4;
	r = admit_try(ctx, K4, 1, &b, &res);
	tap_ok(r == -ENOMEM && res.available == 700 * MIB,
	       "one node: 700 MiB + 4k refused (r %d, available %llu)", r,
	       (unsigned long long)res.available);
	fr_set_process(&fr, other, 4245);
	add_shares_record(ctx, other, 4245, NULL, &share, 1);
	b = 600 * MIB + K4;
	r = admit_try(ctx, K4, 1, &b, &res);
	tap_ok(r == -ENOMEM && res.available == 600 * MIB && res.promised_others == 100 * MIB &&
		       res.needed == b,
	       "one node: a live run's 100 MiB of 4k leaves 600: 600 MiB + 4k refused (r %d, "
	       "available %llu, others %llu)", r, (unsigned long long)res.available,
	       (unsigned long long)res.promised_others);
	b = 600 * MIB;
	tap_ok(admit_try(ctx, K4, 1, &b, &res) == 0, "one node: 600 MiB fit beside it");
	fr_set_meminfo(&fr, 0, 16 << 20, 8 << 20, 0, 0, 0);
	fr_write(fr.proc, "meminfo", "MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n"
				    "Hugepagesize: 2048 kB\n");
	clear_store(ctx);
}

/*
 * Three nodes, 2M and 1G pools: each node checked against its own free
 * pages (less other runs' shares on that node), exactly at the edge, and a
 * refusal reports the failing node's numbers, all told apart.
 */
static void test_pool_nodes(struct prealloc_ctx *ctx)
{
	struct rec_pool others[] = {
		{ .node = 1, .page_size = MB2, .pages = 2 },
		{ .node = 2, .page_size = MB2, .pages = 3 },
	};
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	int other = (int)getpid() + 100005, r;

	fr_set_pool(&fr3, 0, 20, 12);
	fr_set_pool(&fr3, 1, 30, 9);
	fr_set_pool(&fr3, 2, 11, 5);
	fr_set_global(&fr3, MB2, 100, 0);
	r = admit_split(ctx, MB2, 3, (uint64_t[]){ 12 * MB2, 9 * MB2, 5 * MB2 }, 0, &claim, &res);
	tap_ok(r == 0 && own_share(ctx, 0, MB2) == 12 && own_share(ctx, 1, MB2) == 9 &&
		       own_share(ctx, 2, MB2) == 5,
	       "3 nodes: 12/9/5 fit 12/9/5 free exactly, one share per node (r %d, %llu/%llu/%llu)",
	       r, (unsigned long long)own_share(ctx, 0, MB2),
	       (unsigned long long)own_share(ctx, 1, MB2),
	       (unsigned long long)own_share(ctx, 2, MB2));
	prealloc_claim_free(claim);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 12 * MB2, 9 * MB2, 4 * MB2 + 1 }, &res);
	tap_ok(r == 0, "3 nodes: 4 pages and a byte (5, rounded up) fit node 2's 5 (r %d)", r);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 12 * MB2, 9 * MB2, 5 * MB2 + 1 }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.node == 2 &&
		       res.needed == 6 && res.available == 5 && res.pool_total == 11 &&
		       res.pool_free == 5 && res.promised_others == 0,
	       "3 nodes: 5 pages and a byte on node 2 one short: POOL node 2, needed 6, "
	       "available 5, pool 11 (node %d needed %llu available %llu total %llu)", res.node,
	       (unsigned long long)res.needed, (unsigned long long)res.available,
	       (unsigned long long)res.pool_total);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 13 * MB2, 9 * MB2, 5 * MB2 }, &res);
	tap_ok(r == -ENOMEM && res.node == 0 && res.needed == 13 && res.available == 12 &&
		       res.pool_total == 20 && res.pool_free == 12,
	       "3 nodes: node 0 one short: node 0, needed 13, available 12, pool 20 (node %d)",
	       res.node);
	fr_set_process(&fr3, other, 4246);
	add_shares_record(ctx, other, 4246, NULL, others, 2);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 12 * MB2, 8 * MB2, 2 * MB2 }, &res);
	tap_ok(r == -ENOMEM && res.node == 1 && res.needed == 8 && res.available == 7 &&
		       res.pool_total == 30 && res.pool_free == 9 && res.promised_others == 2,
	       "3 nodes: a run's 2 pages on node 1 (3 on node 2): node 1 refused, needed 8, "
	       "available 7, pool 30, free 9, others 2 (node %d needed %llu available %llu total "
	       "%llu free %llu others %llu)", res.node, (unsigned long long)res.needed,
	       (unsigned long long)res.available, (unsigned long long)res.pool_total,
	       (unsigned long long)res.pool_free, (unsigned long long)res.promised_others);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 12 * MB2, 7 * MB2, 2 * MB2 }, &res);
	tap_ok(r == 0, "3 nodes: 12/7/2 fit beside the run's 2 and 3 (r %d)", r);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 12 * MB2, 7 * MB2, 3 * MB2 }, &res);
	tap_ok(r == -ENOMEM && res.node == 2 && res.available == 2 && res.promised_others == 3,
	       "3 nodes: node 2 less the run's 3: 3 refused (node %d available %llu others %llu)",
	       res.node, (unsigned long long)res.available,
	       (unsigned long long)res.promised_others);
	fr_set_pool(&fr3, 2, 11, 2);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 12 * MB2, 7 * MB2, 1 * MB2 }, &res);
	tap_ok(r == -ENOMEM && res.node == 2 && res.available == 0 && res.promised_others == 3,
	       "3 nodes: the run's 3 on node 2 beyond its 2 free leave none (node %d available "
	       "%llu)", res.node, (unsigned long long)res.available);
	clear_store(ctx);

	fr_set_pool_of(&fr3, 0, GB1, 4, 3);
	fr_set_pool_of(&fr3, 1, GB1, 6, 2);
	fr_set_global(&fr3, GB1, 100, 0);
	r = admit_try(ctx, GB1, 2, (uint64_t[]){ 3 * GB1, 2 * GB1 }, &res);
	tap_ok(r == 0, "1G on 2 nodes: 3/2 fit 3/2 free (r %d)", r);
	r = admit_try(ctx, GB1, 2, (uint64_t[]){ 3 * GB1, 3 * GB1 }, &res);
	tap_ok(r == -ENOMEM && res.node == 1 && res.needed == 3 && res.available == 2 &&
		       res.pool_total == 6,
	       "1G on 2 nodes: node 1 refused, needed 3, available 2, pool 6 (node %d)", res.node);
	r = admit_try(ctx, GB1, 2, (uint64_t[]){ 4 * GB1, 2 * GB1 }, &res);
	tap_ok(r == -ENOMEM && res.node == 0 && res.needed == 4 && res.available == 3 &&
		       res.pool_total == 4,
	       "1G on 2 nodes: node 0 refused, needed 4, available 3, pool 4 (node %d)", res.node);
}

/*
 * Several nodes: the system-wide free count less every node's outstanding
 * pages of other runs and other programs' reservations must cover the
 * request's pages on all its nodes (rounded up per node).
 */
static void test_global_nodes(struct prealloc_ctx *ctx)
{
	struct rec_pool shares[] = {
		{ .node = 0, .page_size = MB2, .pages = 1 },
		{ .node = 1, .page_size = MB2, .pages = 2 },
		{ .node = 2, .page_size = MB2, .pages = 4 },
	};
	struct prealloc_admit_result res;
	int other = (int)getpid() + 100006, r, fd;
	char file[400];

	for (int n = 0; n < 3; n++)
		fr_set_pool(&fr3, n, 50, 50);
	fr_set_global(&fr3, MB2, 20, 7);
	fr_set_process(&fr3, other, 4247);
	add_shares_record(ctx, other, 4247, NULL, shares, 3);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 3 * MB2, 4 * MB2, 6 * MB2 }, &res);
	tap_ok(r == 0, "global: 20 free less a run's 1+2+4 on three nodes leaves 13: 3/4/6 fit "
		       "(r %d)", r);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 3 * MB2, 4 * MB2, 6 * MB2 + 1 }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_GLOBAL && res.node == -1 &&
		       res.needed == 14 && res.available == 13,
	       "global: 3/4/6 pages and a byte (7, rounded up) refused: GLOBAL, needed 14, "
	       "available 13 (r %d reason %d needed %llu available %llu)", r, res.reason,
	       (unsigned long long)res.needed, (unsigned long long)res.available);
	/* 12 reserved system-wide, 7 of them the run's: 5 another program's. */
	fr_set_global(&fr3, MB2, 20, 12);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 3 * MB2, 4 * MB2, 1 * MB2 }, &res);
	tap_ok(r == 0, "global: with 5 reserved by another program, 8 fit (r %d)", r);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 3 * MB2, 4 * MB2, 2 * MB2 }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_GLOBAL && res.available == 8 &&
		       res.needed == 9,
	       "global: 9 refused: available 8 (r %d available %llu)", r,
	       (unsigned long long)res.available);
	/* On several nodes the foreign 5 are not charged to a node: node 0's 4 less 1 are 3. */
	fr_set_pool(&fr3, 0, 50, 4);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 3 * MB2, 4 * MB2, 1 * MB2 }, &res);
	tap_ok(r == 0, "global: node 0 with 4 free, 1 the run's, takes 3 (r %d reason %d)", r,
	       res.reason);
	fr_set_pool(&fr3, 0, 50, 50);
	fr_set_global(&fr3, MB2, 5, 7);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 1 * MB2, 1 * MB2, 1 * MB2 }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_GLOBAL && res.available == 0,
	       "global: 5 free and 7 held leave none (r %d available %llu)", r,
	       (unsigned long long)res.available);
	clear_store(ctx);

	/*
	 * A run whose file already holds 8 of its 16 pages (2/4/10 on three
	 * nodes) still owes each node its share of the rest: 1/2/5. Not
	 * mapped yet, so the kernel counts none of it reserved.
	 */
	snprintf(file, sizeof(file), "%s/half-faulted", fr3.dir);
	fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (!tap_ok(fd >= 0 && posix_fallocate(fd, 0, (off_t)(8 * MB2)) == 0 && fsync(fd) == 0,
		    "a file holding 8 2M pages"))
		return;
	close(fd);
	shares[0].pages = 2;
	shares[1].pages = 4;
	shares[2].pages = 10;
	add_shares_record(ctx, other, 4247, file, shares, 3);
	fr_set_global(&fr3, MB2, 20, 0);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 4 * MB2, 4 * MB2, 4 * MB2 }, &res);
	tap_ok(r == 0, "global: a half-faulted run owes 1+2+5: 4/4/4 fit 20 - 8 (r %d)", r);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 4 * MB2, 4 * MB2, 5 * MB2 }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_GLOBAL && res.available == 12,
	       "global: 13 refused: available 12 (r %d reason %d available %llu)", r, res.reason,
	       (unsigned long long)res.available);
	unlink(file);
	fr_set_global(&fr3, MB2, 0, 0);
	clear_store(ctx);
}

/* Several nodes: a hugetlb cgroup limit applies to the pages of all of them. */
static void test_cgroup_nodes(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	int r;

	for (int n = 0; n < 3; n++) {
		fr_set_pool(&fr3, n, 50, 50);
		fr_set_pool_of(&fr3, n, GB1, 10, 10);
	}
	fr_set_global(&fr3, MB2, 200, 0);
	fr_set_global(&fr3, GB1, 100, 0);
	fr_cgroup_v2(&fr3, "/machine/vm3");
	fr_cg_bytes(&fr3, "machine/vm3/hugetlb.2MB.max", 9 * MB2);
	fr_cg_bytes(&fr3, "machine/vm3/hugetlb.2MB.current", 2 * MB2);
	fr_cg_bytes(&fr3, "machine/vm3/hugetlb.1GB.max", 4 * GB1);
	fr_cg_bytes(&fr3, "machine/vm3/hugetlb.1GB.current", 1 * GB1);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 1, 2 * MB2, 4 * MB2 }, &res);
	tap_ok(r == 0, "cgroup, 3 nodes: a byte (1 page) + 2 + 4 fit the 7 left (r %d)", r);
	r = admit_try(ctx, MB2, 3, (uint64_t[]){ 1, 2 * MB2, 4 * MB2 + 1 }, &res);
	tap_ok(r == -EDQUOT && res.reason == PREALLOC_ADMIT_CGROUP && res.needed == 8 &&
		       res.available == 7,
	       "cgroup, 3 nodes: 1 + 2 + 5 refused: needed 8, available 7 (r %d needed %llu "
	       "available %llu)", r, (unsigned long long)res.needed,
	       (unsigned long long)res.available);
	r = admit_try(ctx, MB2, 2, (uint64_t[]){ 3 * MB2, 5 * MB2 }, &res);
	tap_ok(r == -EDQUOT && res.needed == 8 && res.available == 7,
	       "cgroup, 2 nodes: 3 + 5 refused, each alone fits (r %d needed %llu)", r,
	       (unsigned long long)res.needed);
	r = admit_try(ctx, GB1, 3, (uint64_t[]){ GB1, GB1, GB1 }, &res);
	tap_ok(r == 0, "cgroup 1G, 3 nodes: 1 + 1 + 1 fit the 3 left (r %d)", r);
	r = admit_try(ctx, GB1, 3, (uint64_t[]){ GB1, GB1, 2 * GB1 }, &res);
	tap_ok(r == -EDQUOT && res.needed == 4 && res.available == 3 &&
		       strstr(res.cgroup, "machine/vm3/hugetlb.1GB.max"),
	       "cgroup 1G, 3 nodes: 1 + 1 + 2 refused under hugetlb.1GB.max (r %d needed %llu "
	       "available %llu '%s')", r, (unsigned long long)res.needed,
	       (unsigned long long)res.available, res.cgroup);
	fr_cgroup_clear(&fr3);
	fr_set_global(&fr3, MB2, 0, 0);
	fr_set_global(&fr3, GB1, 0, 0);
	clear_store(ctx);
}

/*
 * Several nodes, 4k: the memory cgroup's room covers the sum of the
 * shares, each node's MemFree (not the system's MemAvailable) its own
 * share less other runs' 4k shares there.
 */
static void test_memory_nodes(struct prealloc_ctx *ctx)
{
	struct rec_pool others[] = {
		{ .node = 1, .page_size = K4, .pages = 50 * MIB / K4 },
		{ .node = 2, .page_size = K4, .pages = 10 * MIB / K4 },
	};
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	int other = (int)getpid() + 100007, r;

	fr_set_meminfo(&fr3, 0, 16 << 20, 600 << 10, 0, 0, 0);
	fr_set_meminfo(&fr3, 1, 16 << 20, 300 << 10, 0, 0, 0);
	fr_set_meminfo(&fr3, 2, 16 << 20, 900 << 10, 0, 0, 0);
	fr_cgroup_v2(&fr3, "/machine/vm4");
	/* 1400 MiB allowed, 200 used: 1200 of room. */
	fr_cg_bytes(&fr3, "machine/vm4/memory.max", 1400 * MIB);
	fr_cg_bytes(&fr3, "machine/vm4/memory.current", 200 * MIB);
	r = admit_split(ctx, K4, 3, (uint64_t[]){ 100 * MIB, 300 * MIB, 800 * MIB }, 0, &claim,
			&res);
	tap_ok(r == 0 && own_share(ctx, 0, K4) == 100 * MIB / K4 &&
		       own_share(ctx, 1, K4) == 300 * MIB / K4 &&
		       own_share(ctx, 2, K4) == 800 * MIB / K4,
	       "4k, 3 nodes: 100/300/800 MiB fit (node 1 and the cgroup exactly), one 4k share "
	       "per node (r %d)", r);
	prealloc_claim_free(claim);
	r = admit_try(ctx, K4, 3, (uint64_t[]){ 100 * MIB, 300 * MIB, 800 * MIB + K4 }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMCG && res.node == -1 &&
		       res.needed == 1200 * MIB + K4 && res.available == 1200 * MIB &&
		       strstr(res.cgroup, "machine/vm4/memory.max"),
	       "4k, 3 nodes: 4k past the cgroup's room refused: MEMCG, needed the sum (r %d "
	       "needed %llu available %llu '%s')", r, (unsigned long long)res.needed,
	       (unsigned long long)res.available, res.cgroup);
	r = admit_try(ctx, K4, 2, (uint64_t[]){ 401 * MIB, 800 * MIB }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMCG && res.needed == 1201 * MIB,
	       "4k, 2 nodes: 401 + 800 MiB refused by the cgroup, each alone fits (r %d needed "
	       "%llu)", r, (unsigned long long)res.needed);
	fr_cg_bytes(&fr3, "machine/vm4/memory.max", 4096 * MIB);
	r = admit_try(ctx, K4, 3, (uint64_t[]){ 100 * MIB, 300 * MIB + K4, 800 * MIB }, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMORY && res.node == 1 &&
		       res.needed == 300 * MIB + K4 && res.available == 300 * MIB &&
		       res.promised_others == 0,
	       "4k, 3 nodes: node 1's MemFree (300 MiB; MemAvailable 8 GiB does not count) "
	       "refuses 4k more (node %d needed %llu available %llu)", res.node,
	       (unsigned long long)res.needed, (unsigned long long)res.available);
	r = admit_try(ctx, K4, 3, (uint64_t[]){ 601 * MIB, 100 * MIB, 100 * MIB }, &res);
	tap_ok(r == -ENOMEM && res.node == 0 && res.needed == 601 * MIB &&
		       res.available == 600 * MIB,
	       "4k, 3 nodes: node 0 refused with its own 600 MiB (node %d available %llu)",
	       res.node, (unsigned long long)res.available);
	fr_set_process(&fr3, other, 4248);
	add_shares_record(ctx, other, 4248, NULL, others, 2);
	r = admit_try(ctx, K4, 3, (uint64_t[]){ 100 * MIB, 251 * MIB, 800 * MIB }, &res);
	tap_ok(r == -ENOMEM && res.node == 1 && res.needed == 251 * MIB &&
		       res.available == 250 * MIB && res.promised_others == 50 * MIB,
	       "4k, 3 nodes: a run's 50 MiB on node 1 (10 on node 2): 251 refused, available 250, "
	       "others 50 (node %d needed %llu available %llu others %llu)", res.node,
	       (unsigned long long)res.needed, (unsigned long long)res.available,
	       (unsigned long long)res.promised_others);
	r = admit_try(ctx, K4, 3, (uint64_t[]){ 100 * MIB, 250 * MIB, 890 * MIB }, &res);
	tap_ok(r == 0, "4k, 3 nodes: 100/250/890 fit beside the run's 50 and 10 (r %d)", r);
	fr_set_meminfo(&fr3, 1, 16 << 20, 40 << 10, 0, 0, 0);
	r = admit_try(ctx, K4, 3, (uint64_t[]){ 100 * MIB, K4, 800 * MIB }, &res);
	tap_ok(r == -ENOMEM && res.node == 1 && res.available == 0 &&
		       res.promised_others == 50 * MIB,
	       "4k, 3 nodes: the run's 50 MiB beyond node 1's 40 free leave none (node %d "
	       "available %llu)", res.node, (unsigned long long)res.available);
	for (int n = 0; n < 3; n++)
		fr_set_meminfo(&fr3, n, 16 << 20, 8 << 20, 0, 0, 0);
	fr_cgroup_clear(&fr3);
	clear_store(ctx);
}

/*
 * The one-line messages: each reason with every number different from its
 * neighbours, so that two fields swapped in the text show.
 */
static void test_messages(void)
{
	static const struct {
		struct prealloc_admit_result res;
		int err;
		bool grow_pools;
		const char *want;
	} cases[] = {
		{ { .reason = PREALLOC_ADMIT_POOL, .node = 2, .page_size = PREALLOC_PAGE_2M,
		    .needed = 7, .available = 3, .pool_total = 11, .pool_free = 5,
		    .promised_others = 2 }, -ENOMEM, false,
		  "node 2 has 3 free 2M hugepages (5 free in its pool of 11, 2 promised to other "
		  "runs), 7 needed; pass --grow-pools to grow the node's pool, use a smaller size or "
		  "another node" },
		{ { .reason = PREALLOC_ADMIT_POOL, .node = 1, .page_size = PREALLOC_PAGE_1G,
		    .needed = 4, .available = 1, .pool_total = 6, .pool_free = 2,
		    .promised_others = 1 }, -ENOMEM, false,
		  "node 1 has 1 free 1G hugepages (2 free in its pool of 6, 1 promised to other "
		  "runs), 4 needed; pass --grow-pools to grow the node's pool, use a smaller size or "
		  "another node; runtime allocation of 1G pages often fails because memory is "
		  "fragmented: reserve them at boot with 'hugepagesz=1G hugepages=N' on the kernel "
		  "command line" },
		{ { .reason = PREALLOC_ADMIT_POOL, .node = 3, .page_size = PREALLOC_PAGE_1G },
		  -EOPNOTSUPP, false, "node 3 has no 1G hugepage pool on this kernel" },
		{ { .reason = PREALLOC_ADMIT_GLOBAL, .node = -1, .page_size = PREALLOC_PAGE_2M,
		    .needed = 14, .available = 13 }, -ENOMEM, false,
		  "only 13 2M hugepages are free system-wide once other programs' reservations are "
		  "counted, 14 needed; pass --grow-pools, use a smaller size" },
		{ { .reason = PREALLOC_ADMIT_CGROUP, .node = -1, .page_size = PREALLOC_PAGE_1G,
		    .needed = 4, .available = 3,
		    .cgroup = "/sys/fs/cgroup/machine/vm1/hugetlb.1GB.max" }, -EDQUOT, false,
		  "the hugetlb cgroup limit /sys/fs/cgroup/machine/vm1/hugetlb.1GB.max leaves room "
		  "for 3 1G hugepages, 4 needed; raise the limit or use a smaller size" },
		{ { .reason = PREALLOC_ADMIT_MEMORY, .node = 1, .page_size = PREALLOC_PAGE_4K,
		    .needed = 301 * MIB, .available = 300 * MIB, .promised_others = 50 * MIB },
		  -ENOMEM, false,
		  "node 1 has 300 MiB free, 301 MiB needed; use a smaller size, another node, or "
		  "hugepages (--page-size 2M --grow-pools)" },
		{ { .reason = PREALLOC_ADMIT_MEMCG, .node = -1, .page_size = PREALLOC_PAGE_4K,
		    .needed = 1536 * MIB, .available = 1200 * MIB,
		    .cgroup = "/sys/fs/cgroup/machine/vm4/memory.max" }, -ENOMEM, false,
		  "the memory cgroup limit /sys/fs/cgroup/machine/vm4/memory.max leaves room "
		  "for 1.17 GiB (its reclaimable file cache counted), 1.50 GiB needed; raise "
		  "the limit, use a smaller size, or hugepages (--page-size 2M --grow-pools: they "
		  "are not charged to the memory cgroup)" },
		{ { .reason = PREALLOC_ADMIT_FS, .node = -1, .page_size = PREALLOC_PAGE_4K,
		    .needed = 64 * MIB, .available = 32 * MIB, .cgroup = "/mnt/small" }, -ENOSPC,
		  false,
		  "/mnt/small has 32 MiB free, 64 MiB needed; mount it with a larger size= or "
		  "use a smaller size" },
		{ { .reason = PREALLOC_ADMIT_GROW, .node = 1, .page_size = PREALLOC_PAGE_2M,
		    .needed = 30, .available = 12, .grow_requested = 40, .grow_got = 35,
		    .grow_seconds = 2.5 }, -ENOMEM, true,
		  "cannot grow node 1's 2M hugepage pool: asked the kernel for 40 pages (30 "
		  "needed free, 12 were), it allocated only 35 in 2.5 s even after compacting "
		  "the node, and the pool was put back as it was; free memory on the node, use "
		  "a smaller size or another node" },
		{ { .reason = PREALLOC_ADMIT_CAPACITY, .node = 1, .page_size = PREALLOC_PAGE_2M,
		    .needed = 3000, .available = 1500, .capacity_estimate = 5 * (UINT64_C(1) << 30),
		    .capacity_margin = 2 * (UINT64_C(1) << 30) }, -ENOMEM, true,
		  "node 1 cannot supply 3000 2M hugepages (5.86 GiB): it has an estimated 5 GiB "
		  "free or reclaimable (free memory, file cache, reclaimable slab and its free "
		  "2M hugepages) and 2 GiB must stay free for the host, which leaves room for "
		  "1500 of them; the pool was not touched; use a smaller size or another node" },
		{ { .reason = PREALLOC_ADMIT_CANCELED, .node = -1, .page_size = PREALLOC_PAGE_2M },
		  -ECANCELED, false,
		  "interrupted while waiting for the state lock; nothing was changed" },
		{ { .reason = PREALLOC_ADMIT_CANCELED, .node = 0, .page_size = PREALLOC_PAGE_2M },
		  -ECANCELED, true,
		  "interrupted while growing node 0's 2M hugepage pool; the growth was given "
		  "back" },
		{ { .reason = PREALLOC_ADMIT_LOCK, .node = -1 }, -ETIMEDOUT, false,
		  "timed out waiting for the record store's lock (another prealloc run holds it)" },
		{ { .reason = PREALLOC_ADMIT_ACCESS, .node = -1 }, -EBADMSG, false,
		  "the record store is corrupt; it was left as it is for inspection (move it away "
		  "to start afresh)" },
		{ { .reason = PREALLOC_ADMIT_ACCESS, .node = 0 }, -EACCES, true,
		  "cannot grow the hugepage pool or write the record store: Permission denied (run "
		  "as root)" },
		{ { .reason = PREALLOC_ADMIT_ACCESS, .node = -1 }, -EROFS, false,
		  "cannot write the record store: Read-only file system" },
	};
	char buf[1024];

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		admit_message(&cases[i].res, cases[i].err, cases[i].grow_pools, buf, sizeof(buf));
		tap_ok(!strcmp(buf, cases[i].want), "message %zu (reason %d): '%s'%s%s", i,
		       cases[i].res.reason, buf, strcmp(buf, cases[i].want) ? ", want: " : "",
		       strcmp(buf, cases[i].want) ? cases[i].want : "");
	}
}

/* A prepare of a reused file at path, sized per node: fails at admission here. */
static int prepare_reuse(struct prealloc_ctx *ctx, const char *path, unsigned int nr,
			 const uint64_t *bytes, struct prealloc_prepare_info *info)
{
	static const int nodes[] = { 0, 1, 2 };
	struct prealloc_prepare_opts o = {
		.size = sizeof(o), .flags = PREALLOC_PREPARE_REUSE, .page_size = PREALLOC_PAGE_4K,
		.nr_nodes = nr, .nodes = nodes, .node_bytes = bytes, .path = path, .threads = 1,
	};

	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return prealloc_prepare(ctx, &o, info, NULL);
}

/* A file of ours at path, mode 0600: len bytes long, the first resident bytes written. */
static int make_file(const char *path, uint64_t len, uint64_t resident)
{
	static char chunk[1 << 16];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int r = 0;

	if (fd < 0)
		return -errno;
	memset(chunk, 0x5a, sizeof(chunk));
	if (ftruncate(fd, (off_t)len) < 0)
		r = -errno;
	for (uint64_t off = 0; r == 0 && off < resident; off += sizeof(chunk))
		if (pwrite(fd, chunk, MIN(sizeof(chunk), resident - off), (off_t)off) < 0)
			r = -errno;
	close(fd);
	return r;
}

/*
 * The prepare flow's own admission, on /dev/shm (a real tmpfs: statfs
 * cannot be faked): the filesystem's free room (bavail, so what other
 * files hold counts) against the sum of the nodes' shares, and a reused
 * file's resident pages credited to the nodes in proportion. A memory
 * cgroup of 4 KiB stands behind the filesystem check, so that nothing is
 * ever populated: a request the filesystem check let through is refused
 * as MEMCG instead of FS.
 */
static void test_prepare_room(struct prealloc_ctx *ctx)
{
	struct prealloc_prepare_info info;
	struct statfs sfs;
	struct stat st;
	char path[128], fill[128];
	uint64_t room, a, b, c;
	int r, fd;

	if (statfs("/dev/shm", &sfs) < 0 || (unsigned long)sfs.f_type != TMPFS_MAGIC ||
	    (uint64_t)sfs.f_bavail * sfs.f_bsize < 512 * MIB) {
		tap_skip("/dev/shm is not a tmpfs with 512 MiB free: the filesystem room needs "
			 "one");
		return;
	}
	snprintf(path, sizeof(path), "/dev/shm/prealloc-unit-%d", (int)getpid());
	snprintf(fill, sizeof(fill), "/dev/shm/prealloc-unit-%d.fill", (int)getpid());
	tap_remove_at_exit(path);
	tap_remove_at_exit(fill);
	fr_cgroup_v2(&fr3, "/machine/vm5");
	fr_cg_bytes(&fr3, "machine/vm5/memory.max", K4);
	if (!tap_ok(make_file(path, 0, 0) == 0, "an empty file of ours in /dev/shm"))
		goto out;
	room = (uint64_t)sfs.f_bavail * sfs.f_bsize / K4 * K4;
	a = room / 5 / K4 * K4;
	b = room * 3 / 10 / K4 * K4;
	c = room * 3 / 5 / K4 * K4;
	r = prepare_reuse(ctx, path, 3, (uint64_t[]){ a, b, c }, &info);
	tap_ok(r == -ENOSPC && info.step == PREALLOC_STEP_ADMISSION &&
		       info.admit.reason == PREALLOC_ADMIT_FS && info.admit.node == -1 &&
		       info.admit.needed == a + b + c && info.admit.available < info.admit.needed &&
		       info.admit.available > room / 2 && !strcmp(info.admit.cgroup, "/dev/shm"),
	       "fs room, 3 nodes: 20%% + 30%% + 60%% of /dev/shm's room refused: FS, needed the "
	       "sum (r %d reason %d needed %llu available %llu '%s')", r, info.admit.reason,
	       (unsigned long long)info.admit.needed, (unsigned long long)info.admit.available,
	       info.admit.cgroup);
	a = room * 3 / 5 / K4 * K4;
	r = prepare_reuse(ctx, path, 2, (uint64_t[]){ a, a }, &info);
	tap_ok(r == -ENOSPC && info.admit.reason == PREALLOC_ADMIT_FS && info.admit.needed == 2 * a,
	       "fs room, 2 nodes: 60%% + 60%% refused, each alone fits (r %d reason %d)", r,
	       info.admit.reason);
	/* Blocks another file holds are not room: 256 MiB taken, 128 MiB past the rest asked. */
	fd = open(fill, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (!tap_ok(fd >= 0 && posix_fallocate(fd, 0, (off_t)(256 * MIB)) == 0 &&
			    statfs("/dev/shm", &sfs) == 0,
		    "256 MiB held by another file in /dev/shm")) {
		if (fd >= 0)
			close(fd);
		goto out;
	}
	close(fd);
	room = (uint64_t)sfs.f_bavail * sfs.f_bsize;
	a = (room + 128 * MIB) / 2 / K4 * K4;
	r = prepare_reuse(ctx, path, 2, (uint64_t[]){ a, a }, &info);
	tap_ok(r == -ENOSPC && info.admit.reason == PREALLOC_ADMIT_FS,
	       "fs room: the free room less what other files hold refuses 128 MiB past it (r %d "
	       "reason %d needed %llu available %llu)", r, info.admit.reason,
	       (unsigned long long)info.admit.needed, (unsigned long long)info.admit.available);
	unlink(fill);

	/* A reused file of 12 MiB holding 6: 2/4/6 MiB on three nodes owe 1/2/3. */
	if (!tap_ok(make_file(path, 12 * MIB, 6 * MIB) == 0 && stat(path, &st) == 0,
		    "a 12 MiB file of ours holding 6 MiB"))
		goto out;
	if ((uint64_t)st.st_blocks * 512 != 6 * MIB) {
		tap_skip("/dev/shm counts %llu bytes for 6 MiB written (huge pages?): the credit "
			 "cannot be told", (unsigned long long)st.st_blocks * 512);
		goto out;
	}
	fr_cg_bytes(&fr3, "machine/vm5/memory.max", 6 * MIB - K4);
	r = prepare_reuse(ctx, path, 3, (uint64_t[]){ 2 * MIB, 4 * MIB, 6 * MIB }, &info);
	tap_ok(r == -ENOMEM && info.admit.reason == PREALLOC_ADMIT_MEMCG &&
		       info.admit.needed == 6 * MIB && info.resident_before == 6 * MIB,
	       "reuse: 6 of 12 MiB resident: 1 + 2 + 3 MiB still needed (r %d reason %d needed "
	       "%llu resident %llu)", r, info.admit.reason, (unsigned long long)info.admit.needed,
	       (unsigned long long)info.resident_before);
	fr_cg_max(&fr3, "machine/vm5/memory.max");
	for (int n = 0; n < 3; n++) {
		uint64_t owed = (uint64_t)(n + 1) * MIB;

		fr_set_meminfo(&fr3, n, 16 << 20, (owed - K4) >> 10, 0, 0, 0);
		r = prepare_reuse(ctx, path, 3, (uint64_t[]){ 2 * MIB, 4 * MIB, 6 * MIB }, &info);
		tap_ok(r == -ENOMEM && info.admit.reason == PREALLOC_ADMIT_MEMORY &&
			       info.admit.node == n && info.admit.needed == owed &&
			       info.admit.available == owed - K4,
		       "reuse: node %d owes %d MiB, refused with 4k less free (r %d reason %d "
		       "node %d needed %llu)", n, n + 1, r, info.admit.reason, info.admit.node,
		       (unsigned long long)info.admit.needed);
		fr_set_meminfo(&fr3, n, 16 << 20, 8 << 20, 0, 0, 0);
	}
	/* 5 MiB resident: credits rounded down to whole pages, 852/1704/2560 KiB. */
	if (make_file(path, 12 * MIB, 5 * MIB) == 0) {
		fr_cg_bytes(&fr3, "machine/vm5/memory.max", K4);
		r = prepare_reuse(ctx, path, 3, (uint64_t[]){ 2 * MIB, 4 * MIB, 6 * MIB }, &info);
		tap_ok(r == -ENOMEM && info.admit.reason == PREALLOC_ADMIT_MEMCG &&
			       info.admit.needed == UINT64_C(7172) << 10,
		       "reuse: 5 MiB resident, credited in whole pages: 7172 KiB needed (r %d "
		       "needed %llu)", r, (unsigned long long)info.admit.needed);
	}
out:
	unlink(path);
	unlink(fill);
	fr_cgroup_clear(&fr3);
	clear_store(ctx);
}

int main(void)
{
	struct prealloc_ctx *ctx, *ctx3;

	if (fakeroot_make(&fr, 1) < 0 || fakeroot_make(&fr3, 3) < 0) {
		tap_ok(0, "cannot build the fake trees in /tmp");
		return tap_done();
	}
	tap_remove_at_exit(fr.dir);
	tap_remove_at_exit(fr3.dir);
	ctx = fakeroot_ctx(&fr);
	ctx3 = fakeroot_ctx(&fr3);
	if (!tap_ok(ctx != NULL && ctx3 != NULL,
		    "ctxs over the fake sysfs and procfs (1 and 3 nodes)")) {
		fakeroot_remove(&fr);
		fakeroot_remove(&fr3);
		return tap_done();
	}
	test_pool_and_grow(ctx);
	test_others(ctx);
	test_outstanding_base(ctx);
	test_cgroup(ctx);
	test_memcg(ctx);
	test_gc_runs(ctx);
	test_gc_growth_follows(ctx);
	test_holder(ctx);
	test_foreign_one_node(ctx);
	test_pool_1g(ctx);
	test_cgroup_1g(ctx);
	test_cgroup_rsvd(ctx);
	test_cgroup_v1_hugetlb(ctx);
	test_memory_one_node(ctx);
	test_pool_nodes(ctx3);
	test_global_nodes(ctx3);
	test_cgroup_nodes(ctx3);
	test_memory_nodes(ctx3);
	test_prepare_room(ctx3);
	test_messages();
	prealloc_ctx_free(ctx);
	prealloc_ctx_free(ctx3);
	fakeroot_remove(&fr);
	fakeroot_remove(&fr3);
	return tap_done();
}
