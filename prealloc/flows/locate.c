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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "flows.h"

#define SHMEM_THP "/kernel/mm/transparent_hugepage/shmem_enabled"

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
		    sscanf(dash, " - %63s %*s %1023s", fstype, opts) != 2 ||
		    strcmp(fstype, "tmpfs"))
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
static int thp_usable(struct prepare_req *req, const char *dir)
{
	char mode[32] = "missing", huge[32];

	sysfs_choice(req->ctx, SHMEM_THP, mode, sizeof(mode));
	if (!strcmp(mode, "force"))
		return 0;
	if (!strcmp(mode, "deny") || !strcmp(mode, "missing")) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "thp on tmpfs needs shmem transparent hugepages, which are '%s' "
			     "(/sys" SHMEM_THP "); use --page-size 2M on hugetlbfs, or 4k", mode);
		return -EOPNOTSUPP;
	}
	tmpfs_huge_option(req->ctx, dir, huge, sizeof(huge));
	if (!strcmp(huge, "always") || !strcmp(huge, "within_size") || !strcmp(huge, "advise"))
		return 0;
	prepare_fail(req, PREALLOC_STEP_LOCATION,
		     "%s is on a tmpfs mounted with huge=%s, so its files get no transparent "
		     "hugepages; remount it with -o huge=advise (or within_size), or use "
		     "--page-size 2M on hugetlbfs, or 4k", dir, huge);
	return -EOPNOTSUPP;
}

/* AUTO with a 2M hugetlbfs: 2M if the size fits in 2M pages and every node has them. */
static bool auto_2m_fits(struct prepare_req *req)
{
	if (req->length % PREALLOC_PAGE_2M) {
		snprintf(req->info.page_reason, sizeof(req->info.page_reason),
			 "page size auto chose 4k: the size is not a multiple of 2 MiB");
		return false;
	}
	for (unsigned int i = 0; i < req->nr_nodes; i++) {
		struct prealloc_node_info info = { .size = sizeof(info) };
		uint64_t pages = req->length / PREALLOC_PAGE_2M;
		uint64_t want = req->sized
				    ? (req->node_bytes[i] + PREALLOC_PAGE_2M - 1) / PREALLOC_PAGE_2M
				    : pages / req->nr_nodes + (i < pages % req->nr_nodes ? 1 : 0);

		if ((req->o.flags & PREALLOC_PREPARE_GROW_POOLS) ||
		    prealloc_node_info(req->ctx, req->nodes[i], &info) < 0 ||
		    info.hp2m_free >= want)
			continue;
		snprintf(req->info.page_reason, sizeof(req->info.page_reason),
			 "page size auto chose 4k: node %d has %llu free 2M hugepages, %llu needed "
			 "(--grow-pools grows the pool; --page-size 2M insists)",
			 req->nodes[i], (unsigned long long)info.hp2m_free,
			 (unsigned long long)want);
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
static int reuse_trusted(struct prepare_req *req, const struct stat *st)
{
	bool chown_to = (req->o.flags & PREALLOC_PREPARE_CHOWN) && st->st_uid == req->o.uid;
	unsigned int unreadable;
	char comm[64] = "?", path[PATH_MAX];
	pid_t pid;

	if (st->st_uid != geteuid() && st->st_uid != 0 && !chown_to) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "%s belongs to uid %u, not to this user or root; a guest's memory "
			     "must not be shared with another user (--force adopts it anyway)",
			     req->path, (unsigned int)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & 066) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "%s can be read or written by group or others (mode %04o); chmod 600 "
			     "it first (--force adopts it anyway)", req->path,
			     (unsigned int)(st->st_mode & 07777));
		return -EPERM;
	}
	if (st->st_nlink > 1) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "%s has %lu hard links: another name reaches the same memory "
			     "(--force adopts it anyway)", req->path, (unsigned long)st->st_nlink);
		return -EMLINK;
	}
	pid = file_user(req->ctx, st->st_dev, st->st_ino, getpid(), &unreadable);
	if (pid > 0) {
		if (proc_path(req->ctx, path, sizeof(path), "/%d/comm", (int)pid) == 0)
			read_file_str(path, comm, sizeof(comm));
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "%s is mapped or held open by pid %d (%s); a guest's memory must not "
			     "be shared with another process (--force adopts it anyway)",
			     req->path, (int)pid, comm);
		return -EBUSY;
	}
	return pid < 0 ? (int)pid : 0;
}

/*
 * Opens req->dir (the caller's own descriptor with DIR_FD) and reads its
 * filesystem: everything from here on is relative to that descriptor.
 */
static int open_dir(struct prepare_req *req)
{
	struct statfs sfs;
	int r;

	if (req->o.flags & PREALLOC_PREPARE_DIR_FD)
		req->dir_fd = fcntl(req->o.dir_fd, F_DUPFD_CLOEXEC, 0);
	else
		req->dir_fd = open(req->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (req->dir_fd < 0 || fstatfs(req->dir_fd, &sfs) < 0) {
		r = -errno;
		prepare_fail(req, PREALLOC_STEP_LOCATION, "cannot use directory %s: %s", req->dir,
			     strerror(-r));
		return r;
	}
	req->fs_magic = (unsigned long)sfs.f_type;
	req->fs_page = (uint64_t)sfs.f_bsize;
	return 0;
}

/* The file was named: what is there now, and which page size its directory gives. */
static int locate_named(struct prepare_req *req)
{
	char buf[PATH_MAX];
	struct stat st;
	int r;

	snprintf(buf, sizeof(buf), "%s", req->path);
	snprintf(req->dir, sizeof(req->dir), "%s", dirname(buf));
	if ((req->o.flags & PREALLOC_PREPARE_DIR_FD) &&
	    (req->path[0] != '/' || (req->o.flags & PREALLOC_PREPARE_REUSE))) {
		prepare_fail(req, PREALLOC_STEP_REQUEST, "a directory descriptor needs an absolute "
			     "path and no reuse (%s)", req->path);
		return -EINVAL;
	}
	r = open_dir(req);
	if (r < 0)
		return r;
	snprintf(buf, sizeof(buf), "%s", req->path);
	if (fstatat(req->dir_fd, basename(buf), &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(st.st_mode)) {
			prepare_fail(req, PREALLOC_STEP_LOCATION,
				     "%s is a symbolic link; give the real path", req->path);
			return -ELOOP;
		}
		if (!(req->o.flags & PREALLOC_PREPARE_REUSE)) {
			prepare_fail(req, PREALLOC_STEP_LOCATION,
				     "%s already exists; pass --reuse to populate it in place, or "
				     "choose another path", req->path);
			return -EEXIST;
		}
		if (!S_ISREG(st.st_mode)) {
			prepare_fail(req, PREALLOC_STEP_LOCATION, "%s is not a regular file",
				     req->path);
			return -EINVAL;
		}
		if (!(req->o.flags & PREALLOC_PREPARE_FORCE)) {
			int r = reuse_trusted(req, &st);

			if (r < 0)
				return r;
		}
		req->exists = true;
	}
	return 0;
}

/* Picks the page size from the filesystem of a named file (or a given dir). */
static int page_from_fs(struct prepare_req *req)
{
	uint64_t want = req->o.page_size;

	if (req->fs_magic == HUGETLBFS_MAGIC) {
		if (want != PREALLOC_PAGE_AUTO && want != req->fs_page) {
			prepare_fail(
			    req, PREALLOC_STEP_LOCATION,
			    "%s is on hugetlbfs with %s pages, but --page-size %s was given",
			    req->dir, prealloc_page_name(req->fs_page), prealloc_page_name(want));
			return -EMEDIUMTYPE;
		}
		req->page = req->fs_page;
		return 0;
	}
	if (req->fs_magic != TMPFS_MAGIC) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "%s is not on hugetlbfs or tmpfs: guest memory files must live in "
			     "memory", req->dir);
		return -EMEDIUMTYPE;
	}
	if (want == PREALLOC_PAGE_2M || want == PREALLOC_PAGE_1G) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "%s is on tmpfs, which has no %s hugetlb pages; put the file on a "
			     "hugetlbfs mount with pagesize=%s", req->dir, prealloc_page_name(want),
			     prealloc_page_name(want));
		return -EMEDIUMTYPE;
	}
	req->page = want == PREALLOC_PAGE_THP ? PREALLOC_PAGE_THP : PREALLOC_PAGE_4K;
	return 0;
}

/* No file named: a directory from the page size (and, for auto, the pools). */
static int locate_dir(struct prepare_req *req)
{
	uint64_t want = req->o.page_size;
	const char *mnt;
	struct statfs sfs;

	if (want == PREALLOC_PAGE_2M || want == PREALLOC_PAGE_1G) {
		mnt = prealloc_hugetlbfs_mount(req->ctx, want);
		if (!mnt) {
			prepare_fail(
			    req, PREALLOC_STEP_LOCATION,
			    "no hugetlbfs is mounted for %s pages; mount one (mount -t "
			    "hugetlbfs -o pagesize=%s none /dev/hugepages%s) or pass --file",
			    prealloc_page_name(want), prealloc_page_name(want),
			    want == PREALLOC_PAGE_1G ? "-1G" : "");
			return -ENODEV;
		}
		snprintf(req->dir, sizeof(req->dir), "%s", mnt);
		req->page = want;
		return 0;
	}
	mnt = want == PREALLOC_PAGE_AUTO ? prealloc_hugetlbfs_mount(req->ctx, PREALLOC_PAGE_2M)
					 : NULL;
	if (mnt && auto_2m_fits(req)) {
		snprintf(req->dir, sizeof(req->dir), "%s", mnt);
		req->page = PREALLOC_PAGE_2M;
		return 0;
	}
	if (want == PREALLOC_PAGE_AUTO && !mnt)
		snprintf(req->info.page_reason, sizeof(req->info.page_reason),
			 "page size auto chose 4k: no hugetlbfs is mounted for 2M pages "
			 "(mount -t hugetlbfs -o pagesize=2M none /dev/hugepages)");
	snprintf(req->dir, sizeof(req->dir), "/dev/shm");
	if (statfs(req->dir, &sfs) < 0 || (unsigned long)sfs.f_type != TMPFS_MAGIC) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "/dev/shm is not a tmpfs mount; pass --file on a tmpfs or hugetlbfs "
			     "mount");
		return -ENODEV;
	}
	req->fs_magic = TMPFS_MAGIC;
	req->page = want == PREALLOC_PAGE_THP ? PREALLOC_PAGE_THP : PREALLOC_PAGE_4K;
	return 0;
}

int prepare_locate(struct prepare_req *req)
{
	int r;

	if (req->path) {
		r = locate_named(req);
		if (r == 0)
			r = page_from_fs(req);
	} else if (req->o.dir) {
		snprintf(req->dir, sizeof(req->dir), "%s", req->o.dir);
		r = open_dir(req);
		if (r == 0)
			r = page_from_fs(req);
	} else {
		r = locate_dir(req);
		if (r == 0)
			r = open_dir(req);
	}
	if (r == 0 && req->page == PREALLOC_PAGE_THP)
		r = thp_usable(req, req->dir);
	return r;
}
