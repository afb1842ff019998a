/* SPDX-License-Identifier: MIT */
/*
 * The state of prealloc 0.1, read once and converted: its `ledger` file
 * (<state dir>/ledger, one line per node share) and the registry of created
 * files (<state dir>/files/<dev>-<ino>, key=value lines). The first open of
 * the store that finds them and no store converts them (store_lock.c): the
 * store written replaces both, and is all that is read from then on.
 */
#include <dirent.h>
#include <fcntl.h>
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

static int registry_load(int dir, struct store *s)
{
	struct dirent *de;
	int fd, r = 0;
	DIR *d;

	fd = openat(dir, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return 0;
	}
	while (r == 0 && (de = readdir(d))) {
		unsigned long long dev, ino;
		char *text;
		size_t len;
		int end = 0;

		if (sscanf(de->d_name, "%llx-%llx%n", &dev, &ino, &end) != 2 || de->d_name[end])
			continue;	/* ".", "..", a crashed write's temp file */
		if (statedir_read_at(dirfd(d), de->d_name, &text, &len, NULL) < 0)
			continue;
		s->legacy = true;
		r = legacy_parse_registry(text, dev, ino, s);
		free(text);
	}
	closedir(d);
	return r;
}

bool legacy_present(int dir)
{
	struct stat st;

	return fstatat(dir, "ledger", &st, AT_SYMLINK_NOFOLLOW) == 0 ||
	       fstatat(dir, "files", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int legacy_load(int dir, struct store *s)
{
	char *text;
	size_t len;
	int r;

	memset(s, 0, sizeof(*s));
	r = statedir_read_at(dir, "ledger", &text, &len, NULL);
	if (r == 0) {
		s->legacy = true;
		r = legacy_parse_ledger(text, s);
		free(text);
	}
	if (r == -ENOENT)
		r = 0;
	if (r == 0)
		r = registry_load(dir, s);
	if (r < 0)
		store_free(s);
	return r;
}

static void legacy_remove(int dir)
{
	struct dirent *de;
	int fd;
	DIR *d;

	unlinkat(dir, "ledger", 0);
	test_pause("store-convert-ledger-gone");
	unlinkat(dir, "pool.lock", 0);
	fd = openat(dir, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	closedir(d);
	unlinkat(dir, "files", AT_REMOVEDIR);
}

/*
 * A 0.1 binary still running locks pool.lock, not our lock: its lock is
 * held too while its files turn into the store. Killed before the rename,
 * they are as they were (the next open converts them); after it, the
 * store is read from then on, and whatever of them is left is never
 * looked at again.
 */
int legacy_convert(int dir, const char *text, size_t len)
{
	int lock = -1, r;

	r = statedir_lock_at(dir, "pool.lock", 30000, -1, &lock);
	test_pause("store-convert-locked");
	if (r == 0)
		r = statedir_write_at(dir, STORE_LEAF, text, len);
	test_pause("store-convert-written");
	if (r == 0)
		legacy_remove(dir);
	statedir_unlock(lock);
	return r;
}
