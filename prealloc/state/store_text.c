/* SPDX-License-Identifier: MIT */
/*
 * The record store's text encoding (records.c writes and reads the store
 * with it): a growable text, percent-encoded strings, whole-token decimal
 * numbers, and the FNV-1a 64 checksum of its end line.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

uint64_t fnv1a(const char *p, size_t len)
{
	uint64_t h = UINT64_C(0xcbf29ce484222325);

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)p[i];
		h *= UINT64_C(0x100000001b3);
	}
	return h;
}

/* ---- growable text and strings ------------------------------------------ */

void text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->err)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->cap - t->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			t->err = -EINVAL;
			return;
		}
		if ((size_t)n < t->cap - t->len)
			break;
		char *nb = realloc(t->buf, t->cap = (t->cap + (size_t)n) * 2 + 256);

		if (!nb) {
			t->err = -ENOMEM;
			return;
		}
		t->buf = nb;
	}
	t->len += (size_t)n;
}

bool needs_escape(unsigned char c)
{
	return c <= ' ' || c >= 0x7f || c == '%' || c == ':' || c == '-';
}

void text_str(struct text *t, const char *s)
{
	if (!*s) {
		text_add(t, "-");
		return;
	}
	for (; *s; s++)
		if (needs_escape((unsigned char)*s))
			text_add(t, "%%%02X", (unsigned char)*s);
		else
			text_add(t, "%c", *s);
}

static int hex_digit(char c)
{
	return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

/* A decimal number of the whole token, no sign, no junk; -EBADMSG otherwise. */
int parse_u64(const char *tok, uint64_t *ret)
{
	char *end;

	if (!isdigit((unsigned char)tok[0]))
		return -EBADMSG;
	errno = 0;
	*ret = strtoull(tok, &end, 10);
	return errno || *end ? -EBADMSG : 0;
}

/* Decodes token tok (ending at '\0') into out; -EBADMSG on a bad escape or overflow. */
int str_decode(const char *tok, char *out, size_t len)
{
	size_t o = 0;

	if (!strcmp(tok, "-")) {
		out[0] = '\0';
		return 0;
	}
	for (const char *p = tok; *p; p++) {
		unsigned int v;
		char c = *p;

		if (c == '%') {
			/* Exactly two hex digits: no sign, no space, no 0x, no NUL byte. */
			if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]))
				return -EBADMSG;
			v = (unsigned int)(hex_digit(p[1]) << 4 | hex_digit(p[2]));
			if (v == 0)
				return -EBADMSG;
			c = (char)v;
			p += 2;
		} else if (needs_escape((unsigned char)c)) {
			return -EBADMSG;
		}
		if (o + 1 >= len)
			return -EBADMSG;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}
