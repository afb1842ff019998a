/* SPDX-License-Identifier: MIT */
/*
 * Clearing a file in place (`prealloc clear`), as one library flow: every
 * check that it is the file the caller meant, then node-local re-zeroing
 * of each resident page by the job engine, then what the engine does not
 * cover: swapped-out tmpfs pages, a partial last page, write-back of a
 * file not in memory, and the verdict of VERIFY.
 *
 * Checks, in order: the kernel named exists here; not a symbolic link (not
 * even with FORCE); a regular file; on hugetlbfs or tmpfs (else FORCE); no
 * other process maps it (else FORCE); the file opened is the file checked.
 * Holes on hugetlbfs get pages the kernel zeroes (mapping reserves them:
 * -ENOMEM when the pool cannot); holes on tmpfs are skipped, read as zero.
 */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "internal.h"

/* The flow's own state: what it opened and mapped, freed in flow_free() only. */
struct clear_flow {
	struct prealloc_ctx *ctx;
	struct prealloc_clear_file_opts opts;
	struct prealloc_clear_file_info info;
	struct stat st;
	bool in_memory;
	int fd;
	void *map;			/* our own mapping (partial last page, disk), or NULL */
	uint64_t map_len;
	struct prealloc_region *region;
	const struct clear_kernel *kernel;
	struct prealloc_job *job;
	bool finished;
	int result;
	struct clear_flow *next;	/* flows_lock: the list of flows with a job */
};

static int flow_fail(struct clear_flow *flow, int step, int err)
{
	flow->info.error_step = step;
	return err;
}

/*
 * The first process other than us that maps the file (dev, ino), from
 * /proc/PID/maps: "start-end perms offset maj:min inode path". Returns its
 * pid, 0 when none; counts processes whose maps could not be read.
 */
static pid_t find_mapper(dev_t dev, ino_t ino, unsigned int *ret_unreadable)
{
	pid_t self = getpid(), found = 0;
	struct dirent *de;
	DIR *proc;

	*ret_unreadable = 0;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!found && (de = readdir(proc))) {
		char path[64], line[512];
		unsigned long long inode;
		unsigned int maj, mnr;
		pid_t pid;
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (pid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
		f = fopen(path, "re");
		if (!f) {
			if (errno != ENOENT)	/* ENOENT: the process just exited */
				(*ret_unreadable)++;
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &mnr, &inode) == 3 &&
			    inode == (unsigned long long)ino && makedev(maj, mnr) == dev) {
				found = pid;
				break;
			}
			/* A long path leaves the rest of the line for the next fgets. */
			while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
				;
		}
		fclose(f);
	}
	closedir(proc);
	return found;
}

/* Who else maps the file: -EBUSY naming them, unless FORCE. */
static int check_mappers(struct clear_flow *flow)
{
	struct prealloc_clear_file_info *info = &flow->info;
	char path[64];
	pid_t pid;

	pid = find_mapper(flow->st.st_dev, flow->st.st_ino, &info->unreadable);
	if (pid < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_MAPPERS, pid);
	if (!pid)
		return 0;
	info->mapper_pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_file_str(path, info->mapper_comm, sizeof(info->mapper_comm)) < 0)
		snprintf(info->mapper_comm, sizeof(info->mapper_comm), "?");
	if (!(flow->opts.flags & PREALLOC_CLEAR_FORCE))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_MAPPERS, -EBUSY);
	return 0;
}

/* Everything that must hold before the file is opened. */
static int check_file(struct clear_flow *flow, const char *path)
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
	return check_mappers(flow);
}

/* Opens the file checked; -ESTALE when another file took its place. */
static int open_checked(struct clear_flow *flow, const char *path)
{
	struct stat fst;

	flow->fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (flow->fd < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_OPEN, -errno);
	if (fstat(flow->fd, &fst) < 0 || fst.st_dev != flow->st.st_dev ||
	    fst.st_ino != flow->st.st_ino)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_OPEN, -ESTALE);
	return 0;
}

/*
 * For our own mapping of a tmpfs file: makes the pages in memory present
 * in the mapping, so the move_pages query behind ADOPT_PLACEMENT sees
 * them; mincore() names them, holes and swapped-out pages stay out. On
 * hugetlbfs all of it is mapped, holes getting pages mmap reserved.
 */
static int make_present(uint8_t *addr, uint64_t length, uint64_t page, bool tmpfs)
{
	enum { BATCH = 1 << 18 };	/* mincore entries per call: 1 GiB of 4k pages */
	unsigned char *vec;
	int r = 0;

	if (!tmpfs)
		return madvise(addr, length, MADV_POPULATE_READ) < 0 ? -errno : 0;
	vec = malloc(BATCH);
	if (!vec)
		return -ENOMEM;
	for (uint64_t off = 0; off < length && !r;) {
		uint64_t len = MIN(length - off, (uint64_t)BATCH * page), run = 0;

		if (mincore(addr + off, len, vec) < 0) {
			r = -errno;
			break;
		}
		for (uint64_t i = 0; i <= len / page && !r; i++) {
			if (i < len / page && (vec[i] & 1)) {
				run++;
				continue;
			}
			if (run && madvise(addr + off + (i - run) * page, run * page,
					   MADV_POPULATE_READ) < 0 && errno != ENOMEM)
				r = -errno;
			run = 0;
		}
		off += len;
	}
	free(vec);
	return r;
}

/* Whole pages through the FILE backing, adopting where each page already is. */
static int map_whole_file(struct clear_flow *flow, const char *path, uint64_t length)
{
	struct prealloc_region_opts fo = {
		.size = sizeof(fo),
		.backing = PREALLOC_BACKING_FILE,
		.flags = PREALLOC_REGION_REUSE | PREALLOC_REGION_ADOPT_PLACEMENT,
		.length = length,
		.path = path,
	};
	struct stat fst;
	int r;

	r = prealloc_region_new(flow->ctx, &fo, &flow->region);
	if (r < 0)
		return r;
	/* It must still be the file checked, and not one made just now. */
	if (prealloc_region_created_file(flow->region) ||
	    fstat(prealloc_region_fd(flow->region), &fst) < 0 || fst.st_dev != flow->st.st_dev ||
	    fst.st_ino != flow->st.st_ino) {
		prealloc_region_discard(flow->region);
		flow->region = NULL;
		return -ESTALE;
	}
	return 0;
}

/*
 * The file's whole pages as a region: through the FILE backing when the
 * file is whole pages on hugetlbfs or tmpfs, else through our own mapping
 * of fd (a partial last page; a disk file with FORCE, cleared whole).
 */
static int map_file(struct clear_flow *flow, const char *path, uint64_t length)
{
	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_MAPPED,
		.flags = flow->in_memory ? PREALLOC_REGION_ADOPT_PLACEMENT
					 : PREALLOC_REGION_NO_BIND,
		.page_size = flow->info.page_size,
		.length = length,
	};
	int r;

	if (flow->in_memory && length == flow->info.length)
		r = map_whole_file(flow, path, length);
	else {
		ro.addr = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, flow->fd, 0);
		if (ro.addr == MAP_FAILED)
			return flow_fail(flow, PREALLOC_CLEAR_STEP_MAP, -errno);
		flow->map = ro.addr;
		flow->map_len = length;
		r = flow->in_memory ? make_present(ro.addr, length, flow->info.page_size,
						   flow->info.fs_magic == TMPFS_MAGIC)
				    : 0;
		if (r == 0)
			r = prealloc_region_new(flow->ctx, &ro, &flow->region);
	}
	if (r < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_MAP, r);
	if (flow->info.fs_magic == HUGETLBFS_MAGIC && (uint64_t)flow->st.st_blocks * 512 < length)
		flow->info.unbacked_bytes = length - (uint64_t)flow->st.st_blocks * 512;
	return 0;
}

/* The kernel: the one named, or the one auto picks for this region (with why). */
static int pick_kernel(struct clear_flow *flow)
{
	const char *name = flow->opts.kernel;
	struct prealloc_clear_file_info *info = &flow->info;

	if (name && strcmp(name, "auto")) {
		flow->kernel = clear_kernel_find(name);
		if (!flow->kernel)
			return flow_fail(flow, PREALLOC_CLEAR_STEP_KERNEL, -ENOENT);
		if (!clear_kernel_usable(flow->kernel, flow->ctx->cpu.features))
			return flow_fail(flow, PREALLOC_CLEAR_STEP_KERNEL, -EOPNOTSUPP);
	} else if (flow->region) {
		flow->kernel = clear_select_region(flow->region, flow->opts.threads,
						   info->kernel_why, sizeof(info->kernel_why));
	}
	if (flow->kernel)
		snprintf(info->kernel, sizeof(info->kernel), "%s", flow->kernel->name);
	return 0;
}

static void flow_free(struct clear_flow *flow)
{
	if (!flow)
		return;
	prealloc_job_free(flow->job);
	prealloc_region_free(flow->region);
	if (flow->map)
		munmap(flow->map, flow->map_len);
	if (flow->fd >= 0)
		close(flow->fd);
	free(flow);
}

/* ---- the steps after the workers ----------------------------------------- */

static void note_nonzero(struct clear_flow *flow, uint64_t offset)
{
	flow->info.nonzero_offset = MIN(flow->info.nonzero_offset, offset);
}

/*
 * Non-resident ranges (node -1 extents) are holes that read as zero, except
 * on tmpfs where a page may be swapped out: SEEK_DATA finds those (tmpfs
 * only; hugetlbfs has no swap and calls every offset data), and they are
 * cleared here, faulting them back in.
 */
static int clear_swapped(struct clear_flow *flow)
{
	struct prealloc_region *reg = flow->region;
	bool verify = flow->opts.flags & PREALLOC_CLEAR_VERIFY;
	uint64_t holes = 0, swapped = 0;

	for (unsigned int i = 0; i < reg->nr_extents; i++) {
		uint64_t off = reg->extents[i].offset, end = off + reg->extents[i].length;

		if (reg->extents[i].node >= 0)
			continue;
		holes += reg->extents[i].length;
		while (flow->info.fs_magic == TMPFS_MAGIC && off < end) {
			off_t d = lseek(flow->fd, (off_t)off, SEEK_DATA), h;
			uint64_t stop, nz;

			if (d < 0 || (uint64_t)d >= end)
				break;
			h = lseek(flow->fd, d, SEEK_HOLE);
			stop = h < 0 || (uint64_t)h > end ? end : (uint64_t)h;
			flow->kernel->fn(reg->addr + d, stop - (uint64_t)d);
			nz = verify ? zero_check(reg->addr + d, stop - (uint64_t)d) : stop - (uint64_t)d;
			if (nz < stop - (uint64_t)d)
				note_nonzero(flow, (uint64_t)d + nz);
			swapped += stop - (uint64_t)d;
			off = stop;
		}
	}
	flow->info.swapped_bytes = swapped;
	flow->info.hole_bytes = holes - swapped;
	return 0;
}

/* The partial last page, with write(2): no mapping covers it whole. */
static int clear_tail(struct clear_flow *flow)
{
	static const uint8_t zeroes[PREALLOC_PAGE_4K];
	uint64_t tail = flow->info.tail_bytes, at = flow->info.length - tail;
	uint8_t back[PREALLOC_PAGE_4K];

	if (!tail)
		return 0;
	if (pwrite(flow->fd, zeroes, tail, (off_t)at) != (ssize_t)tail)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_TAIL, errno ? -errno : -EIO);
	if (!(flow->opts.flags & PREALLOC_CLEAR_VERIFY))
		return 0;
	if (pread(flow->fd, back, tail, (off_t)at) != (ssize_t)tail)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_VERIFY, errno ? -errno : -EIO);
	if (zero_check(back, tail) < tail)
		note_nonzero(flow, at + zero_check(back, tail));
	return 0;
}

/*
 * Everything after the workers: swapped pages, the tail, write-back, the
 * verdict. status is the job's result; the return value is the flow's.
 */
static int flow_finish(struct clear_flow *flow, int status)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	int r;

	if (status < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_CLEAR, status);
	if (flow->job && prealloc_job_report(flow->job, &rep) == 0 &&
	    rep.nonzero_offset != UINT64_MAX)
		note_nonzero(flow, rep.nonzero_offset);
	if (flow->region && flow->in_memory && (r = clear_swapped(flow)) < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_SWAPPED, r);
	r = clear_tail(flow);
	if (r < 0)
		return r;
	if (!flow->in_memory && flow->map &&
	    (msync(flow->map, flow->map_len, MS_SYNC) < 0 || fsync(flow->fd) < 0))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_SYNC, -errno);
	if (flow->info.nonzero_offset != UINT64_MAX)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_VERIFY, -EBADMSG);
	return 0;
}

/* ---- the job, and the flows that have one -------------------------------- */

/*
 * MERGE: until job_spec lands, a flow is found by its job here and
 * finished by prealloc_clear_file_info() after the wait; the flow of an
 * asynchronous job is not freed by prealloc_job_free (no destroy hook yet)
 * and lives until the process ends. The synchronous call frees it.
 */
static pthread_mutex_t flows_lock = PTHREAD_MUTEX_INITIALIZER;
static struct clear_flow *flows;

static struct clear_flow *flow_of(struct prealloc_job *job, bool unlink)
{
	struct clear_flow **p, *found = NULL;

	pthread_mutex_lock(&flows_lock);
	for (p = &flows; *p; p = &(*p)->next)
		if ((*p)->job == job) {
			found = *p;
			if (unlink)
				*p = found->next;
			break;
		}
	pthread_mutex_unlock(&flows_lock);
	return found;
}

/* Starts the workers over the flow's region. */
static int clear_job_start(struct clear_flow *flow, struct prealloc_job **ret_job)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_CLEAR,
		.flags = flow->opts.flags & PREALLOC_CLEAR_VERIFY ? PREALLOC_JOB_VERIFY : 0,
		.threads = flow->opts.threads,
		.clear_kernel = flow->kernel->name,
	};
	int r;

	/* MERGE: job_start_spec with extra=swapped and flow finish=tail+msync+verify */
	r = prealloc_job_start(flow->region, &jo, &flow->job);
	if (r < 0)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_START, r);
	pthread_mutex_lock(&flows_lock);
	flow->next = flows;
	flows = flow;
	pthread_mutex_unlock(&flows_lock);
	*ret_job = flow->job;
	return 0;
}

/* ---- public API ---------------------------------------------------------- */

/* Checks, opens, maps; a file with no whole page is finished here. */
static int flow_prepare(struct clear_flow *flow, const char *path)
{
	uint64_t whole;
	int r;

	r = pick_kernel(flow);
	if (r == 0)
		r = check_file(flow, path);
	if (r == 0)
		r = open_checked(flow, path);
	if (r < 0)
		return r;
	whole = flow->info.length - flow->info.tail_bytes;
	if (whole) {
		r = map_file(flow, path, whole);
		if (r == 0)
			r = pick_kernel(flow);
	}
	return r;
}

EXPORT int prealloc_clear_file_start(struct prealloc_ctx *ctx, const char *path,
				     const struct prealloc_clear_file_opts *opts,
				     struct prealloc_job **ret_job,
				     struct prealloc_clear_file_info *ret_info)
{
	struct clear_flow *flow;
	int r;

	if (!ctx || !path || !opts || !ret_job || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	*ret_job = NULL;
	flow = calloc(1, sizeof(*flow));
	if (!flow)
		return -ENOMEM;
	flow->ctx = ctx;
	flow->fd = -1;
	flow->info.size = sizeof(flow->info);
	flow->info.nonzero_offset = UINT64_MAX;
	r = copy_sized_in(&flow->opts, sizeof(flow->opts), opts);
	if (r == 0)
		r = flow_prepare(flow, path);
	if (r == 0 && flow->region)
		r = clear_job_start(flow, ret_job);
	else if (r == 0)
		r = flow_finish(flow, 0);	/* empty, or only a partial page */
	if (ret_info)
		copy_sized_out(ret_info, &flow->info, sizeof(flow->info));
	if (r < 0 || !*ret_job)
		flow_free(flow);
	return r;
}

EXPORT int prealloc_clear_file_info(struct prealloc_job *job,
				    struct prealloc_clear_file_info *ret_info)
{
	struct clear_flow *flow;
	int status;

	if (!job || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	flow = flow_of(job, false);
	if (!flow)
		return -ENOENT;
	status = prealloc_job_wait(job);
	/* MERGE: finish runs in the job (flow finish); this reads its result. */
	if (!flow->finished) {
		flow->result = flow_finish(flow, status);
		flow->finished = true;
	}
	copy_sized_out(ret_info, &flow->info, sizeof(flow->info));
	return flow->result;
}

EXPORT int prealloc_clear_file(struct prealloc_ctx *ctx, const char *path,
			       const struct prealloc_clear_file_opts *opts,
			       struct prealloc_clear_file_info *ret_info,
			       struct prealloc_report *ret_report)
{
	struct prealloc_clear_file_info info = { .size = sizeof(info) };
	struct prealloc_job *job;
	int r;

	if (ret_report && ret_report->size < sizeof(size_t))
		return -EINVAL;
	r = prealloc_clear_file_start(ctx, path, opts, &job, ret_info ? ret_info : &info);
	if (r < 0 || !job)
		return r;
	r = prealloc_clear_file_info(job, ret_info ? ret_info : &info);
	if (ret_report)
		prealloc_job_report(job, ret_report);
	flow_free(flow_of(job, true));
	return r;
}
