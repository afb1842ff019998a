/* SPDX-License-Identifier: MIT */
/*
 * cgroup limits on hugepages, walked from the caller's cgroup up to the
 * root. Paths come from <proc>/self/mountinfo and <proc>/self/cgroup; a
 * mount under /sys is read under the ctx's sys root, so tests can inject a
 * whole hierarchy.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_limits.h"

/* A mount point under the sys root when it sits in /sys (tests inject a tree). */
static int rooted(const struct prealloc_ctx *ctx, const char *mnt, char *buf, size_t len)
{
	if (!strncmp(mnt, "/sys/", 5))
		return sys_path(ctx, buf, len, "%s", mnt + 4);
	return (size_t)snprintf(buf, len, "%s", mnt) < len ? 0 : -ENAMETOOLONG;
}

/* True when the comma-separated list has word. */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, word, n) && (p[n] == ',' || p[n] == '\0' || p[n] == '\n'))
			return true;
	return false;
}

int cgroup_mountinfo_line(const char *line, const char *controller, char *mnt, size_t len)
{
	char point[PATH_MAX], fstype[64], opts[1024] = "";
	const char *dash = strstr(line, " - ");

	/* Fields: id parent maj:min root mountpoint ... - fstype source super-options */
	if (!dash || sscanf(dash, " - %63s %*s %1023s", fstype, opts) < 1 ||
	    sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
		return 0;
	if (controller ? strcmp(fstype, "cgroup") || !has_word(opts, controller)
		       : strcmp(fstype, "cgroup2"))
		return 0;
	return (size_t)snprintf(mnt, len, "%s", point) < len ? 1 : -ENAMETOOLONG;
}

/*
 * Where the hierarchy of controller is mounted: cgroup v2 (controller
 * NULL), or the v1 hierarchy whose super options name the controller.
 */
static int cgroup_mount(const struct prealloc_ctx *ctx, const char *controller, char *buf,
			size_t len)
{
	char path[PATH_MAX], mnt[PATH_MAX], *line = NULL;
	size_t cap = 0;
	int r = -ENOENT;
	FILE *f;

	if (proc_path(ctx, path, sizeof(path), "/self/mountinfo") < 0 || !(f = fopen(path, "re")))
		return -ENOENT;
	while (r == -ENOENT && getline(&line, &cap, f) > 0)
		if (cgroup_mountinfo_line(line, controller, mnt, sizeof(mnt)) > 0)
			r = rooted(ctx, mnt, buf, len);
	free(line);
	fclose(f);
	return r;
}

int cgroup_parse_limit(const char *text, uint64_t *ret)
{
	char *end;

	if (!strcmp(text, "max") || !strcmp(text, "max\n")) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	errno = 0;
	*ret = strtoull(text, &end, 10);
	return errno || (*end && strcmp(end, "\n")) ? -EINVAL : 0;
}

static int read_limit(const char *dir, const char *file, uint64_t *ret)
{
	char path[PATH_MAX + 64], buf[64];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	r = read_file_str(path, buf, sizeof(buf));
	return r < 0 ? r : cgroup_parse_limit(buf, ret);
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

int cgroup_self_line(const char *line, const char *controller, char *rel, size_t len)
{
	const char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	char ctrls[1024];
	size_t n;

	/* "hierarchy-id:controllers:path": v2 is "0::path". */
	if (!c2 || (size_t)(c2 - c1 - 1) >= sizeof(ctrls))
		return 0;
	snprintf(ctrls, sizeof(ctrls), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
	if (controller ? !has_word(ctrls, controller) : c1 - line != 1 || line[0] != '0' || ctrls[0])
		return 0;
	n = strcspn(c2 + 1, "\n");
	if (n == 1 && c2[1] == '/')
		n = 0;	/* the root */
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(rel, c2 + 1, n);
	rel[n] = '\0';
	return 1;
}

/* The caller's cgroup for controller (NULL: v2), relative to its mount ("" for the root). */
static void own_cgroup(const struct prealloc_ctx *ctx, const char *controller, char *rel,
		       size_t len)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	FILE *f;

	rel[0] = '\0';
	if (proc_path(ctx, path, sizeof(path), "/self/cgroup") < 0 || !(f = fopen(path, "re")))
		return;
	while (getline(&line, &cap, f) > 0)
		if (cgroup_self_line(line, controller, rel, len) != 0)
			break;
	free(line);
	fclose(f);
}

/*
 * Calls fn for the caller's cgroup of controller (NULL: v2) and each
 * ancestor up to the mount, the tightest result kept in *left.
 */
static void walk_up(const struct prealloc_ctx *ctx, const char *controller,
		    void (*fn)(const char *dir, void *arg), void *arg)
{
	char mnt[PATH_MAX], rel[PATH_MAX], dir[2 * PATH_MAX];
	size_t mnt_len;

	if (cgroup_mount(ctx, controller, mnt, sizeof(mnt)) < 0)
		return;
	own_cgroup(ctx, controller, rel, sizeof(rel));
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", mnt, rel) >= sizeof(dir))
		return;
	mnt_len = strlen(mnt);
	for (;;) {
		char *slash;

		fn(dir, arg);
		/* Up one level, stopping at the mount point (the root has no limits). */
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < mnt_len)
			break;
		*slash = '\0';
	}
}

struct limit_walk {
	uint64_t page_size;
	char name[16];		/* hugetlb: "2MB" */
	uint64_t left;		/* bytes (memory) or pages (hugetlb) */
	char *where;
	size_t where_len;
};

static void note_limit(struct limit_walk *w, uint64_t left, const char *dir, const char *file)
{
	int n;

	if (left >= w->left)
		return;
	w->left = left;
	n = snprintf(w->where, w->where_len, "%s/%s", dir, file);
	/* A path too long for the result is cut short; say so with "...". */
	if (n < 0 || (size_t)n >= w->where_len)
		snprintf(w->where + w->where_len - 4, 4, "...");
}

/* v2: the tighter of dir's hugetlb max and rsvd.max, in pages. */
static void hugetlb_v2(const char *dir, void *arg)
{
	static const char *const kinds[][2] = { { "max", "current" }, { "rsvd.max", "rsvd.current" } };
	struct limit_walk *w = arg;

	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		char fmax[48], fcur[48];
		uint64_t max, cur = 0;

		snprintf(fmax, sizeof(fmax), "hugetlb.%s.%s", w->name, kinds[k][0]);
		snprintf(fcur, sizeof(fcur), "hugetlb.%s.%s", w->name, kinds[k][1]);
		if (read_limit(dir, fmax, &max) < 0 || max == UINT64_MAX)
			continue;
		read_limit(dir, fcur, &cur);
		note_limit(w, max > cur ? (max - cur) / w->page_size : 0, dir, fmax);
	}
}

/* v1: hugetlb.<size>.limit_in_bytes less usage_in_bytes, in pages. */
static void hugetlb_v1(const char *dir, void *arg)
{
	struct limit_walk *w = arg;
	char fmax[64], fcur[64];
	uint64_t max, cur = 0;

	snprintf(fmax, sizeof(fmax), "hugetlb.%s.limit_in_bytes", w->name);
	snprintf(fcur, sizeof(fcur), "hugetlb.%s.usage_in_bytes", w->name);
	/* v1 says "unlimited" with a huge page-rounded number. */
	if (read_limit(dir, fmax, &max) < 0 || max >= (UINT64_C(1) << 62))
		return;
	read_limit(dir, fcur, &cur);
	note_limit(w, max > cur ? (max - cur) / w->page_size : 0, dir, fmax);
}

uint64_t cgroup_hugetlb_left(const struct prealloc_ctx *ctx, uint64_t page_size, char *where,
			     size_t where_len)
{
	struct limit_walk w = { .page_size = page_size, .left = UINT64_MAX, .where = where,
				.where_len = where_len };

	where[0] = '\0';
	size_name(page_size, w.name, sizeof(w.name));
	walk_up(ctx, NULL, hugetlb_v2, &w);
	walk_up(ctx, "hugetlb", hugetlb_v1, &w);
	return w.left;
}

uint64_t cgroup_stat_value(const char *text, const char *key)
{
	size_t n = strlen(key);
	uint64_t v = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char *end;

		if (strncmp(p, key, n) || p[n] != ' ' || !isdigit((unsigned char)p[n + 1]))
			continue;
		v = strtoull(p + n + 1, &end, 10);
	}
	return v;
}

/* A key's value in dir's memory.stat, 0 when absent. */
static uint64_t stat_value(const char *dir, const char *key)
{
	char path[PATH_MAX + 16], text[8192];
	size_t n;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/memory.stat", dir) >= sizeof(path) ||
	    !(f = fopen(path, "re")))
		return 0;
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return cgroup_stat_value(text, key);
}

/*
 * Room left under one cgroup's memory limit: the limit less the usage,
 * plus the file cache it could reclaim (clean or not, file pages can be
 * written back and dropped; shmem, where a 4k guest file lives, cannot).
 */
static void memory_room(struct limit_walk *w, const char *dir, uint64_t max, uint64_t cur,
			uint64_t file, const char *limit_file)
{
	uint64_t room = max > cur ? max - cur : 0;

	room = MIN(max, room + MIN(file, cur));
	note_limit(w, room, dir, limit_file);
}

static void memory_v2(const char *dir, void *arg)
{
	uint64_t max, cur = 0;

	if (read_limit(dir, "memory.max", &max) < 0 || max == UINT64_MAX)
		return;
	read_limit(dir, "memory.current", &cur);
	memory_room(arg, dir, max, cur, stat_value(dir, "active_file") +
					       stat_value(dir, "inactive_file"), "memory.max");
}

static void memory_v1(const char *dir, void *arg)
{
	uint64_t max, cur = 0;

	if (read_limit(dir, "memory.limit_in_bytes", &max) < 0 || max >= (UINT64_C(1) << 62))
		return;
	read_limit(dir, "memory.usage_in_bytes", &cur);
	memory_room(arg, dir, max, cur, stat_value(dir, "total_active_file") +
					       stat_value(dir, "total_inactive_file"),
		    "memory.limit_in_bytes");
}

uint64_t cgroup_memory_left(const struct prealloc_ctx *ctx, char *where, size_t where_len)
{
	struct limit_walk w = { .left = UINT64_MAX, .where = where, .where_len = where_len };

	where[0] = '\0';
	walk_up(ctx, NULL, memory_v2, &w);
	walk_up(ctx, "memory", memory_v1, &w);
	return w.left;
}
