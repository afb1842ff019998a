/* SPDX-License-Identifier: MIT */
/*
 * For the tests of what the CLI prints: a key of a parsed JSON document
 * held to the value of the field it comes from (one TAP case each), and
 * standard output (or error) captured into a string while a command's own
 * printing code runs.
 */
#ifndef PREALLOC_TEST_JSON_CHECK_H
#define PREALLOC_TEST_JSON_CHECK_H

#include <json-c/json.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

static inline const char *jc_text(json_object *j)
{
	return j ? json_object_to_json_string(j) : "nothing";
}

static inline void is_u64(json_object *o, const char *what, const char *key, uint64_t want)
{
	json_object *j = json_object_object_get(o, key);

	tap_ok(j && json_object_is_type(j, json_type_int) && json_object_get_uint64(j) == want,
	       "%s: %s is %llu (got %s)", what, key, (unsigned long long)want, jc_text(j));
}

static inline void is_int(json_object *o, const char *what, const char *key, int64_t want)
{
	json_object *j = json_object_object_get(o, key);

	tap_ok(j && json_object_is_type(j, json_type_int) && json_object_get_int64(j) == want,
	       "%s: %s is %lld (got %s)", what, key, (long long)want, jc_text(j));
}

/* want to within tolerance (the printed precision: 1e-6 for %.6f, 1e-3 for the bench's). */
static inline void is_double(json_object *o, const char *what, const char *key, double want,
			     double tolerance)
{
	json_object *j = json_object_object_get(o, key);

	tap_ok(j && json_object_is_type(j, json_type_double) &&
		       fabs(json_object_get_double(j) - want) <= tolerance,
	       "%s: %s is %.6f (got %s)", what, key, want, jc_text(j));
}

static inline void is_string(json_object *o, const char *what, const char *key, const char *want)
{
	json_object *j = json_object_object_get(o, key);

	tap_ok(j && json_object_is_type(j, json_type_string) &&
		       !strcmp(json_object_get_string(j), want),
	       "%s: %s is \"%s\" (got %s)", what, key, want, jc_text(j));
}

static inline void is_bool(json_object *o, const char *what, const char *key, bool want)
{
	json_object *j = json_object_object_get(o, key);

	tap_ok(j && json_object_is_type(j, json_type_boolean) && json_object_get_boolean(j) == want,
	       "%s: %s is %s (got %s)", what, key, want ? "true" : "false", jc_text(j));
}

/* Present, with a JSON null (json-c reads null back as a key holding NULL). */
static inline void is_null(json_object *o, const char *what, const char *key)
{
	json_object *j = (json_object *)1;

	tap_ok(json_object_object_get_ex(o, key, &j) && j == NULL, "%s: %s is null (got %s)", what,
	       key, j == (json_object *)1 ? "no key" : jc_text(j));
}

static inline void is_absent(json_object *o, const char *what, const char *key)
{
	tap_ok(!json_object_object_get_ex(o, key, NULL), "%s: no %s", what, key);
}

/* Exactly these keys (NULL-terminated), no more: a key added is added here and to docs/json.md. */
static inline void has_keys(json_object *o, const char *what, const char *const *keys)
{
	size_t nr = 0;
	bool all = true;

	for (; keys[nr]; nr++)
		all = all && json_object_object_get_ex(o, keys[nr], NULL);
	tap_ok(o && all && (size_t)json_object_object_length(o) == nr,
	       "%s: exactly its %zu keys (has %d)", what, nr, o ? json_object_object_length(o) : -1);
}

/* ---- standard output into a string --------------------------------------- */

struct capture {
	FILE *tmp;
	int saved;
	int fd;		/* what is captured: STDOUT_FILENO, or STDERR_FILENO */
};

/* From here, what is written to fd (stdout or stderr) goes to a file. */
static inline int capture_begin_fd(struct capture *c, int fd)
{
	fflush(stdout);
	fflush(stderr);
	c->fd = fd;
	c->tmp = tmpfile();
	c->saved = dup(fd);
	if (!c->tmp || c->saved < 0 || dup2(fileno(c->tmp), fd) < 0)
		return -1;
	return 0;
}

/* From here, what is printed on stdout goes to a file (TAP lines must not be printed). */
static inline int capture_begin(struct capture *c)
{
	return capture_begin_fd(c, STDOUT_FILENO);
}

/* The captured fd back; what was printed, NUL-terminated (free it), or NULL. */
static inline char *capture_end(struct capture *c)
{
	char *text = NULL;
	long len;

	fflush(stdout);
	fflush(stderr);
	dup2(c->saved, c->fd);
	close(c->saved);
	if (!c->tmp)
		return NULL;
	len = ftell(c->tmp);
	if (len >= 0 && (text = calloc(1, (size_t)len + 1))) {
		rewind(c->tmp);
		if (fread(text, 1, (size_t)len, c->tmp) != (size_t)len) {
			free(text);
			text = NULL;
		}
	}
	fclose(c->tmp);
	return text;
}

/* Line i (0-based) of text into buf, without its newline; "" past the end. */
static inline const char *line_of(const char *text, unsigned int i, char *buf, size_t len)
{
	const char *p = text, *end;

	for (; i && p; i--) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	if (!p) {
		buf[0] = '\0';
		return buf;
	}
	end = strchrnul(p, '\n');
	snprintf(buf, len, "%.*s", (int)(end - p), p);
	return buf;
}

static inline void is_line(const char *text, unsigned int i, const char *want)
{
	char buf[1024];

	line_of(text, i, buf, sizeof(buf));
	tap_ok(!strcmp(buf, want), "line %u is '%s' (got '%s')", i, want, buf);
}

#endif
