/* SPDX-License-Identifier: MIT */
/*
 * A directory opened one step at a time for a file that goes to one user
 * (docs/warm.md, "The directory a file is linked in"): never through a
 * symbolic link, each step a directory of root's or of that user's. A link
 * on the way would send the file wherever its maker chose (into another
 * guest's directory); a step another user owns lets that user rename what
 * lies below it and put a directory of theirs in its place between two
 * steps. The warm take without PREALLOC_WARM_TAKE_DIR_FD, `prealloc qemu
 * --dir` and the libvirt hook all open their directory here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

__attribute__((format(printf, 4, 5))) static int dir_fail(char *why, size_t len, int err,
							   const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

/*
 * The step name below at (shown: the path up to it, for people): a
 * directory, not a symbolic link, root's or uid's, on top's filesystem
 * when top is not NULL. Its descriptor, or a negative errno with why.
 */
static int dir_step(int at, const char *name, unsigned int uid, const struct stat *top,
		    const char *shown, char *why, size_t len)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), err;
	struct stat st;

	if (fd < 0) {
		err = errno;
		if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return dir_fail(why, len, -ELOOP, "%s is a symbolic link: not followed (give "
					"the path without links)", shown);
		return dir_fail(why, len, -err, "%s: %s", shown, strerror(err));
	}
	err = fstat(fd, &st) < 0 ? -errno : 0;
	if (err == 0 && st.st_uid != 0 && st.st_uid != uid)
		err = dir_fail(why, len, -EPERM, "%s belongs to uid %u, neither root nor uid %u "
			       "(the file's owner), who could swap what lies below it", shown,
			       (unsigned int)st.st_uid, uid);
	else if (err == 0 && top && st.st_dev != top->st_dev)
		err = dir_fail(why, len, -EXDEV, "%s is on another filesystem than the directory "
			       "it is below", shown);
	else if (err < 0)
		dir_fail(why, len, err, "%s: %s", shown, strerror(-err));
	if (err < 0) {
		close(fd);
		return err;
	}
	return fd;
}

EXPORT int prealloc_dir_open(int at, const char *path, unsigned int uid, char *why, size_t len)
{
	bool below = path && path[0] != '/';
	char name[NAME_MAX + 1], shown[PATH_MAX];
	struct stat top;
	int fd, next;

	if (!path || !path[0] || strlen(path) >= PATH_MAX || (below && at < 0))
		return dir_fail(why, len, -EINVAL, "a directory is an absolute path, or one below "
				"an open directory");
	fd = below ? fcntl(at, F_DUPFD_CLOEXEC, 0) : open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &top) < 0)
		return dir_fail(why, len, fd < 0 ? -errno : -EBADF, "%s: %s", path, strerror(errno));
	for (const char *p = path, *end; *p; p = end) {
		p += strspn(p, "/");
		end = p + strcspn(p, "/");
		if ((size_t)(end - p) > NAME_MAX)
			next = dir_fail(why, len, -ENAMETOOLONG, "%s: a name over %d bytes", path,
					NAME_MAX);
		else if (end - p == 2 && !strncmp(p, "..", 2))
			next = dir_fail(why, len, -EINVAL, "%s: '..' is not walked (give the path "
					"without it)", path);
		else if (end == p || (end - p == 1 && *p == '.'))
			continue;
		else {
			snprintf(name, sizeof(name), "%.*s", (int)(end - p), p);
			snprintf(shown, sizeof(shown), "%.*s", (int)(end - path), path);
			next = dir_step(fd, name, uid, below ? &top : NULL, shown, why, len);
		}
		close(fd);
		if (next < 0)
			return next;
		fd = next;
	}
	return fd;
}
