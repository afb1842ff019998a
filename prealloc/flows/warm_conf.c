/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's targets, from /etc/prealloc/warm.conf (docs/warm.md): one
 * line per node and page size, how many bytes of warm files to keep there,
 * and optionally on which mount.
 *
 *   # comment
 *   node0.2M = 16G
 *   node0.2M = 4 x 4G @ /mnt/guests
 *   node1.1G = 8G @ /dev/hugepages-1G
 *
 * SIZE is one file of that size; N x SIZE, N files of SIZE (a take hands
 * out a file at least as large as asked, cut to size). A target without a
 * mount lives on the one prealloc picks for its page size (prealloc info
 * shows it; /dev/shm for 4k). A bad line refuses the
 * whole file, naming the line: half a configuration is never applied.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flows.h"

__attribute__((format(printf, 4, 5))) static int conf_error(char *err, size_t len,
							   unsigned int line, const char *fmt,
							   ...)
{
	int n = snprintf(err, len, "line %u: ", line);
	va_list ap;

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(err + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* "node<N>.<4k|2M|1G>" into t->node and t->page_size. */
static int parse_key(const char *key, struct warm_target *t)
{
	static const struct {
		const char *name;
		uint64_t size;
	} pages[] = { { "4k", PREALLOC_PAGE_4K }, { "2M", PREALLOC_PAGE_2M },
		      { "1G", PREALLOC_PAGE_1G } };
	const char *dot;
	char *end;
	long node;

	if (strncmp(key, "node", 4) || !isdigit((unsigned char)key[4]))
		return -EINVAL;
	node = strtol(key + 4, &end, 10);
	dot = end;
	if (*dot != '.' || node < 0 || node >= PREALLOC_MAX_NODES)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(pages); i++) {
		if (!strcmp(dot + 1, pages[i].name)) {
			t->node = (int)node;
			t->page_size = pages[i].size;
			return 0;
		}
	}
	return -EINVAL;
}

/* "<size>" or "<n> x <size>" into t->files, t->file_bytes and t->bytes. */
static int parse_size(char *text, struct warm_target *t, char *err, size_t len, unsigned int line)
{
	char *x = strpbrk(text, "xX"), *size = text, *end;
	unsigned long n = 1;

	if (x) {
		*x = '\0';
		n = strtoul(trim(text), &end, 10);
		if (*end || !*trim(text) || n == 0 || n > 4096)
			return conf_error(err, len, line, "bad file count '%s' (1 to 4096)", trim(text));
		size = x + 1;
	}
	size = trim(size);
	if (prealloc_parse_size(size, &t->file_bytes) < 0)
		return conf_error(err, len, line, "bad size '%s' (say 16G, or 4 x 4G)", size);
	if (t->file_bytes % t->page_size)
		return conf_error(err, len, line, "%s is not a whole number of %s pages", size,
				  prealloc_page_name(t->page_size));
	if (n > 1 && !t->file_bytes)
		return conf_error(err, len, line, "files of size 0");
	t->files = t->file_bytes ? (unsigned int)n : 0;
	t->bytes = t->file_bytes * n;
	return 0;
}

/* "<size> [@ <mount>]" into the sizes and t->mount. */
static int parse_value(char *value, struct warm_target *t, char *err, size_t len,
		       unsigned int line)
{
	char *at = strchr(value, '@'), *mount;

	if (at) {
		*at = '\0';
		mount = trim(at + 1);
		if (mount[0] != '/' || strpbrk(mount, " \t"))
			return conf_error(err, len, line,
					  "bad mount '%s' (an absolute path, no spaces)", mount);
		if (strlen(mount) >= sizeof(t->mount))
			return conf_error(err, len, line, "mount path too long");
		snprintf(t->mount, sizeof(t->mount), "%s", mount);
	}
	return parse_size(value, t, err, len, line);
}

/* One line into t (a target), or nothing (blank, comment): 1, 0, or -EINVAL. */
static int parse_line(char *text, struct warm_target *t, char *err, size_t len,
		      unsigned int line)
{
	char *hash = strchr(text, '#'), *eq, *key;

	if (hash)
		*hash = '\0';
	text = trim(text);
	if (!*text)
		return 0;
	eq = strchr(text, '=');
	if (!eq)
		return conf_error(err, len, line, "'%s' is not 'nodeN.PAGE = SIZE [@ MOUNT]'", text);
	*eq = '\0';
	key = trim(text);
	memset(t, 0, sizeof(*t));
	t->line = line;
	if (parse_key(key, t) < 0)
		return conf_error(err, len, line, "bad target '%s' (say node0.2M: 4k, 2M or 1G)",
				  key);
	return parse_value(eq + 1, t, err, len, line) < 0 ? -EINVAL : 1;
}

/* Two lines for one node, page size and mount: which one is meant? */
static int check_repeats(const struct warm_target *t, unsigned int nr, char *err, size_t len)
{
	for (unsigned int i = 0; i < nr; i++)
		for (unsigned int j = 0; j < i; j++)
			if (t[i].node == t[j].node && t[i].page_size == t[j].page_size &&
			    !strcmp(t[i].mount, t[j].mount))
				return conf_error(err, len, t[i].line,
						  "node%d.%s is already set on line %u", t[i].node,
						  prealloc_page_name(t[i].page_size), t[j].line);
	return 0;
}

int warm_conf_parse(const char *text, struct warm_target **ret, unsigned int *ret_nr, char *err,
		    size_t err_len)
{
	char *copy = strdup(text), *line, *next;
	struct warm_target *t = NULL;
	unsigned int nr = 0, no = 0;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (line = copy; r >= 0 && line; line = next) {
		struct warm_target one, *n;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		r = parse_line(line, &one, err, err_len, ++no);
		if (r <= 0)
			continue;
		n = realloc(t, (nr + 1) * sizeof(*t));
		if (!n) {
			r = -ENOMEM;
			break;
		}
		t = n;
		t[nr++] = one;
	}
	if (r >= 0)
		r = check_repeats(t, nr, err, err_len);
	free(copy);
	if (r < 0) {
		free(t);
		return r;
	}
	*ret = t;
	*ret_nr = nr;
	return 0;
}

int warm_conf_load(const char *path, struct warm_target **ret, unsigned int *ret_nr, char *err,
		   size_t err_len)
{
	const char *env = getenv("PREALLOC_WARM_CONF");
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!path)
		path = env && *env ? env : "/etc/prealloc/warm.conf";
	f = fopen(path, "re");
	if (!f && errno == ENOENT) {
		*ret = NULL;
		*ret_nr = 0;
		return 0;
	}
	if (!f) {
		r = -errno;
		snprintf(err, err_len, "%s: %s", path, strerror(errno));
		return r;
	}
	r = getdelim(&text, &len, '\0', f) < 0 && !feof(f) ? -EIO : 0;
	fclose(f);
	if (r == 0)
		r = warm_conf_parse(text ? text : "", ret, ret_nr, err, err_len);
	if (r == -EINVAL) {
		char line[256];

		snprintf(line, sizeof(line), "%s", err);
		snprintf(err, err_len, "%s: %s", path, line);
	}
	free(text);
	return r;
}
