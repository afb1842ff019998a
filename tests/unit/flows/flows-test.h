/* SPDX-License-Identifier: MIT */
/*
 * What the flows' unit tests share: a private directory on a real tmpfs
 * (/dev/shm: statfs cannot be faked, and a prepared file must live in
 * memory), one on a filesystem that is neither tmpfs nor hugetlbfs, and
 * the look at a directory that says a refusal left nothing there. Each
 * directory is removed at exit (tap.h). The ctx over a fake sysfs/procfs
 * (fakeroot.h) keeps the machine's pools and /run/prealloc out of reach;
 * with procfs faked the staging directory falls back into the target
 * directory (staging.c finds no mount id), so that is where to look.
 */
#ifndef PREALLOC_TEST_FLOWS_H
#define PREALLOC_TEST_FLOWS_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "prealloc.h"
#include "fakeroot.h"
#include "tap.h"

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif

#define K4 PREALLOC_PAGE_4K
#define MIB (UINT64_C(1) << 20)

/* A new directory under parent (removed at exit); 0, or -1 when none could be made. */
static inline int make_dir_in(const char *parent, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/prealloc-unit.XXXXXX", parent) >= len || !mkdtemp(buf))
		return -1;
	tap_remove_at_exit(buf);
	return 0;
}

/* A private directory on the tmpfs /dev/shm; -1 when /dev/shm is no tmpfs. */
static inline int shm_dir(char *buf, size_t len)
{
	struct statfs sfs;

	if (statfs("/dev/shm", &sfs) < 0 || (unsigned long)sfs.f_type != TMPFS_MAGIC)
		return -1;
	return make_dir_in("/dev/shm", buf, len);
}

/*
 * A private directory on a filesystem not in memory (the refusals' case):
 * /var/tmp, /tmp or the build directory, whichever is neither tmpfs nor
 * hugetlbfs; -1 when all are (the caller skips what needs one).
 */
static inline int disk_dir(char *buf, size_t len)
{
	static const char *const where[] = { "/var/tmp", "/tmp", "." };
	char cwd[PATH_MAX];
	struct statfs sfs;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		const char *p = where[i];

		if (!strcmp(p, ".") && getcwd(cwd, sizeof(cwd)))
			p = cwd;
		if (statfs(p, &sfs) == 0 && (unsigned long)sfs.f_type != TMPFS_MAGIC &&
		    (unsigned long)sfs.f_type != HUGETLBFS_MAGIC && make_dir_in(p, buf, len) == 0)
			return 0;
	}
	return -1;
}

/* Entries in dir (not . and ..), and their names in names (space-separated). */
static inline unsigned int dir_entries(const char *dir, char *names, size_t len)
{
	unsigned int n = 0;
	struct dirent *de;
	size_t off = 0;
	DIR *d = opendir(dir);

	if (names && len)
		names[0] = '\0';
	if (!d)
		return ~0u;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		if (names && off < len)
			off += (size_t)snprintf(names + off, len - off, "%s%s", off ? " " : "",
						de->d_name);
	}
	closedir(d);
	return n;
}

/* A file at path of mode mode, len bytes, every byte fill (0: a sparse file). */
static inline int make_file_at(const char *path, unsigned int mode, uint64_t len, int fill)
{
	char chunk[4096];
	uint64_t n;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	int r = 0;

	if (fd < 0)
		return -errno;
	memset(chunk, fill, sizeof(chunk));
	if (fchmod(fd, mode) < 0 || ftruncate(fd, (off_t)len) < 0)
		r = -errno;
	for (uint64_t off = 0; r == 0 && fill && off < len; off += n) {
		n = len - off < sizeof(chunk) ? len - off : sizeof(chunk);
		if (pwrite(fd, chunk, n, (off_t)off) != (ssize_t)n)
			r = -EIO;
	}
	close(fd);
	return r;
}

/* Bytes of path that are not zero (~0 when it cannot be read). */
static inline uint64_t nonzero_bytes(const char *path)
{
	unsigned char buf[4096];
	uint64_t n = 0;
	ssize_t got;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ~0ULL;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < got; i++)
			n += buf[i] != 0;
	close(fd);
	return got < 0 ? ~0ULL : n;
}

/* A fake process pid that maps path (its /proc maps line names dev and inode), named comm. */
static inline int fake_mapper(struct fakeroot *fr, int pid, const char *path, const char *comm)
{
	struct stat st;
	char rel[64];
	int r;

	if (stat(path, &st) < 0)
		return -errno;
	snprintf(rel, sizeof(rel), "%d/maps", pid);
	r = fr_write(fr->proc, rel, "7f0000000000-7f0000100000 rw-s 00000000 %02x:%02x %llu %s\n",
		     major(st.st_dev), minor(st.st_dev), (unsigned long long)st.st_ino, path);
	snprintf(rel, sizeof(rel), "%d/comm", pid);
	return r ? r : fr_write(fr->proc, rel, "%s\n", comm);
}

/* A fake process pid with path open as its fd 9 (no maps, no comm). */
static inline int fake_opener(struct fakeroot *fr, int pid, const char *path)
{
	char fd[400];
	int r;

	snprintf(fd, sizeof(fd), "%d/fd/placeholder", pid);
	r = fr_write(fr->proc, fd, "x");
	snprintf(fd, sizeof(fd), "%s/%d/fd/placeholder", fr->proc, pid);
	if (r == 0 && unlink(fd) < 0)
		r = -errno;
	snprintf(fd, sizeof(fd), "%s/%d/fd/9", fr->proc, pid);
	return r ? r : symlink(path, fd) < 0 ? -errno : 0;
}

#endif
