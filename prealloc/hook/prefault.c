/* SPDX-License-Identifier: MIT */
/*
 * start begin: the file QEMU will open for a shared file-backed guest,
 * created at its exact path and size and populated on its cells' host
 * nodes before QEMU starts; and release end.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "plan.h"

int run_backend_path(const struct hook_run *run, unsigned int i, char *buf, size_t len)
{
	/* libvirt's short name: <id>-<first 20 characters of the name>. */
	int n = snprintf(buf, len, "%s/%d-%.20s/%s", run->backing_dir, run->dom.id, run->dom.name,
			 run->demand.backends[i].alias);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits for the job until deadline (monotonic seconds); cancels it past that. */
static int wait_bounded(struct prealloc_job *job, double deadline)
{
	struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };
	int r;

	while (!prealloc_job_done(job)) {
		double left = deadline - now_s();

		if (left <= 0) {
			prealloc_job_cancel(job);
			prealloc_job_wait(job);
			return -ETIMEDOUT;
		}
		r = poll(&pfd, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	return prealloc_job_wait(job);
}

static int prefault_one(struct hook_run *run, unsigned int i, double deadline)
{
	const struct dom_backend *be = &run->demand.backends[i];
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct prealloc_prepare_opts o = {
		.size = sizeof(o),
		.flags = (run->reserve ? PREALLOC_PREPARE_RESERVE : 0) |
			 (run->dom.has_dac ? PREALLOC_PREPARE_CHOWN : 0),
		.page_size = be->page_size, .length = be->bytes,
		.nr_nodes = be->nr_nodes, .nodes = be->nodes, .node_bytes = be->node_bytes,
		.uid = run->dom.uid, .gid = run->dom.gid, .mode = 0600,
		.reserve_timeout_ms = run->set.deadline_s * 500,
		.lock_timeout_ms = run->set.deadline_s * 400,
		.holder = run->holder, .holder_check = run->check, .holder_expires = run->expires,
	};
	char path[4096], dir[4096], *slash;
	struct prealloc_job *job;
	struct stat st;
	int r;

	r = run_backend_path(run, i, path, sizeof(path));
	if (r < 0)
		return r;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	/* libvirt labels the per-domain directory only when it creates it: never make it. */
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(run->msg, sizeof(run->msg), "domain %s: libvirt's memory directory %.400s "
			 "does not exist at start begin", run->dom.name, dir);
		return -ENOENT;
	}
	o.path = path;
	r = prealloc_prepare_start(run->ctx, &o, &job, &info);
	if (r == 0) {
		r = wait_bounded(job, deadline);
		prealloc_prepare_info(job, &info);
		prealloc_job_free(job);
	}
	if (r < 0) {
		snprintf(run->msg, sizeof(run->msg), "domain %s: pre-faulting %.300s: %s%.400s",
			 run->dom.name, path, r == -ETIMEDOUT ? "deadline passed; " : "",
			 info.message[0] ? info.message : strerror(-r));
		return r;
	}
	hook_log(6, "%s: pre-faulted %s (%llu MiB on %u node(s), %llu pages added)",
		 run->dom.name, path, (unsigned long long)(be->bytes >> 20), be->nr_nodes,
		 (unsigned long long)info.added);
	return 0;
}

int run_prefault(struct hook_run *run)
{
	uint64_t bytes = 0;
	double deadline;
	int r = 0;

	if (!run->prefault)
		return 0;
	for (unsigned int i = 0; i < run->demand.nr_backends; i++)
		if (run->demand.backends[i].file && !run->host.backing_page) {
			hook_log(6, "%s: memory_backing_dir %s is on disk: nothing to pre-fault",
				 run->dom.name, run->backing_dir);
			return 0;
		}
	for (unsigned int i = 0; i < run->demand.nr_backends; i++)
		if (run_prefaults(run, i))
			bytes += run->demand.backends[i].bytes;
	/* The deadline grows with the size at a conservative rate: a big guest is not cut off. */
	deadline = now_s() + run->set.deadline_s + (double)bytes / (double)run->set.prefault_rate;
	for (unsigned int i = 0; r == 0 && i < run->demand.nr_backends; i++)
		if (run_prefaults(run, i))
			r = prefault_one(run, i, deadline);
	if (r < 0)
		prealloc_release_holder(run->ctx, run->holder, NULL);
	return r;
}

int run_release(struct hook_run *run, uint64_t *ret_returned)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	int r = prealloc_release_holder(run->ctx, run->holder, &info);

	*ret_returned = info.returned;
	return r == -ENOENT ? 0 : r;
}
