/* SPDX-License-Identifier: MIT */
/*
 * The store's one way in (state.h says what each call promises): open (the
 * lock, then the store read), read without the lock, save, close. An open
 * resolves the state directory once, to an fd its lock, read and every
 * save of the open go through (statedir.c's *_at calls).
 *
 * Every change to the store or to a pool happens between store_open() and
 * store_close(). Opening also does, once, what nobody else may: 0.1's
 * files, where no store exists yet, are converted (store_v1.c); and what a
 * holder of the lock that died left half done is finished: a pool growth
 * written ahead (its share still marked growing) is settled against what
 * the pool says, before anyone writes a pool again. Growth only ever
 * happens under the lock and clears the mark before it is released, so
 * any mark seen here is stale, and the pool's size is still the one that
 * run left.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

/* 1 when a stale growing share was resolved (the store needs saving). */
static int resolve_growing(struct prealloc_ctx *ctx, struct store *s)
{
	int changed = 0;

	for (size_t i = 0; i < s->nr; i++) {
		for (unsigned int k = 0; k < s->r[i].nr_pools; k++) {
			struct rec_pool *p = &s->r[i].pools[k];
			uint64_t nr = 0;

			if (!p->growing)
				continue;
			/* Unreadable pool: believe nothing grew (never claim pages we did not add). */
			if (hugetlb_read(ctx, p->node, p->page_size, &nr, NULL, NULL) < 0)
				nr = p->grow_from;
			p->added = MIN(p->added, nr > p->grow_from ? nr - p->grow_from : 0);
			p->growing = false;
			changed = 1;
		}
	}
	return changed;
}

/* The store's text parsed into s, counted (ctx->store_reads: what the tests count). */
static int store_from_text(struct prealloc_ctx *ctx, const char *text, size_t len, struct store *s)
{
	__atomic_fetch_add(&ctx->store_reads, 1, __ATOMIC_RELAXED);
	return strlen(text) == len ? store_parse(text, s) : -EBADMSG;
}

/*
 * The store in the state directory dir: its file; where there is none,
 * 0.1's files if any is there (a stat each to find out); else empty.
 * ret_text (may be NULL): the file's text, kept for the caller (NULL when
 * none was read or it was refused), ret_id (may be NULL) the file's
 * identity; a text equal to known (known_len) is not parsed again: 1, s
 * empty.
 */
static int store_read(struct prealloc_ctx *ctx, int dir, struct store *s, const char *known,
		      size_t known_len, char **ret_text, size_t *ret_len, struct statx *ret_id)
{
	char *text;
	size_t len;
	int r;

	memset(s, 0, sizeof(*s));
	if (ret_text)
		*ret_text = NULL;
	r = statedir_read_at(dir, STORE_LEAF, &text, &len, ret_id);
	if (r == -ENOENT && legacy_present(dir)) {
		__atomic_fetch_add(&ctx->store_reads, 1, __ATOMIC_RELAXED);
		return legacy_load(dir, s);
	}
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (known && len == known_len && !memcmp(text, known, len)) {
		free(text);
		return 1;	/* the same store as known: nothing parsed */
	}
	r = store_from_text(ctx, text, len, s);
	if (r == 0 && ret_text) {
		*ret_text = text;
		*ret_len = len;
	} else {
		free(text);
	}
	return r;
}

int store_open_cancel(struct prealloc_ctx *ctx, unsigned int timeout_ms, int cancel_fd,
		      struct store *s, int *ret_fd)
{
	int dir, r;

	*ret_fd = -1;
	memset(s, 0, sizeof(*s));
	r = statedir_open(ctx, true, &dir);
	if (r == 0)
		r = statedir_lock_at(dir, "lock", timeout_ms, cancel_fd, ret_fd);
	if (r == 0)
		r = store_read(ctx, dir, s, NULL, 0, NULL, NULL, NULL);
	s->has_dir = dir >= 0;
	s->dir = dir;
	/* 0.1's files and no store: converted at this first open, the store says so from now on. */
	if (r == 0 && s->legacy) {
		r = store_save(ctx, s);
		s->legacy = false;
	}
	if (r == 0 && resolve_growing(ctx, s))
		r = store_save(ctx, s);
	if (r < 0) {
		store_close(s, *ret_fd);
		*ret_fd = -1;
	}
	return r;
}

int store_open(struct prealloc_ctx *ctx, unsigned int timeout_ms, struct store *s, int *ret_fd)
{
	return store_open_cancel(ctx, timeout_ms, -1, s, ret_fd);
}

static bool same_version(const struct statx *a, const struct statx *b)
{
	return a->stx_ino == b->stx_ino && a->stx_dev_major == b->stx_dev_major &&
	       a->stx_dev_minor == b->stx_dev_minor && a->stx_size == b->stx_size &&
	       a->stx_mtime.tv_sec == b->stx_mtime.tv_sec &&
	       a->stx_mtime.tv_nsec == b->stx_mtime.tv_nsec;
}

int store_load_since(struct prealloc_ctx *ctx, struct store *s, const struct store_known *known,
		     char **ret_text, size_t *ret_len, struct statx *ret_id)
{
	struct statx now;
	int dir, r;

	memset(s, 0, sizeof(*s));
	if (ret_text)
		*ret_text = NULL;
	memset(ret_id, 0, sizeof(*ret_id));
	r = statedir_open(ctx, false, &dir);
	if (r == -ENOENT)
		return 0;	/* no state directory yet: an empty store */
	if (r < 0)
		return r;
	/* Every save renames a new file into place: the same file, long settled, is the same store. */
	if (known && known->settled && file_statx(dir, STORE_LEAF, 0, &now) == 0 &&
	    same_version(&now, &known->id))
		r = 1;
	else
		r = store_read(ctx, dir, s, known ? known->text : NULL, known ? known->len : 0,
			       ret_text, ret_len, ret_id);
	close(dir);
	return r;
}

int store_save(const struct prealloc_ctx *ctx, const struct store *s)
{
	int dir = s->has_dir ? s->dir : -1, r;
	char *text;
	size_t len;

	r = store_format(s, &text, &len);
	if (r < 0)
		return r;
	if (!s->has_dir)
		r = statedir_open(ctx, true, &dir);
	/* Read from 0.1's files: written as the store, they go. */
	if (r == 0)
		r = s->legacy ? legacy_convert(dir, text, len)
			      : statedir_write_at(dir, STORE_LEAF, text, len);
	if (!s->has_dir && dir >= 0)
		close(dir);
	free(text);
	return r;
}

/* One line store_note queued. */
struct store_note {
	int level;
	char text[512];
};

void store_note(struct prealloc_ctx *ctx, struct store *s, int level, const char *fmt, ...)
{
	struct store_note *n = NULL;
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (s && s->has_dir)
		n = realloc(s->notes, (s->nr_notes + 1) * sizeof(*n));
	if (!n) {
		/* No lock held (or no room to queue it): said now. */
		if (!s || !s->has_dir)
			ctx_log(ctx, level, "%s", text);
		return;
	}
	s->notes = n;
	n[s->nr_notes].level = level;
	memcpy(n[s->nr_notes++].text, text, sizeof(text));
	s->note_ctx = ctx;
}

void store_close(struct store *s, int fd)
{
	struct store_note *notes = s->notes;
	unsigned int nr = s->nr_notes;

	s->notes = NULL;
	s->nr_notes = 0;
	store_free(s);
	if (s->has_dir)
		close(s->dir);
	s->has_dir = false;
	s->dir = -1;
	statedir_unlock(fd);
	/* The lock dropped: the log callback may call back into the library. */
	for (unsigned int i = 0; i < nr; i++)
		ctx_log(s->note_ctx, notes[i].level, "%s", notes[i].text);
	free(notes);
}

int store_update(struct prealloc_ctx *ctx, unsigned int timeout_ms, uint64_t id,
		 int (*fn)(struct prealloc_ctx *ctx, struct store *s, size_t ri, void *arg),
		 void *arg)
{
	struct store s;
	long ri;
	int fd, r;

	r = store_open(ctx, timeout_ms, &s, &fd);
	if (r < 0)
		return r;
	ri = store_find(&s, id);
	r = ri < 0 ? -ENOENT : fn(ctx, &s, (size_t)ri, arg);
	store_close(&s, fd);
	return r;
}
