/* SPDX-License-Identifier: MIT */
/*
 * DMA-mapping a region into a type1 container as one job: the parallel op
 * (populate, clear, or nothing) on every node, then the serial map op
 * (pin.c): one thread walks every node's chunks in order and calls
 * VFIO_IOMMU_MAP_DMA per piece. Type1 pins on the calling thread, so
 * mapping is serial; what prealloc buys is that every page is present
 * before it starts. Before anything: the IOVA placement, the container's
 * mapping budget (dma_avail) and RLIMIT_MEMLOCK. A map that fails or is
 * cancelled unmaps what it mapped in the job's finish.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>

#include "vfio.h"

#define MAP_MAGIC UINT64_C(0x7666696f6d6170)	/* "vfiomap" */

/* ---- the lock against prealloc_release ---------------------------------- */

/*
 * While a mapping pins a file's pages, prealloc_release refuses the file:
 * it probes for a shared flock (release.c pin_lock). flock locks belong to
 * an open file description, so each mapping takes its lock on a description
 * of its own: one taken on the region's fd would be one lock for every
 * handle mapping the region, and the first unmap (or a map that failed)
 * would drop it while the others still pin. The file is reopened through
 * /proc/self/fd (its inode, whatever its path names now), else by its path
 * if that is still the same file. *ret_fd -1: no file (memfd, anonymous or
 * the caller's memory: nothing a release could remove). -EBUSY: a release
 * holds it now.
 */
static int pin_lock_take(const struct prealloc_region *r, int *ret_fd)
{
	struct stat want, got;
	char self[64];
	int fd, mode, err;

	*ret_fd = -1;
	if (r->fd < 0 || !r->path)
		return 0;
	mode = fcntl(r->fd, F_GETFL);
	if (mode < 0 || fstat(r->fd, &want) < 0)
		return -errno;
	/* The access the region has: the caller may open the file so. */
	mode = (mode & O_ACCMODE) | O_CLOEXEC;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", r->fd);
	fd = open(self, mode);
	if (fd < 0)
		fd = openat(r->dir_fd, r->path, mode | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &got) < 0) {
		err = -errno;
		goto fail;
	}
	if (got.st_dev != want.st_dev || got.st_ino != want.st_ino) {
		err = -ESTALE;	/* the path names another file now */
		goto fail;
	}
	if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? -EBUSY : -errno;
		goto fail;
	}
	*ret_fd = fd;
	return 0;
fail:
	close(fd);
	return err;
}

/* Closing the mapping's own description drops its lock, and no other mapping's. */
static void pin_lock_drop(struct vfio_mapping *m)
{
	if (m->lock_fd >= 0)
		close(m->lock_fd);
	m->lock_fd = -1;
}

/* ---- the flow -------------------------------------------------------------- */

static int map_finish(struct prealloc_job *job, int status, void *arg)
{
	struct vfio_map_flow *f = arg;
	char where[32];

	(void)job;
	if (status == 0) {
		f->m->next = f->v->maps;
		f->v->maps = f->m;
		f->m = NULL;
	} else {
		if (status != -ECANCELED && !f->info.step)
			vfio_fail(&f->info, PREALLOC_VFIO_STEP_MAP, status,
				 "%s failed after %s: %s%s", f->v->backend == PREALLOC_VFIO_IOMMUFD ?
				 "IOMMU_IOAS_MAP" : "VFIO_IOMMU_MAP_DMA",
				 prealloc_format_size(f->info.bytes, where, sizeof(where)), strerror(-status),
				 status == -ENOMEM ? " (RLIMIT_MEMLOCK, or memory)"
				 : status == -ENOSPC ? " (the container's mapping limit)" : "");
		else if (status == -ECANCELED)
			f->info.error = status;
		/* What this map mapped goes, before anyone sees the job done. */
		vfio_pin_undo(f);
		f->info.bytes = 0;
		pin_lock_drop(f->m);
	}
	f->v->busy = false;
	return status;
}

static void map_destroy(void *arg)
{
	struct vfio_map_flow *f = arg;

	if (f->m) {
		pin_lock_drop(f->m);
		free(f->m);
	}
	free(f->calls);
	free(f);
}

/* VmLck of this process, bytes. */
static uint64_t locked_bytes(struct prealloc_ctx *ctx)
{
	char path[PATH_MAX], line[256];
	unsigned long long kib = 0;
	FILE *fp;

	if (proc_path(ctx, path, sizeof(path), "/self/status") < 0 || !(fp = fopen(path, "re")))
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "VmLck: %llu kB", &kib) == 1)
			break;
	fclose(fp);
	return (uint64_t)kib << 10;
}

static bool has_cap_ipc_lock(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32));
}

/*
 * An admission for the pin against RLIMIT_MEMLOCK: type1 charges every
 * pinned page to this process's VmLck; iommufd charges the user's locked
 * memory, of which this process can see only what its own iommufd handles
 * hold (another process of the same user makes the kernel refuse mid-map,
 * and the map unwinds).
 */
static int memlock_check(struct vfio_map_flow *f)
{
	struct prealloc_vfio_map_info *info = &f->info;
	bool iommufd = f->v->backend == PREALLOC_VFIO_IOMMUFD;
	char need[32], now[32], lim[32];
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0)
		return -errno;
	info->cap_ipc_lock = has_cap_ipc_lock();
	info->locked_now = iommufd ? vfio_iommufd_pinned() : locked_bytes(f->v->ctx);
	info->locked_needed = info->locked_now + f->region->length;
	info->locked_limit = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
	if (info->cap_ipc_lock || info->locked_needed <= info->locked_limit)
		return 0;
	return vfio_fail(info, PREALLOC_VFIO_STEP_MEMLOCK, -ENOMEM,
			"pinning needs %s of locked memory (%s locked already%s), RLIMIT_MEMLOCK "
			"allows %s: raise it (ulimit -l, systemd LimitMEMLOCK=, libvirt <memtune>"
			"<hard_limit>) or run with CAP_IPC_LOCK",
			prealloc_format_size(info->locked_needed, need, sizeof(need)),
			prealloc_format_size(info->locked_now, now, sizeof(now)),
			iommufd ? " by this process's iommufd mappings; iommufd charges the user" : "",
			prealloc_format_size(info->locked_limit, lim, sizeof(lim)));
}

/* Where the region goes, and whether the container has mappings enough for it. */
static int fit_check(struct vfio_map_flow *f, const struct prealloc_vfio_map_opts *o)
{
	const struct prealloc_vfio_info *vi = &f->v->info;
	const struct prealloc_region *reg = f->region;
	uint64_t min_page = vi->pgsize_bitmap ? vi->pgsize_bitmap & -vi->pgsize_bitmap : 4096;
	struct prealloc_iova_range *ranges = NULL;
	uint64_t calls;
	int n;

	n = iova_free_ranges(&f->v->info, f->v->maps, &ranges);
	if (n < 0) {
		free(ranges);
		return vfio_fail(&f->info, PREALLOC_VFIO_STEP_FIT, n, "cannot list the free IOVA: %s",
				strerror(-n));
	}
	if (n == 0)	/* all of it taken (to iova_place, no ranges means all free) */
		n = -ENOSPC;
	else
		n = iova_place(ranges, (unsigned int)n, min_page, MAX(reg->page_size, min_page),
			       reg->length, o->iova, o->flags & PREALLOC_VFIO_MAP_FIXED,
			       f->m->segments, PREALLOC_VFIO_MAX_SEGMENTS);
	free(ranges);
	if (n < 0)
		return vfio_fail(&f->info, PREALLOC_VFIO_STEP_FIT, n,
				"%llu bytes do not fit the device's usable IOVA %s0x%llx: %s",
				(unsigned long long)reg->length,
				o->flags & PREALLOC_VFIO_MAP_FIXED ? "at " : "from ",
				(unsigned long long)o->iova,
				n == -EINVAL ? "not aligned to the IOMMU page"
				: n == -ERANGE ? "the range crosses a reserved or unusable IOVA range, "
					       "or a region this handle has mapped"
					       : "not enough usable IOVA above it");
	f->m->nr_segments = (unsigned int)n;
	memcpy(f->info.segments, f->m->segments, sizeof(f->info.segments));
	f->info.nr_segments = (unsigned int)n;
	/* One call per VFIO_MAP_STEP of each extent, plus a split at every segment edge. */
	calls = (unsigned int)n + reg->nr_extents;
	for (unsigned int e = 0; e < reg->nr_extents; e++)
		calls += (reg->extents[e].length + VFIO_MAP_STEP - 1) / VFIO_MAP_STEP;
	if (vi->dma_avail != UINT32_MAX && calls > vi->dma_avail)
		return vfio_fail(&f->info, PREALLOC_VFIO_STEP_FIT, -ENOSPC,
				"the map needs up to %llu mappings, the container allows %u more "
				"(vfio_iommu_type1 dma_entry_limit)", (unsigned long long)calls,
				vi->dma_avail);
	return 0;
}

/* Per node slots in extent order; the ranges not resident (node -1) are extras to map too. */
static int map_plan(struct vfio_map_flow *f, struct job_range **ret_extra, size_t *ret_nr)
{
	const struct prealloc_region *reg = f->region;
	struct job_range *x = calloc(reg->nr_extents + 1, sizeof(*x));
	size_t nx = 0;

	if (!x)
		return -ENOMEM;
	for (unsigned int e = 0; e < reg->nr_extents; e++) {
		const struct prealloc_extent *ext = &reg->extents[e];
		unsigned int i = 0;

		if (ext->node < 0)
			x[nx++] = (struct job_range){ -1, ext->offset, ext->length };
		while (i < f->info.nr_nodes && f->info.nodes[i].node != ext->node)
			i++;
		if (i == f->info.nr_nodes && i < PREALLOC_VFIO_MAX_NODES)
			f->info.nodes[f->info.nr_nodes++].node = ext->node;
	}
	*ret_extra = x;
	*ret_nr = nx;
	return 0;
}

static int map_prepare(struct vfio_map_flow *f, const struct prealloc_vfio_map_opts *o)
{
	int r;

	for (struct vfio_mapping *m = f->v->maps; m; m = m->next)
		if (m->region == f->region)
			return vfio_fail(&f->info, PREALLOC_VFIO_STEP_FIT, -EEXIST,
					"the region is mapped already");
	r = vfio_info_read(f->v);	/* dma_avail now */
	if (r < 0)
		return vfio_fail(&f->info, PREALLOC_VFIO_STEP_INFO, r, "VFIO_IOMMU_GET_INFO: %s",
				strerror(-r));
	r = fit_check(f, o);
	if (r == 0 && !(o->flags & PREALLOC_VFIO_MAP_NO_MEMLOCK_CHECK))
		r = memlock_check(f);
	if (r < 0)
		return r;
	/* While mapped, prealloc_release of the file is refused. */
	r = pin_lock_take(f->region, &f->m->lock_fd);
	if (r == -EBUSY)
		return vfio_fail(&f->info, PREALLOC_VFIO_STEP_MAP, r,
				"the file is being removed (locked by a release)");
	if (r < 0)
		return vfio_fail(&f->info, PREALLOC_VFIO_STEP_MAP, r,
				"cannot lock the file against its removal while mapped: %s",
				strerror(-r));
	return 0;
}

/* The job's spec: the op (or none) on every node, then the serial map. */
static int map_job(struct vfio_map_flow *f, const struct prealloc_job_opts *job_opts,
		   struct prealloc_job **ret_job)
{
	struct prealloc_job_opts none = { .size = sizeof(none), .op = PREALLOC_OP_NONE };
	struct job_flow flow = { .finish = map_finish, .destroy = map_destroy, .arg = f };
	struct job_spec spec = { .flow = &flow, .serial = &vfio_pin_op, .serial_arg = f };
	struct job_range *extra;
	int r;

	r = map_plan(f, &extra, &spec.nr_extra);
	if (r < 0)
		return r;
	spec.extra = extra;
	f->v->busy = true;
	r = job_start_spec(f->region, job_opts ? job_opts : &none, &spec, ret_job);
	free(extra);
	if (r < 0) {
		f->v->busy = false;
		vfio_fail(&f->info, PREALLOC_VFIO_STEP_MAP, r, "cannot start the job: %s",
			 strerror(-r));
	}
	return r;
}

EXPORT int prealloc_vfio_map_start(struct prealloc_vfio *vfio, struct prealloc_region *region,
				   const struct prealloc_job_opts *job_opts,
				   const struct prealloc_vfio_map_opts *opts,
				   struct prealloc_job **ret_job, struct prealloc_vfio_map_info *ret_info)
{
	struct prealloc_vfio_map_opts o = { .size = sizeof(o) };
	struct vfio_map_flow *f;
	int r;

	if (!vfio || !region || !ret_job || vfio->busy)
		return vfio && vfio->busy ? -EBUSY : -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f || !(f->m = calloc(1, sizeof(*f->m)))) {
		free(f);
		return -ENOMEM;
	}
	f->magic = MAP_MAGIC;
	f->v = vfio;
	f->region = region;
	f->m->region = region;
	f->m->lock_fd = -1;
	f->info.size = sizeof(f->info);
	r = opts ? copy_sized_in(&o, sizeof(o), opts) : 0;
	if (r == 0 && (o.flags & ~7u))
		r = -EINVAL;
	f->readonly = o.flags & PREALLOC_VFIO_MAP_READONLY;
	if (r == 0)
		r = map_prepare(f, &o);
	if (r == 0)
		r = map_job(f, job_opts, ret_job);
	if (ret_info && ret_info->size >= sizeof(size_t))
		copy_sized_out(ret_info, &f->info, sizeof(f->info));
	if (r < 0)
		map_destroy(f);
	return r;
}

EXPORT int prealloc_vfio_map_info(struct prealloc_job *job, struct prealloc_vfio_map_info *ret_info)
{
	struct vfio_map_flow *f = job_flow_arg(job);

	if (!f || f->magic != MAP_MAGIC || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	prealloc_job_wait(job);
	copy_sized_out(ret_info, &f->info, sizeof(f->info));
	return 0;
}

static int map_info_any(struct prealloc_job *job, void *ret_info)
{
	return prealloc_vfio_map_info(job, ret_info);
}

EXPORT int prealloc_vfio_map(struct prealloc_vfio *vfio, struct prealloc_region *region,
			     const struct prealloc_job_opts *job_opts,
			     const struct prealloc_vfio_map_opts *opts,
			     struct prealloc_vfio_map_info *ret_info, struct prealloc_report *ret_report)
{
	struct prealloc_job *job;
	int r;

	r = prealloc_vfio_map_start(vfio, region, job_opts, opts, &job, ret_info);
	return r < 0 ? r : job_sync(job, map_info_any, ret_info, ret_report);
}

EXPORT int prealloc_vfio_unmap(struct prealloc_vfio *vfio, struct prealloc_region *region)
{
	struct vfio_mapping **pp, *m;
	int r;

	if (!vfio || !region)
		return -EINVAL;
	for (pp = &vfio->maps; *pp && (*pp)->region != region; pp = &(*pp)->next)
		;
	m = *pp;
	if (!m)
		return -ENOENT;
	r = vfio_unmap_segments(vfio, m);
	*pp = m->next;
	pin_lock_drop(m);
	free(m);
	return r;
}
