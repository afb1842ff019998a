/* SPDX-License-Identifier: MIT */
/*
 * Guests started on warm files (docs/warm.md; docs/libvirt.md, "Warm
 * starts"): at the claim a READY file of each eligible backend's node,
 * page size and mount (the memory directory's) is reserved for the holder,
 * so that nothing else takes, cuts or gives it back; at start it is linked
 * at the path the VMM opens, through the directory the front end opened
 * (never by name); at release the holder gives it back and the warm pool
 * clears it for the next guest. A backend without one takes the path it would
 * take without warm: the log says so.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <prealloc.h>

#include "guest.h"

static uint64_t backend_page(const struct guest_backend *be)
{
	return be->page_size ? be->page_size : PREALLOC_PAGE_4K;
}

int guest_warm_eligible(const struct guest *g, unsigned int i, char *why, size_t len)
{
	const struct guest_backend *be = &g->demand.backends[i];
	char buf[256];

	if (!why) {
		why = buf;
		len = sizeof(buf);
	}
	if (!g->warm)
		snprintf(why, len, "%s", g->words->warm_off);
	else if (!be->file)
		snprintf(why, len, "not a file in %s", g->words->dir);
	else if (!g->mount_page)
		snprintf(why, len, "%s %s is on disk", g->words->dir, g->mount);
	else if (!be->shared)
		snprintf(why, len, "%s maps it private (%s): a copy of every page", g->words->vmm,
			 g->words->private_opt);
	else if (be->nr_nodes != 1)
		snprintf(why, len, "bound to %u host nodes: one warm file serves one node",
			 be->nr_nodes);
	else
		return 0;
	return -EINVAL;
}

/*
 * The request a find for backend be makes (the library's own pick, as a
 * take would run it): its node, page size, size, mount, holder and tenant.
 */
static struct prealloc_warm_take_opts find_opts(const struct guest *g,
						const struct guest_backend *be, unsigned int flags)
{
	return (struct prealloc_warm_take_opts){
		.size = sizeof(struct prealloc_warm_take_opts), .flags = flags,
		.node = be->nodes[0], .page_size = backend_page(be), .length = be->bytes,
		.mount = g->mount, .holder = g->holder,
		.tenant = g->tenant[0] ? g->tenant : NULL,
	};
}

/* A reserved file of the holder for be (exactly its size) not yet counted in used[]. */
static bool have_reserved(struct guest *g, const struct guest_backend *be, uint64_t *used,
			  unsigned int nr_used)
{
	struct prealloc_warm_find_info info = { .size = sizeof(info) };
	struct prealloc_warm_take_opts o = find_opts(g, be, PREALLOC_WARM_TAKE_RESERVED);

	o.skip_ids = used;
	o.nr_skip_ids = nr_used;
	if (prealloc_warm_find(g->ctx, &o, &info) < 0)
		return false;
	used[nr_used] = info.id;
	return true;
}

/* Reserves a READY file for backend i: its record's id, 0 none. */
static uint64_t reserve_one(struct guest *g, unsigned int i)
{
	const struct guest_backend *be = &g->demand.backends[i];
	struct prealloc_warm_take_info info = { .size = sizeof(info), .fd = -1 };
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o), .flags = PREALLOC_WARM_TAKE_RESERVE | PREALLOC_WARM_TAKE_NO_GROW,
		.node = be->nodes[0],
		.page_size = backend_page(be), .length = be->bytes, .mount = g->mount,
		.holder = g->holder, .holder_check = g->check[0] ? g->check : NULL,
		.holder_expires = g->expires,
		.lock_timeout_ms = guest_wait_ms(g, g->deadline_s * 400, 0.25),
		.tenant = g->tenant[0] ? g->tenant : NULL,
	};
	char pl[16];
	int r = prealloc_warm_take(g->ctx, &o, &info);

	guest_page_label(o.page_size, pl, sizeof(pl));
	if (info.fd >= 0)
		close(info.fd);
	if (r < 0) {
		guest_log(g, r == -ENOENT ? 6 : 4, "%s: %s starts without a warm file (%s)%s",
			g->name, be->alias, info.message[0] ? info.message : strerror(-r),
			guest_prefaulted(g, i) ? ": pre-faulted at start" : "");
		return 0;
	}
	g->warmed[i] = true;
	guest_log(g, 6, "%s: %s: warm file %llu reserved (%llu MiB of %s pages on node %d, %s)",
		g->name, be->alias, (unsigned long long)info.id,
		(unsigned long long)(be->bytes >> 20), pl, be->nodes[0],
		info.hit == PREALLOC_WARM_HIT_CUT ? "a larger one cut to size" : "exactly its size");
	return info.id;
}

/*
 * Why backend be takes no warm file though it could: its pages claimed
 * already (prealloc-domain --reserve found no file then), or no READY file
 * as large (a smaller one would be grown here, at prepare, its pages
 * populated under the store's lock: NO_GROW refuses that too, should a
 * take come between). NULL: reserve one.
 */
static const char *reserve_skip(struct guest *g, const struct guest_backend *be)
{
	struct prealloc_warm_find_info info = { .size = sizeof(info) };
	struct prealloc_warm_take_opts o =
		find_opts(g, be, PREALLOC_WARM_TAKE_RESERVE | PREALLOC_WARM_TAKE_NO_GROW);

	if (guest_claimed(g, be->nodes[0], backend_page(be)) * backend_page(be) >= be->bytes)
		return "its pages are claimed already";
	if (prealloc_warm_find(g->ctx, &o, &info) == 0)
		return NULL;
	return "no READY warm file of its node, page size and size or larger (its tenant's, "
	       "or no tenant's)";
}

void guest_warm_reserve(struct guest *g)
{
	const char *skip;
	uint64_t used[GUEST_MAX_BACKENDS];
	unsigned int nr_used = 0;
	struct stat top;
	char why[256];

	if (!g->warm)
		return;
	if (stat(g->mount, &top) < 0) {
		guest_log(g, 4, "%s: %s %s: %s: no warm start", g->name, g->words->dir,
			  g->mount, strerror(errno));
		return;
	}
	for (unsigned int i = 0; i < g->demand.nr_backends; i++) {
		if (guest_warm_eligible(g, i, why, sizeof(why)) < 0) {
			guest_log(g, 6, "%s: %s starts without a warm file: %s", g->name,
				g->demand.backends[i].alias, why);
			continue;
		}
		/* prepare run again (prealloc-domain --reserve first): what is reserved serves. */
		if (have_reserved(g, &g->demand.backends[i], used, nr_used)) {
			nr_used++;
			g->warmed[i] = true;
			continue;
		}
		skip = reserve_skip(g, &g->demand.backends[i]);
		if (skip) {
			guest_log(g, 6, "%s: %s starts without a warm file: %s%s", g->name,
				g->demand.backends[i].alias, skip, guest_prefaulted(g, i)
				? " (pre-faulted at start)" : "");
			continue;
		}
		/* Counted: a later backend of its node and size must not take it for its own. */
		used[nr_used] = reserve_one(g, i);
		if (used[nr_used])
			nr_used++;
	}
}

int guest_warm_link(struct guest *g, unsigned int i, int dir_fd, const char *dir)
{
	const struct guest_backend *be = &g->demand.backends[i];
	struct prealloc_warm_take_info info = { .size = sizeof(info), .fd = -1 };
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o),
		.flags = PREALLOC_WARM_TAKE_RESERVED | PREALLOC_WARM_TAKE_DIR_FD |
			 (g->has_owner ? PREALLOC_WARM_TAKE_CHOWN : 0),
		.node = be->nodes[0], .page_size = backend_page(be), .length = be->bytes,
		.mount = g->mount, .uid = g->uid, .gid = g->gid,
		.holder = g->holder, .holder_check = g->check[0] ? g->check : NULL,
		.holder_expires = g->expires,
		.lock_timeout_ms = guest_wait_ms(g, g->deadline_s * 400, 0.5), .dir_fd = dir_fd,
	};
	char path[4096];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, be->alias) >= sizeof(path))
		return -ENAMETOOLONG;
	o.path = path;
	r = prealloc_warm_take(g->ctx, &o, &info);
	if (info.fd >= 0)
		close(info.fd);
	if (r == -ENOENT)
		return r;
	if (r < 0) {
		snprintf(g->msg, sizeof(g->msg), "%s %s: linking its warm file at %.300s: "
			 "%.400s", g->words->noun, g->name, path, info.message[0] ? info.message
			 : strerror(-r));
		return r;
	}
	guest_log(g, 6, "%s: %s is warm file %llu (%llu MiB, linked in %.1f ms)", g->name,
		path, (unsigned long long)info.id, (unsigned long long)(be->bytes >> 20),
		info.seconds * 1e3);
	return 0;
}

int guest_warm_give(struct guest *g)
{
	struct prealloc_warm_give_info info = { .size = sizeof(info) };
	struct prealloc_warm_give_opts o = {
		.size = sizeof(o), .holder = g->holder,
		.tenant = g->tenant[0] ? g->tenant : NULL,
	};
	int r = prealloc_warm_give_with(g->ctx, &o, &info);

	if (r == -ENOENT && !info.files)
		return 0;	/* it held none */
	if (info.files)
		guest_log(g, info.quarantined ? 4 : 6, "%s: gave back %u warm file(s): %u still "
			"open or mapped, %u quarantined (a link the pool did not make)", g->name,
			info.files, info.returning, info.quarantined);
	if (r < 0)
		guest_log(g, 4, "%s: giving back its warm files: %s", g->name,
			info.message[0] ? info.message : strerror(-r));
	return r < 0 ? r : (int)info.files;
}

bool guest_warm_plan(struct guest *g, unsigned int i, char *why, size_t len)
{
	const struct guest_backend *be = &g->demand.backends[i];
	struct prealloc_warm_find_info info = { .size = sizeof(info) };
	struct prealloc_warm_take_opts o = find_opts(g, be, PREALLOC_WARM_TAKE_RESERVED);
	struct stat top;
	char pl[16];

	if (guest_warm_eligible(g, i, why, len) < 0)
		return false;
	if (stat(g->mount, &top) < 0) {
		snprintf(why, len, "%s %s: %s", g->words->dir, g->mount, strerror(errno));
		return false;
	}
	if (prealloc_warm_find(g->ctx, &o, &info) == 0) {
		snprintf(why, len, "warm file %llu is reserved for it", (unsigned long long)info.id);
		return true;
	}
	/* READY files of any size (a take cuts or grows one); a tenant's are its alone. */
	o = find_opts(g, be, 0);
	info = (struct prealloc_warm_find_info){ .size = sizeof(info) };
	prealloc_warm_find(g->ctx, &o, &info);
	guest_page_label(backend_page(be), pl, sizeof(pl));
	snprintf(why, len, "%u READY warm file(s) of %s pages on node %d in %s", info.files, pl,
		 be->nodes[0], g->mount);
	return info.files > 0;
}
