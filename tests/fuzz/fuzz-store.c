/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the record store's parsers: the store itself
 * (store_parse) and the version-1 ledger and registry (store_v1.c). None may
 * crash, read out of bounds or leak; and whatever parses must format and
 * parse again to the very same records (a store we write we can read).
 *
 * The first input byte picks the parser, so one corpus serves all three;
 * a store input is also tried with a correct end line appended, so the
 * fuzzer reaches the record parsers without having to forge FNV-1a.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_records(const struct store *a, const struct store *b)
{
	if (a->nr != b->nr)
		return false;
	for (size_t i = 0; i < a->nr; i++) {
		const struct record *x = &a->r[i], *y = &b->r[i];

		if (x->id != y->id || x->state != y->state || x->owner.kind != y->owner.kind ||
		    x->owner.pid != y->owner.pid || x->owner.start != y->owner.start ||
		    x->owner.expires != y->owner.expires || strcmp(x->owner.holder, y->owner.holder) ||
		    strcmp(x->owner.check, y->owner.check) || x->has_file != y->has_file ||
		    x->created != y->created || x->dev != y->dev || x->ino != y->ino ||
		    x->tag_sec != y->tag_sec || x->tag_nsec != y->tag_nsec ||
		    x->size != y->size || x->page_size != y->page_size || strcmp(x->path, y->path) ||
		    strcmp(x->tmp, y->tmp) || x->warm != y->warm ||
		    (x->warm && x->warm_node != y->warm_node) ||
		    (x->warm && strcmp(x->tenant, y->tenant)) || x->nr_pools != y->nr_pools)
			return false;
		for (unsigned int k = 0; k < x->nr_pools; k++) {
			const struct rec_pool *p = &x->pools[k], *q = &y->pools[k];

			/* Field by field: the struct's padding is nobody's business. */
			if (p->node != q->node || p->page_size != q->page_size ||
			    p->pages != q->pages || p->added != q->added || p->base != q->base ||
			    p->growing != q->growing || p->grow_from != q->grow_from)
				return false;
		}
	}
	return true;
}

/*
 * Formats s, parses the text back: the same records, or abort. What
 * store_parse read, store_format must take (strict); the version-1 parsers
 * still let through records the store cannot carry (an in-flight line of
 * pid 0, a node past PREALLOC_MAX_NODES, any page size), which store_format
 * refuses with -EINVAL instead of writing them: for those, refused is right.
 */
static void round_trip(const struct store *s, bool strict)
{
	struct store back;
	char *text;
	size_t len;
	int r = store_format(s, &text, &len);

	if (r == -ENOMEM || (r == -EINVAL && !strict))
		return;
	if (r < 0) {
		fprintf(stderr, "a parsed store is refused by store_format: %d\n", r);
		abort();
	}
	if (strlen(text) != len || store_parse(text, &back) < 0) {
		fprintf(stderr, "formatted store does not parse:\n%s", text);
		abort();
	}
	if (!same_records(s, &back)) {
		fprintf(stderr, "formatted store parses to other records:\n%s", text);
		abort();
	}
	store_free(&back);
	free(text);
}

static void parse_store(const char *text, size_t len)
{
	struct store s;
	size_t lines = 0;
	char *framed;

	if (store_parse(text, &s) == 0) {
		round_trip(&s, true);
		store_free(&s);
	}
	/* The same text with a right end line: the record lines are what is tested. */
	if (!len || text[len - 1] != '\n')
		return;
	framed = malloc(len + 64);
	if (!framed)
		return;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	memcpy(framed, text, len);
	snprintf(framed + len, 64, "end %zu %016llx\n", lines,
		 (unsigned long long)fnv1a(text, len));
	if (store_parse(framed, &s) == 0) {
		round_trip(&s, true);
		store_free(&s);
	}
	free(framed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store s = { 0 };
	char *text;

	if (size < 1 || size > 65536)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	switch (data[0] % 3) {
	case 0:
		parse_store(text, strlen(text));
		break;
	case 1:
		if (legacy_parse_ledger(text, &s) == 0)
			round_trip(&s, false);
		store_free(&s);
		break;
	default:
		if (legacy_parse_registry(text, 0x801, 42, &s) == 0)
			round_trip(&s, false);
		store_free(&s);
		break;
	}
	free(text);
	return 0;
}
