/* SPDX-License-Identifier: MIT */
/*
 * The staging directory of a mount: where prealloc creates and populates a
 * file before it takes its place, and where a pool keeps the files it
 * holds. <mount root>/.prealloc (.prealloc-<uid> for a user other than
 * root): a directory of the caller's alone, mode 0700, never a link, on the
 * same mount as the directory the file goes to, so the file enters its
 * place by link(2) in one step and nobody else can open, rename or replace
 * it before. Where the caller cannot write the mount's root (a user on a
 * hugetlbfs whose root belongs to root), it is made in the target
 * directory instead.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memory.h"

/* The mount a descriptor is on, from /proc/self/fdinfo (Linux 3.15+). */
static int fd_mount_id(const struct prealloc_ctx *ctx, int fd, int *ret)
{
	char path[PATH_MAX], line[256];
	FILE *f;
	int r = -ENOENT;

	if (proc_path(ctx, path, sizeof(path), "/self/fdinfo/%d", fd) < 0)
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (r < 0 && fgets(line, sizeof(line), f))
		if (sscanf(line, "mnt_id: %d", ret) == 1)
			r = 0;
	fclose(f);
	return r;
}

/*
 * The root of dir_fd's mount (an O_PATH descriptor) and how many levels
 * above dir_fd it is: ".." until the next step leaves the mount (or "/").
 */
static int mount_root(const struct prealloc_ctx *ctx, int dir_fd, int *ret_fd,
		      unsigned int *ret_up)
{
	struct stat cur_st, up_st;
	int cur, up, mnt, up_mnt, r;

	cur = openat(dir_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	r = fd_mount_id(ctx, cur, &mnt);
	*ret_up = 0;
	while (r == 0) {
		up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (up < 0) {
			r = -errno;
			break;
		}
		if (fstat(cur, &cur_st) < 0 || fstat(up, &up_st) < 0 ||
		    fd_mount_id(ctx, up, &up_mnt) < 0) {
			r = -EIO;
			close(up);
			break;
		}
		if (up_mnt != mnt || (up_st.st_dev == cur_st.st_dev && up_st.st_ino == cur_st.st_ino)) {
			close(up);
			*ret_fd = cur;
			return 0;
		}
		close(cur);
		cur = up;
		(*ret_up)++;
	}
	close(cur);
	return r;
}

/* path less its last n components ("/" at the top). */
static void path_up(const char *path, unsigned int n, char *buf, size_t len)
{
	size_t end = strlen(path);

	while (end > 1 && path[end - 1] == '/')
		end--;
	for (; n && end > 1; n--) {
		while (end > 1 && path[end - 1] != '/')
			end--;
		while (end > 1 && path[end - 1] == '/')
			end--;
	}
	snprintf(buf, len, "%.*s", (int)end, path);
}

/* mkdir + open the staging directory in parent; ours alone, or -EPERM naming what is wrong. */
static int open_in(int parent, const char *name, char *why, size_t why_len)
{
	struct stat st;
	int fd;

	if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int r = -errno;

		if (r == -ELOOP || r == -ENOTDIR)
			snprintf(why, why_len, "it is not a directory");
		return r == -ELOOP || r == -ENOTDIR ? -EPERM : r;
	}
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(why, why_len, "it belongs to uid %u, not to uid %u",
			 (unsigned int)st.st_uid, (unsigned int)geteuid());
		close(fd);
		return -EPERM;
	}
	/* Ours, but open to others: close it (what others put there is never used). */
	if ((st.st_mode & 077) && fchmod(fd, 0700) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

int staging_open(const struct prealloc_ctx *ctx, int dir_fd, const char *dir_path,
		 char *ret_path, size_t len, char *why, size_t why_len)
{
	char name[32], parent[PATH_MAX];
	unsigned int up = 0;
	int root = -1, fd = -1, r;

	if (geteuid() == 0)
		snprintf(name, sizeof(name), STAGING_NAME);
	else
		snprintf(name, sizeof(name), STAGING_NAME "-%u", (unsigned int)geteuid());
	why[0] = '\0';
	r = mount_root(ctx, dir_fd, &root, &up);
	if (r == 0) {
		fd = open_in(root, name, why, why_len);
		close(root);
	}
	if (r < 0 || fd == -EACCES) {
		/* The mount's root is not ours to write (or not found): the target directory. */
		up = 0;
		fd = open_in(dir_fd, name, why, why_len);
	}
	if (fd < 0) {
		if (!why[0])
			snprintf(why, why_len, "%s", strerror(-fd));
		path_up(dir_path, up, parent, sizeof(parent));
		snprintf(ret_path, len, "%s/%s", strcmp(parent, "/") ? parent : "", name);
		return fd;
	}
	path_up(dir_path, up, parent, sizeof(parent));
	if ((size_t)snprintf(ret_path, len, "%s/%s", strcmp(parent, "/") ? parent : "", name) >=
	    len) {
		close(fd);
		return -ENAMETOOLONG;
	}
	return fd;
}
