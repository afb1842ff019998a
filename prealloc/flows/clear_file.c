/* SPDX-License-Identifier: MIT */
/*
 * Clearing a file in place (`prealloc clear`), as one library flow: the
 * checks that it is the file the caller meant (clear_checks.c), then one
 * job that re-zeroes, node-local, each resident page and each swapped-out
 * tmpfs page (its extra ranges, spread over the node crews), and whose
 * finish does what a mapping does not cover: a partial last page, write-back
 * of a file not in memory, and the verdict of VERIFY. The job's completion
 * means the whole file is done; its destroy frees what the flow made.
 *
 * Holes on hugetlbfs get pages the kernel zeroes (mapping reserves them:
 * -ENOMEM when the pool cannot); holes on tmpfs are skipped, read as zero.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "flows.h"

/* ---- the file as a region ------------------------------------------------ */

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
		.flags = PREALLOC_REGION_EXISTING | PREALLOC_REGION_ADOPT_PLACEMENT,
		.length = length,
		.path = path,
	};
	struct stat fst;
	int r;

	r = prealloc_region_new(flow->ctx, &fo, &flow->region);
	if (r < 0)
		return r;
	/* It must still be the file checked (EXISTING: never one made just now). */
	if (fstat(prealloc_region_fd(flow->region), &fst) < 0 || fst.st_dev != flow->st.st_dev ||
	    fst.st_ino != flow->st.st_ino) {
		prealloc_region_discard(flow->region);
		flow->region = NULL;
		return -ESTALE;
	}
	return 0;
}

/*
 * The file's whole pages as a region: through the FILE backing when the
 * file is whole pages on hugetlbfs, else through our own mapping of fd. On
 * tmpfs that mapping holds only the pages in memory (make_present), so the
 * swapped-out ones stay node -1 for the workers to fault in, rather than
 * the FILE backing's MADV_POPULATE_READ swapping them all in on this
 * thread. A disk file (FORCE) is mapped and cleared whole.
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

	if (flow->info.fs_magic == HUGETLBFS_MAGIC && length == flow->info.length) {
		r = map_whole_file(flow, path, length);
	} else {
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

/* Appends [offset, offset + length) to the swapped ranges, merged with the last if adjacent. */
static int swapped_add(struct clear_flow *flow, uint64_t offset, uint64_t length)
{
	struct job_range *last = flow->nr_swapped ? &flow->swapped[flow->nr_swapped - 1] : NULL;
	struct job_range *grown;

	if (last && last->offset + last->length == offset) {
		last->length += length;
		return 0;
	}
	if (!(flow->nr_swapped & (flow->nr_swapped - 1))) {	/* 0, 1, 2, 4, ...: grow */
		grown = realloc(flow->swapped, MAX(2 * flow->nr_swapped, (size_t)1) * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		flow->swapped = grown;
	}
	flow->swapped[flow->nr_swapped++] = (struct job_range){ -1, offset, length };
	return 0;
}

/*
 * The region's non-resident ranges (node -1 extents) are holes that read
 * as zero, except on tmpfs where a page may be swapped out: SEEK_DATA finds
 * those (tmpfs only; hugetlbfs has no swap and calls every offset data).
 * They become the job's extra ranges, node -1: spread over the node crews,
 * faulted back in and cleared by workers.
 */
static int find_swapped(struct clear_flow *flow)
{
	struct prealloc_region *reg = flow->region;
	uint64_t page = flow->info.page_size, holes = 0, swapped = 0;

	for (unsigned int i = 0; i < reg->nr_extents; i++) {
		uint64_t off = reg->extents[i].offset, end = off + reg->extents[i].length;

		if (reg->extents[i].node >= 0)
			continue;
		holes += reg->extents[i].length;
		while (flow->info.fs_magic == TMPFS_MAGIC && off < end) {
			off_t d = lseek(flow->fd, (off_t)off, SEEK_DATA), h;
			uint64_t start, stop;
			int r;

			if (d < 0 && errno != ENXIO)	/* ENXIO: no data past off */
				return flow_fail(flow, PREALLOC_CLEAR_STEP_SWAPPED, -errno);
			if (d < 0 || (uint64_t)d >= end)
				break;
			h = lseek(flow->fd, d, SEEK_HOLE);
			start = ALIGN_DOWN((uint64_t)d, page);
			stop = h < 0 ? end : MIN(ALIGN_UP((uint64_t)h, page), end);
			r = swapped_add(flow, start, stop - start);
			if (r < 0)
				return flow_fail(flow, PREALLOC_CLEAR_STEP_SWAPPED, r);
			swapped += stop - start;
			off = stop;
		}
	}
	flow->info.swapped_bytes = swapped;
	flow->info.hole_bytes = holes - swapped;
	return 0;
}

static void flow_free(struct clear_flow *flow)
{
	if (!flow)
		return;
	prealloc_region_free(flow->region);
	if (flow->map)
		munmap(flow->map, flow->map_len);
	if (flow->fd >= 0)
		close(flow->fd);
	free(flow->swapped);
	free(flow);
}

/* ---- after the workers: the job's finish ---------------------------------- */

static void note_nonzero(struct clear_flow *flow, uint64_t offset)
{
	flow->info.nonzero_offset = MIN(flow->info.nonzero_offset, offset);
}

/*
 * Whether the file is now shorter than the checks found it: its owner
 * truncated it during the clear. Then the pages past its new end are gone
 * (a worker meeting one got SIGBUS: -EFAULT) and nothing may write there.
 */
static bool flow_shrank(const struct clear_flow *flow)
{
	struct stat st;

	return fstat(flow->fd, &st) == 0 && (uint64_t)st.st_size < flow->info.length;
}

/* The partial last page, with write(2): no mapping covers it whole. */
static int clear_tail(struct clear_flow *flow)
{
	static const uint8_t zeroes[PREALLOC_PAGE_4K];
	uint64_t tail = flow->info.tail_bytes, at = flow->info.length - tail;
	uint8_t back[PREALLOC_PAGE_4K];

	if (!tail)
		return 0;
	/* A file cut inside or before its tail: a write there would make it long again. */
	if (flow_shrank(flow))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_TAIL, -ENXIO);
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
 * What the pages' job leaves, and all there is for a file with no whole
 * page: the tail, write-back of a file not in memory, the verdict.
 */
static int clear_rest(struct clear_flow *flow)
{
	int r;

	r = clear_tail(flow);
	if (r < 0)
		return r;
	if (!flow->in_memory && ((flow->map && msync(flow->map, flow->map_len, MS_SYNC) < 0) ||
				 fsync(flow->fd) < 0))
		return flow_fail(flow, PREALLOC_CLEAR_STEP_SYNC, -errno);
	if (flow->info.nonzero_offset != UINT64_MAX)
		return flow_fail(flow, PREALLOC_CLEAR_STEP_VERIFY, -EBADMSG);
	return 0;
}

/*
 * On the job's last worker, before its completion is posted. The engine's
 * zero check covered the resident and the swapped-out pages (-EBADMSG is
 * its verdict): that joins the tail's; any other failure stops here. A
 * SIGBUS under a worker, clearing or reading back, failed the job with
 * -EFAULT: in a file that shrank meanwhile that is -ENXIO (its pages past
 * the new end no longer exist, as lseek says of offsets past the end).
 */
static int clear_finish(struct prealloc_job *job, int status, void *arg)
{
	struct clear_flow *flow = arg;
	struct prealloc_report rep;

	job_fill_report(job, &rep);
	if (rep.nonzero_offset != UINT64_MAX)
		note_nonzero(flow, rep.nonzero_offset);
	if (status == -EFAULT && flow_shrank(flow))
		status = -ENXIO;
	if (status < 0 && status != -EBADMSG)
		flow->result = flow_fail(flow, PREALLOC_CLEAR_STEP_CLEAR, status);
	else
		flow->result = clear_rest(flow);
	flow->info.clear_seconds = now_seconds() - flow->t_job;
	return flow->result;
}

static void clear_destroy(void *arg)
{
	flow_free(arg);
}

/* ---- public API ---------------------------------------------------------- */

/* Checks, opens, maps, finds swapped-out pages; a file with no whole page stops here. */
static int flow_prepare(struct clear_flow *flow, const char *path)
{
	double t0 = now_seconds(), t1;
	uint64_t whole;
	int r;

	r = clear_check_kernel(flow);
	if (r == 0)
		r = clear_check_file(flow, path);
	if (r == 0)
		r = clear_open_checked(flow, path);
	t1 = now_seconds();
	flow->info.check_seconds = t1 - t0;
	if (r < 0)
		return r;
	whole = flow->info.length - flow->info.tail_bytes;
	if (!whole)
		return 0;
	r = map_file(flow, path, whole);
	t0 = now_seconds();
	flow->info.map_seconds = t0 - t1;
	/* auto's choice (once per ctx it may measure the ranking): with the checks. */
	if (r == 0)
		r = clear_check_kernel(flow);
	t1 = now_seconds();
	flow->info.check_seconds += t1 - t0;
	if (r == 0 && flow->in_memory)
		r = find_swapped(flow);
	flow->info.map_seconds += now_seconds() - t1;
	return r;
}

/*
 * Hands the flow to a job over its region and extra ranges. What was found
 * goes to ret_info first: the job may finish, and change it, at any time.
 */
static int clear_job_start(struct clear_flow *flow, struct prealloc_job **ret_job,
			   struct prealloc_clear_file_info *ret_info)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_CLEAR,
		.flags = flow->opts.flags & PREALLOC_CLEAR_VERIFY ? PREALLOC_JOB_VERIFY : 0,
		.threads = flow->opts.threads,
		.clear_kernel = flow->choice.name,
		.completion = flow->opts.completion,	/* read by the start only */
	};
	const struct job_flow jf = { .finish = clear_finish, .destroy = clear_destroy, .arg = flow };
	const struct job_spec spec = {
		.flow = &jf,
		.extra = flow->swapped,
		.nr_extra = flow->nr_swapped,
	};
	int r;

	if (ret_info)
		copy_sized_out(ret_info, &flow->info, sizeof(flow->info));
	/* Tests stop here: the file mapped and its pages found, no worker started. */
	test_pause("clear-mapped");
	flow->t_job = now_seconds();
	r = job_start_spec(flow->region, &jo, &spec, ret_job);
	return r < 0 ? flow_fail(flow, PREALLOC_CLEAR_STEP_START, r) : 0;
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
	flow->magic = CLEAR_FLOW_MAGIC;
	flow->ctx = ctx;
	flow->fd = -1;
	flow->info.size = sizeof(flow->info);
	flow->info.nonzero_offset = UINT64_MAX;
	r = copy_sized_in(&flow->opts, sizeof(flow->opts), opts);
	if (r == 0)
		r = flow_prepare(flow, path);
	if (r == 0 && flow->region) {
		r = clear_job_start(flow, ret_job, ret_info);
		if (r == 0)
			return 0;	/* the flow is the job's now */
	} else if (r == 0) {
		r = clear_rest(flow);	/* empty, or only a partial page */
	}
	if (ret_info)
		copy_sized_out(ret_info, &flow->info, sizeof(flow->info));
	flow_free(flow);
	return r;
}

EXPORT int prealloc_clear_file_info(struct prealloc_job *job,
				    struct prealloc_clear_file_info *ret_info)
{
	struct clear_flow *flow;

	if (!job || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	flow = job_flow_arg(job);
	if (!flow || flow->magic != CLEAR_FLOW_MAGIC)
		return -ENOENT;	/* not a clear job */
	prealloc_job_wait(job);	/* the finish has run: flow->result and info are final */
	copy_sized_out(ret_info, &flow->info, sizeof(flow->info));
	return flow->result;
}

static int clear_info_any(struct prealloc_job *job, void *ret_info)
{
	return prealloc_clear_file_info(job, ret_info);
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
	/* The flow's destroy, at the free, closes its fd and mapping and frees its region. */
	return job_sync(job, clear_info_any, ret_info ? ret_info : &info, ret_report);
}
