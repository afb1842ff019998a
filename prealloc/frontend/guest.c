/* SPDX-License-Identifier: MIT */
/* A guest's clock and log, and what its holder holds already. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <prealloc.h>

#include "guest.h"

unsigned int guest_wait_ms(const struct guest *g, unsigned int want_ms, double share)
{
	double left_ms = (g->deadline - now_seconds()) * 1000 * share;

	return left_ms < 1 ? 1 : left_ms < want_ms ? (unsigned int)left_ms : want_ms;
}

void guest_log(const struct guest *g, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	g->log(level, fmt, ap);
	va_end(ap);
}

bool guest_prefaulted(const struct guest *g, unsigned int i)
{
	return g->prefault && g->demand.backends[i].file && g->mount_page;
}

uint64_t guest_claimed(struct guest *g, int node, uint64_t page_size)
{
	struct prealloc_store_entry e = { .size = sizeof(e) };
	struct prealloc_record_info info = { .size = sizeof(info) };
	uint64_t pages = 0, warm = 0;

	/* The holder's claims, its warm files apart (their pages serve their own backend). */
	for (unsigned int i = 0; prealloc_store_entry(g->ctx, i, &e) == 0; i++)
		if (e.state == PREALLOC_STORE_HELD && !strcmp(e.tag, g->holder) &&
		    e.node == node && e.page_size == page_size)
			pages += e.pages;
	for (unsigned int k = 0; prealloc_record(g->ctx, k, &info) == 0; k++)
		if (info.warm && info.warm_node == node && info.page_size == page_size &&
		    info.owner == PREALLOC_OWNER_HOLDER && !strcmp(info.holder, g->holder))
			warm += info.pages;
	return pages > warm ? pages - warm : 0;
}
