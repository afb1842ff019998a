/* SPDX-License-Identifier: MIT */
/*
 * Where a prepared file goes and in which pages: a hugetlbfs mount (its page
 * size), or tmpfs (4k, or transparent hugepages where they can work). The
 * automatic choice takes 2M when a 2M hugetlbfs is mounted and every node
 * has the free pages (or RESERVE may grow them), else 4k, and says why.
 */
#include <fcntl.h>
#include <libgen.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "file_users.h"
#include "prepare.h"

#define SHMEM_THP "/kernel/mm/transparent_hugepage/shmem_enabled"

void prepare_fail(struct prepare_req *q, int step, const char *fmt, ...)
{
	va_list ap;

	q->info.step = step;
	va_start(ap, fmt);
	vsnprintf(q->info.message, sizeof(q->info.message), fmt, ap);
	va_end(ap);
}

EXPORT const char *prealloc_page_name(uint64_t page)
{
	switch (page) {
	case PREALLOC_PAGE_THP:
		return "thp";
	case PREALLOC_PAGE_4K:
		return "4k";
	case PREALLOC_PAGE_2M:
		return "2M";
	case PREALLOC_PAGE_1G:
		return "1G";
	case PREALLOC_PAGE_AUTO:
		return "auto";
	default:
		return "?";
	}
}

/* The bracketed word of a sysfs choice file ("always [advise] never"). */
static int sysfs_choice(const struct prealloc_ctx *ctx, const char *rel, char *buf, size_t len)
{
	char path[PATH_MAX], line[256], *open_b, *close_b;

	if (sys_path(ctx, path, sizeof(path), "%s", rel) < 0 ||
	    read_file_str(path, line, sizeof(line)) < 0)
		return -ENOENT;
	open_b = strchr(line, '[');
	close_b = open_b ? strchr(open_b, ']') : NULL;
	if (!close_b)
		return -EINVAL;
	*close_b = '\0';
	return (size_t)snprintf(buf, len, "%s", open_b + 1) < len ? 0 : -ENAMETOOLONG;
}

/* The huge= option of the tmpfs mount that holds dir ("never" when absent). */
static void tmpfs_huge_option(const struct prealloc_ctx *ctx, const char *dir, char *buf,
			      size_t len)
{
	char path[PATH_MAX], real[PATH_MAX], *line = NULL;
	size_t cap = 0, best = 0;
	FILE *f;

	snprintf(buf, len, "never");
	if (!realpath(dir, real) || proc_path(ctx, path, sizeof(path), "/self/mountinfo") < 0 ||
	    !(f = fopen(path, "re")))
		return;
	while (getline(&line, &cap, f) > 0) {
		char mnt[PATH_MAX], fstype[64], opts[1024], *dash = strstr(line, " - "), *h;
		size_t n;

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
		    sscanf(dash, " - %63s %*s %1023s", fstype, opts) != 2 || strcmp(fstype, "tmpfs"))
			continue;
		n = strlen(mnt);
		/* The longest mount point that contains dir: the mount dir is on. */
		if (strncmp(real, mnt, n) || (real[n] && real[n] != '/' && n > 1) || n < best)
			continue;
		best = n;
		h = strstr(opts, "huge=");
		snprintf(buf, len, "%.*s", h ? (int)strcspn(h + 5, ",") : 5, h ? h + 5 : "never");
	}
	free(line);
	fclose(f);
}

/*
 * thp on a tmpfs file works when shmem_enabled forces it, or when it is not
 * denied and the mount's huge= asks for it (advise: with MADV_HUGEPAGE,
 * which the region sets). shmem_enabled itself governs memfd and shared
 * anonymous memory, not files on a mount.
 */
static int thp_usable(struct prepare_req *q, const char *dir)
{
	char mode[32] = "missing", huge[32];

	sysfs_choice(q->ctx, SHMEM_THP, mode, sizeof(mode));
	if (!strcmp(mode, "force"))
		return 0;
	if (!strcmp(mode, "deny") || !strcmp(mode, "missing")) {
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "thp on tmpfs needs shmem transparent hugepages, which are '%s' "
			     "(/sys" SHMEM_THP "); use --page-size 2M on hugetlbfs, or 4k", mode);
		return -EOPNOTSUPP;
	}
	tmpfs_huge_option(q->ctx, dir, huge, sizeof(huge));
	if (!strcmp(huge, "always") || !strcmp(huge, "within_size") || !strcmp(huge, "advise"))
		return 0;
	prepare_fail(q, PREALLOC_STEP_LOCATION,
		     "%s is on a tmpfs mounted with huge=%s, so its files get no transparent "
		     "hugepages; remount it with -o huge=advise (or within_size), or use "
		     "--page-size 2M on hugetlbfs, or 4k", dir, huge);
	return -EOPNOTSUPP;
}

/* AUTO with a 2M hugetlbfs: 2M if the size fits in 2M pages and every node has them. */
static bool auto_2m_fits(struct prepare_req *q)
{
	if (q->length % PREALLOC_PAGE_2M) {
		snprintf(q->info.page_reason, sizeof(q->info.page_reason),
			 "page size auto chose 4k: the size is not a multiple of 2 MiB");
		return false;
	}
	for (unsigned int i = 0; i < q->nr_nodes; i++) {
		struct prealloc_node_info info = { .size = sizeof(info) };
		uint64_t pages = q->length / PREALLOC_PAGE_2M;
		uint64_t want = q->sized ? (q->node_bytes[i] + PREALLOC_PAGE_2M - 1) / PREALLOC_PAGE_2M
					 : pages / q->nr_nodes + (i < pages % q->nr_nodes ? 1 : 0);

		if ((q->o.flags & PREALLOC_PREPARE_RESERVE) ||
		    prealloc_node_info(q->ctx, q->nodes[i], &info) < 0 || info.hp2m_free >= want)
			continue;
		snprintf(q->info.page_reason, sizeof(q->info.page_reason),
			 "page size auto chose 4k: node %d has %llu free 2M hugepages, %llu needed "
			 "(--reserve grows the pool; --page-size 2M insists)",
			 q->nodes[i], (unsigned long long)info.hp2m_free, (unsigned long long)want);
		return false;
	}
	return true;
}

/*
 * A file to adopt as guest memory must be the caller's alone: owned by the
 * caller, root or the owner it asked the file to be given; not readable or
 * writable by group or others; one hard link; mapped or held open by no
 * other process. Otherwise the guest's RAM would be shared with someone.
 */
static int reuse_trusted(struct prepare_req *q, const struct stat *st)
{
	bool chown_to = (q->o.flags & PREALLOC_PREPARE_CHOWN) && st->st_uid == q->o.uid;
	unsigned int unreadable;
	char comm[64] = "?", path[PATH_MAX];
	pid_t pid;

	if (st->st_uid != geteuid() && st->st_uid != 0 && !chown_to) {
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "%s belongs to uid %u, not to this user or root; a guest's memory "
			     "must not be shared with another user (--force adopts it anyway)",
			     q->path, (unsigned int)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & 066) {
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "%s can be read or written by group or others (mode %04o); chmod 600 "
			     "it first (--force adopts it anyway)", q->path,
			     (unsigned int)(st->st_mode & 07777));
		return -EPERM;
	}
	if (st->st_nlink > 1) {
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "%s has %lu hard links: another name reaches the same memory "
			     "(--force adopts it anyway)", q->path, (unsigned long)st->st_nlink);
		return -EMLINK;
	}
	pid = file_holder(q->ctx, st->st_dev, st->st_ino, getpid(), &unreadable);
	if (pid > 0) {
		if (proc_path(q->ctx, path, sizeof(path), "/%d/comm", (int)pid) == 0)
			read_file_str(path, comm, sizeof(comm));
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "%s is mapped or held open by pid %d (%s); a guest's memory must not "
			     "be shared with another process (--force adopts it anyway)",
			     q->path, (int)pid, comm);
		return -EBUSY;
	}
	return pid < 0 ? (int)pid : 0;
}

/*
 * Opens q->dir (the caller's own descriptor with DIR_FD) and reads its
 * filesystem: everything from here on is relative to that descriptor.
 */
static int open_dir(struct prepare_req *q)
{
	struct statfs sfs;
	int r;

	if (q->o.flags & PREALLOC_PREPARE_DIR_FD)
		q->dir_fd = fcntl(q->o.dir_fd, F_DUPFD_CLOEXEC, 0);
	else
		q->dir_fd = open(q->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (q->dir_fd < 0 || fstatfs(q->dir_fd, &sfs) < 0) {
		r = -errno;
		prepare_fail(q, PREALLOC_STEP_LOCATION, "cannot use directory %s: %s", q->dir,
			     strerror(-r));
		return r;
	}
	q->fs_magic = (unsigned long)sfs.f_type;
	q->fs_page = (uint64_t)sfs.f_bsize;
	return 0;
}

/* The file was named: what is there now, and which page size its directory gives. */
static int locate_named(struct prepare_req *q)
{
	char buf[PATH_MAX];
	struct stat st;
	int r;

	snprintf(buf, sizeof(buf), "%s", q->path);
	snprintf(q->dir, sizeof(q->dir), "%s", dirname(buf));
	if ((q->o.flags & PREALLOC_PREPARE_DIR_FD) &&
	    (q->path[0] != '/' || (q->o.flags & PREALLOC_PREPARE_REUSE))) {
		prepare_fail(q, PREALLOC_STEP_REQUEST, "a directory descriptor needs an absolute "
			     "path and no reuse (%s)", q->path);
		return -EINVAL;
	}
	r = open_dir(q);
	if (r < 0)
		return r;
	snprintf(buf, sizeof(buf), "%s", q->path);
	if (fstatat(q->dir_fd, basename(buf), &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode)) {
			prepare_fail(q, PREALLOC_STEP_LOCATION,
				     "%s is a symbolic link; give the real path", q->path);
			return -ELOOP;
		}
		if (!(q->o.flags & PREALLOC_PREPARE_REUSE)) {
			prepare_fail(q, PREALLOC_STEP_LOCATION,
				     "%s already exists; pass --reuse to populate it in place, or "
				     "choose another path", q->path);
			return -EEXIST;
		}
		if (!S_ISREG(st.st_mode)) {
			prepare_fail(q, PREALLOC_STEP_LOCATION, "%s is not a regular file", q->path);
			return -EINVAL;
		}
		if (!(q->o.flags & PREALLOC_PREPARE_FORCE)) {
			int r = reuse_trusted(q, &st);

			if (r < 0)
				return r;
		}
		q->exists = true;
	}
	return 0;
}

/* Picks the page size from the filesystem of a named file (or a given dir). */
static int page_from_fs(struct prepare_req *q)
{
	uint64_t want = q->o.page_size;

	if (q->fs_magic == HUGETLBFS_MAGIC) {
		if (want != PREALLOC_PAGE_AUTO && want != q->fs_page) {
			prepare_fail(q, PREALLOC_STEP_LOCATION,
				     "%s is on hugetlbfs with %s pages, but --page-size %s was given",
				     q->dir, prealloc_page_name(q->fs_page), prealloc_page_name(want));
			return -EMEDIUMTYPE;
		}
		q->page = q->fs_page;
		return 0;
	}
	if (q->fs_magic != TMPFS_MAGIC) {
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "%s is not on hugetlbfs or tmpfs: guest memory files must live in "
			     "memory", q->dir);
		return -EMEDIUMTYPE;
	}
	if (want == PREALLOC_PAGE_2M || want == PREALLOC_PAGE_1G) {
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "%s is on tmpfs, which has no %s hugetlb pages; put the file on a "
			     "hugetlbfs mount with pagesize=%s", q->dir, prealloc_page_name(want),
			     prealloc_page_name(want));
		return -EMEDIUMTYPE;
	}
	q->page = want == PREALLOC_PAGE_THP ? PREALLOC_PAGE_THP : PREALLOC_PAGE_4K;
	return 0;
}

/* No file named: a directory from the page size (and, for auto, the pools). */
static int locate_dir(struct prepare_req *q)
{
	uint64_t want = q->o.page_size;
	const char *mnt;
	struct statfs sfs;

	if (want == PREALLOC_PAGE_2M || want == PREALLOC_PAGE_1G) {
		mnt = prealloc_hugetlbfs_mount(q->ctx, want);
		if (!mnt) {
			prepare_fail(q, PREALLOC_STEP_LOCATION,
				     "no hugetlbfs is mounted for %s pages; mount one (mount -t "
				     "hugetlbfs -o pagesize=%s none /dev/hugepages%s) or pass --file",
				     prealloc_page_name(want), prealloc_page_name(want),
				     want == PREALLOC_PAGE_1G ? "-1G" : "");
			return -ENODEV;
		}
		snprintf(q->dir, sizeof(q->dir), "%s", mnt);
		q->page = want;
		return 0;
	}
	mnt = want == PREALLOC_PAGE_AUTO ? prealloc_hugetlbfs_mount(q->ctx, PREALLOC_PAGE_2M) : NULL;
	if (mnt && auto_2m_fits(q)) {
		snprintf(q->dir, sizeof(q->dir), "%s", mnt);
		q->page = PREALLOC_PAGE_2M;
		return 0;
	}
	if (want == PREALLOC_PAGE_AUTO && !mnt)
		snprintf(q->info.page_reason, sizeof(q->info.page_reason),
			 "page size auto chose 4k: no hugetlbfs is mounted for 2M pages "
			 "(mount -t hugetlbfs -o pagesize=2M none /dev/hugepages)");
	snprintf(q->dir, sizeof(q->dir), "/dev/shm");
	if (statfs(q->dir, &sfs) < 0 || (unsigned long)sfs.f_type != TMPFS_MAGIC) {
		prepare_fail(q, PREALLOC_STEP_LOCATION,
			     "/dev/shm is not a tmpfs mount; pass --file on a tmpfs or hugetlbfs "
			     "mount");
		return -ENODEV;
	}
	q->fs_magic = TMPFS_MAGIC;
	q->page = want == PREALLOC_PAGE_THP ? PREALLOC_PAGE_THP : PREALLOC_PAGE_4K;
	return 0;
}

int prepare_locate(struct prepare_req *q)
{
	int r;

	if (q->path) {
		r = locate_named(q);
		if (r == 0)
			r = page_from_fs(q);
	} else if (q->o.dir) {
		snprintf(q->dir, sizeof(q->dir), "%s", q->o.dir);
		r = open_dir(q);
		if (r == 0)
			r = page_from_fs(q);
	} else {
		r = locate_dir(q);
		if (r == 0)
			r = open_dir(q);
	}
	if (r == 0 && q->page == PREALLOC_PAGE_THP)
		r = thp_usable(q, q->dir);
	return r;
}
