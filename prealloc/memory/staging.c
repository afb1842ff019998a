/* SPDX-License-Identifier: MIT */
/*
 * The staging directory of a mount: where prealloc creates and populates a
 * file before it takes its place, and where the warm pool keeps the files it
 * holds. <mount root>/.prealloc (.prealloc-<uid> for a user other than
 * root): a directory of the caller's alone, mode 0700, never a link, on the
 * same mount as the directory the file goes to, so the file enters its
 * place by link(2) in one step and nobody else can open, rename or replace
 * it before. Where the caller cannot write the mount's root (a user on a
 * hugetlbfs whose root belongs to root), it is made in the target
 * directory instead.
 *
 * On a root anyone may write (/dev/shm, a tmpfs: mode 1777) another user
 * can make that name first. Whatever is there then (a directory of theirs,
 * a link, a file, a FIFO) is skipped: never followed, used, changed or
 * removed. The caller's directory is then <name>-<16 hex digits>, a name
 * nobody can guess, made by mkdirat and checked by fstat of its O_NOFOLLOW
 * open; later calls find it again by listing the root (the first in name
 * order that is the caller's own directory), so nothing needs to remember
 * it. An existing .prealloc of ours stays in use: records name paths in it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
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

/*
 * parent's entry name opened, when it is a directory of the caller's (not a
 * link), made 0700 if it was open to others; -EPERM for anything else
 * there, whoever made it (never followed, never changed), -ENOENT for none.
 */
static int open_ours(int parent, const char *name)
{
	struct stat st;
	int fd, r;

	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* A link, a file, a FIFO, another user's closed directory. */
		r = -errno;
		return r == -ELOOP || r == -ENOTDIR || r == -EACCES ? -EPERM : r;
	}
	if (fstat(fd, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
		close(fd);
		return -EPERM;
	}
	/* Ours, but open to others: close it (what others put there is never used). */
	if ((st.st_mode & 077) && fchmod(fd, 0700) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	return fd;
}

/* mkdir name in parent, then open it as open_ours does (-EEXIST: taken first). */
static int make_ours(int parent, const char *name)
{
	if (mkdirat(parent, name, 0700) < 0)
		return -errno;
	return open_ours(parent, name);
}

/* Whether name is "<base>-" and 16 lower-case hex digits, as make_random names them. */
static bool random_name(const char *name, const char *base)
{
	size_t n = strlen(base), i;

	if (strncmp(name, base, n) || name[n] != '-' || strlen(name + n + 1) != 16)
		return false;
	for (i = n + 1; name[i]; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/*
 * A staging directory of the caller's that an earlier call made at a random
 * name in parent: of those there, the first in name order, so that every
 * process picks the same one. -ENOENT when there is none.
 */
static int find_random(int parent, const char *base, char *ret_name, size_t len)
{
	char best[NAME_MAX + 1] = "";
	struct dirent *de;
	struct stat st;
	DIR *d;
	int fd;

	fd = openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d)))
		if (random_name(de->d_name, base) && (!best[0] || strcmp(de->d_name, best) < 0) &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode) && st.st_uid == geteuid())
			snprintf(best, sizeof(best), "%s", de->d_name);
	closedir(d);
	if (!best[0])
		return -ENOENT;
	snprintf(ret_name, len, "%s", best);
	/* Gone or replaced since it was listed: none, so a new one is made. */
	fd = open_ours(parent, best);
	return fd == -EPERM ? -ENOENT : fd;
}

/* A new staging directory in parent at "<base>-<16 random hex digits>". */
static int make_random(int parent, const char *base, char *ret_name, size_t len)
{
	uint64_t rnd;
	int fd = -EEXIST;

	/* Taken only by a guess of 64 random bits, or a rename in a root without sticky bit. */
	for (int i = 0; i < 16 && (fd == -EEXIST || fd == -EPERM); i++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
			return -EIO;
		snprintf(ret_name, len, "%s-%016llx", base, (unsigned long long)rnd);
		fd = make_ours(parent, ret_name);
	}
	return fd;
}

/*
 * The caller's staging directory in parent, its name in ret_name: base if
 * that is ours or we make it now, else (another user took base first) one
 * of ours at a random name, found or made.
 */
static int open_in(int parent, const char *base, char *ret_name, size_t len, char *why,
		   size_t why_len)
{
	int fd;

	snprintf(ret_name, len, "%s", base);
	fd = open_ours(parent, base);
	if (fd == -ENOENT) {
		/* -EEXIST: made meanwhile, by another run of ours or by someone else. */
		fd = make_ours(parent, base);
		if (fd == -EEXIST)
			fd = open_ours(parent, base);
	}
	if (fd != -EPERM)
		return fd;
	fd = find_random(parent, base, ret_name, len);
	if (fd == -ENOENT)
		fd = make_random(parent, base, ret_name, len);
	if (fd == -EEXIST || fd == -EPERM) {
		snprintf(why, why_len, "%s and each name tried after it are taken by others", base);
		snprintf(ret_name, len, "%s", base);
		return -EEXIST;
	}
	if (fd < 0)
		snprintf(ret_name, len, "%s", base);
	return fd;
}

int staging_open(const struct prealloc_ctx *ctx, int dir_fd, const char *dir_path,
		 char *ret_path, size_t len, char *why, size_t why_len)
{
	char base[32], name[64], parent[PATH_MAX];
	unsigned int up = 0;
	int root = -1, fd = -1, r;

	if (geteuid() == 0)
		snprintf(base, sizeof(base), STAGING_NAME);
	else
		snprintf(base, sizeof(base), STAGING_NAME "-%u", (unsigned int)geteuid());
	why[0] = '\0';
	r = mount_root(ctx, dir_fd, &root, &up);
	if (r == 0) {
		fd = open_in(root, base, name, sizeof(name), why, why_len);
		close(root);
	}
	if (r < 0 || fd == -EACCES) {
		/* The mount's root is not ours to write (or not found): the target directory. */
		up = 0;
		fd = open_in(dir_fd, base, name, sizeof(name), why, why_len);
	}
	path_up(dir_path, up, parent, sizeof(parent));
	if (fd < 0) {
		if (!why[0])
			snprintf(why, why_len, "%s", strerror(-fd));
		snprintf(ret_path, len, "%s/%s", strcmp(parent, "/") ? parent : "", name);
		return fd;
	}
	if ((size_t)snprintf(ret_path, len, "%s/%s", strcmp(parent, "/") ? parent : "", name) >=
	    len) {
		close(fd);
		return -ENAMETOOLONG;
	}
	return fd;
}
