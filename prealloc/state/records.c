/* SPDX-License-Identifier: MIT */
/*
 * The record store's text format, parsed and formatted (the store in
 * memory is store.c's, its one way in, read and saved under the state
 * directory, store_lock.c's; owners.c says who owns a record and whether
 * it lives).
 *
 *   prealloc-store 2
 *   rec <id> <state> <owner> <flags> <dev> <ino> <tag s.ns> <size> <page_size> <path> <tmp>
 *   warm <state> <node> [<tenant>]                                (version 3; 4, 5)
 *   busy <pid> <start> | uid <uid> <gid> | declared <sum> <conf>  (version 5, warm)
 *   pool <node> <page_size> <pages> <added> <base> <grow_from>   (of the rec above)
 *   end <lines before this one> <FNV-1a 64 of the text before this line>
 *
 * owner is "none", "run:<pid>:<start>" or "holder:<name>:<check>:<expires>";
 * flags "-" or letters f (has a file) and c (created it). Strings are
 * percent-encoded (space, ':', '%', '-', control and non-ASCII bytes), "-"
 * when empty. Anything else, a wrong count or checksum, or a version we do
 * not know makes the whole store corrupt: refused, never guessed at.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "state.h"

static const char *const warm_names[] = {
	[PREALLOC_WARM_POPULATING] = "populating",
	[PREALLOC_WARM_READY] = "ready",
	[PREALLOC_WARM_HANDED] = "handed",
	[PREALLOC_WARM_RETURNING] = "returning",
	[PREALLOC_WARM_DIRTY] = "dirty",
	[PREALLOC_WARM_CLEARING] = "clearing",
	[PREALLOC_WARM_QUARANTINED] = "quarantined",
};

static const char *const state_names[] = {
	[PREALLOC_RECORD_PREPARING] = "preparing",
	[PREALLOC_RECORD_READY] = "ready",
	[PREALLOC_RECORD_RELEASING] = "releasing",
	[PREALLOC_RECORD_ORPHAN] = "orphan",
};

/* ---- text format -------------------------------------------------------- */

static void format_owner(struct text *t, const struct rec_owner *o)
{
	switch (o->kind) {
	case PREALLOC_OWNER_RUN:
		text_add(t, "run:%d:%" PRIu64, o->pid, o->start);
		break;
	case PREALLOC_OWNER_HOLDER:
		text_add(t, "holder:");
		text_str(t, o->holder);
		text_add(t, ":");
		text_str(t, o->check);
		text_add(t, ":%" PRId64, o->expires);
		break;
	default:
		text_add(t, "none");
	}
}

/* A warm record's version-5 lines (store_version says when): how many. */
static size_t format_held(struct text *t, const struct record *r)
{
	size_t lines = 0;

	if (r->busy_pid) {
		text_add(t, "busy %d %" PRIu64 "\n", r->busy_pid, r->busy_start);
		lines++;
	}
	if (r->has_uid) {
		text_add(t, "uid %" PRIu32 " %" PRIu32 "\n", r->uid, r->gid);
		lines++;
	}
	if (r->declared[0]) {
		text_add(t, "declared %016" PRIx64 " ", r->declared_sum);
		text_str(t, r->declared);
		text_add(t, "\n");
		lines++;
	}
	return lines;
}

/* Text a load would refuse (expires < 0, pid 0, an id twice) is -EINVAL: never saved. */
static int read_back(const char *text)
{
	struct store back;
	int r = store_parse(text, &back);

	if (r == 0)
		store_free(&back);
	return r == -EBADMSG ? -EINVAL : r;
}

/* The store's text; -EINVAL, nothing made, for one its reader would refuse. */
int store_format(const struct store *s, char **ret_text, size_t *ret_len)
{
	struct text t = { 0 };
	size_t lines = 1;

	for (size_t i = 0; i < s->nr; i++)
		if ((unsigned int)s->r[i].state >= ARRAY_SIZE(state_names) ||
		    (unsigned int)s->r[i].warm >= ARRAY_SIZE(warm_names) ||
		    (unsigned int)s->r[i].owner.kind > PREALLOC_OWNER_HOLDER)
			return -EINVAL;	/* no name to write it by */
	text_add(&t, "prealloc-store %d\n", store_version(s));
	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		text_add(&t, "rec %016" PRIx64 " %s ", r->id, state_names[r->state]);
		format_owner(&t, &r->owner);
		text_add(&t, " %s%s%s %" PRIu64 " %" PRIu64 " %" PRId64 ".%09ld %" PRIu64 " %" PRIu64 " ",
			 r->has_file ? "f" : "", r->created ? "c" : "",
			 r->has_file || r->created ? "" : "-", r->dev, r->ino, r->tag_sec, r->tag_nsec,
			 r->size, r->page_size);
		text_str(&t, r->path);
		text_add(&t, " ");
		text_str(&t, r->tmp);
		text_add(&t, "\n");
		lines++;
		if (r->warm != WARM_NONE) {
			text_add(&t, "warm %s %d", warm_names[r->warm], r->warm_node);
			if (store_version(s) >= STORE_VERSION_TENANT) {
				text_add(&t, " ");
				text_str(&t, r->tenant);
			}
			text_add(&t, "\n");
			lines++;
			lines += format_held(&t, r);
		}
		for (unsigned int k = 0; k < r->nr_pools; k++, lines++) {
			const struct rec_pool *p = &r->pools[k];

			text_add(&t, "pool %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " ", p->node,
				 p->page_size, p->pages, p->added, p->base);
			if (p->growing)
				text_add(&t, "%" PRIu64 "\n", p->grow_from);
			else
				text_add(&t, "-\n");
		}
	}
	if (!t.err) {
		uint64_t h = fnv1a(t.buf, t.len);

		text_add(&t, "end %zu %016" PRIx64 "\n", lines, h);
	}
	if (!t.err)
		t.err = read_back(t.buf);
	if (t.err) {
		free(t.buf);
		return t.err;
	}
	*ret_text = t.buf;
	*ret_len = t.len;
	return 0;
}

static int parse_state(const char *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(state_names); i++)
		if (!strcmp(s, state_names[i]))
			return (int)i;
	return -1;
}

static int parse_owner(char *tok, struct rec_owner *o)
{
	char *f[4], *save = NULL;
	int n = 0;

	memset(o, 0, sizeof(*o));
	if (!strcmp(tok, "none"))
		return 0;
	for (char *p = strtok_r(tok, ":", &save); p && n < 4; p = strtok_r(NULL, ":", &save))
		f[n++] = p;
	if (n == 3 && !strcmp(f[0], "run")) {
		uint64_t pid;

		o->kind = PREALLOC_OWNER_RUN;
		if (parse_u64(f[1], &pid) < 0 || !pid || pid > INT32_MAX ||
		    parse_u64(f[2], &o->start) < 0)
			return -EBADMSG;
		o->pid = (int)pid;
		return 0;
	}
	if (n == 4 && !strcmp(f[0], "holder") && !strtok_r(NULL, ":", &save)) {
		o->kind = PREALLOC_OWNER_HOLDER;
		if (str_decode(f[1], o->holder, sizeof(o->holder)) < 0 || !o->holder[0] ||
		    str_decode(f[2], o->check, sizeof(o->check)) < 0)
			return -EBADMSG;
		uint64_t expires;

		if (parse_u64(f[3], &expires) < 0 || expires > INT64_MAX)
			return -EBADMSG;
		o->expires = (int64_t)expires;
		return 0;
	}
	return -EBADMSG;
}

/* "<seconds>.<9 digits of nanoseconds>". */
static int parse_tag(const char *tok, int64_t *ret_sec, long *ret_nsec)
{
	const char *dot = strchr(tok, '.');
	int n = 0;

	if (!dot || strlen(dot + 1) != 9 || strspn(dot + 1, "0123456789") != 9 ||
	    sscanf(tok, "%" SCNd64 ".%ld%n", ret_sec, ret_nsec, &n) != 2 || tok[n])
		return -EBADMSG;
	return 0;
}

static int parse_rec(char *line, struct store *s)
{
	char state[16], owner[16384], flags[8], path[12288], tmp[12288];
	uint64_t id, dev, ino, size, ps;
	char tag[32];
	int64_t tag_sec;
	long tag_nsec;
	struct record *r;
	int st, end = 0;

	if (sscanf(line, "rec %" SCNx64 " %15s %16383s %7s %" SCNu64 " %" SCNu64 " %31s %" SCNu64
			 " %" SCNu64 " %12287s %12287s%n",
		   &id, state, owner, flags, &dev, &ino, tag, &size, &ps, path, tmp, &end) != 11 ||
	    line[end] || parse_tag(tag, &tag_sec, &tag_nsec) < 0 || (st = parse_state(state)) < 0 ||
	    store_find(s, id) >= 0)
		return -EBADMSG;
	r = store_add(s, id);
	if (!r)
		return -ENOMEM;
	r->state = st;
	r->has_file = strchr(flags, 'f');
	r->created = strchr(flags, 'c');
	r->dev = dev;
	r->ino = ino;
	r->tag_sec = tag_sec;
	r->tag_nsec = tag_nsec;
	r->size = size;
	r->page_size = ps;
	if (strspn(flags, "fc-") != strlen(flags) || parse_owner(owner, &r->owner) < 0 ||
	    str_decode(path, r->path, sizeof(r->path)) < 0 ||
	    str_decode(tmp, r->tmp, sizeof(r->tmp)) < 0)
		return -EBADMSG;
	return 0;
}

/*
 * "warm <state> <node>" (version 3), "warm <state> <node> <tenant>"
 * (versions 4 and 5): the rec above is a warm file (once).
 */
static int parse_warm(const char *line, int version, struct store *s)
{
	char state[16], tenant[3 * TENANT_MAX] = "-";
	struct record *r;
	int node, end = 0;
	size_t st;

	if (!s->nr || sscanf(line, "warm %15s %d%n", state, &node, &end) != 2 || node < 0 ||
	    node >= PREALLOC_MAX_NODES)
		return -EBADMSG;
	if (version >= STORE_VERSION_TENANT) {
		int n = 0;

		if (sscanf(line + end, " %191s%n", tenant, &n) != 1)
			return -EBADMSG;
		end += n;
	}
	if (line[end] || str_decode(tenant, s->r[s->nr - 1].tenant, TENANT_MAX) < 0)
		return -EBADMSG;
	for (st = 1; st < ARRAY_SIZE(warm_names); st++)
		if (!strcmp(state, warm_names[st]))
			break;
	r = &s->r[s->nr - 1];
	if (st == ARRAY_SIZE(warm_names) || r->warm != WARM_NONE)
		return -EBADMSG;
	r->warm = (int)st;
	r->warm_node = node;
	return 0;
}

/*
 * Version 5: "busy <pid> <start>", "uid <uid> <gid>", "declared <sum>
 * <conf>", each at most once, after the warm line of the rec above.
 */
static int parse_held(const char *line, struct store *s)
{
	char tok[2][24], path[3 * PATH_MAX];
	struct record *r;
	uint64_t a, b;
	int end = 0;

	if (!s->nr || (r = &s->r[s->nr - 1])->warm == WARM_NONE)
		return -EBADMSG;
	if (!strncmp(line, "declared ", 9)) {
		if (r->declared[0] || sscanf(line, "declared %16s %12287s%n", tok[0], path, &end) != 2 ||
		    line[end] || strlen(tok[0]) != 16 || strspn(tok[0], "0123456789abcdef") != 16 ||
		    str_decode(path, r->declared, sizeof(r->declared)) < 0 || r->declared[0] != '/')
			return -EBADMSG;
		r->declared_sum = strtoull(tok[0], NULL, 16);
		return 0;
	}
	if (sscanf(line, "%*s %23s %23s%n", tok[0], tok[1], &end) != 2 || line[end] ||
	    parse_u64(tok[0], &a) < 0 || parse_u64(tok[1], &b) < 0)
		return -EBADMSG;
	if (!strncmp(line, "busy ", 5)) {
		if (r->busy_pid || !a || a > INT32_MAX)
			return -EBADMSG;
		r->busy_pid = (int)a;
		r->busy_start = b;
		return 0;
	}
	if (!strncmp(line, "uid ", 4)) {
		if (r->has_uid || a > UINT32_MAX || b > UINT32_MAX)
			return -EBADMSG;
		r->has_uid = true;
		r->uid = (uint32_t)a;
		r->gid = (uint32_t)b;
		return 0;
	}
	return -EBADMSG;
}

static int parse_pool(const char *line, struct store *s)
{
	struct rec_pool p = { 0 };
	char from[24];
	int end = 0, n = 0;

	if (!s->nr || sscanf(line, "pool %d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %23s%n",
			     &p.node, &p.page_size, &p.pages, &p.added, &p.base, from, &end) != 6 ||
	    line[end] || p.node < 0 || p.node >= PREALLOC_MAX_NODES ||
	    (p.page_size != PREALLOC_PAGE_4K && p.page_size != PREALLOC_PAGE_2M &&
	     p.page_size != PREALLOC_PAGE_1G))
		return -EBADMSG;
	if (strcmp(from, "-")) {
		if (sscanf(from, "%" SCNu64 "%n", &p.grow_from, &n) != 1 || from[n] || from[0] == '-')
			return -EBADMSG;
		p.growing = true;
	}
	return record_add_pool(&s->r[s->nr - 1], &p);
}

/* Checks the header and the end line; NUL-terminates the body lines in place. */
static int check_frame(char *text, char **ret_body_end, int *ret_version)
{
	char *last, *nl;
	size_t lines = 0, count;
	uint64_t sum;
	int version, end = 0;

	if (sscanf(text, "prealloc-store %d\n", &version) != 1 ||
	    (version != STORE_VERSION && version != STORE_VERSION_WARM &&
	     version != STORE_VERSION_TENANT && version != STORE_VERSION_HELD))
		return -EBADMSG;
	*ret_version = version;
	nl = text + strlen(text);
	if (nl == text || nl[-1] != '\n')
		return -EBADMSG;	/* cut short */
	nl[-1] = '\0';
	last = strrchr(text, '\n');
	if (!last)
		return -EBADMSG;
	last++;
	if (sscanf(last, "end %zu %" SCNx64 "%n", &count, &sum, &end) != 2 || last[end] ||
	    fnv1a(text, (size_t)(last - text)) != sum)
		return -EBADMSG;
	for (char *p = text; p < last; p++)
		lines += *p == '\n';
	if (lines != count)
		return -EBADMSG;
	*ret_body_end = last;
	return 0;
}

int store_parse(const char *text, struct store *s)
{
	char *copy = strdup(text), *body_end, *line, *save = NULL;
	int version, r;

	memset(s, 0, sizeof(*s));
	if (!copy)
		return -ENOMEM;
	r = check_frame(copy, &body_end, &version);
	if (r < 0)
		goto out;
	body_end[-1] = '\0';
	line = strtok_r(copy, "\n", &save);	/* the header */
	while (r == 0 && (line = strtok_r(NULL, "\n", &save)))
		r = !strncmp(line, "rec ", 4)	 ? parse_rec(line, s)
		    : !strncmp(line, "pool ", 5) ? parse_pool(line, s)
		    : !strncmp(line, "warm ", 5) && version >= STORE_VERSION_WARM
			? parse_warm(line, version, s)
		    : version >= STORE_VERSION_HELD && (!strncmp(line, "busy ", 5) ||
							!strncmp(line, "uid ", 4) ||
							!strncmp(line, "declared ", 9))
			? parse_held(line, s)
			: -EBADMSG;
out:
	free(copy);
	if (r < 0)
		store_free(s);
	return r;
}
