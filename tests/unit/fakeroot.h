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

static uint64_t fr_read_u64(const char *dir, const char *rel)
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
static int fr_set_process(struct fakeroot *fr, int pid, unsigned long long start)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "%d/stat", pid);
	return fr_write(fr->proc, rel,
			"%d (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0\n", pid,
			start);
}

/* Node node's 2M pool: nr_hugepages and free_hugepages. */
static int fr_set_pool(struct fakeroot *fr, int node, uint64_t nr, uint64_t free_pages)
{
	char rel[128];
	int r;

	snprintf(rel, sizeof(rel), "devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages",
		 node);
	r = fr_write(fr->sys, rel, "%llu\n", (unsigned long long)nr);
	snprintf(rel, sizeof(rel),
		 "devices/system/node/node%d/hugepages/hugepages-2048kB/free_hugepages", node);
	if (r == 0)
		r = fr_write(fr->sys, rel, "%llu\n", (unsigned long long)free_pages);
	return r;
}

static uint64_t fr_pool_nr(struct fakeroot *fr, int node)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "devices/system/node/node%d/hugepages/hugepages-2048kB/nr_hugepages",
		 node);
	return fr_read_u64(fr->sys, rel);
}

/*
 * nodes nodes (0..nodes-1) with memory and 2M pools, the system-wide
 * counters, no cgroup2 mount, and this process (start time 1000). The state
 * directory is <dir>/state (not created: the library makes it).
 */
/* Records in the ctx's store now. */
static inline unsigned int nr_records(struct prealloc_ctx *ctx)
{
	struct prealloc_record_info info = { .size = sizeof(info) };
	unsigned int n = 0;

	while (prealloc_record(ctx, n, &info) == 0)
		n++;
	return n;
}

static int fakeroot_make(struct fakeroot *fr, int nodes)
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
		r |= fr_set_pool(fr, n, 0, 0);
	}
	r |= fr_write(fr->sys, "kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "0\n");
	r |= fr_write(fr->sys, "kernel/mm/hugepages/hugepages-2048kB/resv_hugepages", "0\n");
	r |= fr_write(fr->proc, "meminfo", "MemTotal: 16777216 kB\nMemAvailable: 8388608 kB\n"
					  "Hugepagesize: 2048 kB\n");
	r |= fr_write(fr->proc, "self/mounts", "proc /proc proc rw 0 0\n");
	r |= fr_write(fr->proc, "self/mountinfo",
		      "22 1 0:21 / /proc rw,relatime shared:12 - proc proc rw\n");
	r |= fr_write(fr->proc, "self/cgroup", "0::/\n");
	r |= fr_set_process(fr, (int)getpid(), 1000);
	return r ? -EIO : 0;
}

static struct prealloc_ctx *fakeroot_ctx(struct fakeroot *fr)
{
	struct prealloc_ctx_opts o = {
		.size = sizeof(o), .state_dir = fr->state, .sys_root = fr->sys, .proc_root = fr->proc,
	};
	struct prealloc_ctx *ctx = NULL;

	return prealloc_ctx_new_opts(&o, &ctx) == 0 ? ctx : NULL;
}

static void fakeroot_remove(struct fakeroot *fr)
{
	char cmd[600];

	if (!fr->dir[0] || strncmp(fr->dir, "/tmp/prealloc-unit.", 19))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fr->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "# cannot remove %s\n", fr->dir);
}

#endif
