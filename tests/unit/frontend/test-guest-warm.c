/* SPDX-License-Identifier: MIT */
/*
 * Guests started on warm files through the front-end layer
 * (prealloc/frontend/warm.c, with claim.c and prefault.c around it) over a
 * fake two-node sysfs/procfs with READY warm files (warm-record.h), no
 * root. tests/unit/warm and tests/unit/state hold which file one take or
 * find gets; the libvirt suites hold a warm start as root on hugetlbfs.
 * This holds what the layer asks per backend and what it leaves:
 * - a guest with a backend on each node gets exactly one READY file per
 *   node reserved for its holder (the spare on node 0 untouched), and a
 *   backend bound to two nodes gets none, the log and guest_warm_eligible
 *   saying why; a prepare run again reserves nothing more;
 * - guest_start links each reserved file at <dir>/<alias> through the
 *   directory's fd (the same inode the record holds), and nothing for the
 *   two-node backend; guest_release gives both back (the links gone, the
 *   files out of the holder's hands) and leaves the spare READY;
 * - a 2M backend on its own warm file claims no hugepage of its node (its
 *   pages are the file's), the claim refused when the file is not there;
 * - with warm off, or no READY file left on the node, nothing is reserved
 *   and the reason is the front end's words;
 * - a prepare run again with a backend that had no file: it gets the file
 *   READY since, never its sibling's (the ids counted already are skipped).
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include <prealloc.h>

#include "guest-test.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

static struct fakeroot fr;	/* two nodes */
static char status[400];	/* the holders' check: absent, no guest started yet */

static const int node0[] = { 0 }, node1[] = { 1 }, both[] = { 0, 1 };

static const char two_nodes_why[] = "bound to 2 host nodes: one warm file serves one node";

/* Record id's info now; false when it is gone. */
static bool record_of(struct prealloc_ctx *ctx, uint64_t id, struct prealloc_record_info *info)
{
	*info = (struct prealloc_record_info){ .size = sizeof(*info) };
	for (unsigned int i = 0; prealloc_record(ctx, i, info) == 0; i++)
		if (info->id == id)
			return true;
	return false;
}

/* Whether warm file id is in holder's hands (reserved for it or linked for it). */
static bool held_by(struct prealloc_ctx *ctx, uint64_t id, const char *holder)
{
	struct prealloc_record_info info;

	return record_of(ctx, id, &info) && info.owner == PREALLOC_OWNER_HOLDER &&
	       !strcmp(info.holder, holder);
}

static int warm_state(struct prealloc_ctx *ctx, uint64_t id)
{
	struct prealloc_record_info info;

	return record_of(ctx, id, &info) ? info.warm : -1;
}

/* A warm guest on the fake tree's mount (tmpfs-like: 4K pages); holder "test:<name>". */
static void warm_guest(struct guest *g, struct prealloc_ctx *ctx, const char *holder)
{
	test_guest(g, ctx, holder + 5, holder, status);
	g->warm = true;
	snprintf(g->mount, sizeof(g->mount), "%s", fr.dir);
	g->mount_page = K4;
}

/*
 * ram-node0 on node 0, ram-node1 on node 1, dimm0 on both: 8 MiB each, 4K
 * files shared. READY files: w0 and a spare on node 0, w1 on node 1.
 */
static void test_reserve(struct prealloc_ctx *ctx, struct guest *g, const uint64_t *w)
{
	char why[256], want[64];
	int r;

	test_log_clear();
	r = guest_claim(g);
	tap_ok(r == 0 && !g->msg[0], "claim of the warm guest: %d %s", r, g->msg);
	tap_ok(g->warmed[0] && g->warmed[1] && !g->warmed[2],
	       "ram-node0 and ram-node1 start warm, dimm0 does not (%d %d %d)", g->warmed[0],
	       g->warmed[1], g->warmed[2]);
	tap_ok(held_by(ctx, w[0], g->holder) && held_by(ctx, w[1], g->holder),
	       "node 0's file and node 1's file are reserved for the holder");
	tap_ok(!held_by(ctx, w[2], g->holder) && warm_state(ctx, w[2]) == PREALLOC_WARM_READY,
	       "the spare on node 0 is left READY, nobody's (state %d)", warm_state(ctx, w[2]));
	tap_ok(strstr(test_log, "dimm0 starts without a warm file: bound to 2 host nodes") != NULL,
	       "the log says why dimm0 has none: %s", test_log);
	r = guest_warm_eligible(g, 2, why, sizeof(why));
	tap_ok(r == -EINVAL && !strcmp(why, two_nodes_why), "dimm0 not eligible: %d (%s)", r, why);
	tap_ok(!guest_warm_plan(g, 2, why, sizeof(why)) && !strcmp(why, two_nodes_why),
	       "a plan for dimm0: not warm, the same reason");
	snprintf(want, sizeof(want), "warm file %llu is reserved for it", (unsigned long long)w[1]);
	tap_ok(guest_warm_plan(g, 1, why, sizeof(why)) && !strcmp(why, want),
	       "a plan for ram-node1: %s", want);

	/* prepare run again (prealloc-domain --claim first): the same two serve. */
	memset(g->warmed, 0, sizeof(g->warmed));
	guest_warm_reserve(g);
	tap_ok(g->warmed[0] && g->warmed[1] && !g->warmed[2] && !held_by(ctx, w[2], g->holder),
	       "a second reserve: the two reserved serve, the spare is not taken");
}

/* dir/name is the inode of warm file id's record. */
static bool linked_at(struct prealloc_ctx *ctx, const char *dir, const char *name, uint64_t id)
{
	struct prealloc_record_info info;
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0 && record_of(ctx, id, &info) && st.st_ino == info.ino;
}

static bool exists_at(const char *dir, const char *name)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static void test_start_release(struct prealloc_ctx *ctx, struct guest *g, const uint64_t *w)
{
	uint64_t bytes = 99, returned = 99;
	unsigned int files = guest_start_files(g, &bytes);
	char dir[400];
	int dfd, r;

	tap_ok(files == 2 && bytes == 0, "files to start: the two warm ones, no byte pre-faulted "
	       "(%u, %llu)", files, (unsigned long long)bytes);
	snprintf(dir, sizeof(dir), "%s/vm", fr.dir);
	dfd = mkdir(dir, 0700) == 0 ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (!tap_ok(dfd >= 0, "the guest's memory directory %s", dir))
		return;
	r = guest_start(g, dfd, dir);
	tap_ok(r == 0 && !g->msg[0], "start: %d %s", r, g->msg);
	tap_ok(linked_at(ctx, dir, "ram-node0", w[0]) && linked_at(ctx, dir, "ram-node1", w[1]),
	       "start: ram-node0 is node 0's file, ram-node1 node 1's");
	tap_ok(warm_state(ctx, w[0]) == PREALLOC_WARM_HANDED &&
		       warm_state(ctx, w[1]) == PREALLOC_WARM_HANDED,
	       "start: both files HANDED (%d, %d)", warm_state(ctx, w[0]), warm_state(ctx, w[1]));
	tap_ok(!exists_at(dir, "dimm0"), "start: nothing made for dimm0 (QEMU allocates it)");

	r = guest_release(g, &returned);
	tap_ok(r == 0 && returned == 0, "release: %d, %llu pages returned", r,
	       (unsigned long long)returned);
	tap_ok(!exists_at(dir, "ram-node0") && !exists_at(dir, "ram-node1"),
	       "release: the links in the memory directory are gone");
	tap_ok(!held_by(ctx, w[0], g->holder) && !held_by(ctx, w[1], g->holder) &&
		       warm_state(ctx, w[0]) != PREALLOC_WARM_HANDED &&
		       warm_state(ctx, w[1]) != PREALLOC_WARM_HANDED,
	       "release: both files out of the holder's hands (%d, %d)", warm_state(ctx, w[0]),
	       warm_state(ctx, w[1]));
	tap_ok(warm_state(ctx, w[2]) == PREALLOC_WARM_READY, "release: the spare still READY");
	close(dfd);
}

static void test_two_nodes(struct prealloc_ctx *ctx)
{
	static struct guest g;
	uint64_t w[3];

	w[0] = add_warm_in(fr.dir, ctx, "w0", 0, K4, 8 * MIB, 0);
	w[1] = add_warm_in(fr.dir, ctx, "w1", 1, K4, 8 * MIB, 0);
	w[2] = add_warm_in(fr.dir, ctx, "spare", 0, K4, 8 * MIB, 0);
	if (!tap_ok(w[0] && w[1] && w[2], "three READY warm files of 8 MiB: two on node 0, one on 1"))
		return;
	warm_guest(&g, ctx, "test:warm2");
	test_backend(&g, "ram-node0", 8 * MIB, K4, true, 1, node0);
	test_backend(&g, "ram-node1", 8 * MIB, K4, true, 1, node1);
	test_backend(&g, "dimm0", 8 * MIB, K4, true, 2, both);
	guest_needs(&g.demand);
	test_reserve(ctx, &g, w);
	test_start_release(ctx, &g, w);
}

/* A 2M guest of one backend, ram-node0 (4 MiB on node 0), a file of the memory directory. */
static void guest_2m(struct guest *g, struct prealloc_ctx *ctx, const char *holder, bool warm)
{
	warm_guest(g, ctx, holder);
	g->warm = warm;
	g->mount_page = MB2;
	test_backend(g, "ram-node0", 2 * MB2, MB2, true, 1, node0);
	guest_needs(&g->demand);
}

/*
 * Node 0's 2M pool has no free page but the pages of a READY 2M file of the
 * backend's size: on it the guest claims nothing more; another guest, warm
 * off or warm with the file reserved already, is refused on node 0 (a
 * reserved file is not admission's to take).
 */
static void test_warm_claims_nothing(struct prealloc_ctx *ctx)
{
	static struct guest a, b;
	uint64_t id = add_warm_in(fr.dir, ctx, "w2m", 0, MB2, 2 * MB2, 0);
	char why[256];
	int r;

	fr_set_pool(&fr, 0, 2, 0);
	guest_2m(&a, ctx, "test:w2m", true);
	r = guest_claim(&a);
	tap_ok(r == 0 && a.warmed[0] && held_by(ctx, id, a.holder),
	       "warm: the 2M file is reserved and the claim admitted (%d %s)", r, a.msg);
	tap_ok(held_pages(ctx, a.holder, 0, MB2) == 0 && guest_claimed(&a, 0, MB2) == 0,
	       "warm: no hugepage of node 0's pool claimed beside the file");
	guest_2m(&b, ctx, "test:cold", false);
	r = guest_claim(&b);
	tap_ok(r == -ENOMEM && strstr(b.msg, "needs 2 2M hugepages on host node 0"),
	       "warm off: the backend's 2 pages asked of node 0, refused (%d): %s", r, b.msg);
	r = guest_warm_eligible(&b, 0, why, sizeof(why));
	tap_ok(r == -EINVAL && !b.warmed[0] && !strcmp(why, test_words.warm_off) &&
		       held_by(ctx, id, a.holder),
	       "warm off: not eligible in the front end's words (%s), the file still a's", why);
	test_log_clear();
	guest_2m(&b, ctx, "test:w2m-b", true);
	r = guest_claim(&b);
	tap_ok(r == -ENOMEM && !b.warmed[0] && strstr(b.msg, "host node 0"),
	       "warm, the file reserved already: refused on node 0 (%d)", r);
	tap_ok(strstr(test_log, "ram-node0 starts without a warm file: no READY warm file") != NULL,
	       "its log says no READY file was there: %s", test_log);
	r = guest_release(&a, &(uint64_t){ 0 });
	tap_ok(r == 0 && !held_by(ctx, id, a.holder), "release: the 2M file given back (%d)", r);
}

/*
 * Two backends on node 1 and one READY file there: the first gets it, the
 * second none. A file comes READY; prepare runs again: the first keeps its
 * own (counted once), the second gets the new one, never the first's.
 */
static void test_reserve_again(struct prealloc_ctx *ctx)
{
	static struct guest g;
	uint64_t x1 = add_warm_in(fr.dir, ctx, "x1", 1, K4, 4 * MIB, 0), x2;
	int r;

	warm_guest(&g, ctx, "test:again");
	test_backend(&g, "ram-node1", 4 * MIB, K4, true, 1, node1);
	test_backend(&g, "dimm1", 4 * MIB, K4, true, 1, node1);
	guest_needs(&g.demand);
	test_log_clear();
	r = guest_claim(&g);
	tap_ok(r == 0 && g.warmed[0] && !g.warmed[1] && held_by(ctx, x1, g.holder),
	       "one file on node 1 for two backends: the first has it, the second none (%d, %d %d, "
	       "held %d)", r, g.warmed[0], g.warmed[1], held_by(ctx, x1, g.holder));
	tap_ok(strstr(test_log, "dimm1 starts without a warm file: no READY warm file") != NULL,
	       "the log says dimm1 found none: %s", test_log);
	x2 = add_warm_in(fr.dir, ctx, "x2", 1, K4, 4 * MIB, 0);
	memset(g.warmed, 0, sizeof(g.warmed));
	guest_warm_reserve(&g);
	tap_ok(x2 && g.warmed[0] && g.warmed[1] && held_by(ctx, x1, g.holder) &&
		       held_by(ctx, x2, g.holder),
	       "reserve again: the first keeps its file, the second gets the new one (%d %d)",
	       g.warmed[0], g.warmed[1]);
	r = guest_release(&g, &(uint64_t){ 0 });
	tap_ok(r == 0 && !held_by(ctx, x1, g.holder) && !held_by(ctx, x2, g.holder),
	       "release: both given back (%d)", r);
}

int main(void)
{
	struct prealloc_ctx *ctx = warm_test_ctx(&fr, 2);

	if (!ctx)
		return tap_done();
	snprintf(status, sizeof(status), "%s/guest.xml", fr.dir);
	test_two_nodes(ctx);
	test_warm_claims_nothing(ctx);
	test_reserve_again(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
