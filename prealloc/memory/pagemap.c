/* SPDX-License-Identifier: MIT */
/*
 * Where 4K pages are, read by each worker for its own chunks: the page
 * frame of every page from /proc/self/pagemap, its node from the memory
 * block it falls in (/sys/devices/system/node/nodeN/memoryM). numa_maps
 * counts a whole mapping in one walk, but on one thread, after every
 * worker is done: 2 GiB of 4K pages took 10.6-11.9 ms, 5 % of the
 * populate, and on many cores the share grows with them. pagemap costs
 * the same per page (10.5 ms for 2 GiB) and splits over the workers.
 *
 * Frames are readable only with CAP_SYS_ADMIN (else pagemap reads them as
 * 0), and only where the kernel lists memory blocks: placement_pagemap_ok
 * says whether both hold, and the caller keeps numa_maps and move_pages
 * otherwise. A page only read maps the shared zero page (or the huge one):
 * it counts as missing, as numa_maps and move_pages count it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memory.h"

#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_PFN_MASK ((UINT64_C(1) << 55) - 1)
#define PM_BATCH 4096
#define SYS_NODE "/sys/devices/system/node"

/*
 * Memory block b lies on node[b] (-1: none known, or two); loaded once: a
 * block hot-added later is unknown (its frames go to move_pages), one
 * removed and re-added elsewhere would be missed. 4K base pages (x86-64).
 */
static struct {
	pthread_once_t once;
	uint64_t block_pages;	/* 4K pages per memory block */
	size_t nr;
	int16_t *node;
	/*
	 * The shared zero pages: read-only faults of anonymous memory map them,
	 * and a page never written is missing, as numa_maps and move_pages say.
	 */
	uint64_t zero_pfn, huge_zero_pfn;
} blocks = { .once = PTHREAD_ONCE_INIT };

/* The frame p maps now (0: none or unreadable). */
static uint64_t frame_of(int fd, const volatile uint8_t *p)
{
	uint64_t e = 0;

	(void)*p;	/* a read fault: the zero page for untouched anonymous memory */
	if (pread(fd, &e, sizeof(e), (off_t)((uintptr_t)p / PREALLOC_PAGE_4K * sizeof(e))) !=
	    (ssize_t)sizeof(e))
		return 0;
	return e & PM_PRESENT ? e & PM_PFN_MASK : 0;
}

/* The zero page's frame and the huge zero page's first, as this process maps them. */
static void zero_frames(void)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	size_t len = 4u << 20;
	uint8_t *m;

	if (fd < 0)
		return;
	m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m != MAP_FAILED) {
		uint8_t *huge = (uint8_t *)ALIGN_UP((uintptr_t)m + PREALLOC_PAGE_4K, PREALLOC_PAGE_2M);

		madvise(m, PREALLOC_PAGE_4K, MADV_NOHUGEPAGE);
		blocks.zero_pfn = frame_of(fd, m);
		madvise(huge, PREALLOC_PAGE_2M, MADV_HUGEPAGE);
		blocks.huge_zero_pfn = frame_of(fd, huge);
		if (blocks.huge_zero_pfn == blocks.zero_pfn)
			blocks.huge_zero_pfn = 0;	/* no huge zero page here */
		munmap(m, len);
	}
	close(fd);
}

static bool zero_frame(uint64_t pfn)
{
	return pfn == blocks.zero_pfn ||
	       (blocks.huge_zero_pfn && pfn >= blocks.huge_zero_pfn &&
		pfn < blocks.huge_zero_pfn + PREALLOC_PAGE_2M / PREALLOC_PAGE_4K);
}

/* node's memoryM entries into the table (grown as needed). */
static int blocks_of_node(int node, const char *dir)
{
	struct dirent *d;
	DIR *dd = opendir(dir);
	unsigned long m;

	if (!dd)
		return -errno;
	while ((d = readdir(dd))) {
		if (sscanf(d->d_name, "memory%lu", &m) != 1)
			continue;
		if (m >= blocks.nr) {
			size_t nr = MAX((size_t)m + 1, blocks.nr * 2);
			int16_t *n = realloc(blocks.node, nr * sizeof(*n));

			if (!n) {
				closedir(dd);
				return -ENOMEM;
			}
			for (size_t i = blocks.nr; i < nr; i++)
				n[i] = -1;
			blocks.node = n;
			blocks.nr = nr;
		}
		/* A block under two nodes spans both (-2): its frames are asked of move_pages. */
		if (blocks.node[m] == -1 || blocks.node[m] == node)
			blocks.node[m] = (int16_t)node;
		else
			blocks.node[m] = -2;
	}
	closedir(dd);
	return 0;
}

static void blocks_load(void)
{
	char buf[64], dir[300];
	unsigned long long bytes = 0;
	struct dirent *d;
	DIR *dd;
	int node;

	if (read_file_str("/sys/devices/system/memory/block_size_bytes", buf, sizeof(buf)) < 0 ||
	    sscanf(buf, "%llx", &bytes) != 1 || bytes < PREALLOC_PAGE_4K)
		return;
	dd = opendir(SYS_NODE);
	while (dd && (d = readdir(dd)))
		if (sscanf(d->d_name, "node%d", &node) == 1 && node >= 0 && node < PREALLOC_MAX_NODES) {
			snprintf(dir, sizeof(dir), SYS_NODE "/%s", d->d_name);
			if (blocks_of_node(node, dir) < 0)
				blocks.nr = 0;	/* half a table is no table */
		}
	if (dd)
		closedir(dd);
	blocks.block_pages = bytes / PREALLOC_PAGE_4K;
	zero_frames();
}

/* The node of frame pfn, -1 unknown. */
static int pfn_node(uint64_t pfn)
{
	uint64_t b = pfn / blocks.block_pages;

	return b < blocks.nr && blocks.node[b] >= 0 ? blocks.node[b] : -1;
}

bool placement_pagemap_ok(void)
{
	uint64_t e = 0;
	int probe = 1, fd;

	pthread_once(&blocks.once, blocks_load);
	if (!blocks.nr || !blocks.block_pages || !blocks.zero_pfn)
		return false;
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* A page of our own stack is present: a frame of 0 means no CAP_SYS_ADMIN. */
	if (pread(fd, &e, sizeof(e), (off_t)((uintptr_t)&probe / PREALLOC_PAGE_4K * sizeof(e))) !=
	    (ssize_t)sizeof(e))
		e = 0;
	close(fd);
	return (e & PM_PRESENT) && (e & PM_PFN_MASK) && pfn_node(e & PM_PFN_MASK) >= 0;
}

int placement_pagemap(const uint8_t *addr, uint64_t len, int node, uint64_t *ret_on,
		      uint64_t *ret_off, uint64_t *ret_missing)
{
	uint64_t *e = malloc(PM_BATCH * sizeof(*e)), first = (uintptr_t)addr / PREALLOC_PAGE_4K;
	uint64_t n = len / PREALLOC_PAGE_4K, on = 0, off = 0, missing = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), r = 0;

	if (!e || fd < 0) {
		r = !e ? -ENOMEM : -errno;
		goto out;
	}
	for (uint64_t done = 0; done < n && r == 0;) {
		size_t k = (size_t)MIN(n - done, (uint64_t)PM_BATCH);
		ssize_t got = pread(fd, e, k * sizeof(*e), (off_t)((first + done) * sizeof(*e)));

		if (got != (ssize_t)(k * sizeof(*e))) {
			r = got < 0 ? -errno : -EIO;
			break;
		}
		for (size_t i = 0; i < k && r == 0; i++) {
			uint64_t pfn = e[i] & PM_PFN_MASK;
			int at = e[i] & PM_PRESENT && !zero_frame(pfn) ? pfn_node(pfn) : -2;

			if (at == -1)
				r = -ENOENT;	/* a frame in no block we know: ask move_pages */
			on += at == node;
			off += at >= 0 && at != node;
			missing += at == -2;
		}
		done += k;
	}
	if (r == 0) {
		*ret_on += on;
		*ret_off += off;
		*ret_missing += missing;
	}
out:
	if (fd >= 0)
		close(fd);
	free(e);
	return r;
}
