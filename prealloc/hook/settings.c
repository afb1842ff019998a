/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mntent.h>

#include <prealloc.h>

#include "domain.h"
#include "guest.h"
#include "settings.h"

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_bool(const char *v, bool *ret)
{
	if (!strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1"))
		*ret = true;
	else if (!strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0"))
		*ret = false;
	else
		return -EINVAL;
	return 0;
}

static int parse_uint(const char *v, unsigned int max, unsigned int *ret)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || end == v || *end || *v == '-' || n > max)
		return -EINVAL;
	*ret = (unsigned int)n;
	return 0;
}

static int parse_path(const char *v, char *buf, size_t len)
{
	if (v[0] != '/' || strlen(v) >= len)
		return -EINVAL;
	snprintf(buf, len, "%s", v);
	return 0;
}

static int apply(struct hook_settings *s, const char *k, const char *v)
{
	/* "reserve": the key's name before grow_pools, still read. */
	if (!strcmp(k, "grow_pools") || !strcmp(k, "reserve"))
		return parse_bool(v, &s->grow_pools);
	if (!strcmp(k, "prefault"))
		return parse_bool(v, &s->prefault);
	if (!strcmp(k, "prefault_pinned"))
		return parse_bool(v, &s->prefault_pinned);
	if (!strcmp(k, "warm"))
		return parse_bool(v, &s->warm);
	if (!strcmp(k, "auto_placement")) {
		if (strcmp(v, "spread") && strcmp(v, "refuse"))
			return -EINVAL;
		s->auto_rule = !strcmp(v, "spread") ? AUTO_SPREAD : AUTO_REFUSE;
		return 0;
	}
	if (!strcmp(k, "deadline"))
		return parse_uint(v, 3600, &s->deadline_s);
	if (!strcmp(k, "start_grace"))
		return parse_uint(v, 7 * 86400, &s->start_grace_s);
	if (!strcmp(k, "prefault_rate"))
		return prealloc_parse_size(v, &s->prefault_rate) < 0 || !s->prefault_rate
			       ? -EINVAL : 0;
	if (!strcmp(k, "qemu_conf"))
		return parse_path(v, s->qemu_conf, sizeof(s->qemu_conf));
	if (!strcmp(k, "state_dir"))
		return parse_path(v, s->state_dir, sizeof(s->state_dir));
	if (!strcmp(k, "status_dir"))
		return parse_path(v, s->status_dir, sizeof(s->status_dir));
	return -ENOENT;
}

int settings_load(const char *path, struct hook_settings *s, char *why, size_t why_len)
{
	char line[1024];
	unsigned int n = 0;
	FILE *f;
	int r = 0;

	*s = (struct hook_settings){ .grow_pools = true, .prefault_pinned = true,
				     .deadline_s = 20, .prefault_rate = UINT64_C(256) << 20,
				     .start_grace_s = 600,
				     .qemu_conf = "/etc/libvirt/qemu.conf",
				     .status_dir = "/run/libvirt/qemu" };
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char *k = line, *eq, *v;

		n++;
		k[strcspn(k, "#\n")] = '\0';
		k = trim(k);
		if (!*k)
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			snprintf(why, why_len, "%s:%u: not `key = value`: '%s'", path, n, k);
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		v = trim(eq + 1);
		k = trim(k);
		r = apply(s, k, v);
		if (r < 0)
			snprintf(why, why_len, "%s:%u: %s '%s' for %s", path, n,
				 r == -ENOENT ? "unknown key" : "bad value", r == -ENOENT ? k : v,
				 k);
		r = r < 0 ? -EINVAL : 0;
	}
	fclose(f);
	return r;
}

int settings_backing_dir(const struct hook_settings *s, char *buf, size_t len, char *why,
			 size_t why_len)
{
	char line[1024], dir[512] = "/var/lib/libvirt/qemu/ram";
	FILE *f = fopen(s->qemu_conf, "re");

	while (f && fgets(line, sizeof(line), f)) {
		char *k = trim(line), *q, *e;

		if (strncmp(k, "memory_backing_dir", 18))
			continue;
		q = strchr(k, '"');
		e = q ? strchr(q + 1, '"') : NULL;
		if (!q || !e || e - q - 1 >= (long)sizeof(dir)) {
			snprintf(why, why_len, "%s: memory_backing_dir is not a quoted path",
				 s->qemu_conf);
			fclose(f);
			return -EINVAL;
		}
		*e = '\0';
		snprintf(dir, sizeof(dir), "%s", q + 1);
	}
	if (f)
		fclose(f);
	if ((size_t)snprintf(buf, len, "%s/libvirt/qemu", dir) >= len)
		return -ENAMETOOLONG;
	return 0;
}

static uint64_t hugetlbfs_page(const char *path)
{
	uint64_t page = 0;

	/* The front-end layer's one question (guest_dir_page): tmpfs's 4K is no hugetlbfs. */
	return guest_dir_page(path, &page) == 0 && page > GUEST_PAGE_4K ? page : 0;
}

/*
 * hugetlbfs_mount from qemu.conf: a string or a [list], one line or many;
 * the paths' page sizes into sizes[]. The count, 0 when the key is absent.
 */
static int conf_hugetlbfs_mounts(FILE *f, uint64_t *sizes, int max)
{
	char line[1024];
	bool in_value = false, list = false;
	int n = -1;

	while (fgets(line, sizeof(line), f)) {
		char *c = line, *q, *e;

		if (!in_value) {
			c += strspn(c, " \t");
			if (strncmp(c, "hugetlbfs_mount", 15) || !strchr(c, '='))
				continue;
			c = strchr(c, '=') + 1;
			c += strspn(c, " \t");
			list = *c == '[';
			in_value = true;
			n = 0;	/* a later setting replaces an earlier one */
		}
		while (in_value && (q = strpbrk(c, "\"]#"))) {
			if (*q != '"') {
				in_value = *q == '#' && list;
				break;
			}
			e = strchr(q + 1, '"');
			if (!e)
				break;
			*e = '\0';
			if (n < max)
				sizes[n++] = hugetlbfs_page(q + 1);
			c = e + 1;
			if (!list)
				in_value = false;
		}
		if (!list)
			in_value = false;
	}
	return n < 0 ? 0 : n;
}

uint64_t settings_libvirt_default_page(const struct hook_settings *s, uint64_t host_default)
{
	uint64_t sizes[16];
	struct mntent *m;
	FILE *f = fopen(s->qemu_conf, "re");
	int n = 0;

	if (f) {
		n = conf_hugetlbfs_mounts(f, sizes, 16);
		fclose(f);
	}
	/*
	 * libvirt 9 (qemu_conf.c) marks every configured mount but the first as
	 * "default" and takes the first default one, else the first mount: of
	 * ["/a", "/b"], /b. Found in /proc/mounts instead, the default is the
	 * first mount of the host's default size, else the first.
	 */
	if (n > 0)
		return sizes[n > 1 ? 1 : 0] ? sizes[n > 1 ? 1 : 0] : host_default;
	f = setmntent("/proc/mounts", "re");
	while (f && (m = getmntent(f)))
		if (!strcmp(m->mnt_type, "hugetlbfs") && n < 16)
			sizes[n++] = hugetlbfs_page(m->mnt_dir);
	if (f)
		endmntent(f);
	for (int i = 0; i < n; i++)
		if (sizes[i] == host_default)
			return host_default;
	return n && sizes[0] ? sizes[0] : host_default;
}
