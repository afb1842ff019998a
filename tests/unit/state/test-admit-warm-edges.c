/* SPDX-License-Identifier: MIT */
/*
 * Admission's warm files at their exact edges (issue 42), over a fake
 * two-node sysfs/procfs (fakeroot.h), no root: a node short by exactly
 * what its READY warm files hold is admitted, taking all of them; one page
 * more is refused with nothing taken. For 2M (free hugepages: none free,
 * then one free and the warm file covering exactly the rest) and for 4k
 * (free memory). A slip to "more than the shortfall" refuses the exact fit.
 *
 * And the undo on two nodes: a --grow-pools request that grew both nodes'
 * pools and then finds node 1's warm file gone before its cut (removed
 * while the admission stood at before-pool-write) is refused and gives
 * back both growths, the second node's as well as the first's; the same
 * request with the file left in place is admitted with both grown, so
 * that the refusal is not one the growth never reached.
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include "state.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define K4 PREALLOC_PAGE_4K
#define MB2 PREALLOC_PAGE_2M
#define KIB (UINT64_C(1) << 10)

static struct fakeroot fr;	/* two nodes */

/* A READY warm file in the fake tree (warm-record.h). */
static uint64_t add_warm(struct prealloc_ctx *ctx, const char *name, int node, uint64_t ps,
			 uint64_t bytes, uint64_t added)
{
	return add_warm_in(fr.dir, ctx, name, node, ps, bytes, added);
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

/* Admits bytes on node 0 alone, page size ps; the claim freed. */
static int admit0(struct prealloc_ctx *ctx, uint64_t ps, uint64_t bytes,
		  struct prealloc_admit_result *res)
{
	static const int node = 0;
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .page_size = ps, .nr_nodes = 1, .nodes = &node,
		.node_bytes = &bytes, .tag = "/nonexistent/guest",
	};
	struct prealloc_claim *claim = NULL;
	int r;

	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	r = prealloc_admit(ctx, &o, &claim, res);
	prealloc_claim_free(claim);
	return r;
}

/* 2M: node 0's pool all in READY warm files (free_pages free beside them). */
static void test_2m(struct prealloc_ctx *ctx, uint64_t free_pages)
{
	struct prealloc_admit_result res;
	uint64_t need = free_pages + 2;
	int r;

	tap_ok(add_warm(ctx, "warm-2m", 0, MB2, 2 * MB2, 2) != 0,
	       "2M: a READY warm file of 2 pages on node 0, %llu free beside it",
	       (unsigned long long)free_pages);
	fr_set_pool(&fr, 0, 2 + free_pages, free_pages);
	fr_set_pool(&fr, 1, 0, 0);
	fr_set_global(&fr, MB2, free_pages, 0);
	r = admit0(ctx, MB2, (need + 1) * MB2, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL && res.node == 0 &&
		       res.warm_pages == 0 && nr_records(ctx) == 1,
	       "2M: %llu pages, one more than free + warm: refused, POOL, nothing taken (r %d "
	       "reason %d, %llu taken, %u records)", (unsigned long long)need + 1, r, res.reason,
	       (unsigned long long)res.warm_pages, nr_records(ctx));
	r = admit0(ctx, MB2, need * MB2, &res);
	tap_ok(r == 0 && res.warm_pages == 2 && res.warm_removed == 1 && res.warm_cut == 0,
	       "2M: %llu pages, exactly free + warm: admitted, the whole file taken (r %d reason "
	       "%d, %llu taken, %u removed, %u cut)", (unsigned long long)need, r, res.reason,
	       (unsigned long long)res.warm_pages, res.warm_removed, res.warm_cut);
	clear_all(ctx);
}

/* 4k: node 0 has 512 KiB free and a READY 512 KiB warm file. */
static void test_4k(struct prealloc_ctx *ctx)
{
	struct prealloc_admit_result res;
	int r;

	tap_ok(add_warm(ctx, "warm-4k", 0, K4, 512 * KIB, 0) != 0,
	       "4k: a READY 512 KiB warm file on node 0, 512 KiB free");
	fr_set_meminfo(&fr, 0, 16 << 20, 512, 0, 0, 0);
	r = admit0(ctx, K4, 1024 * KIB + K4, &res);
	tap_ok(r == -ENOMEM && res.reason == PREALLOC_ADMIT_MEMORY && res.node == 0 &&
		       res.warm_pages == 0 && nr_records(ctx) == 1,
	       "4k: 1 MiB and a page, a page more than free + warm: refused, MEMORY, nothing "
	       "taken (r %d reason %d, %llu taken)", r, res.reason,
	       (unsigned long long)res.warm_pages);
	r = admit0(ctx, K4, 1024 * KIB, &res);
	tap_ok(r == 0 && res.warm_pages == 128 && res.warm_removed == 1 && res.warm_cut == 0,
	       "4k: 1 MiB, exactly free + warm: admitted, the whole file taken (r %d reason %d, "
	       "%llu pages, %u removed, %u cut)", r, res.reason,
	       (unsigned long long)res.warm_pages, res.warm_removed, res.warm_cut);
	fr_set_meminfo(&fr, 0, 16 << 20, 8 << 20, 0, 0, 0);
	clear_all(ctx);
}

/*
 * Node 0 short by 2 pages, node 1 by 3 of which its READY warm file holds
 * 1: both pools grow by 2, then node 1's file is cut. In a child (the pause
 * stops it: SIGSTOP) so that the file can go between the plan and the cut
 * (gone: true). The child's exit status: 0 when admitted, 1 refused, 2 else.
 */
static int admit_two(struct prealloc_ctx *ctx, bool gone, char *path)
{
	static const int nodes[2] = { 0, 1 };
	uint64_t bytes[2] = { 2 * MB2, 3 * MB2 };
	struct prealloc_admit_opts o = {
		.size = sizeof(o), .flags = PREALLOC_ADMIT_GROW_POOLS, .page_size = MB2,
		.nr_nodes = 2, .nodes = nodes, .node_bytes = bytes, .tag = "/nonexistent/guest",
	};
	int status, stops = 0;
	pid_t pid = fork();

	if (pid == 0) {
		struct prealloc_admit_result res = { .size = sizeof(res) };
		struct prealloc_claim *claim = NULL;
		int r;

		if (gone)
			setenv("PREALLOC_TEST_PAUSE", "before-pool-write", 1);
		r = prealloc_admit(ctx, &o, &claim, &res);
		_exit(r == 0 ? 0 : r == -ENOMEM && res.reason == PREALLOC_ADMIT_POOL ? 1 : 2);
	}
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, WUNTRACED) == pid && WIFSTOPPED(status)) {
		if (stops++ == 0 && unlink(path) < 0)
			fprintf(stderr, "# cannot remove %s\n", path);
		kill(pid, SIGCONT);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_undo_two_nodes(struct prealloc_ctx *ctx)
{
	char path[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/warm-node1", fr.dir);
	for (int gone = 0; gone < 2; gone++) {
		fr_set_pool(&fr, 0, 4, 0);
		fr_set_pool(&fr, 1, 6, 0);
		fr_set_global(&fr, MB2, 0, 0);
		if (!tap_ok(add_warm(ctx, "warm-node1", 1, MB2, MB2, 1) != 0,
			    "two nodes: a READY warm file of 1 page on node 1"))
			return;
		r = admit_two(ctx, gone, path);
		if (!gone)
			tap_ok(r == 0 && fr_pool_nr(&fr, 0) == 6 && fr_pool_nr(&fr, 1) == 8,
			       "two nodes, the file in place: admitted, node 0 grown 4 -> 6 and node "
			       "1 6 -> 8 (exit %d, nr %llu, %llu)", r,
			       (unsigned long long)fr_pool_nr(&fr, 0),
			       (unsigned long long)fr_pool_nr(&fr, 1));
		else
			tap_ok(r == 1 && fr_pool_nr(&fr, 0) == 4 && fr_pool_nr(&fr, 1) == 6,
			       "two nodes, node 1's file gone before its cut: refused, both growths "
			       "given back, node 0 at 4 and node 1 at 6 (exit %d, nr %llu, %llu)", r,
			       (unsigned long long)fr_pool_nr(&fr, 0),
			       (unsigned long long)fr_pool_nr(&fr, 1));
		clear_all(ctx);
	}
	fr_set_pool(&fr, 0, 0, 0);
	fr_set_pool(&fr, 1, 0, 0);
}

int main(void)
{
	struct prealloc_ctx *ctx;

	ctx = warm_test_ctx(&fr, 2);
	if (!ctx)
		return tap_done();
	test_2m(ctx, 0);
	test_2m(ctx, 1);
	test_4k(ctx);
	test_undo_two_nodes(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
