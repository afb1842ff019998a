/* SPDX-License-Identifier: MIT */
/*
 * Registry of the files this tool made: one record per file, named by the
 * file's device and inode, holding its path and size. `prealloc rm` removes
 * only files with a matching record. Records live in /run (root) or the
 * user's runtime directory, which vanish at reboot like the files do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

const char *registry_dir(void)
{
	static char dir[PATH_MAX];
	const char *base;

	if (dir[0])
		return dir;
	base = getenv("PREALLOC_STATE_DIR");	/* tests point this elsewhere */
	if (base && *base)
		snprintf(dir, sizeof(dir), "%s/files", base);
	else if (geteuid() == 0)
		snprintf(dir, sizeof(dir), "/run/prealloc/files");
	else if ((base = getenv("XDG_RUNTIME_DIR")) && *base)
		snprintf(dir, sizeof(dir), "%s/prealloc/files", base);
	else
		snprintf(dir, sizeof(dir), "/tmp/prealloc-%u/files", (unsigned int)geteuid());
	return dir;
}

static int mkdir_parents(const char *path)
{
	char buf[PATH_MAX];
	struct stat st;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	/* Ours alone, or a /tmp fallback another user made first could plant records. */
	if (lstat(buf, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

static int record_path(const char *path, char *buf, size_t len, struct stat *ret_st)
{
	if (lstat(path, ret_st) < 0)
		return -errno;
	if (!S_ISREG(ret_st->st_mode))
		return -EINVAL;
	snprintf(buf, len, "%s/%llx-%llx", registry_dir(), (unsigned long long)ret_st->st_dev,
		 (unsigned long long)ret_st->st_ino);
	return 0;
}

int registry_add(const char *path, uint64_t size, uint64_t page_size, const char *nodes)
{
	char rec[PATH_MAX], tmp[PATH_MAX + 32], abs[PATH_MAX];
	struct stat st;
	FILE *f;
	int fd, r;

	r = mkdir_parents(registry_dir());
	if (r < 0)
		return r;
	if (!realpath(path, abs))
		return -errno;
	r = record_path(abs, rec, sizeof(rec), &st);
	if (r < 0)
		return r;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", rec, (int)getpid());
	unlink(tmp);	/* a crashed run's leftover; then create, following no link */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		unlink(tmp);
		return r;
	}
	fprintf(f, "path=%s\nsize=%llu\npage_size=%llu\nnodes=%s\n", abs, (unsigned long long)size,
		(unsigned long long)page_size, nodes);
	if (fclose(f) != 0 || rename(tmp, rec) < 0) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

int registry_lookup(const char *path)
{
	char rec[PATH_MAX], abs[PATH_MAX], line[PATH_MAX + 16];
	unsigned long long size = ~0ULL;
	bool path_ok = false;
	struct stat st;
	FILE *f;
	int r;

	r = record_path(path, rec, sizeof(rec), &st);
	if (r < 0)
		return r;
	if (!realpath(path, abs))
		return -errno;
	f = fopen(rec, "re");
	if (!f)
		return errno == ENOENT ? -ENOENT : -errno;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "path=", 5))
			path_ok = !strcmp(line + 5, abs);
		else if (!strncmp(line, "size=", 5))
			size = strtoull(line + 5, NULL, 10);
	}
	fclose(f);
	/* An inode number can be reused: path and size must match too. */
	if (!path_ok)
		return -ENOENT;
	if (size != (unsigned long long)st.st_size)
		return -ESTALE;	/* ours, but changed since: the user should look first */
	return 0;
}

int registry_release(const char *path)
{
	char rec[PATH_MAX];
	struct stat st, now;
	int r;

	r = registry_lookup(path);
	if (r < 0)
		return r;
	r = record_path(path, rec, sizeof(rec), &st);
	if (r < 0)
		return r;
	/* Still the file whose record matched: not one swapped in since. */
	if (lstat(path, &now) < 0)
		return -errno;
	if (now.st_dev != st.st_dev || now.st_ino != st.st_ino)
		return -ESTALE;
	if (unlink(path) < 0)
		return -errno;
	unlink(rec);
	return 0;
}
