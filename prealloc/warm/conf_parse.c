/* SPDX-License-Identifier: MIT */
/*
 * warm.conf's text (docs/warm.md; the file itself: conf.c): one
 * line per node and page size, how many bytes of warm files to keep there,
 * and optionally on which mount.
 *
 *   # comment
 *   node0.2M = 16G
 *   node0.2M = 4 x 4G @ /mnt/guests
 *   node1.1G = 8G @ /dev/hugepages-1G
 *   node0.4k = 2 x 1G @ /dev/shm single-tenant
 *
 *   clear_threads = 1
 *   clear_rate = 2          # GB/s per node, 0: no cap
 *   max_share = 50%         # of a node's memory
 *   pressure = some 150ms 1s
 *   pressure_step = 1G
 *
 * SIZE is one file of that size; N x SIZE, N files of SIZE (a take hands
 * out a file at least as large as asked, cut to size). A target without a
 * mount lives on the one prealloc picks for its page size (prealloc info
 * shows it; /dev/shm for 4k). "single-tenant" declares every holder of
 * the target's files one tenant: a file given back is cleared in place
 * (under a lease) instead of renewed. The other keys are settings (struct
 * warm_settings). A bad line refuses the whole file, naming the line: half
 * a configuration is never applied. So does a target past WARM_CONF_MAX_BYTES
 * (or targets past it together: no sum of them can wrap).
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "warm.h"

/* The most bytes one target, and all the file's targets together, may ask: 1 EiB. */
#define WARM_CONF_MAX_BYTES (UINT64_C(1) << 60)
#define WARM_CONF_MAX_TEXT "1048576T (1 EiB)"

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
	int r;

	if (x) {
		*x = '\0';
		n = strtoul(trim(text), &end, 10);
		if (*end || !*trim(text) || n == 0 || n > 4096)
			return conf_error(err, len, line, "bad file count '%s' (1 to 4096)", trim(text));
		size = x + 1;
	}
	size = trim(size);
	r = prealloc_parse_size(size, &t->file_bytes);
	if (r == -ERANGE || (r == 0 && t->file_bytes > WARM_CONF_MAX_BYTES / n))
		return conf_error(err, len, line, "%s%s%s is more than " WARM_CONF_MAX_TEXT,
				  x ? trim(text) : "", x ? " x " : "", size);
	if (r < 0)
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

#define SINGLE_TENANT "single-tenant"

/* "<size> [@ <mount>] [single-tenant]" into the sizes, t->mount and t->single_tenant. */
static int parse_value(char *value, struct warm_target *t, char *err, size_t len,
		       unsigned int line)
{
	size_t n = strlen(value), k = strlen(SINGLE_TENANT);
	char *at, *mount;

	/* Said in so many words, never implied: every holder of it is one tenant. */
	if (n > k && !strcmp(value + n - k, SINGLE_TENANT) && isspace((unsigned char)value[n - k - 1])) {
		value[n - k] = '\0';
		t->single_tenant = true;
	}
	at = strchr(value, '@');

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

/* The whole number text starts with (digits, no sign) into *ret, *ret_end after it. */
static int leading_number(const char *text, unsigned long long *ret, char **ret_end)
{
	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	errno = 0;
	*ret = strtoull(text, ret_end, 10);
	return errno ? -EINVAL : 0;
}

/* "150ms", "1s", "60s", "2m", "500us" into microseconds; -EINVAL. */
static int parse_duration(const char *text, uint64_t *ret_us)
{
	static const struct {
		const char *unit;
		uint64_t us;
	} units[] = { { "us", 1 }, { "ms", 1000 }, { "s", 1000000 }, { "m", 60000000 } };
	char *end;
	unsigned long long v;

	if (leading_number(text, &v, &end) < 0)
		return -EINVAL;
	/* A day at the most: whatever the unit, nothing overflows from here on. */
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(end, units[i].unit) && v <= UINT64_C(86400000000) / units[i].us) {
			*ret_us = v * units[i].us;
			return 0;
		}
	return -EINVAL;
}

/* "N" within [lo, hi] (percent: "N%" too). */
static int parse_count(const char *text, uint64_t lo, uint64_t hi, bool percent, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	if (leading_number(text, &v, &end) < 0)
		return -EINVAL;
	if (percent && *end == '%')
		end++;
	if (*end || v < lo || v > hi)
		return -EINVAL;
	*ret = v;
	return 0;
}

/* "2", "1.5", "2GB/s": GB/s (10^9 bytes) into bytes per second; 0 is no cap. */
static int parse_rate(const char *text, uint64_t *ret)
{
	char *end;
	double v;

	if (!isdigit((unsigned char)*text))
		return -EINVAL;
	v = strtod(text, &end);
	if (*end && strcmp(end, "GB/s"))
		return -EINVAL;
	if (!isfinite(v) || v < 0 || v > 10000)
		return -EINVAL;
	*ret = (uint64_t)(v * 1e9);
	return 0;
}

/* "some STALL WINDOW", "full STALL WINDOW" or "off" (the kernel's PSI trigger limits). */
static int parse_pressure(char *text, struct warm_settings *set)
{
	char kind[8], stall[32], window[32], extra;
	uint64_t s, w;

	if (!strcmp(text, "off")) {
		set->psi_stall_us = 0;
		set->psi_window_us = 0;
		return 0;
	}
	if (sscanf(text, "%7s %31s %31s %c", kind, stall, window, &extra) != 3 ||
	    (strcmp(kind, "some") && strcmp(kind, "full")) || parse_duration(stall, &s) < 0 ||
	    parse_duration(window, &w) < 0)
		return -EINVAL;
	/* psi(7): a window of 500ms to 10s, a stall within it. */
	if (w < 500000 || w > 10000000 || s == 0 || s > w)
		return -EINVAL;
	set->psi_full = kind[0] == 'f';
	set->psi_stall_us = s;
	set->psi_window_us = w;
	return 0;
}

/* One "key = value" setting into set: 0, 1 not a setting's key, -EINVAL. */
static int parse_setting(const char *key, char *value, struct warm_settings *set, char *err,
			 size_t len, unsigned int line)
{
	uint64_t us;
	int r;

	if (!strcmp(key, "clear_threads"))
		r = parse_count(value, 1, PREALLOC_MAX_CPUS, false, &set->clear_threads);
	else if (!strcmp(key, "clear_rate"))
		r = parse_rate(value, &set->clear_rate);
	else if (!strcmp(key, "max_share"))
		r = parse_count(value, 1, 100, true, &set->max_share);
	else if (!strcmp(key, "pressure"))
		r = parse_pressure(value, set);
	else if (!strcmp(key, "pressure_step"))
		r = prealloc_parse_size(value, &set->pressure_step) < 0 || !set->pressure_step
			    ? -EINVAL : 0;
	else if (!strcmp(key, "available_floor"))
		r = prealloc_parse_size(value, &set->available_floor) < 0 ? -EINVAL : 0;
	else if (!strcmp(key, "pressure_quiet") || !strcmp(key, "check_interval")) {
		r = parse_duration(value, &us);
		if (r == 0 && us < 1000000)
			r = -EINVAL;	/* whole seconds: these pace a loop, not a trigger */
		else if (r == 0)
			*(key[0] == 'p' ? &set->pressure_quiet_s : &set->check_interval_s) =
				us / 1000000;
	} else
		return 1;
	if (r < 0)
		return conf_error(err, len, line, "bad %s '%s' (%s)", key, value,
				  !strcmp(key, "clear_threads")	   ? "1 or more"
				  : !strcmp(key, "clear_rate")	   ? "GB/s per node, 0 for no cap"
				  : !strcmp(key, "max_share")	   ? "a percentage, 1% to 100%"
				  : !strcmp(key, "pressure")	   ? "off, or some|full STALL WINDOW: "
								     "a window of 500ms to 10s"
				  : !strcmp(key, "pressure_step") ? "a size above 0, say 1G"
				  : !strcmp(key, "available_floor") ? "a size, say 2G"
								    : "whole seconds, say 60s");
	return 0;
}

/*
 * One line into t (a target), or a setting into set, or nothing (blank,
 * comment): 1 a target, 0 else, or -EINVAL.
 */
static int parse_line(char *text, struct warm_target *t, struct warm_settings *set, char *err,
		      size_t len, unsigned int line)
{
	char *hash = strchr(text, '#'), *eq, *key;
	int r;

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
	r = parse_setting(key, trim(eq + 1), set, err, len, line);
	if (r <= 0)
		return r;
	memset(t, 0, sizeof(*t));
	t->line = line;
	if (parse_key(key, t) < 0)
		return conf_error(err, len, line,
				  "bad target '%s' (say node0.2M: 4k, 2M or 1G; or a setting: "
				  "clear_threads, clear_rate, max_share, pressure, pressure_step, "
				  "available_floor, pressure_quiet, check_interval)",
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

static void settings_unset(struct warm_settings *set)
{
	set->clear_threads = set->clear_rate = set->max_share = WARM_UNSET;
	set->psi_stall_us = set->psi_window_us = set->psi_full = WARM_UNSET;
	set->pressure_step = set->available_floor = WARM_UNSET;
	set->pressure_quiet_s = set->check_interval_s = WARM_UNSET;
}

int warm_conf_parse(const char *text, struct warm_conf *ret, char *err, size_t err_len)
{
	char *copy = strdup(text), *line, *next;
	struct warm_settings set;
	struct warm_target *t = NULL;
	unsigned int nr = 0, no = 0;
	uint64_t total = 0;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	settings_unset(&set);
	for (line = copy; r >= 0 && line; line = next) {
		struct warm_target one, *n;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		r = parse_line(line, &one, &set, err, err_len, ++no);
		if (r <= 0)
			continue;
		/* Each at most WARM_CONF_MAX_BYTES: the sum cannot wrap before it is caught. */
		total += one.bytes;
		if (total > WARM_CONF_MAX_BYTES) {
			r = conf_error(err, err_len, no,
				       "the targets add up to more than " WARM_CONF_MAX_TEXT);
			break;
		}
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
	ret->t = t;
	ret->nr = nr;
	ret->set = set;
	ret->found = true;
	ret->path[0] = '\0';
	ret->sum = fnv1a(text, strlen(text));
	return 0;
}

