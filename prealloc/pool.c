/* SPDX-License-Identifier: MIT */
/*
 * What the store says, for callers: pool status, the records, the older
 * per-line ledger view, and garbage collection of records whose owner is
 * gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admit.h"
#include "hugetlb.h"
#include "statedir.h"

EXPORT int prealloc_pool_status(struct prealloc_ctx *ctx, int node, uint64_t page_size,
				struct prealloc_pool_status *ret_status)
{
	struct prealloc_pool_status st = { .size = sizeof(st) };
	struct store s;
	int r;

	if (!ctx || !ret_status || ret_status->size < sizeof(size_t))
		return -EINVAL;
	if (page_size != PREALLOC_PAGE_2M && page_size != PREALLOC_PAGE_1G)
		return -EINVAL;
	if (!topo_node(ctx, node))
		return -ENODEV;
	st.node = node;
	st.page_size = page_size;
	r = hugetlb_read(ctx, node, page_size, &st.total, &st.free, &st.surplus);
	if (r < 0)
		return r;
	r = store_load(ctx, &s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s.nr; i++) {
		for (unsigned int k = 0; k < s.r[i].nr_pools; k++) {
			const struct rec_pool *p = &s.r[i].pools[k];

			if (p->node != node || p->page_size != page_size)
				continue;
			st.reserved += record_outstanding(ctx, &s.r[i], p);
			st.added += p->added;
			st.owners++;
		}
	}
	store_free(&s);
	copy_sized_out(ret_status, &st, sizeof(st));
	return 0;
}

static const char *owner_label(const struct record *r)
{
	if (r->has_file && r->path[0])
		return r->path;
	return r->owner.kind == PREALLOC_OWNER_HOLDER ? r->owner.holder : "-";
}

EXPORT int prealloc_ledger_entry(struct prealloc_ctx *ctx, unsigned int index,
				 struct prealloc_ledger_entry *ret_entry)
{
	struct prealloc_ledger_entry out = { .size = sizeof(out) };
	struct store s;
	unsigned int n = 0;
	int r;

	if (!ctx || !ret_entry || ret_entry->size < sizeof(size_t))
		return -EINVAL;
	r = store_load(ctx, &s);
	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < s.nr && r == -ENOENT; i++) {
		const struct record *rec = &s.r[i];

		if (index >= n + rec->nr_pools) {
			n += rec->nr_pools;
			continue;
		}
		const struct rec_pool *p = &rec->pools[index - n];

		/* A run that died is shown for what it is. */
		out.state = rec->state == PREALLOC_RECORD_READY ? PREALLOC_LEDGER_HELD
			    : rec->state == PREALLOC_RECORD_PREPARING && owner_alive(ctx, &rec->owner)
				    ? PREALLOC_LEDGER_IN_FLIGHT
				    : PREALLOC_LEDGER_ORPHAN;
		out.node = p->node;
		out.page_size = p->page_size;
		out.pages = p->pages;
		out.added = p->added;
		out.outstanding = record_outstanding(ctx, rec, p);
		out.pid = rec->owner.kind == PREALLOC_OWNER_RUN ? rec->owner.pid : 0;
		out.dev = rec->dev;
		out.ino = rec->ino;
		snprintf(out.owner, sizeof(out.owner), "%s", owner_label(rec));
		r = 0;
	}
	store_free(&s);
	if (r == 0)
		copy_sized_out(ret_entry, &out, sizeof(out));
	return r;
}

EXPORT int prealloc_record(struct prealloc_ctx *ctx, unsigned int index,
			   struct prealloc_record_info *ret_info)
{
	struct prealloc_record_info out = { .size = sizeof(out) };
	const struct record *rec;
	struct store s;
	int r;

	if (!ctx || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	r = store_load(ctx, &s);
	if (r < 0)
		return r;
	if (index >= s.nr) {
		store_free(&s);
		return -ENOENT;
	}
	rec = &s.r[index];
	out.id = rec->id;
	out.state = rec->state;
	out.owner = rec->owner.kind;
	out.alive = owner_alive(ctx, &rec->owner);
	out.pid = rec->owner.kind == PREALLOC_OWNER_RUN ? rec->owner.pid : 0;
	snprintf(out.holder, sizeof(out.holder), "%s", rec->owner.holder);
	out.has_file = rec->has_file;
	out.created = rec->created;
	out.file_size = rec->size;
	out.page_size = rec->page_size;
	for (unsigned int k = 0; k < rec->nr_pools; k++) {
		out.pages += rec->pools[k].pages;
		out.added += rec->pools[k].added;
		out.outstanding += record_outstanding(ctx, rec, &rec->pools[k]);
	}
	snprintf(out.path, sizeof(out.path), "%s", rec->path);
	store_free(&s);
	copy_sized_out(ret_info, &out, sizeof(out));
	return 0;
}

/* What gc does with a record: keep it, or settle it (and whether a ready file goes too). */
static bool gc_wants(struct prealloc_ctx *ctx, const struct record *r, bool *ret_remove_ready)
{
	bool alive = owner_alive(ctx, &r->owner);

	*ret_remove_ready = false;
	switch (r->state) {
	case PREALLOC_RECORD_PREPARING:
		return !alive;
	case PREALLOC_RECORD_READY:
		if (r->owner.kind == PREALLOC_OWNER_HOLDER) {
			/* The holder's files go with it: it was the only reason they existed. */
			*ret_remove_ready = !alive;
			return !alive;
		}
		/* Held by its file: settled once the file is gone. */
		return r->has_file && record_file_where(r) != 1;
	case PREALLOC_RECORD_RELEASING:
		*ret_remove_ready = true;
		return true;
	default:
		return true;
	}
}

/* What gc removed, said through the log once the lock is released. */
struct removal {
	char what[PATH_MAX + 32];
	bool died;		/* a run that died before its file was ready */
};

/*
 * Settles every record pick() selects; counts what went back. A record
 * that cannot be settled (say, its pool is gone) does not stop the others:
 * the first error is returned.
 */
static int settle_matching(struct prealloc_ctx *ctx, unsigned int timeout_ms,
			   bool (*pick)(struct prealloc_ctx *ctx, const struct record *r,
					const void *arg, bool *ret_remove_ready),
			   const void *arg, struct prealloc_release_info *info,
			   unsigned int *ret_matched)
{
	struct removal *gone = NULL;
	uint64_t *ids = NULL;
	struct store s;
	size_t nr = 0, nr_gone = 0;
	int fd, r, first = 0;

	*ret_matched = 0;
	r = store_open(ctx, timeout_ms, &s, &fd);
	if (r < 0)
		return r;
	ids = calloc(s.nr + 1, sizeof(*ids));
	gone = calloc(s.nr + 1, sizeof(*gone));
	if (!ids || !gone) {
		first = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s.nr; i++)
		ids[nr++] = s.r[i].id;
	for (size_t k = 0; k < nr; k++) {
		long i = store_find(&s, ids[k]);
		bool remove_ready, removed = false;
		struct removal rm;

		if (i < 0 || !pick(ctx, &s.r[i], arg, &remove_ready))
			continue;
		(*ret_matched)++;
		snprintf(rm.what, sizeof(rm.what), "%s", owner_label(&s.r[i]));
		rm.died = s.r[i].state == PREALLOC_RECORD_PREPARING;
		r = record_settle(ctx, &s, (size_t)i, remove_ready, &info->returned, &info->in_use,
				  &removed);
		if (r < 0 && !first)
			first = r;
		info->removed |= removed;
		if (r == 0 && removed)
			gone[nr_gone++] = rm;
	}
out:
	store_close(&s, fd);
	/* The log callback may call back into the library: never with the lock held. */
	for (size_t k = 0; k < nr_gone; k++)
		ctx_log(ctx, PREALLOC_LOG_INFO, "removed %s: %s", gone[k].what,
			gone[k].died ? "its run died before it was ready" : "released");
	free(gone);
	free(ids);
	return first;
}

static bool pick_stale(struct prealloc_ctx *ctx, const struct record *r, const void *arg,
		       bool *ret_remove_ready)
{
	(void)arg;
	return gc_wants(ctx, r, ret_remove_ready);
}

EXPORT int prealloc_pool_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned,
			    unsigned int *ret_entries)
{
	struct prealloc_release_info info = { 0 };
	unsigned int matched = 0;
	int r;

	if (!ctx)
		return -EINVAL;
	r = settle_matching(ctx, ADMIT_LOCK_TIMEOUT_MS, pick_stale, NULL, &info, &matched);
	if (ret_returned)
		*ret_returned = info.returned;
	if (ret_entries)
		*ret_entries = matched;
	return r;
}

static bool pick_holder(struct prealloc_ctx *ctx, const struct record *r, const void *arg,
			bool *ret_remove_ready)
{
	(void)ctx;
	*ret_remove_ready = true;
	return r->owner.kind == PREALLOC_OWNER_HOLDER && !strcmp(r->owner.holder, arg);
}

EXPORT int prealloc_release_holder(struct prealloc_ctx *ctx, const char *holder,
				   struct prealloc_release_info *ret_info)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	unsigned int matched = 0;
	int r;

	if (!ctx || !holder || !*holder)
		return -EINVAL;
	r = settle_matching(ctx, ADMIT_LOCK_TIMEOUT_MS, pick_holder, holder, &info, &matched);
	if (r == 0 && !matched)
		r = -ENOENT;
	if (ret_info && ret_info->size >= sizeof(size_t))
		copy_sized_out(ret_info, &info, sizeof(info));
	return r;
}
