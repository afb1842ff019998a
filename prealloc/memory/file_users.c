/* SPDX-License-Identifier: MIT */
/*
 * Who uses a file: a process that maps it or has it open. A hugepage goes
 * back to its pool only when no mapping and no open descriptor of its file
 * remains, and a guest's file is in use while a VMM maps it: both questions
 * are answered from procfs, by device and inode (which survive an unlink),
 * never by measuring free pages, which races with everything else that
 * faults pages.
 *
 * procfs can prove a use, never its absence: fds in flight over a socket,
 * pipe buffers and page pins are in no /proc file, and without
 * CAP_SYS_PTRACE another user's fds cannot be read at all. What cannot be
 * read is counted unreadable, never "not this file". Where it matters that
 * no open file is left, a write lease proves it (file_lease_*).
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "memory.h"

/* 1 when pid maps dev/ino ("start-end perms offset maj:min inode path"), 0 not, <0 unreadable. */
static int maps_file(const struct prealloc_ctx *ctx, const char *pid, uint64_t dev, uint64_t ino)
{
	char path[PATH_MAX], line[512];
	unsigned long long inode;
	unsigned int maj, mnr;
	int found = 0;
	FILE *f;

	if (proc_path(ctx, path, sizeof(path), "/%s/maps", pid) < 0 || !(f = fopen(path, "re")))
		return errno == ENOENT ? 0 : -EACCES;	/* ENOENT: the process just exited */
	while (!found && fgets(line, sizeof(line), f)) {
		found = sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &mnr, &inode) == 3 &&
			inode == ino && makedev(maj, mnr) == dev;
		/* A long path leaves the rest of the line for the next fgets. */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
			;
	}
	fclose(f);
	return found;
}

/* 1 when one of pid's descriptors is dev/ino, 0 not, <0 unreadable. */
static int uses_file(const struct prealloc_ctx *ctx, const char *pid, uint64_t dev, uint64_t ino)
{
	char path[PATH_MAX];
	struct dirent *de;
	int found = 0;
	DIR *d;

	if (proc_path(ctx, path, sizeof(path), "/%s/fd", pid) < 0 || !(d = opendir(path)))
		return errno == ENOENT ? 0 : -EACCES;
	while (!found && (de = readdir(d))) {
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		/* stat follows the descriptor to its file, unlinked or not. */
		if (fstatat(dirfd(d), de->d_name, &st, 0) == 0)
			found = (uint64_t)st.st_dev == dev && (uint64_t)st.st_ino == ino;
		else if (errno != ENOENT)
			found = -EACCES;	/* e.g. no CAP_SYS_PTRACE: it may be this file */
	}
	closedir(d);
	return found;
}

pid_t file_user(const struct prealloc_ctx *ctx, uint64_t dev, uint64_t ino, pid_t skip,
		  unsigned int *ret_unreadable)
{
	char path[PATH_MAX];
	struct dirent *de;
	pid_t found = 0;
	DIR *proc;

	*ret_unreadable = 0;
	if (proc_path(ctx, path, sizeof(path), "/") < 0 || !(proc = opendir(path)))
		return -errno;
	while (!found && (de = readdir(proc))) {
		pid_t pid;
		int m, h;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (pid == skip)
			continue;
		m = maps_file(ctx, de->d_name, dev, ino);
		h = m > 0 ? 0 : uses_file(ctx, de->d_name, dev, ino);
		if (m > 0 || h > 0)
			found = pid;
		else if (m < 0 || h < 0)
			(*ret_unreadable)++;
	}
	closedir(proc);
	return found;
}

/*
 * A write lease (fcntl(2) F_SETLEASE F_WRLCK) is granted only while no open
 * file description of the inode exists but fd's own: another process's fd,
 * an fd in flight over a socket, a mapping (it holds its file) all refuse
 * it (EAGAIN). It needs no ptrace. The kernel signals the holder when
 * someone opens the file meanwhile (SIGIO by default, which would end the
 * process): the owner is cleared at once, so a break only shows in
 * F_GETLEASE. It does not see O_PATH descriptors, nor pages a pipe or a
 * pin holds: those hold pages, not the file.
 */
int file_lease_take(int fd)
{
	if (fcntl(fd, F_SETLEASE, F_WRLCK) < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	(void)!fcntl(fd, F_SETOWN, 0);
	return 0;
}

bool file_lease_held(int fd)
{
	return fcntl(fd, F_GETLEASE) == F_WRLCK;
}

void file_lease_drop(int fd)
{
	(void)!fcntl(fd, F_SETLEASE, F_UNLCK);
}

int file_sole_open(int fd)
{
	int r = file_lease_take(fd);

	if (r == 0)
		file_lease_drop(fd);
	return r;
}
