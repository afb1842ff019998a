/* SPDX-License-Identifier: MIT */
/*
 * Where a prepared file may go, and what is refused there (locate.c),
 * through prealloc_prepare over a fake three-node sysfs/procfs and a
 * private directory on /dev/shm: each refusal with its exact errno, step
 * and whole message, and nothing left (prepare-case.h); a file that was
 * there keeps every byte.
 *
 * What no other test holds: DIR_FD's rule (an absolute path, no REUSE), a
 * path or dir in no directory, a link refused even with REUSE and FORCE,
 * a reused file's trust checks (a directory, mode 0604, a second hard
 * link, a process that maps it or holds it open as the fake /proc says,
 * another user's file when run as root), a dir on disk, and thp's checks
 * over a fake shmem_enabled and mountinfo: the longest tmpfs mount that
 * holds the directory decides, not a shorter one nor a longer mount point
 * that only shares its prefix. The CLI's bad-input test (integration,
 * root) holds an existing file, a link, 2M on tmpfs and a path on disk.
 */
#include "prepare-case.h"

/* ---- where the file goes (locate.c) ---------------------------------------- */

static void c_dirfd_relative(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->flags = PREALLOC_PREPARE_DIR_FD;
	o->dir_fd = -1;	/* never looked at: refused first */
	o->path = "guest";
	snprintf(want, len, "a directory descriptor needs an absolute path and no reuse (guest)");
}

static void c_dirfd_reuse(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->flags = PREALLOC_PREPARE_DIR_FD | PREALLOC_PREPARE_REUSE;
	o->dir_fd = -1;
	snprintf(want, len, "a directory descriptor needs an absolute path and no reuse (%s)",
		 guest);
}

static char path_buf[512];

static void c_no_dir(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/nope/guest", shm);
	o->path = path_buf;
	snprintf(want, len, "cannot use directory %s/nope: %s", shm, strerror(ENOENT));
}

static void c_dir_missing(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/nope", shm);
	o->path = NULL;
	o->dir = path_buf;
	snprintf(want, len, "cannot use directory %s: %s", path_buf, strerror(ENOENT));
}

static void c_tmpfs_2m(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->page_size = PREALLOC_PAGE_2M;
	o->length = 2 * MIB;
	snprintf(want, len, "%s is on tmpfs, which has no 2M hugetlb pages; put the file on a "
		 "hugetlbfs mount with pagesize=2M", shm);
}

static void c_exists(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/precious", shm);
	o->path = path_buf;
	snprintf(want, len, "%s already exists; pass --reuse to populate it in place, or choose "
		 "another path", path_buf);
}

/* A link is refused before REUSE is even asked about. */
static void c_link(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/link", shm);
	o->path = path_buf;
	o->flags = PREALLOC_PREPARE_REUSE | PREALLOC_PREPARE_FORCE;
	snprintf(want, len, "%s is a symbolic link; give the real path", path_buf);
}

static void c_reuse_dir(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/subdir", shm);
	o->path = path_buf;
	o->flags = PREALLOC_PREPARE_REUSE;
	snprintf(want, len, "%s is not a regular file", path_buf);
}

static void c_reuse_mode(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/shared", shm);
	o->path = path_buf;
	o->flags = PREALLOC_PREPARE_REUSE;
	snprintf(want, len, "%s can be read or written by group or others (mode 0604); chmod 600 "
		 "it first (--force adopts it anyway)", path_buf);
}

static void c_reuse_links(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/linked", shm);
	o->path = path_buf;
	o->flags = PREALLOC_PREPARE_REUSE;
	snprintf(want, len, "%s has 2 hard links: another name reaches the same memory (--force "
		 "adopts it anyway)", path_buf);
}

static const struct req_case locate_cases[] = {
	{ "DIR_FD with a relative path", c_dirfd_relative, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "DIR_FD with REUSE", c_dirfd_reuse, -EINVAL, PREALLOC_STEP_REQUEST },
	{ "a path in no directory", c_no_dir, -ENOENT, PREALLOC_STEP_LOCATION },
	{ "a dir that is not there", c_dir_missing, -ENOENT, PREALLOC_STEP_LOCATION },
	{ "2M pages on tmpfs", c_tmpfs_2m, -EMEDIUMTYPE, PREALLOC_STEP_LOCATION },
	{ "an existing file, no REUSE", c_exists, -EEXIST, PREALLOC_STEP_LOCATION },
	{ "a symbolic link, REUSE and FORCE", c_link, -ELOOP, PREALLOC_STEP_LOCATION },
	{ "REUSE of a directory", c_reuse_dir, -EINVAL, PREALLOC_STEP_LOCATION },
	{ "REUSE of a file others read", c_reuse_mode, -EPERM, PREALLOC_STEP_LOCATION },
	{ "REUSE of a file of two links", c_reuse_links, -EMLINK, PREALLOC_STEP_LOCATION },
};

/* ---- a reused file's trust, and the filesystem (locate.c) ------------------- */

static void c_reuse_mapped(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/mapped", shm);
	o->path = path_buf;
	o->flags = PREALLOC_PREPARE_REUSE;
	snprintf(want, len, "%s is mapped or held open by pid 4242 (qemu-fake); a guest's memory "
		 "must not be shared with another process (--force adopts it anyway)", path_buf);
}

static void c_reuse_held(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/held", shm);
	o->path = path_buf;
	o->flags = PREALLOC_PREPARE_REUSE;
	snprintf(want, len, "%s is mapped or held open by pid 4343 (?); a guest's memory must not "
		 "be shared with another process (--force adopts it anyway)", path_buf);
}

static void c_reuse_theirs(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/theirs", shm);
	o->path = path_buf;
	o->flags = PREALLOC_PREPARE_REUSE;
	snprintf(want, len, "%s belongs to uid 4321, not to this user or root; a guest's memory "
		 "must not be shared with another user (--force adopts it anyway)", path_buf);
}

static void c_disk_path(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	snprintf(path_buf, sizeof(path_buf), "%s/guest", disk);
	o->path = path_buf;
	snprintf(want, len, "%s is not on hugetlbfs or tmpfs: guest memory files must live in "
		 "memory", disk);
}

static void c_disk_dir(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->path = NULL;
	o->dir = disk;
	snprintf(want, len, "%s is not on hugetlbfs or tmpfs: guest memory files must live in "
		 "memory", disk);
}

static const struct req_case trust_cases[] = {
	{ "REUSE of a file another process maps", c_reuse_mapped, -EBUSY, PREALLOC_STEP_LOCATION },
	{ "REUSE of a file another holds open", c_reuse_held, -EBUSY, PREALLOC_STEP_LOCATION },
};

static const struct req_case disk_cases[] = {
	{ "a path on disk", c_disk_path, -EMEDIUMTYPE, PREALLOC_STEP_LOCATION },
	{ "a dir on disk", c_disk_dir, -EMEDIUMTYPE, PREALLOC_STEP_LOCATION },
};

/* ---- thp on tmpfs (thp_usable) ---------------------------------------------- */

#define SHMEM "kernel/mm/transparent_hugepage/shmem_enabled"

static void c_thp_missing(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	o->page_size = PREALLOC_PAGE_THP;
	o->length = 2 * MIB;
	snprintf(want, len, "thp on tmpfs needs shmem transparent hugepages, which are 'missing' "
		 "(/sys/" SHMEM "); use --page-size 2M on hugetlbfs, or 4k");
}

static void c_thp_deny(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	fr_write(fr.sys, SHMEM, "always within_size advise never [deny] force\n");
	o->page_size = PREALLOC_PAGE_THP;
	o->length = 2 * MIB;
	snprintf(want, len, "thp on tmpfs needs shmem transparent hugepages, which are 'deny' "
		 "(/sys/" SHMEM "); use --page-size 2M on hugetlbfs, or 4k");
}

/*
 * The tmpfs mounts around the directory (real: its real path): its
 * parent's mount with huge=near, the parent's parent with huge=far, and
 * a longer mount point that only shares a prefix with it, huge=never.
 */
static void thp_mounts(const char *near, const char *far)
{
	char real[PATH_MAX], up[PATH_MAX], *slash;

	if (!realpath(shm, real))
		snprintf(real, sizeof(real), "%s", shm);
	snprintf(up, sizeof(up), "%s", real);
	slash = strrchr(up, '/');
	*slash = '\0';
	slash = strrchr(up, '/');
	fr_write(fr.proc, "self/mountinfo",
		 "22 1 0:21 / /proc rw,relatime - proc proc rw\n"
		 "40 1 0:40 / %.*s rw - tmpfs tmpfs rw,size=64k,huge=%s,mode=755\n"
		 "41 40 0:41 / %s rw,nosuid - tmpfs tmpfs rw,huge=%s\n"
		 "42 40 0:42 / %.*s rw - tmpfs tmpfs rw,huge=never\n",
		 slash > up ? (int)(slash - up) : 1, up, far, up, near, (int)strlen(real) - 2,
		 real);
}

static void c_thp_never(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	fr_write(fr.sys, SHMEM, "always within_size advise [never] deny force\n");
	thp_mounts("never", "always");
	o->page_size = PREALLOC_PAGE_THP;
	o->length = 2 * MIB;
	snprintf(want, len, "%s is on a tmpfs mounted with huge=never, so its files get no "
		 "transparent hugepages; remount it with -o huge=advise (or within_size), or use "
		 "--page-size 2M on hugetlbfs, or 4k", shm);
}

/* Usable: the request goes on to its size, which is not whole 2M pages. */
static void c_thp_within(struct prealloc_prepare_opts *o, char *want, size_t len)
{
	thp_mounts("within_size", "never");
	o->page_size = PREALLOC_PAGE_THP;
	snprintf(want, len, "size 1 MiB is not a multiple of the thp page size");
}

static const struct req_case thp_cases[] = {
	{ "thp, shmem_enabled missing", c_thp_missing, -EOPNOTSUPP, PREALLOC_STEP_LOCATION },
	{ "thp, shmem_enabled deny", c_thp_deny, -EOPNOTSUPP, PREALLOC_STEP_LOCATION },
	{ "thp, the dir's mount huge=never", c_thp_never, -EOPNOTSUPP, PREALLOC_STEP_LOCATION },
	{ "thp, the dir's mount huge=within_size", c_thp_within, -EINVAL, PREALLOC_STEP_REQUEST },
};

/* The trust cases' files and fake processes; the owner case as root only. */
static void test_trust(void)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/mapped", shm);
	tap_ok(make_file_at(path, 0600, MIB, 0) == 0 &&
		       fake_mapper(&fr, 4242, path, "qemu-fake") == 0,
	       "a file of ours that fake pid 4242 maps");
	snprintf(path, sizeof(path), "%s/held", shm);
	tap_ok(make_file_at(path, 0600, MIB, 0) == 0 && fake_opener(&fr, 4343, path) == 0,
	       "a file of ours that fake pid 4343 holds open");
	RUN_ALL(trust_cases);
	snprintf(path, sizeof(path), "%s/theirs", shm);
	if (geteuid() != 0 || make_file_at(path, 0600, MIB, 0) < 0 || chown(path, 4321, 4321) < 0) {
		tap_skip("a file of another user needs root to make");
		return;
	}
	run_case(&(struct req_case){ "REUSE of another user's file", c_reuse_theirs, -EPERM,
				     PREALLOC_STEP_LOCATION });
}

int main(void)
{
	char path[600], path2[600];
	const char *why;

	if (prepare_case_start(&why) < 0)
		return tap_skip_all("%s", why);
	if (!ctx)
		return tap_done();
	/* What the locate cases find there: each made once, checked intact at the end. */
	snprintf(path, sizeof(path), "%s/precious", shm);
	tap_ok(make_file_at(path, 0600, MIB, 0x5a) == 0, "a file of ours with data: %s", path);
	snprintf(path, sizeof(path), "%s/link", shm);
	tap_ok(symlink("precious", path) == 0, "a link to it");
	snprintf(path, sizeof(path), "%s/subdir", shm);
	tap_ok(mkdir(path, 0700) == 0, "a directory");
	snprintf(path, sizeof(path), "%s/shared", shm);
	tap_ok(make_file_at(path, 0604, MIB, 0) == 0, "a file others may read");
	snprintf(path, sizeof(path), "%s/linked", shm);
	snprintf(path2, sizeof(path2), "%s/linked.2", shm);
	tap_ok(make_file_at(path, 0600, MIB, 0) == 0 && link(path, path2) == 0,
	       "a file with a second name");
	RUN_ALL(locate_cases);
	test_trust();
	if (disk[0]) {
		RUN_ALL(disk_cases);
		tap_ok(dir_entries(disk, NULL, 0) == 0, "nothing was made on disk");
	} else {
		tap_skip("no directory off tmpfs and hugetlbfs: /var/tmp, /tmp and . are all in "
			 "memory");
	}
	RUN_ALL(thp_cases);
	snprintf(path, sizeof(path), "%s/precious", shm);
	tap_ok(nonzero_bytes(path) == MIB,
	       "the existing file kept every byte through the refusals");
	prealloc_ctx_free(ctx);
	return tap_done();
}
