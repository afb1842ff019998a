/* SPDX-License-Identifier: MIT */
/*
 * Backing: what a region's memory is (anonymous, THP, memfd, a hugetlbfs or
 * tmpfs file, or a range the caller mapped), made at its exact size and
 * mapped; region.c then places it on its nodes.
 */
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "memory.h"

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004U
#endif
#ifndef MFD_HUGE_SHIFT
#define MFD_HUGE_SHIFT 26
#endif

/* Maps len bytes aligned to align (THP needs 2 MiB alignment). */
static void *map_anon_aligned(uint64_t len, uint64_t align)
{
	uint8_t *p, *aligned;

	p = mmap(NULL, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	aligned = (uint8_t *)ALIGN_UP((uintptr_t)p, align);
	if (aligned > p)
		munmap(p, aligned - p);
	if (aligned + len < p + len + align)
		munmap(aligned + len, (p + len + align) - (aligned + len));
	return aligned;
}

static int memfd_flags(uint64_t page_size, unsigned int *ret)
{
	*ret = MFD_CLOEXEC;
	if (page_size == PREALLOC_PAGE_4K)
		return 0;
	if (page_size != PREALLOC_PAGE_2M && page_size != PREALLOC_PAGE_1G)
		return -EINVAL;
	*ret |= MFD_HUGETLB | ((unsigned int)__builtin_ctzll(page_size) << MFD_HUGE_SHIFT);
	return 0;
}

/* Opens (or creates) a FILE backing; learns the page size from its fs. */
static int open_file(struct prealloc_region *r, const struct prealloc_region_opts *o)
{
	struct statfs sfs;
	struct stat st;
	int fd;

	fd = (o->flags & PREALLOC_REGION_EXISTING)
		     ? -1
		     : openat(r->dir_fd, o->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			      0600);
	if (fd >= 0) {
		r->created_file = true;
	} else if ((o->flags & PREALLOC_REGION_EXISTING) ||
		   (errno == EEXIST && (o->flags & PREALLOC_REGION_REUSE))) {
		/* A file someone may hold a lease on (a warm file back from its holder). */
		fd = open_no_lease_wait(r->dir_fd, o->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return fd;
	} else {
		return -errno;
	}
	r->fd = fd;
	if (fstatfs(fd, &sfs) < 0 || fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((unsigned long)sfs.f_type == HUGETLBFS_MAGIC)
		r->page_size = (uint64_t)sfs.f_bsize;
	else if ((unsigned long)sfs.f_type == TMPFS_MAGIC)
		r->page_size = PREALLOC_PAGE_4K;
	else
		return -EMEDIUMTYPE;
	if (o->page_size && o->page_size != r->page_size)
		return -EMEDIUMTYPE;
	if (!r->created_file && (uint64_t)st.st_size != o->length)
		return -EEXIST;	/* reuse only a file of exactly this size */
	if (r->created_file && ftruncate(fd, (off_t)o->length) < 0)
		return -errno;
	return 0;
}

/* Anonymous memory, 4K (no THP) or THP, mapped and advised. */
static int map_anon(struct prealloc_region *r, const struct prealloc_region_opts *o)
{
	void *p;

	r->page_size = o->backing == PREALLOC_BACKING_ANON ? PREALLOC_PAGE_4K : PREALLOC_PAGE_2M;
	if (o->page_size && o->page_size != r->page_size)
		return -EINVAL;
	if (o->length % r->page_size)
		return -EINVAL;
	p = map_anon_aligned(o->length, r->page_size);
	if (!p)
		return -errno;
	r->addr = p;
	r->owns_mapping = true;
	r->thp = o->backing == PREALLOC_BACKING_ANON_THP;
	if (madvise(p, o->length, r->thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0)
		return -errno;
	return 0;
}

/* A memfd (4K or hugetlb) at its exact size, not yet mapped. */
static int open_memfd(struct prealloc_region *r, const struct prealloc_region_opts *o)
{
	unsigned int mflags;
	int ret;

	r->page_size = o->page_size ? o->page_size : PREALLOC_PAGE_4K;
	ret = memfd_flags(r->page_size, &mflags);
	if (ret < 0)
		return ret;
	if (o->length % r->page_size)
		return -EINVAL;
	r->fd = memfd_create("prealloc", mflags);
	if (r->fd < 0)
		return -errno;
	if (ftruncate(r->fd, (off_t)o->length) < 0)
		return -errno;
	return 0;
}

/* A FILE backing opened (or created) at its path, not yet mapped. */
static int open_path(struct prealloc_region *r, const struct prealloc_region_opts *o)
{
	int ret;

	if (!o->path)
		return -EINVAL;
	r->path = strdup(o->path);
	if (!r->path)
		return -ENOMEM;
	ret = open_file(r, o);
	if (ret < 0)
		return ret;
	if (o->length % r->page_size)
		return -EINVAL;
	return 0;
}

int backing_map(struct prealloc_region *r, const struct prealloc_region_opts *o)
{
	void *p;
	int ret;

	switch (o->backing) {
	case PREALLOC_BACKING_ANON:
	case PREALLOC_BACKING_ANON_THP:
		return map_anon(r, o);
	case PREALLOC_BACKING_MEMFD:
		ret = open_memfd(r, o);
		break;
	case PREALLOC_BACKING_FILE:
		ret = open_path(r, o);
		break;
	case PREALLOC_BACKING_MAPPED:
		r->page_size = o->page_size ? o->page_size : PREALLOC_PAGE_4K;
		if (!o->addr || (uintptr_t)o->addr % r->page_size || o->length % r->page_size)
			return -EINVAL;
		r->addr = o->addr;
		return 0;
	default:
		return -EINVAL;
	}
	if (ret < 0)
		return ret;
	p = mmap(NULL, o->length, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->addr = p;
	r->owns_mapping = true;
	r->thp = (o->flags & PREALLOC_REGION_THP) && r->page_size == PREALLOC_PAGE_4K;
	if (r->thp && madvise(p, o->length, MADV_HUGEPAGE) < 0)
		return -errno;
	return 0;
}
