/* SPDX-License-Identifier: MIT */
/* A guest's clock and log, its rules, its directory's page size, what its holder holds already. */
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
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

int guest_rules(struct guest *g)
{
	for (unsigned int i = 0; i < g->demand.nr_backends; i++) {
		const struct guest_backend *be = &g->demand.backends[i];

		/* Access as the VMM maps each backend (the front end said which). */
		if (g->prefault && be->file && !be->shared) {
			snprintf(g->msg, sizeof(g->msg), "%s %s: prefault needs %s: %s is private "
				 "(%s), and %s maps a private (%s) file with a second copy of every "
				 "page and fails with ENOMEM", g->words->noun, g->name,
				 g->words->shared_how, be->alias, g->words->private_why, g->words->vmm,
				 g->words->private_opt);
			return -EINVAL;
		}
	}
	return 0;
}

int guest_dir_page(const char *dir, uint64_t *ret_page)
{
	struct statfs fs;

	*ret_page = 0;
	if (statfs(dir, &fs) < 0)
		return -errno;
	if ((unsigned long)fs.f_type == HUGETLBFS_MAGIC)
		*ret_page = (uint64_t)fs.f_bsize;
	else if ((unsigned long)fs.f_type == TMPFS_MAGIC)
		*ret_page = GUEST_PAGE_4K;
	return 0;
}

uint64_t guest_claimed(struct guest *g, int node, uint64_t page_size)
{
	uint64_t pages = 0;

	/* Unreadable: none claimed, and the claim asks for all (admission says why not). */
	if (prealloc_holder_claimed(g->ctx, g->holder, node, page_size, &pages) < 0)
		return 0;
	return pages;
}
