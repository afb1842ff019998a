/* SPDX-License-Identifier: MIT */
/*
 * prealloc_clear_file's checks that the file is the one the caller meant
 * (clear_checks.c), and what a clear that passes them reports
 * (clear_file.c), without root: files in a private /dev/shm directory and
 * on disk, other processes as a fake procfs says (fakeroot.h). Each
 * refusal with its errno and step leaves the file's bytes as they were.
 *
 * What no other test holds: a directory and a FIFO (-EINVAL, TYPE); a
 * file on disk (-EMEDIUMTYPE, FILESYSTEM, its bytes kept) and the same
 * with FORCE, cleared and written back; a process that maps the file, or
 * only holds it open (its fd in the fake /proc), named with its comm (or
 * "?"), refused and with FORCE cleared; the info of a clear (length, the
 * partial tail, page size, filesystem, VERIFY's nonzero_offset); what
 * /proc does not let it read (an fd it cannot stat, maps it cannot open)
 * counted unreadable, never "not this file", and a /proc it cannot read at
 * all refused at MAPPERS (fail closed), the bytes kept; a file of
 * one partial page done without a job; the arguments refused. The
 * integration test clear-file holds a link, a real child that maps the
 * file, an unknown kernel and a missing file.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "prealloc.h"
#include "fakeroot.h"
#include "tap.h"
#include "flows-test.h"

static struct fakeroot fr;
static struct prealloc_ctx *ctx;
static char shm[256], disk[256];

static int clear(const char *path, unsigned int flags, struct prealloc_clear_file_info *info)
{
	struct prealloc_clear_file_opts o = { .size = sizeof(o), .flags = flags, .threads = 1 };

	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return prealloc_clear_file(ctx, path, &o, info, NULL);
}

/* Not a regular file: refused at TYPE, and nothing opened (a FIFO would block). */
static void test_type(void)
{
	struct prealloc_clear_file_info info;
	char path[400];
	int r;

	snprintf(path, sizeof(path), "%s/subdir", shm);
	mkdir(path, 0700);
	r = clear(path, PREALLOC_CLEAR_FORCE, &info);
	tap_ok(r == -EINVAL && info.error_step == PREALLOC_CLEAR_STEP_TYPE,
	       "a directory, even with FORCE: -EINVAL at TYPE (r %d step %d)", r, info.error_step);
	snprintf(path, sizeof(path), "%s/fifo", shm);
	mkfifo(path, 0600);
	r = clear(path, PREALLOC_CLEAR_FORCE, &info);
	tap_ok(r == -EINVAL && info.error_step == PREALLOC_CLEAR_STEP_TYPE,
	       "a FIFO, even with FORCE: -EINVAL at TYPE (r %d step %d)", r, info.error_step);
}

/* A file on disk: refused unless FORCE, then cleared and written back. */
static void test_disk(void)
{
	struct prealloc_clear_file_info info;
	struct statfs sfs;
	char path[400];
	int r;

	if (!disk[0]) {
		tap_skip("no directory off tmpfs and hugetlbfs: /var/tmp, /tmp and . are all in "
			 "memory");
		return;
	}
	snprintf(path, sizeof(path), "%s/data", disk);
	make_file_at(path, 0600, 3 * K4 + 10, 0x66);
	statfs(disk, &sfs);
	r = clear(path, 0, &info);
	tap_ok(r == -EMEDIUMTYPE && info.error_step == PREALLOC_CLEAR_STEP_FILESYSTEM &&
		       info.fs_magic == (unsigned long)sfs.f_type &&
		       nonzero_bytes(path) == 3 * K4 + 10,
	       "a file on disk: -EMEDIUMTYPE at FILESYSTEM (fs %#lx), every byte kept (r %d step "
	       "%d)", info.fs_magic, r, info.error_step);
	r = clear(path, PREALLOC_CLEAR_FORCE | PREALLOC_CLEAR_VERIFY, &info);
	tap_ok(r == 0 && info.error_step == 0 && info.length == 3 * K4 + 10 &&
		       info.tail_bytes == 10 && info.nonzero_offset == UINT64_MAX &&
		       nonzero_bytes(path) == 0,
	       "... with FORCE: cleared to its last byte, 3 pages and a 10-byte tail (r %d step "
	       "%d, %llu non-zero)", r, info.error_step, (unsigned long long)nonzero_bytes(path));
	unlink(path);
}

/* Another process's use, as the fake /proc says: named, refused, cleared with FORCE. */
static void test_users(void)
{
	struct prealloc_clear_file_info info;
	char path[400], held[400];
	int r;

	snprintf(path, sizeof(path), "%s/mapped", shm);
	make_file_at(path, 0600, 2 * K4, 0x77);
	fake_mapper(&fr, 4242, path, "qemu-fake");
	r = clear(path, 0, &info);
	tap_ok(r == -EBUSY && info.error_step == PREALLOC_CLEAR_STEP_MAPPERS &&
		       info.mapper_pid == 4242 && !strcmp(info.mapper_comm, "qemu-fake") &&
		       nonzero_bytes(path) == 2 * K4,
	       "a file fake pid 4242 maps: -EBUSY at MAPPERS naming 4242 (%s), kept (r %d pid %d)",
	       info.mapper_comm, r, (int)info.mapper_pid);
	r = clear(path, PREALLOC_CLEAR_FORCE, &info);
	tap_ok(r == 0 && info.mapper_pid == 4242 && nonzero_bytes(path) == 0,
	       "... with FORCE: cleared, the mapper still named (r %d pid %d)", r,
	       (int)info.mapper_pid);

	snprintf(held, sizeof(held), "%s/held", shm);
	make_file_at(held, 0600, 2 * K4, 0x77);
	fake_opener(&fr, 4343, held);
	r = clear(held, 0, &info);
	tap_ok(r == -EBUSY && info.error_step == PREALLOC_CLEAR_STEP_MAPPERS &&
		       info.mapper_pid == 4343 && !strcmp(info.mapper_comm, "?") &&
		       nonzero_bytes(held) == 2 * K4,
	       "a file fake pid 4343 only holds open: -EBUSY naming it, comm '?' (r %d pid %d "
	       "'%s')", r, (int)info.mapper_pid, info.mapper_comm);
}

/* What a clear that passes reports; one partial page needs no job. */
static void test_info(void)
{
	struct prealloc_clear_file_opts o = { .size = sizeof(o) };
	struct prealloc_clear_file_info info;
	struct prealloc_job *job = (struct prealloc_job *)&o;
	struct stat st;
	char path[400];
	int r;

	snprintf(path, sizeof(path), "%s/guest", shm);
	make_file_at(path, 0600, 2 * K4 + 100, 0x11);
	r = clear(path, PREALLOC_CLEAR_VERIFY, &info);
	stat(path, &st);
	tap_ok(r == 0 && info.error_step == 0 && info.fs_magic == TMPFS_MAGIC &&
		       info.page_size == K4 && info.length == 2 * K4 + 100 &&
		       info.tail_bytes == 100 && info.nonzero_offset == UINT64_MAX &&
		       info.kernel[0] && info.mapper_pid == 0 && nonzero_bytes(path) == 0 &&
		       (uint64_t)st.st_size == 2 * K4 + 100,
	       "a tmpfs file of 2 pages and 100 bytes: cleared and verified, its size kept (r %d "
	       "length %llu tail %llu kernel '%s')", r, (unsigned long long)info.length,
	       (unsigned long long)info.tail_bytes, info.kernel);

	snprintf(path, sizeof(path), "%s/small", shm);
	make_file_at(path, 0600, 100, 0x11);
	memset(&info, 0, sizeof(info));
	info.size = sizeof(info);
	r = prealloc_clear_file_start(ctx, path, &o, &job, &info);
	tap_ok(r == 0 && job == NULL && !info.kernel[0] && info.tail_bytes == 100 &&
		       nonzero_bytes(path) == 0,
	       "a file of one partial page: done at the start, no job, no kernel (r %d '%s')", r,
	       info.kernel);
	info.size = 0;
	tap_ok(prealloc_clear_file_start(ctx, path, &o, &job, &info) == -EINVAL &&
		       prealloc_clear_file_start(ctx, path, NULL, &job, NULL) == -EINVAL &&
		       prealloc_clear_file_start(ctx, NULL, &o, &job, NULL) == -EINVAL &&
		       prealloc_clear_file_start(NULL, path, &o, &job, NULL) == -EINVAL,
	       "an info of size 0, no opts, no path, no ctx: -EINVAL");
}

/* pid's /proc entry rel (fd/9, maps) a link to itself: any open or stat of it fails (ELOOP). */
static int fake_unreadable(int pid, const char *rel)
{
	char path[400];

	snprintf(path, sizeof(path), "%d/placeholder", pid);
	if (!strcmp(rel, "fd/9"))
		snprintf(path, sizeof(path), "%d/fd/placeholder", pid);
	if (fr_write(fr.proc, path, "x") < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%d/%s", fr.proc, pid, rel);
	return symlink(strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel, path);
}

/* What /proc does not show: unreadable, counted; no /proc at all: refused. */
static void test_unreadable(void)
{
	struct prealloc_clear_file_info info;
	char path[400], away[400];
	int r;

	snprintf(path, sizeof(path), "%s/unreadable", shm);
	make_file_at(path, 0600, 2 * K4, 0x77);
	r = fake_unreadable(4444, "fd/9");
	r = r < 0 ? r : clear(path, 0, &info);
	tap_ok(r == 0 && info.unreadable == 1 && info.mapper_pid == 0,
	       "fake pid 4444's fd 9 cannot be stat'ed (ELOOP): counted unreadable, not 'not this "
	       "file' (r %d, unreadable %u)", r, info.unreadable);
	unlink(path);
	make_file_at(path, 0600, 2 * K4, 0x77);
	r = fake_unreadable(4545, "maps");
	r = r < 0 ? r : clear(path, 0, &info);
	tap_ok(r == 0 && info.unreadable == 2 && info.mapper_pid == 0,
	       "... and fake pid 4545's maps cannot be opened: 2 unreadable (r %d, unreadable %u)",
	       r, info.unreadable);

	unlink(path);
	make_file_at(path, 0600, 2 * K4, 0x77);
	snprintf(away, sizeof(away), "%s.away", fr.proc);
	r = rename(fr.proc, away) < 0 ? -errno : clear(path, 0, &info);
	tap_ok(r < 0 && info.error_step == PREALLOC_CLEAR_STEP_MAPPERS &&
		       nonzero_bytes(path) == 2 * K4,
	       "no /proc to read at all: refused at MAPPERS, the bytes kept (fail closed; r %d "
	       "step %d)", r, (int)info.error_step);
	rename(away, fr.proc);
	unlink(path);
}

int main(void)
{
	if (shm_dir(shm, sizeof(shm)) < 0)
		return tap_skip_all("/dev/shm is not a tmpfs");
	if (disk_dir(disk, sizeof(disk)) < 0)
		disk[0] = '\0';
	if (fakeroot_make(&fr, 1) < 0)
		return tap_skip_all("cannot build the fake tree in /tmp");
	tap_remove_at_exit(fr.dir);
	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx over the fake sysfs and procfs"))
		return tap_done();
	test_type();
	test_disk();
	test_users();
	test_info();
	test_unreadable();
	prealloc_ctx_free(ctx);
	return tap_done();
}
