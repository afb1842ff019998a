/* SPDX-License-Identifier: MIT */
/*
 * The clear-file flow's checks that the file is the one the caller meant,
 * in order: the kernel named exists here; not a symbolic link (not even
 * with FORCE); a regular file; on hugetlbfs or tmpfs (else FORCE); no other
 * process maps it or has it open (a write lease proves it at once; where it
 * is refused, /proc names the user; else FORCE); the file opened is the
 * file checked.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "flows.h"

/*
 * Whether a write lease proves that no other process has the file at path
 * (flow->st's) open or mapped: granted only while no open file description
 * of it exists but ours (an fd in flight refuses it too, which /proc never
 * shows). It says nothing of an O_PATH descriptor, which reaches no byte.
 * Where the ctx reads a procfs of its own (tests), the processes it lists
 * are not the kernel's, and the lease cannot speak for them. Saves the walk
 * over every process's fds and maps (1.5-2.7 ms on an idle host, more with
 * more processes: issue 52). The descriptor is the one the clear uses
 * (flow->fd, kept when it is the file checked; clear_open_checked then
 * opens nothing). A lease of another's is refused at the open, never
 * waited out, and then the walk names its holder.
 */
static bool sole_by_lease(struct clear_flow *flow, const char *path)
{
	struct stat fst;
	int fd;

	if (strcmp(flow->ctx->proc_root, HOST_PROC_ROOT))
		return false;
	fd = open_no_lease_wait(AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (fstat(fd, &fst) < 0 || fst.st_dev != flow->st.st_dev ||
	    fst.st_ino != flow->st.st_ino) {
		close(fd);	/* another file took its place: the open's own check says so */
		return false;
	}
	flow->fd = fd;
	return file_sole_open(fd) == 0;
}

/* Who else maps the file or has it open: -EBUSY naming them, unless FORCE. */
static int check_mappers(struct clear_flow *flow, const char *file)
{
	struct prealloc_clear_file_info *info = &flow->info;
	char path[PATH_MAX];
	pid_t pid;

	if (sole_by_lease(flow, file))
		return 0;
	pid = file_user(flow->ctx, flow->st.st_dev, flow->st.st_ino, getpid(), &info->unreadable);
	if (pid < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_MAPPERS, pid);
	if (!pid)
		return 0;
	info->mapper_pid = pid;
	if (proc_path(flow->ctx, path, sizeof(path), "/%d/comm", (int)pid) < 0 ||
	    read_file_str(path, info->mapper_comm, sizeof(info->mapper_comm)) < 0)
		snprintf(info->mapper_comm, sizeof(info->mapper_comm), "?");
	if (!(flow->opts.flags & PREALLOC_CLEAR_FORCE))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_MAPPERS, -EBUSY);
	return 0;
}

/* Everything that must hold before the file is opened. */
int clear_check_file(struct clear_flow *flow, const char *path)
{
	struct prealloc_clear_file_info *info = &flow->info;
	struct statfs sfs;

	if (lstat(path, &flow->st) < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_LOOKUP, -errno);
	if (S_ISLNK(flow->st.st_mode))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_SYMLINK, -ELOOP);
	if (!S_ISREG(flow->st.st_mode))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_TYPE, -EINVAL);
	if (statfs(path, &sfs) < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_LOOKUP, -errno);
	info->fs_magic = (unsigned long)sfs.f_type;
	info->page_size = info->fs_magic == HUGETLBFS_MAGIC ? (uint64_t)sfs.f_bsize
							    : PREALLOC_PAGE_4K;
	flow->in_memory = info->fs_magic == HUGETLBFS_MAGIC || info->fs_magic == TMPFS_MAGIC;
	if (!flow->in_memory && !(flow->opts.flags & PREALLOC_CLEAR_FORCE))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_FILESYSTEM, -EMEDIUMTYPE);
	info->length = (uint64_t)flow->st.st_size;
	info->tail_bytes = info->length % info->page_size;
	return check_mappers(flow, path);
}

/* Opens the file checked; -ESTALE when another file took its place. */
int clear_open_checked(struct clear_flow *flow, const char *path)
{
	struct stat fst;
	int fd;

	if (flow->fd >= 0)
		return 0;	/* opened and checked by the users' check (sole_by_lease) */
	/* A lease its holder keeps: refused (-EWOULDBLOCK), never waited out. */
	fd = open_no_lease_wait(AT_FDCWD, path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_OPEN, fd);
	flow->fd = fd;
	if (fstat(flow->fd, &fst) < 0 || fst.st_dev != flow->st.st_dev ||
	    fst.st_ino != flow->st.st_ino)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_OPEN, -ESTALE);
	return 0;
}

/* The kernel (or probe pair): the one named, or what auto picks for this region (with why). */
int clear_check_kernel(struct clear_flow *flow)
{
	const char *name = flow->opts.kernel;
	struct prealloc_clear_file_info *info = &flow->info;
	int r;

	if (name && strcmp(name, "auto")) {
		r = clear_choice_find(name, flow->ctx->cpu.features, &flow->choice);
		if (r < 0)
			return flow_fail(flow, PREALLOC_CLEAR_STEP_KERNEL, r);
	} else if (flow->region) {
		flow->choice = clear_select_region(flow->region, flow->opts.threads,
						   info->kernel_why, sizeof(info->kernel_why));
	}
	if (flow->choice.name)
		snprintf(info->kernel, sizeof(info->kernel), "%s", flow->choice.name);
	return 0;
}
