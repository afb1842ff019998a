/* SPDX-License-Identifier: MIT */
/*
 * The state of prealloc 0.1, read once and converted: the pool ledger
 * (<state dir>/ledger, one line per node share) and the registry of created
 * files (<state dir>/files/<dev>-<ino>, key=value lines). The first store
 * written replaces both (store_save), so they are read at most until then.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

static const char *const v1_states[] = { "in-flight", "held", "orphan" };

/* One v1 ledger line into its record (grouped by reservation id). */
static int ledger_line(char *line, struct store *s)
{
	unsigned long long ps, pages, added, base, start, dev, ino, id;
	char state[16];
	int node, pid, off = 0, st = -1;
	struct rec_pool p;
	struct record *r;
	long i;

	if (sscanf(line, "%15s %d %llu %llu %llu %llu %d %llu %llu %llu %llx %n", state, &node, &ps,
		   &pages, &added, &base, &pid, &start, &dev, &ino, &id, &off) < 11 || off <= 0)
		return -EBADMSG;
	for (int k = 0; k < 3; k++)
		if (!strcmp(state, v1_states[k]))
			st = k;
	if (st < 0 || node < 0)
		return -EBADMSG;
	i = store_find(s, id);
	r = i >= 0 ? &s->r[i] : store_add(s, id);
	if (!r)
		return -ENOMEM;
	if (i < 0) {
		r->state = st == 0 ? PREALLOC_RECORD_PREPARING
			   : st == 1 ? PREALLOC_RECORD_READY
				     : PREALLOC_RECORD_ORPHAN;
		if (st == 0) {
			r->owner.kind = PREALLOC_OWNER_RUN;
			r->owner.pid = pid;
			r->owner.start = start;
		}
		r->page_size = ps;
		if (line[off] == '/' && ino) {
			r->has_file = true;
			r->dev = dev;
			r->ino = ino;
			snprintf(r->path, sizeof(r->path), "%s", line + off);
		}
	}
	p = (struct rec_pool){ .node = node, .page_size = ps, .pages = pages, .added = added,
			       .base = base };
	return record_add_pool(r, &p);
}

int legacy_parse_ledger(const char *text, struct store *s)
{
	char *copy = strdup(text), *line, *save = NULL;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (line = strtok_r(copy, "\n", &save); line && r == 0; line = strtok_r(NULL, "\n", &save))
		if (line[0] != '#')
			r = ledger_line(line, s);
	free(copy);
	return r;
}

/* One registry record: the file prealloc made, matched to its ledger record if any. */
int legacy_parse_registry(const char *text, uint64_t dev, uint64_t ino, struct store *s)
{
	char path[PATH_MAX] = "";
	unsigned long long size = 0, ps = 0;
	const char *p = text;
	struct record *r = NULL;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (!strncmp(p, "path=", 5) && n - 5 < sizeof(path))
			snprintf(path, n - 4, "%s", p + 5);
		else if (!strncmp(p, "size=", 5))
			size = strtoull(p + 5, NULL, 10);
		else if (!strncmp(p, "page_size=", 10))
			ps = strtoull(p + 10, NULL, 10);
		p += n + (nl ? 1 : 0);
	}
	if (path[0] != '/')
		return -EBADMSG;
	for (size_t i = 0; i < s->nr && !r; i++)
		if (s->r[i].has_file && s->r[i].dev == dev && s->r[i].ino == ino &&
		    !strcmp(s->r[i].path, path))
			r = &s->r[i];
	if (!r) {
		r = store_add(s, record_new_id());
		if (!r)
			return -ENOMEM;
		r->state = PREALLOC_RECORD_READY;
		r->has_file = true;
		r->dev = dev;
		r->ino = ino;
		snprintf(r->path, sizeof(r->path), "%s", path);
	}
	r->created = true;
	r->size = size;
	r->page_size = ps;
	return 0;
}

static int registry_load(const struct prealloc_ctx *ctx, struct store *s, bool *found)
{
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (statedir_path(ctx, dir, sizeof(dir), "files") < 0 || !(d = opendir(dir)))
		return 0;
	while (r == 0 && (de = readdir(d))) {
		unsigned long long dev, ino;
		char leaf[PATH_MAX], *text;
		size_t len;
		int end = 0;

		if (sscanf(de->d_name, "%llx-%llx%n", &dev, &ino, &end) != 2 || de->d_name[end])
			continue;	/* ".", "..", a crashed write's temp file */
		snprintf(leaf, sizeof(leaf), "files/%s", de->d_name);
		if (statedir_read(ctx, leaf, &text, &len) < 0)
			continue;
		*found = true;
		r = legacy_parse_registry(text, dev, ino, s);
		free(text);
	}
	closedir(d);
	return r;
}

int legacy_load(const struct prealloc_ctx *ctx, struct store *s, bool *ret_found)
{
	char *text;
	size_t len;
	int r;

	*ret_found = false;
	r = statedir_read(ctx, "ledger", &text, &len);
	if (r == 0) {
		*ret_found = true;
		r = legacy_parse_ledger(text, s);
		free(text);
	}
	if (r == -ENOENT)
		r = 0;
	if (r == 0)
		r = registry_load(ctx, s, ret_found);
	if (r < 0)
		store_free(s);
	else
		s->legacy = *ret_found;
	return r;
}

void legacy_remove(const struct prealloc_ctx *ctx)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (statedir_path(ctx, path, sizeof(path), "ledger") == 0)
		unlink(path);
	if (statedir_path(ctx, path, sizeof(path), "pool.lock") == 0)
		unlink(path);
	if (statedir_path(ctx, path, sizeof(path), "files") < 0 || !(d = opendir(path)))
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	rmdir(path);
}
