/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: every input goes, as a C string, to the size parser,
 * the --node parser and the --page-size parser. They must never crash,
 * read out of bounds or hang, and what they accept must make sense.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A refusal must leave a reason: err was filled with 'x' (no NUL) before the
 * parse, so a NUL within the buffer proves the parser wrote a terminated
 * string there, and a non-empty one proves it said something.
 */
static int reason_written(const char *err, size_t len)
{
	return memchr(err, '\0', len) != NULL && err[0] != '\0';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct node_request req;
	char *s, err[128];
	uint64_t v;

	if (size > 4096)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	if (prealloc_parse_size(s, &v) == 0 && size == 0)
		abort();	/* an empty string is not a size */

	memset(&req, 0, sizeof(req));
	memset(err, 'x', sizeof(err));	/* no NUL: a parser that leaves err alone is caught */
	if (parse_node_spec(s, &req, err, sizeof(err)) == 0) {
		/* Accepted: at least one node, each in range, none twice. */
		if (req.nr == 0 || req.nr > PREALLOC_MAX_NODES)
			abort();
		for (unsigned int i = 0; i < req.nr; i++) {
			if (req.nodes[i] < 0 || req.nodes[i] >= PREALLOC_MAX_NODES)
				abort();
			if (req.sized != (req.bytes[i] != 0))
				abort();
		}
	} else if (!reason_written(err, sizeof(err))) {
		abort();
	}
	memset(err, 'x', sizeof(err));
	if (parse_page_size(s, &v, err, sizeof(err)) == 0) {
		if (v != PAGE_SIZE_AUTO && v != PAGE_SIZE_THP && v != PREALLOC_PAGE_4K &&
		    v != PREALLOC_PAGE_2M && v != PREALLOC_PAGE_1G)
			abort();
	} else if (!reason_written(err, sizeof(err))) {
		abort();
	}
	free(s);
	return 0;
}
