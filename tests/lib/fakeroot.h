/* SPDX-License-Identifier: MIT */
/*
 * A fake sysfs and procfs under a temporary directory, for tests that run
 * the library's admission, gc and store code without root and without
 * touching the machine's pools: prealloc_ctx_new_opts() reads them through
 * sys_root and proc_root. Plain files keep what is written to them, so a
 * pool "grows" to exactly what the library writes.
 */
#ifndef PREALLOC_TEST_FAKEROOT_H
#define PREALLOC_TEST_FAKEROOT_H

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fakeroot {
	char dir[256];		/* the temporary directory */
	char sys[300], proc[300], state[300];
};

/* Writes text to <dir>/<rel>, creating the directories on the way. */
__attribute__((format(printf, 3, 4))) static int fr_write(const char *dir, const char *rel,
							   const char *fmt, ...)
{
	char path[1024];
	va_list ap;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	f = fopen(path, "w");
	if (!f)
		return -errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	return fclose(f) == 0 ? 0 : -errno;
}

static inline uint64_t fr_read_u64(const char *dir, const char *rel)
{
	char path[1024];
	unsigned long long v = ~0ULL;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "r");
	if (!f)
		return ~0ULL;
	if (fscanf(f, "%llu", &v) != 1)
		v = ~0ULL;
	fclose(f);
	return v;
}

/* A process's stat line with start time start (field 22); the name has spaces and parens. */
static inline int fr_set_process(struct fakeroot *fr, int pid, unsigned long long start)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "%d/stat", pid);
	return fr_write(fr->proc, rel,
			"%d (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", pid,
			start);
}

/* A page size's pool directory as sysfs names it: "hugepages-2048kB". */
static inline void fr_pool_dir(uint64_t page_size, char *buf, size_t len)
{
	snprintf(buf, len, "hugepages-%llukB", (unsigned long long)(page_size >> 10));
}

/* Node node's pool of page_size: nr_hugepages and free_hugepages. */
static inline int fr_set_pool_of(struct fakeroot *fr, int node, uint64_t page_size,
				 uint64_t nr, uint64_t free_pages)
{
	char rel[160], dir[32];
	int r;

	fr_pool_dir(page_size, dir, sizeof(dir));
	snprintf(rel, sizeof(rel), "devices/system/node/node%d/hugepages/%s/nr_hugepages", node,
		 dir);
	r = fr_write(fr->sys, rel, "%llu\n", (unsigned long long)nr);
	snprintf(rel, sizeof(rel), "devices/system/node/node%d/hugepages/%s/free_hugepages", node,
		 dir);
	if (r == 0)
		r = fr_write(fr->sys, rel, "%llu\n", (unsigned long long)free_pages);
	return r;
}

/* Node node's 2M pool. */
static inline int fr_set_pool(struct fakeroot *fr, int node, uint64_t nr, uint64_t free_pages)
{
	return fr_set_pool_of(fr, node, UINT64_C(2) << 20, nr, free_pages);
}

static inline uint64_t fr_pool_nr_of(struct fakeroot *fr, int node, uint64_t page_size)
{
	char rel[160], dir[32];

	fr_pool_dir(page_size, dir, sizeof(dir));
	snprintf(rel, sizeof(rel), "devices/system/node/node%d/hugepages/%s/nr_hugepages", node,
		 dir);
	return fr_read_u64(fr->sys, rel);
}

static inline uint64_t fr_pool_nr(struct fakeroot *fr, int node)
{
	return fr_pool_nr_of(fr, node, UINT64_C(2) << 20);
}

/*
 * The system-wide counters of page_size: free_hugepages, and resv_hugepages
 * (pages mapped by anyone, prealloc's runs included, not faulted yet).
 */
static inline int fr_set_global(struct fakeroot *fr, uint64_t page_size, uint64_t free_pages,
				uint64_t resv)
{
	char rel[160], dir[32];
	int r;

	fr_pool_dir(page_size, dir, sizeof(dir));
	snprintf(rel, sizeof(rel), "kernel/mm/hugepages/%s/free_hugepages", dir);
	r = fr_write(fr->sys, rel, "%llu\n", (unsigned long long)free_pages);
	snprintf(rel, sizeof(rel), "kernel/mm/hugepages/%s/resv_hugepages", dir);
	if (r == 0)
		r = fr_write(fr->sys, rel, "%llu\n", (unsigned long long)resv);
	return r;
}

/* Node node's meminfo, in kB; active and inactive file cache apart, as the kernel shows them. */
static inline int fr_set_meminfo(struct fakeroot *fr, int node, uint64_t total_kb,
				 uint64_t free_kb, uint64_t active_file_kb,
				 uint64_t inactive_file_kb, uint64_t slab_kb)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "devices/system/node/node%d/meminfo", node);
	return fr_write(fr->sys, rel,
			"Node %d MemTotal: %llu kB\nNode %d MemFree: %llu kB\n"
			"Node %d Active(anon): 999 kB\nNode %d Active(file): %llu kB\n"
			"Node %d Inactive(file): %llu kB\nNode %d SReclaimable: %llu kB\n"
			"Node %d SUnreclaim: 777 kB\n",
			node, (unsigned long long)total_kb, node, (unsigned long long)free_kb, node,
			node, (unsigned long long)active_file_kb, node,
			(unsigned long long)inactive_file_kb, node, (unsigned long long)slab_kb,
			node);
}

/*
 * This process in cgroup rel ("/machine/vm1", "/" for the root) of a
 * cgroup v2 hierarchy mounted at /sys/fs/cgroup (under the sys root).
 */
static inline int fr_cgroup_v2(struct fakeroot *fr, const char *rel)
{
	int r = fr_write(fr->proc, "self/mountinfo",
			 "22 1 0:21 / /proc rw,relatime shared:12 - proc proc rw\n"
			 "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - "
			 "cgroup2 cgroup2 rw,nsdelegate\n");

	return r ? r : fr_write(fr->proc, "self/cgroup", "0::%s\n", rel);
}

/*
 * This process in cgroup rel of a cgroup v1 hierarchy of controller, mounted
 * at /sys/fs/cgroup/<controller> (a v2 line for the root cgroup, as on a
 * hybrid system, and another v1 controller that must not be taken for it).
 */
static inline int fr_cgroup_v1(struct fakeroot *fr, const char *controller, const char *rel)
{
	int r = fr_write(fr->proc, "self/mountinfo",
			 "22 1 0:21 / /proc rw,relatime shared:12 - proc proc rw\n"
			 "33 31 0:30 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
			 "35 31 0:32 / /sys/fs/cgroup/%s rw,relatime - cgroup cgroup rw,%s\n",
			 controller, controller);

	return r ? r : fr_write(fr->proc, "self/cgroup", "5:cpu:/\n4:%s:%s\n0::/\n", controller,
				rel);
}

/* No cgroup hierarchy mounted, this process in the root. */
static inline int fr_cgroup_none(struct fakeroot *fr)
{
	int r = fr_write(fr->proc, "self/mountinfo",
			 "22 1 0:21 / /proc rw,relatime shared:12 - proc proc rw\n");

	return r ? r : fr_write(fr->proc, "self/cgroup", "0::/\n");
}

/* A cgroup control file, rel under /sys/fs/cgroup: a byte count. */
static inline int fr_cg_bytes(struct fakeroot *fr, const char *rel, uint64_t bytes)
{
	char path[300];

	snprintf(path, sizeof(path), "fs/cgroup/%s", rel);
	return fr_write(fr->sys, path, "%llu\n", (unsigned long long)bytes);
}

/* A cgroup control file, rel under /sys/fs/cgroup: "max" (no limit). */
static inline int fr_cg_max(struct fakeroot *fr, const char *rel)
{
	char path[300];

	snprintf(path, sizeof(path), "fs/cgroup/%s", rel);
	return fr_write(fr->sys, path, "max\n");
}

/* Removes a whole fake cgroup tree, so that a test starts from no limits. */
static inline void fr_cgroup_clear(struct fakeroot *fr)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/fs/cgroup'", fr->sys);
	if (strncmp(fr->dir, "/tmp/prealloc-unit.", 19) || system(cmd) != 0)
		fprintf(stderr, "# cannot remove %s/fs/cgroup\n", fr->sys);
	fr_cgroup_none(fr);
}

/* Records in the ctx's store now. */
static inline unsigned int nr_records(struct prealloc_ctx *ctx)
{
	struct prealloc_record_info info = { .size = sizeof(info) };
	unsigned int n = 0;

	while (prealloc_record(ctx, n, &info) == 0)
		n++;
	return n;
}

/*
 * nodes nodes (0..nodes-1, at most 4) with memory (16 GiB, 8 GiB free) and
 * empty 2M and 1G pools, the system-wide counters, no cgroup mount, and
 * this process (start time 1000). The state directory is <dir>/state (not
 * created: the library makes it).
 */
static inline int fakeroot_make(struct fakeroot *fr, int nodes)
{
	int r = 0;

	snprintf(fr->dir, sizeof(fr->dir), "/tmp/prealloc-unit.XXXXXX");
	if (!mkdtemp(fr->dir))
		return -errno;
	snprintf(fr->sys, sizeof(fr->sys), "%s/sys", fr->dir);
	snprintf(fr->proc, sizeof(fr->proc), "%s/proc", fr->dir);
	snprintf(fr->state, sizeof(fr->state), "%s/state", fr->dir);
	r |= fr_write(fr->sys, "devices/system/node/has_memory", "0-%d\n", nodes - 1);
	for (int n = 0; n < nodes; n++) {
		char rel[128];

		snprintf(rel, sizeof(rel), "devices/system/node/node%d/meminfo", n);
		r |= fr_write(fr->sys, rel, "Node %d MemTotal: 16777216 kB\nNode %d MemFree: 8388608 kB\n",
			      n, n);
		snprintf(rel, sizeof(rel), "devices/system/node/node%d/cpulist", n);
		r |= fr_write(fr->sys, rel, "0-1023\n");
		snprintf(rel, sizeof(rel), "devices/system/node/node%d/distance", n);
		r |= fr_write(fr->sys, rel, "10 20 20 20\n");
		snprintf(rel, sizeof(rel),
			 "devices/system/node/node%d/hugepages/hugepages-2048kB/surplus_hugepages", n);
		r |= fr_write(fr->sys, rel, "0\n");
		snprintf(rel, sizeof(rel),
			 "devices/system/node/node%d/hugepages/hugepages-1048576kB/"
			 "surplus_hugepages", n);
		r |= fr_write(fr->sys, rel, "0\n");
		r |= fr_set_pool(fr, n, 0, 0);
		r |= fr_set_pool_of(fr, n, UINT64_C(1) << 30, 0, 0);
	}
	r |= fr_set_global(fr, UINT64_C(2) << 20, 0, 0);
	r |= fr_set_global(fr, UINT64_C(1) << 30, 0, 0);
	r |= fr_write(fr->proc, "meminfo", "MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n"
					  "Hugepagesize: 2048 kB\n");
	r |= fr_write(fr->proc, "self/mounts", "proc /proc proc rw 0 0\n");
	r |= fr_cgroup_none(fr);
	r |= fr_set_process(fr, (int)getpid(), 1000);
	return r ? -EIO : 0;
}

static inline struct prealloc_ctx *fakeroot_ctx(struct fakeroot *fr)
{
	struct prealloc_ctx_opts o = {
		.size = sizeof(o), .state_dir = fr->state, .sys_root = fr->sys, .proc_root = fr->proc,
	};
	struct prealloc_ctx *ctx = NULL;

	return prealloc_ctx_new_opts(&o, &ctx) == 0 ? ctx : NULL;
}

static inline void fakeroot_remove(struct fakeroot *fr)
{
	char cmd[600];

	if (!fr->dir[0] || strncmp(fr->dir, "/tmp/prealloc-unit.", 19))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fr->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# cannot remove %s\n", fr->dir);
}

#endif
