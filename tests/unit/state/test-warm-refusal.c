/* SPDX-License-Identifier: MIT */
/*
 * Admission that takes from the warm pool (docs/warm.md, docs/admission.md),
 * over a fake two-node sysfs/procfs (fakeroot.h), without root: node 0 is
 * short and holds a READY warm file that would cover it, node 1 is short
 * with none. The request is refused, and the warm file and its record are
 * exactly as before: nothing is cut before every node and every limit is
 * decided, and a pool growth the kernel refuses comes before any cut. Each
 * leg for 4k (free memory) and 2M (free hugepages, GROW_POOLS's capacity check
 * and growth); then the same requests admitted once node 1 has room, with
 * the file cut and its record saying so.
 */
#include <fcntl.h>
#include <string.h>

#include "state.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define K4 PREALLOC_PAGE_4K
#define MB2 PREALLOC_PAGE_2M
#define MIB (UINT64_C(1) << 20)

static struct fakeroot fr;	/* two nodes */

/* A warm file as a take finds it: the file, and its record and line as the store holds them. */
struct warm_seen {
	bool found;
	uint64_t file_bytes, ino;
	int state, warm, node;
	uint64_t size, page_size;
	unsigned int nr_pools;
	struct rec_pool line;
};

/* A READY warm file in the fake tree (warm-record.h). */
static uint64_t add_warm(struct prealloc_ctx *ctx, const char *name, int node, uint64_t ps,
			 uint64_t bytes, uint64_t added)
{
	return add_warm_in(fr.dir, ctx, name, node, ps, bytes, added);
}

static struct warm_seen warm_seen(struct prealloc_ctx *ctx, uint64_t id)
{
	struct warm_seen w;
	struct store s;
	struct stat st;
	long i;

	memset(&w, 0, sizeof(w));
	if (store_load(ctx, &s) < 0)
		return w;
	i = store_find(&s, id);
	if (i >= 0) {
		const struct record *r = &s.r[i];

		w.found = true;
		if (stat(r->tmp, &st) == 0) {
			w.file_bytes = (uint64_t)st.st_size;
			w.ino = (uint64_t)st.st_ino;
		}
		w.state = r->state;
		w.warm = r->warm;
		w.node = r->warm_node;
		w.size = r->size;
		w.page_size = r->page_size;
		w.nr_pools = r->nr_pools;
		if (r->nr_pools)
			w.line = r->pools[0];
	}
	store_free(&s);
	return w;
}

/* The store emptied, the warm files removed. */
static void clear_all(struct prealloc_ctx *ctx)
{
	struct store s = { 0 };
	char cmd[400];

	store_save(ctx, &s);
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/warm-*", fr.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# cannot remove the warm files\n");
}

/* Admits bytes[i] on node i (two nodes), page size ps. */
static int admit2(struct prealloc_ctx *ctx, uint64_t ps, const uint64_t bytes[2],
		  unsigned int flags, int cancel_fd, struct prealloc_claim **ret_resv,
		  struct prealloc_admit_result *res)
{
	static const int nodes[] = { 0, 1 };
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .flags = flags, .page_size = ps, .nr_nodes = 2, .nodes = nodes,
		.node_bytes = bytes, .owner = "/nonexistent/guest", .cancel_fd = cancel_fd,
	};

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	*ret_resv = NULL;
	return prealloc_admit(ctx, &o, ret_resv, res);
}

/* The file and its record as before, byte for byte: nothing was cut. */
static void same_warm(struct prealloc_ctx *ctx, uint64_t id, const struct warm_seen *before,
		      const char *leg)
{
	struct warm_seen now = warm_seen(ctx, id);

	bool same = now.found && now.file_bytes == before->file_bytes && now.ino == before->ino &&
		    now.state == before->state && now.warm == before->warm &&
		    now.node == before->node && now.size == before->size &&
		    now.page_size == before->page_size && now.nr_pools == before->nr_pools &&
		    now.line.node == before->line.node &&
		    now.line.page_size == before->line.page_size &&
		    now.line.pages == before->line.pages && now.line.added == before->line.added;

	tap_ok(same,
	       "%s: the warm file and its record are as before (file %llu of %llu bytes, record "
	       "%llu bytes, state %d warm %d, line pages %llu added %llu of %llu/%llu)", leg,
	       (unsigned long long)now.file_bytes, (unsigned long long)before->file_bytes,
	       (unsigned long long)now.size, now.state, now.warm,
	       (unsigned long long)now.line.pages, (unsigned long long)now.line.added,
	       (unsigned long long)before->line.pages, (unsigned long long)before->line.added);
}

/* 4k: node 0 has 512 KiB free and a READY 1 MiB warm file, node 1 512 KiB and none. */
static void test_4k(struct prealloc_ctx *ctx)
{
	const uint64_t bytes[2] = { MIB, MIB };
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	uint64_t id = add_warm(ctx, "warm-4k", 0, K4, MIB, 0);
	struct warm_seen before = warm_seen(ctx, id), after;
	int r;

	if (!tap_ok(id && before.found && before.file_bytes == MIB,
		    "4k: a READY 1 MiB warm file on node 0"))
		return;
	fr_set_meminfo(&fr, 0, 16 << 20, 512, 0, 0, 0);
	fr_set_meminfo(&fr, 1, 16 << 20, 512, 0, 0, 0);
	r = admit2(ctx, K4, bytes, 0, -1, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMORY && res.node == 1 && !claim,
	       "4k: node 1 cannot be covered: refused, MEMORY, node 1 (r %d reason %d node %d)", r,
	       res.reason, res.node);
	tap_ok(res.warm_pages == 0 && res.warm_cut == 0 && res.warm_removed == 0,
	       "4k: the refusal reports nothing taken (%llu pages, %u cut, %u removed)",
	       (unsigned long long)res.warm_pages, res.warm_cut, res.warm_removed);
	same_warm(ctx, id, &before, "4k refused");
	tap_ok(nr_records(ctx) == 1, "4k: only the warm file's record is left (%u)",
	       nr_records(ctx));

	/* Node 1 with room: admitted, node 0's file cut by what was short, its record with it. */
	fr_set_meminfo(&fr, 1, 16 << 20, 8 << 20, 0, 0, 0);
	r = admit2(ctx, K4, bytes, 0, -1, &claim, &res);
	after = warm_seen(ctx, id);
	tap_ok(r == 0 && res.warm_pages == 128 && res.warm_cut == 1,
	       "4k: node 1 with room: admitted, 128 pages cut from the warm file (r %d, %llu "
	       "pages, %u cut)", r, (unsigned long long)res.warm_pages, res.warm_cut);
	tap_ok(after.found && after.warm == PREALLOC_WARM_READY && after.size == MIB / 2 &&
		       after.file_bytes == MIB / 2 && after.ino == before.ino,
	       "4k: the file and its READY record agree at 512 KiB (file %llu, record %llu, "
	       "warm %d)", (unsigned long long)after.file_bytes, (unsigned long long)after.size,
	       after.warm);
	prealloc_claim_free(claim);
	fr_set_meminfo(&fr, 0, 16 << 20, 8 << 20, 0, 0, 0);
	clear_all(ctx);
}

/* 2M: node 0's pool of 2 pages all in a READY warm file that added them. */
static uint64_t warm_2m(struct prealloc_ctx *ctx, struct warm_seen *before)
{
	uint64_t id = add_warm(ctx, "warm-2m", 0, MB2, 2 * MB2, 2);

	fr_set_pool(&fr, 0, 2, 0);
	fr_set_pool(&fr, 1, 0, 0);
	fr_set_global(&fr, MB2, 0, 0);
	*before = warm_seen(ctx, id);
	tap_ok(id && before->found && before->file_bytes == 2 * MB2 && before->line.added == 2,
	       "2M: a READY warm file of 2 pages on node 0 that added them to its pool");
	return id;
}

static void test_2m_refused(struct prealloc_ctx *ctx)
{
	const uint64_t bytes[2] = { MB2, MB2 };
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	struct warm_seen before;
	uint64_t id = warm_2m(ctx, &before);
	int r;

	r = admit2(ctx, MB2, bytes, 0, -1, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.node == 1 &&
		       res.warm_pages == 0,
	       "2M: node 1 has no free page: refused, POOL, node 1, nothing taken (r %d reason "
	       "%d node %d, %llu taken)", r, res.reason, res.node,
	       (unsigned long long)res.warm_pages);
	same_warm(ctx, id, &before, "2M refused");

	/* GROW_POOLS: node 1 cannot supply a page (its memory short of the host's margin). */
	fr_set_meminfo(&fr, 1, 16 << 20, 1024, 0, 0, 0);
	r = admit2(ctx, MB2, bytes, PREALLOC_ADMIT_GROW_POOLS, -1, &claim, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_CAPACITY && res.node == 1 &&
		       res.warm_pages == 0,
	       "2M GROW_POOLS: node 1's capacity refuses: CAPACITY, node 1, nothing taken (r %d "
	       "reason %d node %d)", r, res.reason, res.node);
	same_warm(ctx, id, &before, "2M capacity refused");
	tap_ok(fr_pool_nr(&fr, 0) == 2 && fr_pool_nr(&fr, 1) == 0 && nr_records(ctx) == 1,
	       "2M: both pools and the store as they were (%llu, %llu, %u records)",
	       (unsigned long long)fr_pool_nr(&fr, 0), (unsigned long long)fr_pool_nr(&fr, 1),
	       nr_records(ctx));
	fr_set_meminfo(&fr, 1, 16 << 20, 8 << 20, 0, 0, 0);
	clear_all(ctx);
}

/*
 * A growth the kernel refuses (here: the cancel fd, readable, stops it): 3
 * pages on node 0, 2 of them in the warm file and 1 to grow. The growth
 * comes first, so the warm file is still whole when it fails.
 */
static void test_2m_growth_refused(struct prealloc_ctx *ctx)
{
	const uint64_t bytes[2] = { 3 * MB2, 0 };
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	struct warm_seen before;
	uint64_t id = warm_2m(ctx, &before);
	int p[2], r;

	if (!tap_ok(pipe(p) == 0 && write(p[1], "x", 1) == 1, "a readable cancel fd"))
		return;
	r = admit2(ctx, MB2, bytes, PREALLOC_ADMIT_GROW_POOLS | PREALLOC_ADMIT_CANCEL_FD, p[0],
		   &claim, &res);
	tap_ok(r == -ECANCELED && res.reason == PREALLOC_ADMIT_CANCELED && res.warm_pages == 0,
	       "2M GROW_POOLS: the growth stopped: -ECANCELED, nothing taken (r %d reason %d, %llu "
	       "taken)", r, res.reason, (unsigned long long)res.warm_pages);
	same_warm(ctx, id, &before, "2M growth refused");
	tap_ok(fr_pool_nr(&fr, 0) == 2 && nr_records(ctx) == 1,
	       "2M: node 0's pool back at 2 pages, only the warm record left (%llu, %u)",
	       (unsigned long long)fr_pool_nr(&fr, 0), nr_records(ctx));
	close(p[0]);
	close(p[1]);
	clear_all(ctx);
}

/* Node 1 with a free page: admitted; node 0's warm file cut by one page, its growth moved. */
static void test_2m_admitted(struct prealloc_ctx *ctx)
{
	const uint64_t bytes[2] = { MB2, MB2 };
	struct prealloc_admit_result res;
	struct prealloc_claim *claim;
	struct warm_seen before, after;
	uint64_t id = warm_2m(ctx, &before);
	int r;

	fr_set_pool(&fr, 1, 1, 1);
	fr_set_global(&fr, MB2, 1, 0);
	r = admit2(ctx, MB2, bytes, 0, -1, &claim, &res);
	after = warm_seen(ctx, id);
	tap_ok(r == 0 && res.warm_pages == 1 && res.warm_cut == 1 && res.warm_removed == 0,
	       "2M: node 1 with a free page: admitted, one page cut from node 0's warm file (r "
	       "%d reason %d node %d, %llu taken)", r, res.reason, res.node,
	       (unsigned long long)res.warm_pages);
	tap_ok(after.found && after.warm == PREALLOC_WARM_READY && after.size == MB2 &&
		       after.file_bytes == MB2 && after.line.pages == 1 && after.line.added == 1,
	       "2M: the file and its READY record agree at one page, one page of growth left "
	       "with it (file %llu, record %llu, line %llu/%llu)",
	       (unsigned long long)after.file_bytes, (unsigned long long)after.size,
	       (unsigned long long)after.line.pages, (unsigned long long)after.line.added);
	prealloc_claim_free(claim);
	clear_all(ctx);
}

int main(void)
{
	struct prealloc_ctx *ctx;

	ctx = warm_test_ctx(&fr, 2);
	if (!ctx)
		return tap_done();
	test_4k(ctx);
	test_2m_refused(ctx);
	test_2m_growth_refused(ctx);
	test_2m_admitted(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
