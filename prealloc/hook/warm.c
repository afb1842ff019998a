/* SPDX-License-Identifier: MIT */
/*
 * Guests started on warm files (docs/libvirt.md, "Warm starts"): at
 * prepare begin a READY file of each eligible backend's node, page size
 * and mount (memory_backing_dir) is reserved for the holder, so that
 * nothing else takes, cuts or gives it back; at start begin it is linked
 * at the path QEMU opens, through the per-domain directory the hook opened
 * step by step (never by name); at release the holder gives it back and
 * the pool clears it for the next guest. A backend without one takes the
 * path it would take without warm: the log says so.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

static uint64_t backend_page(const struct dom_backend *be)
{
	return be->page_size ? be->page_size : PREALLOC_PAGE_4K;
}

int run_warm_eligible(const struct hook_run *run, unsigned int i, char *why, size_t len)
{
	const struct dom_backend *be = &run->demand.backends[i];
	char buf[256];

	if (!why) {
		why = buf;
		len = sizeof(buf);
	}
	if (!run->warm)
		snprintf(why, len, "warm is off (warm = yes in " HOOK_CONF ", or warm='yes' in "
			 "the domain's <metadata>)");
	else if (!be->file)
		snprintf(why, len, "not a file in memory_backing_dir");
	else if (!run->host.backing_page)
		snprintf(why, len, "memory_backing_dir %s is on disk", run->backing_top);
	else if (!be->shared)
		snprintf(why, len, "QEMU maps it private (share=off): a copy of every page");
	else if (be->nr_nodes != 1)
		snprintf(why, len, "bound to %u host nodes: one warm file serves one node",
			 be->nr_nodes);
	else
		return 0;
	return -EINVAL;
}

/* Whether record info is a warm file of backend be's node, page size and mount. */
static bool warm_of(const struct prealloc_record_info *info, const struct dom_backend *be,
		    dev_t dev)
{
	return info->warm && info->warm_node == be->nodes[0] &&
	       info->page_size == backend_page(be) && info->dev == (uint64_t)dev;
}

/* A reserved file of the holder for be (exactly its size) not yet counted in used[]. */
static bool have_reserved(struct hook_run *run, const struct dom_backend *be, dev_t dev,
			  uint64_t *used, unsigned int nr_used)
{
	struct prealloc_record_info info = { .size = sizeof(info) };

	for (unsigned int k = 0; prealloc_record(run->ctx, k, &info) == 0; k++) {
		bool taken = false;

		if (!warm_of(&info, be, dev) || info.warm != PREALLOC_WARM_HANDED || info.path[0] ||
		    strcmp(info.holder, run->holder) || info.file_size != be->bytes)
			continue;
		for (unsigned int u = 0; u < nr_used && !taken; u++)
			taken = used[u] == info.id;
		if (!taken) {
			used[nr_used] = info.id;
			return true;
		}
	}
	return false;
}

static void reserve_one(struct hook_run *run, unsigned int i)
{
	const struct dom_backend *be = &run->demand.backends[i];
	struct prealloc_warm_take_info info = { .size = sizeof(info), .fd = -1 };
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o), .flags = PREALLOC_WARM_TAKE_RESERVE | PREALLOC_WARM_TAKE_NO_GROW,
		.node = be->nodes[0],
		.page_size = backend_page(be), .length = be->bytes, .mount = run->backing_top,
		.holder = run->holder, .holder_check = run->check, .holder_expires = run->expires,
		.lock_timeout_ms = run_wait_ms(run, run->set.deadline_s * 400, 0.25),
		.tenant = run->dom.tenant[0] ? run->dom.tenant : NULL,
	};
	char pl[16];
	int r = prealloc_warm_take(run->ctx, &o, &info);

	page_label(o.page_size, pl, sizeof(pl));
	if (info.fd >= 0)
		close(info.fd);
	if (r < 0) {
		run_log(run, r == -ENOENT ? 6 : 4, "%s: %s starts without a warm file (%s)%s",
			run->dom.name, be->alias, info.message[0] ? info.message : strerror(-r),
			run_backend_prefaulted(run, i) ? ": pre-faulted at start" : "");
		return;
	}
	run->warmed[i] = true;
	run_log(run, 6, "%s: %s: warm file %llu reserved (%llu MiB of %s pages on node %d, %s)",
		run->dom.name, be->alias, (unsigned long long)info.id,
		(unsigned long long)(be->bytes >> 20), pl, be->nodes[0],
		info.hit == PREALLOC_WARM_HIT_CUT ? "a larger one cut to size" : "exactly its size");
}

/*
 * Why backend be takes no warm file though it could: its pages claimed
 * already (prealloc-domain --reserve found no file then), or no READY file
 * as large (a smaller one would be grown here, at prepare, its pages
 * populated under the store's lock: NO_GROW refuses that too, should a
 * take come between). NULL: reserve one.
 */
static const char *reserve_skip(struct hook_run *run, const struct dom_backend *be, dev_t dev)
{
	struct prealloc_record_info info = { .size = sizeof(info) };

	if (run_claimed(run, be->nodes[0], backend_page(be)) * backend_page(be) >= be->bytes)
		return "its pages are claimed already";
	for (unsigned int k = 0; prealloc_record(run->ctx, k, &info) == 0; k++)
		if (warm_of(&info, be, dev) && info.warm == PREALLOC_WARM_READY &&
		    info.file_size >= be->bytes &&
		    (!info.tenant[0] || !strcmp(info.tenant, run->dom.tenant)))
			return NULL;
	return "no READY warm file of its node, page size and size or larger (its tenant's, "
	       "or no tenant's)";
}

void run_warm_reserve(struct hook_run *run)
{
	const char *skip;
	uint64_t used[DOM_MAX_BACKENDS];
	unsigned int nr_used = 0;
	struct stat top;
	char why[256];

	if (!run->warm)
		return;
	if (stat(run->backing_top, &top) < 0) {
		run_log(run, 4, "%s: memory_backing_dir %s: %s: no warm start", run->dom.name,
			run->backing_top, strerror(errno));
		return;
	}
	for (unsigned int i = 0; i < run->demand.nr_backends; i++) {
		if (run_warm_eligible(run, i, why, sizeof(why)) < 0) {
			run_log(run, 6, "%s: %s starts without a warm file: %s", run->dom.name,
				run->demand.backends[i].alias, why);
			continue;
		}
		/* prepare run again (prealloc-domain --reserve first): what is reserved serves. */
		if (have_reserved(run, &run->demand.backends[i], top.st_dev, used, nr_used)) {
			nr_used++;
			run->warmed[i] = true;
			continue;
		}
		skip = reserve_skip(run, &run->demand.backends[i], top.st_dev);
		if (skip)
			run_log(run, 6, "%s: %s starts without a warm file: %s%s", run->dom.name,
				run->demand.backends[i].alias, skip, run_backend_prefaulted(run, i)
				? " (pre-faulted at start)" : "");
		else
			reserve_one(run, i);
	}
}

int run_warm_link(struct hook_run *run, unsigned int i, int dir_fd, const char *dir)
{
	const struct dom_backend *be = &run->demand.backends[i];
	struct prealloc_warm_take_info info = { .size = sizeof(info), .fd = -1 };
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o),
		.flags = PREALLOC_WARM_TAKE_RESERVED | PREALLOC_WARM_TAKE_DIR_FD |
			 (run->dom.has_dac ? PREALLOC_WARM_TAKE_CHOWN : 0),
		.node = be->nodes[0], .page_size = backend_page(be), .length = be->bytes,
		.mount = run->backing_top, .uid = run->dom.uid, .gid = run->dom.gid,
		.holder = run->holder, .holder_check = run->check, .holder_expires = run->expires,
		.lock_timeout_ms = run_wait_ms(run, run->set.deadline_s * 400, 0.5), .dir_fd = dir_fd,
	};
	char path[4096];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, be->alias) >= sizeof(path))
		return -ENAMETOOLONG;
	o.path = path;
	r = prealloc_warm_take(run->ctx, &o, &info);
	if (info.fd >= 0)
		close(info.fd);
	if (r == -ENOENT)
		return r;
	if (r < 0) {
		snprintf(run->msg, sizeof(run->msg), "domain %s: linking its warm file at %.300s: "
			 "%.400s", run->dom.name, path, info.message[0] ? info.message
			 : strerror(-r));
		return r;
	}
	run_log(run, 6, "%s: %s is warm file %llu (%llu MiB, linked in %.1f ms)", run->dom.name,
		path, (unsigned long long)info.id, (unsigned long long)(be->bytes >> 20),
		info.seconds * 1e3);
	return 0;
}

int run_warm_give(struct hook_run *run)
{
	struct prealloc_warm_give_info info = { .size = sizeof(info) };
	struct prealloc_warm_give_opts o = {
		.size = sizeof(o), .holder = run->holder,
		.tenant = run->dom.tenant[0] ? run->dom.tenant : NULL,
	};
	int r = prealloc_warm_give_with(run->ctx, &o, &info);

	if (r == -ENOENT && !info.files)
		return 0;	/* it held none */
	if (info.files)
		run_log(run, info.quarantined ? 4 : 6, "%s: gave back %u warm file(s): %u still "
			"open or mapped, %u quarantined (a link the pool did not make)", run->dom.name,
			info.files, info.returning, info.quarantined);
	if (r < 0)
		run_log(run, 4, "%s: giving back its warm files: %s", run->dom.name,
			info.message[0] ? info.message : strerror(-r));
	return r < 0 ? r : (int)info.files;
}

bool run_warm_plan(struct hook_run *run, unsigned int i, char *why, size_t len)
{
	const struct dom_backend *be = &run->demand.backends[i];
	struct prealloc_record_info info = { .size = sizeof(info) };
	unsigned int ready = 0;
	struct stat top;
	char pl[16];

	if (run_warm_eligible(run, i, why, len) < 0)
		return false;
	if (stat(run->backing_top, &top) < 0) {
		snprintf(why, len, "memory_backing_dir %s: %s", run->backing_top, strerror(errno));
		return false;
	}
	for (unsigned int k = 0; prealloc_record(run->ctx, k, &info) == 0; k++) {
		if (!warm_of(&info, be, top.st_dev))
			continue;
		if (info.warm == PREALLOC_WARM_HANDED && !info.path[0] &&
		    !strcmp(info.holder, run->holder) && info.file_size == be->bytes) {
			snprintf(why, len, "warm file %llu is reserved for it",
				 (unsigned long long)info.id);
			return true;
		}
		/* A file cleared in place for a tenant is that tenant's alone. */
		ready += info.warm == PREALLOC_WARM_READY &&
			 (!info.tenant[0] || !strcmp(info.tenant, run->dom.tenant));
	}
	page_label(backend_page(be), pl, sizeof(pl));
	snprintf(why, len, "%u READY warm file(s) of %s pages on node %d in %s", ready, pl,
		 be->nodes[0], run->backing_top);
	return ready > 0;
}
