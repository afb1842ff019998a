/* SPDX-License-Identifier: MIT */
/*
 * What the store says, for callers: pool status, the records and the
 * store's shares one by one, what a holder claimed (each read once per
 * version of the store file: store_cache.c).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "state.h"

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
			st.promised += record_outstanding(ctx, &s.r[i], p);
			st.added += p->added;
			st.owners++;
		}
	}
	store_free(&s);
	copy_sized_out(ret_status, &st, sizeof(st));
	return 0;
}

const char *owner_label(const struct record *r)
{
	if (r->has_file && r->path[0])
		return r->path;
	return r->owner.kind == PREALLOC_OWNER_HOLDER ? r->owner.holder : "-";
}

EXPORT int prealloc_store_entry(struct prealloc_ctx *ctx, unsigned int index,
				struct prealloc_store_entry *ret_entry)
{
	struct prealloc_store_entry out = { .size = sizeof(out) };
	const struct store *s;
	unsigned int n = 0;
	int r;

	if (!ctx || !ret_entry || ret_entry->size < sizeof(size_t))
		return -EINVAL;
	r = store_cache_hold(ctx, &s);
	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = 0; i < s->nr && r == -ENOENT; i++) {
		const struct record *rec = &s->r[i];

		if (index >= n + rec->nr_pools) {
			n += rec->nr_pools;
			continue;
		}
		const struct rec_pool *p = &rec->pools[index - n];

		/* A run that died is shown for what it is. */
		out.state = rec->state == PREALLOC_RECORD_READY ? PREALLOC_STORE_HELD
			    : rec->state == PREALLOC_RECORD_PREPARING && owner_alive(ctx, &rec->owner)
				    ? PREALLOC_STORE_IN_FLIGHT
				    : PREALLOC_STORE_ORPHAN;
		out.node = p->node;
		out.page_size = p->page_size;
		out.pages = p->pages;
		out.added = p->added;
		out.outstanding = record_outstanding(ctx, rec, p);
		out.pid = rec->owner.kind == PREALLOC_OWNER_RUN ? rec->owner.pid : 0;
		out.dev = rec->dev;
		out.ino = rec->ino;
		snprintf(out.tag, sizeof(out.tag), "%s", owner_label(rec));
		r = 0;
	}
	store_cache_release(ctx);
	if (r == 0)
		copy_sized_out(ret_entry, &out, sizeof(out));
	return r;
}
EXPORT int prealloc_holder_claimed(struct prealloc_ctx *ctx, const char *holder, int node,
				   uint64_t page_size, uint64_t *ret_pages)
{
	const struct store *s;
	uint64_t pages = 0;
	int r;

	if (!ctx || !holder || !ret_pages)
		return -EINVAL;
	r = store_cache_hold(ctx, &s);
	if (r < 0)
		return r;
	for (size_t i = 0; i < s->nr; i++) {
		const struct record *rec = &s->r[i];

		if (rec->state != PREALLOC_RECORD_READY || rec->has_file ||
		    rec->owner.kind != PREALLOC_OWNER_HOLDER || strcmp(rec->owner.holder, holder))
			continue;
		for (unsigned int k = 0; k < rec->nr_pools; k++)
			if (rec->pools[k].node == node && rec->pools[k].page_size == page_size)
				pages += rec->pools[k].pages;
	}
	store_cache_release(ctx);
	*ret_pages = pages;
	return 0;
}

/* 0.1's name, still exported at PREALLOC_0.1 (docs/abi.md). */
#undef prealloc_ledger_entry
EXPORT_ALIAS(prealloc_ledger_entry, prealloc_store_entry);

EXPORT int prealloc_record(struct prealloc_ctx *ctx, unsigned int index,
			   struct prealloc_record_info *ret_info)
{
	struct prealloc_record_info out = { .size = sizeof(out) };
	const struct record *rec;
	const struct store *s;
	int r;

	if (!ctx || !ret_info || ret_info->size < sizeof(size_t))
		return -EINVAL;
	r = store_cache_hold(ctx, &s);
	if (r < 0)
		return r;
	if (index >= s->nr) {
		store_cache_release(ctx);
		return -ENOENT;
	}
	rec = &s->r[index];
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
	out.dev = rec->dev;
	out.ino = rec->ino;
	out.warm = rec->warm;
	out.warm_node = rec->warm != WARM_NONE ? rec->warm_node : -1;
	/* A caller's tenant only: the pool's own labels ('@') are any take's. */
	if (rec->tenant[0] != '@')
		snprintf(out.tenant, sizeof(out.tenant), "%s", rec->tenant);
	store_cache_release(ctx);
	copy_sized_out(ret_info, &out, sizeof(out));
	return 0;
}
