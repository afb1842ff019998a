/* SPDX-License-Identifier: MIT */
/*
 * cgroup limits on hugepages, walked from the caller's cgroup up to the
 * root. Paths come from <proc>/self/mountinfo and <proc>/self/cgroup; a
 * mount under /sys is read under the ctx's sys root, so tests can inject a
 * whole hierarchy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"

/* Where cgroup v2 is mounted (under the sys root when it sits in /sys). */
static int cgroup2_mount(const struct prealloc_ctx *ctx, char *buf, size_t len)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	int r = -ENOENT;
	FILE *f;

	if (proc_path(ctx, path, sizeof(path), "/self/mountinfo") < 0 || !(f = fopen(path, "re")))
		return -ENOENT;
	while (getline(&line, &cap, f) > 0) {
		char mnt[PATH_MAX], fstype[64];
		char *dash = strstr(line, " - ");

		/* Fields: id parent maj:min root mountpoint ... - fstype source opts */
		if (!dash || sscanf(dash, " - %63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if (!strncmp(mnt, "/sys/", 5))
			r = sys_path(ctx, buf, len, "%s", mnt + 4);
		else
			r = (size_t)snprintf(buf, len, "%s", mnt) < len ? 0 : -ENAMETOOLONG;
		break;
	}
	free(line);
	fclose(f);
	return r;
}

static int read_limit(const char *dir, const char *file, uint64_t *ret)
{
	char path[PATH_MAX + 64], buf[64];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	r = read_file_str(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	if (!strcmp(buf, "max")) {
		*ret = UINT64_MAX;
		return 0;
	}
	return read_file_u64(path, ret);
}

/* "2MB", "1GB": the hugetlb controller's name for a page size. */
static void size_name(uint64_t page_size, char *buf, size_t len)
{
	if (page_size >= PREALLOC_PAGE_1G)
		snprintf(buf, len, "%lluGB", (unsigned long long)(page_size >> 30));
	else if (page_size >= (UINT64_C(1) << 20))
		snprintf(buf, len, "%lluMB", (unsigned long long)(page_size >> 20));
	else
		snprintf(buf, len, "%lluKB", (unsigned long long)(page_size >> 10));
}

/* The caller's v2 cgroup, relative to the mount ("" for the root). */
static void own_cgroup(const struct prealloc_ctx *ctx, char *rel, size_t len)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	FILE *f;

	rel[0] = '\0';
	if (proc_path(ctx, path, sizeof(path), "/self/cgroup") < 0 || !(f = fopen(path, "re")))
		return;
	while (getline(&line, &cap, f) > 0) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(rel, len, "%s", strcmp(line + 3, "/") ? line + 3 : "");
		}
	}
	free(line);
	fclose(f);
}

/* The tighter of dir's max and rsvd.max for name; updates *left and where. */
static void dir_limits(const char *dir, const char *name, uint64_t page_size, uint64_t *left,
		       char *where, size_t where_len)
{
	static const char *const kinds[][2] = { { "max", "current" }, { "rsvd.max", "rsvd.current" } };

	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		char fmax[48], fcur[48];
		uint64_t max, cur = 0, pages;

		snprintf(fmax, sizeof(fmax), "hugetlb.%s.%s", name, kinds[k][0]);
		snprintf(fcur, sizeof(fcur), "hugetlb.%s.%s", name, kinds[k][1]);
		if (read_limit(dir, fmax, &max) < 0 || max == UINT64_MAX)
			continue;
		read_limit(dir, fcur, &cur);
		pages = max > cur ? (max - cur) / page_size : 0;
		if (pages < *left) {
			int n = snprintf(where, where_len, "%s/%s", dir, fmax);

			*left = pages;
			/* A path too long for the result is cut short; say so with "...". */
			if (n < 0 || (size_t)n >= where_len)
				snprintf(where + where_len - 4, 4, "...");
		}
	}
}

uint64_t cgroup_hugetlb_left(const struct prealloc_ctx *ctx, uint64_t page_size, char *where,
			     size_t where_len)
{
	char mnt[PATH_MAX], rel[PATH_MAX], dir[2 * PATH_MAX], name[16];
	uint64_t left = UINT64_MAX;
	size_t mnt_len;

	where[0] = '\0';
	if (cgroup2_mount(ctx, mnt, sizeof(mnt)) < 0)
		return left;
	own_cgroup(ctx, rel, sizeof(rel));
	size_name(page_size, name, sizeof(name));
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", mnt, rel) >= sizeof(dir))
		return left;
	mnt_len = strlen(mnt);
	for (;;) {
		char *slash;

		dir_limits(dir, name, page_size, &left, where, where_len);
		/* Up one level, stopping at the mount point (the root cgroup has no limits). */
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < mnt_len)
			break;
		*slash = '\0';
	}
	return left;
}
