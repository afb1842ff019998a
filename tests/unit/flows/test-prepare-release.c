/* SPDX-License-Identifier: MIT */
/*
 * prealloc_prepare of a 4k file on tmpfs end to end, without root, over a
 * fake one-node sysfs/procfs (fakeroot.h) and a private /dev/shm
 * directory, then prealloc_release and prealloc_release_holder
 * (prepare.c, release.c): what a commit leaves (the file at its name,
 * every page faulted and zero, mode, the staged name gone, the READY
 * record naming it by identity, the QEMU option), and what a release
 * removes, or refuses and leaves exactly as it was.
 *
 * What no other test holds without root: the commit's file and record as
 * the store sees them; a release of a file prealloc did not make, of an
 * adopted (REUSE) file, of a file whose size changed since (-ESTALE), of a
 * file put at the path after ours was removed by hand (by identity: not
 * ours), of a file a live run is still preparing (-EBUSY naming its pid,
 * then removed once the fake /proc says the run is gone), of a warm file
 * (-EBUSY, warm), of a link, a directory; a release by holder. The
 * integration tests hold these as root on hugetlbfs through the CLI, a
 * few of them; tests/uring releases one prepared file.
 */
#include <errno.h>
#include <string.h>

#include "state.h"
#include "prepare-case.h"

static char staging[400];	/* the staging directory the flow makes in shm (procfs is fake) */

/* Prepares path (NULL: a name of the flow's in shm), bytes of 4k pages on node 0. */
static int prepare(const char *path, uint64_t bytes, unsigned int flags, const char *holder,
		   struct prealloc_prepare_info *info)
{
	struct prealloc_prepare_opts o = default_opts();

	o.path = path;
	o.dir = path ? NULL : shm;
	o.length = bytes;
	o.flags = flags;
	o.holder = holder;
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return prealloc_prepare(ctx, &o, info, NULL);
}

static int release(const char *path, struct prealloc_release_info *info)
{
	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return prealloc_release(ctx, path, info);
}

static bool gone(const char *path)
{
	struct stat st;

	return lstat(path, &st) < 0 && errno == ENOENT;
}

/* The one record there is, into ri; false when there is not exactly one. */
static bool only_record(struct prealloc_record_info *ri)
{
	memset(ri, 0, sizeof(*ri));
	ri->size = sizeof(*ri);
	return nr_records(ctx) == 1 && prealloc_record(ctx, 0, ri) == 0;
}

/* A prepare committed: the file, its record, the option QEMU is given. */
static void test_commit(void)
{
	struct prealloc_prepare_info info;
	struct prealloc_record_info ri;
	char want[1200], names[512];
	struct stat st = { 0 };
	bool one;
	int r;

	r = prepare(guest, MIB, 0, NULL, &info);
	tap_ok(r == 0 && info.step == PREALLOC_STEP_NONE && info.error == 0 && info.created == 1 &&
		       info.page_size == K4 && !strcmp(info.path, guest) && !info.message[0],
	       "1 MiB of 4k pages prepared at %s (r %d step %d created %d '%s')", guest, r,
	       info.step, info.created, info.message);
	snprintf(want, sizeof(want), "-object memory-backend-file,id=mem0,mem-path=%s,size=1M,"
		 "share=on,prealloc=off,host-nodes=0,policy=bind", guest);
	tap_ok(!strcmp(info.qemu_option, want), "the QEMU option: '%s'", info.qemu_option);
	stat(guest, &st);
	tap_ok(S_ISREG(st.st_mode) && (uint64_t)st.st_size == MIB &&
		       (st.st_mode & 07777) == 0600 && (uint64_t)st.st_blocks * 512 == MIB &&
		       nonzero_bytes(guest) == 0,
	       "the file: 1 MiB, mode 0600, every page faulted in, all zero (mode %o, %llu "
	       "resident)", (unsigned int)(st.st_mode & 07777),
	       (unsigned long long)st.st_blocks * 512);
	dir_entries(shm, names, sizeof(names));
	tap_ok(dir_entries(staging, NULL, 0) == 0 && dir_entries(shm, NULL, 0) == 2,
	       "in the directory: the file and the empty staging directory ('%s')", names);
	one = only_record(&ri);
	tap_ok(one && ri.id == info.record_id && ri.state == PREALLOC_RECORD_READY &&
		       ri.has_file && ri.created && !strcmp(ri.path, guest) &&
		       ri.file_size == MIB && ri.page_size == K4 && ri.dev == (uint64_t)st.st_dev &&
		       ri.ino == (uint64_t)st.st_ino,
	       "one record: READY, created, its path, size and identity (state %d path '%s')",
	       ri.state, ri.path);
}

/* What a release removes, and the refusals that leave everything. */
static void test_release(void)
{
	struct prealloc_release_info info;
	char other[400], dir[400], link_path[400];
	int r;

	r = release(guest, &info);
	tap_ok(r == 0 && info.removed == 1 && gone(guest) && nr_records(ctx) == 0,
	       "release removes the file and its record (r %d removed %d, %u records)", r,
	       info.removed, nr_records(ctx));
	r = release(guest, &info);
	tap_ok(r == -ENOENT && !info.removed, "released again: -ENOENT (%d)", r);
	snprintf(other, sizeof(other), "%s/other", shm);
	make_file_at(other, 0600, 8192, 0x11);
	r = release(other, &info);
	tap_ok(r == -ENOENT && !info.removed && nonzero_bytes(other) == 8192,
	       "a file prealloc did not make: -ENOENT, every byte kept (%d)", r);
	snprintf(link_path, sizeof(link_path), "%s/link", shm);
	symlink(other, link_path);
	r = release(link_path, &info);
	tap_ok(r == -ELOOP && !gone(link_path), "a symbolic link: -ELOOP, left (%d)", r);
	snprintf(dir, sizeof(dir), "%s/subdir", shm);
	mkdir(dir, 0700);
	tap_ok(release(dir, &info) == -EINVAL && !gone(dir), "a directory: -EINVAL, left");
	tap_ok(release("", &info) == -EINVAL && prealloc_release(ctx, NULL, NULL) == -EINVAL &&
		       prealloc_release(NULL, other, NULL) == -EINVAL,
	       "an empty path, no path, no ctx: -EINVAL");
	unlink(link_path);
	unlink(other);
	rmdir(dir);
}

/* Ours once, not now: a size changed since, a file put at the path after ours went. */
static void test_not_ours_now(void)
{
	struct prealloc_prepare_info pi;
	struct prealloc_release_info info;
	unsigned int settled = 0;
	char path[400];
	int r;

	snprintf(path, sizeof(path), "%s/grown", shm);
	r = prepare(path, 64 * 1024, 0, NULL, &pi);
	tap_ok(r == 0 && truncate(path, 128 * 1024) == 0, "a prepared 64 KiB file grown to 128");
	r = release(path, &info);
	tap_ok(r == -ESTALE && !info.removed && !gone(path) && nr_records(ctx) == 1,
	       "its release: -ESTALE, the file and record kept (%d)", r);
	tap_ok(truncate(path, 64 * 1024) == 0 && release(path, &info) == 0 && gone(path),
	       "at its size again it is released");

	snprintf(path, sizeof(path), "%s/replaced", shm);
	r = prepare(path, 64 * 1024, 0, NULL, &pi);
	tap_ok(r == 0 && unlink(path) == 0 && make_file_at(path, 0600, 64 * 1024, 0x22) == 0,
	       "a prepared file removed by hand, another made at its path");
	r = release(path, &info);
	tap_ok(r == -ENOENT && nonzero_bytes(path) == 64 * 1024 && nr_records(ctx) == 1,
	       "its release: -ENOENT, the new file kept whole (%d)", r);
	r = prealloc_store_gc(ctx, NULL, &settled);
	tap_ok(r == 0 && settled == 1 && nr_records(ctx) == 0 && nonzero_bytes(path) == 64 * 1024,
	       "gc settles the record, the new file kept whole (r %d settled %u)", r, settled);
	unlink(path);
}

/* A file adopted with REUSE is the user's: a release never removes it. */
static void test_adopted(void)
{
	struct prealloc_prepare_info pi;
	struct prealloc_release_info info;
	struct prealloc_record_info ri;
	unsigned int settled = 9;
	char path[400];
	int r;

	snprintf(path, sizeof(path), "%s/adopted", shm);
	make_file_at(path, 0600, 64 * 1024, 0x33);
	r = prepare(path, 64 * 1024, PREALLOC_PREPARE_REUSE, NULL, &pi);
	tap_ok(r == 0 && pi.created == 0 && pi.resident_before == 64 * 1024 && only_record(&ri) &&
		       !ri.created && ri.state == PREALLOC_RECORD_READY,
	       "REUSE adopts a file of ours: not created, 64 KiB resident before (r %d '%s')", r,
	       pi.message);
	r = release(path, &info);
	tap_ok(r == -ENOENT && !info.removed && nonzero_bytes(path) == 64 * 1024,
	       "its release: -ENOENT, its data kept (%d)", r);
	r = prealloc_store_gc(ctx, NULL, &settled);
	tap_ok(r == 0 && settled == 0 && nr_records(ctx) == 1,
	       "gc keeps it while the file is there");
	unlink(path);
	r = prealloc_store_gc(ctx, NULL, &settled);
	tap_ok(r == 0 && settled == 1 && nr_records(ctx) == 0, "and settles it once it is gone");
}

/* The flow's own name in shm, mode 0640; a holder's file, released by its holder. */
static void test_named_and_held(void)
{
	struct prealloc_prepare_opts o = default_opts();
	struct prealloc_prepare_info pi = { .size = sizeof(pi) };
	struct prealloc_release_info info;
	const char *base;
	struct stat st = { 0 };
	size_t n;
	int r;

	o.path = NULL;
	o.dir = shm;
	o.length = 64 * 1024;
	o.mode = 0640;
	r = prealloc_prepare(ctx, &o, &pi, NULL);
	base = strrchr(pi.path, '/');
	n = base ? strspn(base + 1 + strlen("prealloc-node0-64K-"),
			  "abcdefghijklmnopqrstuvwxyz0123456789") : 0;
	tap_ok(r == 0 && base && !strncmp(pi.path, shm, strlen(shm)) &&
		       base - pi.path == (long)strlen(shm) &&
		       !strncmp(base + 1, "prealloc-node0-64K-", 19) && n == 7 && !base[1 + 19 + n],
	       "no path: the flow names it prealloc-node0-64K-<7 of a-z0-9> in dir ('%s')",
	       pi.path);
	stat(pi.path, &st);
	tap_ok((st.st_mode & 07777) == 0640,
	       "with the mode asked: 0640 (%o)", (unsigned int)(st.st_mode & 07777));
	tap_ok(release(pi.path, &info) == 0 && gone(pi.path), "released");

	r = prepare(guest, 64 * 1024, 0, "vm:a", &pi);
	tap_ok(r == 0 && !gone(guest), "a file held by vm:a");
	tap_ok(prealloc_release_holder(ctx, "vm:b", NULL) == -ENOENT && !gone(guest) &&
		       prealloc_release_holder(ctx, "", NULL) == -EINVAL,
	       "released for vm:b: -ENOENT, kept; an empty holder: -EINVAL");
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	r = prealloc_release_holder(ctx, "vm:a", &info);
	tap_ok(r == 0 && info.removed && gone(guest) && nr_records(ctx) == 0,
	       "released for vm:a: the file and record go (r %d removed %d)", r, info.removed);
}

/* A record by hand: state, owner (pid, start; 0 none), warm state, for the file at path. */
static uint64_t add_record(const char *path, int state, int pid, uint64_t start, int warm)
{
	uint64_t id = record_new_id();
	struct statx stx;
	struct record *r;
	struct store s;

	if (file_statx(AT_FDCWD, path, 0, &stx) < 0 || store_load(ctx, &s) < 0)
		return 0;
	r = store_add(&s, id);
	r->state = state;
	r->owner.kind = pid ? PREALLOC_OWNER_RUN : PREALLOC_OWNER_NONE;
	r->owner.pid = pid;
	r->owner.start = start;
	r->has_file = r->created = true;
	record_set_identity(r, &stx);
	r->size = (uint64_t)stx.stx_size;
	r->page_size = K4;
	snprintf(r->path, sizeof(r->path), "%s", path);
	r->warm = warm;
	if (store_save(ctx, &s) < 0)
		id = 0;
	store_free(&s);
	return id;
}

/* A file a live run still prepares, and a warm file: -EBUSY, each saying why. */
static void test_busy(void)
{
	int pid = (int)getpid() + 100003;
	struct prealloc_release_info info;
	char path[400];
	int r;

	snprintf(path, sizeof(path), "%s/busy", shm);
	make_file_at(path, 0600, 8192, 0);
	fr_set_process(&fr, pid, 4242);
	tap_ok(add_record(path, PREALLOC_RECORD_PREPARING, pid, 4242, WARM_NONE) != 0,
	       "a PREPARING record of a live run (fake pid %d) for %s", pid, path);
	r = release(path, &info);
	tap_ok(r == -EBUSY && info.pid == pid && !info.removed && !gone(path),
	       "its release: -EBUSY naming pid %d, the file kept (r %d pid %d)", pid, r, info.pid);
	fr_set_process(&fr, pid, 4243);	/* the pid now another process's */
	r = release(path, &info);
	tap_ok(r == 0 && info.removed && gone(path) && nr_records(ctx) == 0,
	       "once the pid is another process's, released: the file removed (r %d)", r);

	snprintf(path, sizeof(path), "%s/warm", shm);
	make_file_at(path, 0600, 8192, 0);
	add_record(path, PREALLOC_RECORD_READY, 0, 0, PREALLOC_WARM_HANDED);
	r = release(path, &info);
	tap_ok(r == -EBUSY && info.warm == 1 && !info.removed && !gone(path) &&
		       nr_records(ctx) == 1,
	       "a file of the warm pool: -EBUSY, warm, kept (r %d warm %d)", r, info.warm);
}

int main(void)
{
	const char *why;

	if (prepare_case_start(&why) < 0)
		return tap_skip_all("%s", why);
	if (!ctx)
		return tap_done();
	/* staging.c's name for this user, in the target directory (fake procfs: no mount id). */
	if (geteuid() == 0)
		snprintf(staging, sizeof(staging), "%s/.prealloc", shm);
	else
		snprintf(staging, sizeof(staging), "%s/.prealloc-%u", shm, (unsigned int)geteuid());
	test_commit();
	test_release();
	test_not_ours_now();
	test_adopted();
	test_named_and_held();
	test_busy();
	prealloc_ctx_free(ctx);
	return tap_done();
}
