/* SPDX-License-Identifier: MIT */
/*
 * When the guest starts: each file backend created at the exact path the
 * VMM opens, at its size, and populated on its host nodes before the VMM
 * starts (or linked from its warm file); and its release.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include <prealloc.h>

#include "guest.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

/*
 * Waits for the job until deadline (monotonic seconds); cancels it past
 * that (-ETIMEDOUT), or when the guest's cancel_fd turns readable (-EINTR).
 */
static int wait_bounded(const struct guest *g, struct prealloc_job *job, double deadline)
{
	struct pollfd pfd[2] = { { .fd = prealloc_job_eventfd(job), .events = POLLIN },
				 { .fd = g->cancel_fd, .events = POLLIN } };
	int r;

	while (!prealloc_job_done(job)) {
		double left = deadline - now_seconds();
		bool stop = pfd[1].revents & POLLIN;

		if (left <= 0 || stop) {
			prealloc_job_cancel(job);
			prealloc_job_wait(job);
			return stop ? -EINTR : -ETIMEDOUT;
		}
		r = poll(pfd, 2, left > 1 ? 1000 : (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	return prealloc_job_wait(job);
}

static int prefault_one(struct guest *g, unsigned int i, int dir_fd, const char *dir,
			double deadline)
{
	const struct guest_backend *be = &g->demand.backends[i];
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct prealloc_prepare_opts o = {
		.size = sizeof(o),
		.flags = (g->grow_pools ? PREALLOC_PREPARE_GROW_POOLS : 0) |
			 (g->has_owner ? PREALLOC_PREPARE_CHOWN : 0) | PREALLOC_PREPARE_DIR_FD,
		.page_size = be->page_size, .length = be->bytes,
		.nr_nodes = be->nr_nodes, .nodes = be->nodes, .node_bytes = be->node_bytes,
		.uid = g->uid, .gid = g->gid, .mode = 0600,
		.grow_timeout_ms = g->deadline_s * 500,
		.lock_timeout_ms = g->deadline_s * 400,
		.holder = g->holder, .holder_check = g->check[0] ? g->check : NULL,
		.holder_expires = g->expires, .dir_fd = dir_fd,
	};
	double left_ms = (deadline - now_seconds()) * 1000;
	char path[4096];
	struct prealloc_job *job;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, be->alias) >= sizeof(path))
		return -ENAMETOOLONG;
	o.path = path;
	if (g->cancel_fd >= 0) {
		o.flags |= PREALLOC_PREPARE_CANCEL_FD;
		o.cancel_fd = g->cancel_fd;
	}
	/* The waits for the store's lock and for pool growth come out of the same deadline. */
	if (left_ms < 1) {
		snprintf(g->msg, sizeof(g->msg), "%s %s: deadline passed before %.300s",
			 g->words->noun, g->name, path);
		return -ETIMEDOUT;
	}
	o.lock_timeout_ms = (unsigned int)MIN((double)o.lock_timeout_ms, left_ms);
	o.grow_timeout_ms = (unsigned int)MIN((double)o.grow_timeout_ms, left_ms);
	r = prealloc_prepare_start(g->ctx, &o, &job, &info);
	if (r == 0) {
		r = wait_bounded(g, job, deadline);
		prealloc_prepare_info(job, &info);
		prealloc_job_free(job);
	}
	if (r < 0) {
		snprintf(g->msg, sizeof(g->msg), "%s %s: pre-faulting %.300s: %s%.400s",
			 g->words->noun, g->name, path, r == -ETIMEDOUT ? "deadline passed; " : "",
			 info.message[0] ? info.message : strerror(-r));
		return r;
	}
	guest_log(g, 6, "%s: pre-faulted %s (%llu MiB on %u node(s), %llu pages added)", g->name,
		  path, (unsigned long long)(be->bytes >> 20), be->nr_nodes,
		  (unsigned long long)info.added);
	return 0;
}

/* Backend i at start: its reserved warm file, else pre-faulted (or left to the VMM). */
static int start_one(struct guest *g, unsigned int i, int dir_fd, const char *dir)
{
	const struct guest_backend *be = &g->demand.backends[i];
	int r = -ENOENT;

	if (guest_warm_eligible(g, i, NULL, 0) == 0) {
		r = guest_warm_link(g, i, dir_fd, dir);
		if (r != -ENOENT)
			return r;
		/* A guest whose VMM pins all its RAM at start: said as a warning. */
		guest_log(g, g->pinned ? 4 : 6, "%s: %s has no warm file reserved for it%s: %s%s",
			  g->name, be->alias, g->pinned ? " and its memory is pinned at start" : "",
			  guest_prefaulted(g, i) ? "pre-faulting it" : g->words->vmm,
			  guest_prefaulted(g, i) ? ""
			  : g->pinned ? "'s pin faults and zeroes every page" : " allocates it");
		/*
		 * A file reserved at the claim and lost since (expired, or
		 * quarantined at its take) left its hugepages unclaimed: claimed
		 * now, or refused.
		 */
		if (!guest_prefaulted(g, i) && be->page_size > PREALLOC_PAGE_4K &&
		    guest_claimed(g, be->nodes[0], be->page_size) * be->page_size < be->bytes)
			return guest_claim_backend(g, i);
	}
	return guest_prefaulted(g, i) ? prefault_one(g, i, dir_fd, dir, g->deadline) : 0;
}

unsigned int guest_start_files(const struct guest *g, uint64_t *ret_bytes)
{
	unsigned int files = 0;

	*ret_bytes = 0;
	for (unsigned int i = 0; i < g->demand.nr_backends; i++) {
		if (guest_prefaulted(g, i))
			*ret_bytes += g->demand.backends[i].bytes;
		files += guest_prefaulted(g, i) || guest_warm_eligible(g, i, NULL, 0) == 0;
	}
	return files;
}

int guest_start(struct guest *g, int dir_fd, const char *dir)
{
	int r = 0;

	for (unsigned int i = 0; r == 0 && i < g->demand.nr_backends; i++)
		r = start_one(g, i, dir_fd, dir);
	if (r < 0)
		guest_release(g, &(uint64_t){ 0 });
	return r;
}

int guest_release(struct guest *g, uint64_t *ret_returned)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	int r = prealloc_release_holder(g->ctx, g->holder, &info), w = guest_warm_give(g);

	*ret_returned = info.returned;
	r = r == -ENOENT ? 0 : r;
	return r < 0 ? r : w < 0 ? w : 0;
}
