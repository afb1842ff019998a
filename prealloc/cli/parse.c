/* SPDX-License-Identifier: MIT */
/*
 * Command-line parsers: node specs, node numbers, seconds, thread counts
 * and page sizes. Pure functions with a
 * one-line reason on failure; tests/unit/cli/test-parse.c and the fuzz target
 * feed them garbage.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

static int fail(char *err, size_t err_len, int ret, const char *fmt, const char *what)
{
	if (err && err_len)
		snprintf(err, err_len, fmt, what);
	return ret;
}

/* A node number: decimal digits only, below PREALLOC_MAX_NODES. */
static int parse_node_number(const char **p, int *ret)
{
	long v = 0;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	while (isdigit((unsigned char)**p)) {
		v = v * 10 + (**p - '0');
		if (v >= PREALLOC_MAX_NODES)
			return -ERANGE;
		(*p)++;
	}
	*ret = (int)v;
	return 0;
}

static int add_node(struct node_request *req, int node, uint64_t bytes, char *err, size_t err_len)
{
	char num[16];

	snprintf(num, sizeof(num), "%d", node);
	for (unsigned int i = 0; i < req->nr; i++)
		if (req->nodes[i] == node)
			return fail(err, err_len, -EINVAL, "node %s given twice", num);
	if (req->nr >= PREALLOC_MAX_NODES)
		return fail(err, err_len, -E2BIG, "too many nodes%s", "");
	req->nodes[req->nr] = node;
	req->bytes[req->nr] = bytes;
	req->nr++;
	return 0;
}

/* "N" or "N-M" at *p, which moves past it; spec is the whole list, for messages. */
static int parse_node_range(const char **p, const char *spec, int *ret_first, int *ret_last,
			    char *err, size_t err_len)
{
	int r;

	r = parse_node_number(p, ret_first);
	if (r == -ERANGE)
		return fail(err, err_len, r, "node number too large in '%s'", spec);
	if (r < 0)
		return fail(err, err_len, r, "invalid node list '%s' (expected N, N-M, N,M or N:SIZE)",
			    spec);
	*ret_last = *ret_first;
	if (**p == '-') {
		(*p)++;
		r = parse_node_number(p, ret_last);
		if (r == -ERANGE)
			return fail(err, err_len, r, "node number too large in '%s'", spec);
		if (r < 0 || *ret_last < *ret_first)
			return fail(err, err_len, -EINVAL, "invalid node range in '%s'", spec);
	}
	return 0;
}

/* The SIZE of "N:SIZE", *p at the ':' and moved past the size. */
static int parse_node_size(const char **p, const char *spec, uint64_t *ret, char *err,
			   size_t err_len)
{
	char size_buf[64];
	uint64_t bytes = 0;
	size_t n;
	int r;

	(*p)++;
	n = strcspn(*p, ",");
	if (n == 0 || n >= sizeof(size_buf))
		return fail(err, err_len, -EINVAL, "invalid size in '%s'", spec);
	memcpy(size_buf, *p, n);
	size_buf[n] = '\0';
	r = prealloc_parse_size(size_buf, &bytes);
	if (r == -ERANGE)
		return fail(err, err_len, r, "size too large in '%s'", spec);
	if (r < 0)
		return fail(err, err_len, r,
			    "invalid size in '%s' (expected a number with K, M, G or T)", spec);
	if (bytes == 0)
		return fail(err, err_len, -EINVAL, "zero size in '%s'", spec);
	*p += n;
	*ret = bytes;
	return 0;
}

int parse_node_spec(const char *spec, struct node_request *req, char *err, size_t err_len)
{
	const char *p = spec;

	if (!spec || !*spec)
		return fail(err, err_len, -EINVAL, "empty node list%s", "");
	for (;;) {
		uint64_t bytes = 0;
		int first, last, r;

		r = parse_node_range(&p, spec, &first, &last, err, err_len);
		if (r < 0)
			return r;
		if (*p == ':' && last != first)
			return fail(err, err_len, -EINVAL,
				    "a size applies to one node, not a range: '%s'", spec);
		if (*p == ':') {
			r = parse_node_size(&p, spec, &bytes, err, err_len);
			if (r < 0)
				return r;
		}
		if (req->nr && req->sized != (bytes != 0))
			return fail(err, err_len, -EINVAL,
				    "give every node a size (N:SIZE) or none: '%s'", spec);
		req->sized = bytes != 0;
		for (int n = first; n <= last; n++) {
			r = add_node(req, n, bytes, err, err_len);
			if (r < 0)
				return r;
		}
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return fail(err, err_len, -EINVAL,
				    "invalid node list '%s' (expected N, N-M, N,M or N:SIZE)", spec);
		p++;
	}
}

int parse_threads(const char *s, unsigned int *ret, char *err, size_t err_len)
{
	unsigned long v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return fail(err, err_len, -EINVAL, "invalid thread count '%s' (expected 1-65536)", s);
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 65536)
			return fail(err, err_len, -ERANGE,
				    "invalid thread count '%s' (expected 1-65536)", s);
	}
	if (*p || v == 0)
		return fail(err, err_len, -EINVAL, "invalid thread count '%s' (expected 1-65536)", s);
	*ret = (unsigned int)v;
	return 0;
}

int parse_node(const char *s, int *ret, char *err, size_t err_len)
{
	const char *p = s;
	int node, r;

	r = parse_node_number(&p, &node);
	if (r == -ERANGE) {
		if (err && err_len)
			snprintf(err, err_len, "node '%s' out of range (0 to %d)", s,
				 PREALLOC_MAX_NODES - 1);
		return r;
	}
	if (r < 0 || *p) {
		if (err && err_len)
			snprintf(err, err_len, "invalid node '%s' (a number, 0 to %d)", s,
				 PREALLOC_MAX_NODES - 1);
		return -EINVAL;
	}
	*ret = node;
	return 0;
}

int parse_seconds(const char *s, unsigned int max, unsigned int *ret, char *err, size_t err_len)
{
	unsigned long long v = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return fail(err, err_len, -EINVAL, "invalid seconds '%s' (a whole number above 0)", s);
	for (; isdigit((unsigned char)*p); p++) {
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > max) {
			if (err && err_len)
				snprintf(err, err_len, "seconds '%s' out of range (1 to %u)", s, max);
			return -ERANGE;
		}
	}
	if (*p || v == 0)
		return fail(err, err_len, -EINVAL, "invalid seconds '%s' (a whole number above 0)", s);
	*ret = (unsigned int)v;
	return 0;
}

int parse_page_size(const char *s, uint64_t *ret, char *err, size_t err_len)
{
	uint64_t v;

	if (!strcasecmp(s, "auto")) {
		*ret = PAGE_SIZE_AUTO;
		return 0;
	}
	if (!strcasecmp(s, "thp")) {
		*ret = PAGE_SIZE_THP;
		return 0;
	}
	if (prealloc_parse_size(s, &v) == 0 &&
	    (v == PREALLOC_PAGE_4K || v == PREALLOC_PAGE_2M || v == PREALLOC_PAGE_1G)) {
		*ret = v;
		return 0;
	}
	return fail(err, err_len, -EINVAL, "invalid page size '%s' (expected 4k, 2M, 1G, thp or auto)",
		    s);
}

uint64_t size_round_fraction(const char *text, uint64_t bytes, uint64_t page)
{
	if (page != PREALLOC_PAGE_2M && page != PREALLOC_PAGE_1G)
		page = PREALLOC_PAGE_4K;	/* 4k, auto, thp: the smallest page */
	if (!strchr(text, '.') || bytes > UINT64_MAX - (page - 1))
		return bytes;
	return (bytes + page - 1) / page * page;
}
