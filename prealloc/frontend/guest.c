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
	uint64_t pages = 0;

	/* Unreadable: none claimed, and the claim asks for all (admission says why not). */
	if (prealloc_holder_claimed(g->ctx, g->holder, node, page_size, &pages) < 0)
		return 0;
	return pages;
}
