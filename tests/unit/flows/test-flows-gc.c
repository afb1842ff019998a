/* SPDX-License-Identifier: MIT */
/*
 * prealloc_store_gc (gc.c) over records whose files are real (a private
 * /dev/shm directory) and whose owners live or die as a fake procfs says
 * (fakeroot.h): which records it settles and which files go with them.
 *
 * What no other test holds: the files. A dead run's PREPARING record
 * loses its staged file (known by its hidden name alone), never the file a
 * user put at its final path; a live run's stays until its pid belongs to
 * another process (another start time); a READY file held by a holder
 * goes when its check path does, or its expiry passes, and stays while
 * either holds (its record even with the file removed by hand); one
 * held by a process (qemu:PID:START, <proc>/PID) goes once its pid is
 * another process's, the check path still there; a RELEASING record (a release a crash cut short) is finished; a READY file
 * held by nobody but itself stays. test-admit-roots and test-records hold
 * gc's pool growth and the store's text, not files.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "state.h"
#include "fakeroot.h"
#include "tap.h"
#include "flows-test.h"

static struct fakeroot fr;
static struct prealloc_ctx *ctx;
static char shm[256], stage[400];

/* A record by hand: state and owner, its file at path (identity) or staged at tmp (none). */
static uint64_t add_record(int state, const struct rec_owner *owner, const char *path,
			   const char *tmp)
{
	uint64_t id = record_new_id();
	struct statx stx;
	struct record *r;
	struct store s;

	if (store_load(ctx, &s) < 0)
		return 0;
	r = store_add(&s, id);
	r->state = state;
	r->owner = *owner;
	r->has_file = r->created = true;
	r->size = 8192;
	r->page_size = K4;
	snprintf(r->path, sizeof(r->path), "%s", path);
	if (tmp)
		snprintf(r->tmp, sizeof(r->tmp), "%s", tmp);
	else if (file_statx(AT_FDCWD, path, 0, &stx) == 0)
		record_set_identity(r, &stx);
	if (store_save(ctx, &s) < 0)
		id = 0;
	store_free(&s);
	return id;
}

static struct rec_owner run_owner(int pid, uint64_t start)
{
	return (struct rec_owner){ .kind = PREALLOC_OWNER_RUN, .pid = pid, .start = start };
}

static struct rec_owner holder_owner(const char *check, int64_t expires)
{
	struct rec_owner o;

	owner_holder(&o, "vm:gc", check, expires);
	return o;
}

/* gc once: its result and how many records it settled. */
static int gc(unsigned int *settled)
{
	*settled = ~0u;
	return prealloc_store_gc(ctx, NULL, settled);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

/* PREPARING: dead, alive, alive under a pid since reused. */
static void test_runs(void)
{
	int dead = (int)getpid() + 100011, live = (int)getpid() + 100012;
	struct rec_owner o;
	char tmp[500], final[400];
	unsigned int n;
	int r;

	snprintf(tmp, sizeof(tmp), "%s/00000000000000a1", stage);
	snprintf(final, sizeof(final), "%s/final-a", shm);
	make_file_at(tmp, 0600, 8192, 0);
	make_file_at(final, 0600, 8192, 0x44);	/* the user's: never the record's */
	o = run_owner(dead, 555);
	add_record(PREALLOC_RECORD_PREPARING, &o, final, tmp);
	r = gc(&n);
	tap_ok(r == 0 && n == 1 && !exists(tmp) && nr_records(ctx) == 0,
	       "a dead run's PREPARING record: settled, its staged file removed (r %d n %u)", r, n);
	tap_ok(nonzero_bytes(final) == 8192,
	       "... and the file a user put at its final path kept whole");
	unlink(final);

	make_file_at(tmp, 0600, 8192, 0);
	fr_set_process(&fr, live, 777);
	o = run_owner(live, 777);
	add_record(PREALLOC_RECORD_PREPARING, &o, final, tmp);
	r = gc(&n);
	tap_ok(r == 0 && n == 0 && exists(tmp) && nr_records(ctx) == 1,
	       "a live run's PREPARING record: kept, with its staged file (r %d n %u)", r, n);
	fr_set_process(&fr, live, 778);
	r = gc(&n);
	tap_ok(r == 0 && n == 1 && !exists(tmp) && nr_records(ctx) == 0,
	       "its pid now another process's (start 778, not 777): settled, file removed (r %d "
	       "n %u)", r, n);
}

/* READY files: a holder's go with it; one held by nobody but its file stays. */
static void test_ready(void)
{
	struct rec_owner o = { .kind = PREALLOC_OWNER_NONE };
	char path[400], check[400], later[400];
	unsigned int n;
	int r;

	snprintf(path, sizeof(path), "%s/held", shm);
	snprintf(check, sizeof(check), "%s/vm-gc.alive", shm);
	make_file_at(path, 0600, 8192, 0);
	make_file_at(check, 0600, 0, 0);
	o = holder_owner(check, 0);
	add_record(PREALLOC_RECORD_READY, &o, path, NULL);
	r = gc(&n);
	tap_ok(r == 0 && n == 0 && exists(path), "a holder's READY file: kept while its check path "
	       "exists (r %d n %u)", r, n);
	unlink(check);
	r = gc(&n);
	tap_ok(r == 0 && n == 1 && !exists(path) && nr_records(ctx) == 0,
	       "removed with its record once the check path is gone (r %d n %u)", r, n);

	snprintf(later, sizeof(later), "%s/later", shm);
	make_file_at(later, 0600, 8192, 0);
	make_file_at(path, 0600, 8192, 0);
	o = holder_owner(NULL, (int64_t)time(NULL) + 3600);
	add_record(PREALLOC_RECORD_READY, &o, later, NULL);
	o = holder_owner(NULL, (int64_t)time(NULL) - 1);
	add_record(PREALLOC_RECORD_READY, &o, path, NULL);
	r = gc(&n);
	tap_ok(r == 0 && n == 1 && !exists(path) && exists(later) && nr_records(ctx) == 1,
	       "holders without a check: expired a second ago, the file removed; expiring in an "
	       "hour, kept (r %d n %u)", r, n);
	/* The holder holds it, not its file: gone by hand, it stays until its holder lets go. */
	unlink(later);
	r = gc(&n);
	tap_ok(r == 0 && n == 0 && nr_records(ctx) == 1,
	       "the hour's record, its file removed by hand: kept for its holder (r %d n %u)", r,
	       n);
	tap_ok(prealloc_release_holder(ctx, "vm:gc", NULL) == 0 && nr_records(ctx) == 0,
	       "(released by its holder)");

	make_file_at(path, 0600, 8192, 0x55);
	o = (struct rec_owner){ .kind = PREALLOC_OWNER_NONE };
	add_record(PREALLOC_RECORD_READY, &o, path, NULL);
	r = gc(&n);
	tap_ok(r == 0 && n == 0 && nonzero_bytes(path) == 8192 && nr_records(ctx) == 1,
	       "a READY file held by itself: kept, its data whole (r %d n %u)", r, n);
	unlink(path);
	r = gc(&n);
	tap_ok(r == 0 && n == 1 && nr_records(ctx) == 0,
	       "settled once removed by hand (r %d n %u)", r, n);
}

/*
 * A holder that is one process (`prealloc qemu`'s, qemu:PID:START with the
 * check path <proc>/PID): kept while that process runs; settled once its
 * pid is another process's, though <proc>/PID still exists. A holder of
 * another name, or with another check path, keeps the path's rule.
 */
static void test_process_holder(void)
{
	int pid = (int)getpid() + 100013;
	char path[400], check[400], holder[64];
	struct rec_owner o;
	unsigned int n;
	int r;

	snprintf(path, sizeof(path), "%s/qemu-held", shm);
	snprintf(check, sizeof(check), "%s/%d", fr.proc, pid);
	snprintf(holder, sizeof(holder), "qemu:%d:888", pid);
	make_file_at(path, 0600, 8192, 0);
	fr_set_process(&fr, pid, 888);
	owner_holder(&o, holder, check, 0);
	add_record(PREALLOC_RECORD_READY, &o, path, NULL);
	r = gc(&n);
	tap_ok(r == 0 && n == 0 && exists(path), "holder %s, its process running (start 888): "
	       "kept (r %d n %u)", holder, r, n);
	fr_set_process(&fr, pid, 889);
	r = gc(&n);
	tap_ok(r == 0 && n == 1 && !exists(path) && nr_records(ctx) == 0,
	       "its pid now another process's (start 889, %s still there): settled, the file "
	       "removed (r %d n %u)", check, r, n);
	prealloc_release_holder(ctx, holder, NULL);	/* none left, unless that failed */

	make_file_at(path, 0600, 8192, 0);
	owner_holder(&o, "vm:888", check, 0);
	add_record(PREALLOC_RECORD_READY, &o, path, NULL);
	snprintf(holder, sizeof(holder), "qemu:%d:888", pid + 1);
	owner_holder(&o, holder, check, 0);	/* a check of another pid than its name's */
	add_record(PREALLOC_RECORD_READY, &o, path, NULL);
	r = gc(&n);
	tap_ok(r == 0 && n == 0 && nr_records(ctx) == 2, "holders vm:888 and %s with the check "
	       "path %s: the path's rule, kept while it exists (r %d n %u)", holder, check, r, n);
	tap_ok(prealloc_release_holder(ctx, "vm:888", NULL) == 0 &&
		       prealloc_release_holder(ctx, holder, NULL) == 0 && nr_records(ctx) == 0,
	       "(released by their holders)");
}

/* A release a crash cut short: RELEASING is finished, whoever owned it. */
static void test_releasing(void)
{
	struct rec_owner o = run_owner((int)getpid(), 1000);	/* this process, alive */
	char path[400];
	unsigned int n;
	int r;

	snprintf(path, sizeof(path), "%s/releasing", shm);
	make_file_at(path, 0600, 8192, 0);
	add_record(PREALLOC_RECORD_RELEASING, &o, path, NULL);
	r = gc(&n);
	tap_ok(r == 0 && n == 1 && !exists(path) && nr_records(ctx) == 0,
	       "a RELEASING record: settled and its file removed (r %d n %u)", r, n);
	tap_ok(prealloc_store_gc(NULL, NULL, NULL) == -EINVAL, "no ctx: -EINVAL");
	tap_ok(prealloc_pool_gc(ctx, NULL, &n) == 0 && n == 0,
	       "prealloc_pool_gc, 0.1's name, is the same call (n %u)", n);
}

int main(void)
{
	if (shm_dir(shm, sizeof(shm)) < 0)
		return tap_skip_all("/dev/shm is not a tmpfs");
	snprintf(stage, sizeof(stage), "%s/.stage", shm);
	if (mkdir(stage, 0700) < 0 || fakeroot_make(&fr, 1) < 0)
		return tap_skip_all("cannot build the fake tree in /tmp");
	tap_remove_at_exit(fr.dir);
	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx over the fake sysfs and procfs"))
		return tap_done();
	test_runs();
	test_ready();
	test_process_holder();
	test_releasing();
	prealloc_ctx_free(ctx);
	return tap_done();
}
