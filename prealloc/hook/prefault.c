/* SPDX-License-Identifier: MIT */
/*
 * start begin: the file QEMU will open for a shared file-backed guest,
 * created at its exact path and size and populated on its cells' host
 * nodes before QEMU starts; and release end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "run.h"

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif

/*
 * libvirt's short name for the per-domain directory: <id>-<name cut at 20>,
 * at 20 characters when its daemon runs under a UTF-8 locale (mbstowcs),
 * at 20 bytes under the C locale (or a name that is not UTF-8). A hook
 * always runs with LC_ALL=C and cannot know the daemon's locale: both are
 * candidates. ret[0] is the 20-character one; returns how many differ (1, 2).
 */
static unsigned int short_names(const struct hook_run *run, char ret[2][320])
{
	const unsigned char *n = (const unsigned char *)run->dom.name;
	size_t bytes = 0, chars = 0, utf8 = 0;
	bool valid = true;

	/* 20 UTF-8 characters: every byte but continuation bytes (10xxxxxx) starts one. */
	for (size_t i = 0; n[i]; i++) {
		if ((n[i] & 0xc0) != 0x80 && chars++ == 20)
			break;
		utf8 = i + 1;
	}
	for (size_t i = 0; n[i]; i++) {
		unsigned int len = n[i] < 0x80 ? 1 : (n[i] & 0xe0) == 0xc0 ? 2
			: (n[i] & 0xf0) == 0xe0 ? 3 : (n[i] & 0xf8) == 0xf0 ? 4 : 0;

		for (unsigned int k = 1; k < len && valid; k++)
			valid = (n[i + k] & 0xc0) == 0x80;
		if (!len || !valid) {
			valid = false;
			break;
		}
		i += len - 1;
	}
	bytes = strnlen(run->dom.name, 20);
	snprintf(ret[0], 320, "%d-%.*s", run->dom.id, (int)(valid ? utf8 : bytes), run->dom.name);
	snprintf(ret[1], 320, "%d-%.*s", run->dom.id, (int)bytes, run->dom.name);
	return strcmp(ret[0], ret[1]) ? 2 : 1;
}

int run_backend_path(const struct hook_run *run, unsigned int i, char *buf, size_t len)
{
	char names[2][320];
	unsigned int nr = short_names(run, names), k = 0;
	struct stat st;
	int n;

	/* The one that exists (for display); else libvirt's under a UTF-8 locale. */
	for (unsigned int c = 0; c < nr; c++) {
		n = snprintf(buf, len, "%s/%s", run->backing_dir, names[c]);
		if (n > 0 && (size_t)n < len && lstat(buf, &st) == 0) {
			k = c;
			break;
		}
	}
	n = snprintf(buf, len, "%s/%s/%s", run->backing_dir, names[k],
		     run->demand.backends[i].alias);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* One step below memory_backing_dir: a directory, no link, root's or the guest's, same fs. */
static int open_step(struct hook_run *run, int at, const char *name, const struct stat *top,
		     const char *shown)
{
	struct stat st;
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		int r = -errno;

		snprintf(run->msg, sizeof(run->msg), "domain %s: libvirt's memory directory %.400s: "
			 "%s", run->dom.name, shown, r == -ELOOP || r == -ENOTDIR
			 ? "a symbolic link or not a directory: not followed" : strerror(-r));
		return r == -ENOTDIR ? -ELOOP : r;
	}
	if (fstat(fd, &st) < 0 || st.st_dev != top->st_dev ||
	    (st.st_uid != 0 && !(run->dom.has_dac && st.st_uid == run->dom.uid))) {
		snprintf(run->msg, sizeof(run->msg), "domain %s: libvirt's memory directory %.400s "
			 "belongs to uid %u or is on another filesystem than memory_backing_dir: "
			 "not used", run->dom.name, shown, (unsigned int)st.st_uid);
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * The per-domain directory libvirt made for the guest's memory,
 * <memory_backing_dir>/libvirt/qemu/<short name>, opened one step at a
 * time below memory_backing_dir: never through a symbolic link, each step
 * root's or the guest's DAC user's, on memory_backing_dir's filesystem.
 * The guest's uid may write in libvirt's directories; a link it put there
 * would otherwise let root create a guest-sized file anywhere. Its path
 * goes to ret_dir.
 */
static int open_domain_dir(struct hook_run *run, char *ret_dir, size_t len)
{
	const char *top_path = run->backing_top;
	char names[2][320];
	unsigned int nr = short_names(run, names), found = 0, k = 0;
	int top, lib = -1, qemu = -1, dom = -EINVAL;
	struct stat top_st, st;

	top = open(top_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0 || fstat(top, &top_st) < 0) {
		dom = -errno;
		snprintf(run->msg, sizeof(run->msg), "domain %s: memory_backing_dir %.400s: %s",
			 run->dom.name, top_path, strerror(-dom));
		goto out;
	}
	snprintf(ret_dir, len, "%s/libvirt", top_path);
	lib = dom = open_step(run, top, "libvirt", &top_st, ret_dir);
	if (lib < 0)
		goto out;
	snprintf(ret_dir, len, "%s", run->backing_dir);
	qemu = dom = open_step(run, lib, "qemu", &top_st, ret_dir);
	if (qemu < 0)
		goto out;
	for (unsigned int c = 0; c < nr; c++)
		if (fstatat(qemu, names[c], &st, AT_SYMLINK_NOFOLLOW) == 0) {
			found++;
			k = c;
		}
	if (found != 1) {
		snprintf(run->msg, sizeof(run->msg), found
			 ? "domain %.200s: both %.300s/%.100s and %.100s exist: which one libvirt "
			   "made is unknown" : "domain %.200s: libvirt's memory directory "
			   "%.300s/%.100s does not exist at start begin", run->dom.name,
			 run->backing_dir, names[0],
			 nr > 1 ? names[1] : "");
		dom = found ? -EEXIST : -ENOENT;
		goto out;
	}
	snprintf(ret_dir, len, "%s/%s", run->backing_dir, names[k]);
	dom = open_step(run, qemu, names[k], &top_st, ret_dir);
out:
	if (qemu >= 0)
		close(qemu);
	if (lib >= 0)
		close(lib);
	if (top >= 0)
		close(top);
	return dom;
}

/* Waits for the job until deadline (monotonic seconds); cancels it past that. */
static int wait_bounded(struct prealloc_job *job, double deadline)
{
	struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };
	int r;

	while (!prealloc_job_done(job)) {
		double left = deadline - now_seconds();

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

static int prefault_one(struct hook_run *run, unsigned int i, int dir_fd, const char *dir,
			double deadline)
{
	const struct dom_backend *be = &run->demand.backends[i];
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct prealloc_prepare_opts o = {
		.size = sizeof(o),
		.flags = (run->reserve ? PREALLOC_PREPARE_RESERVE : 0) |
			 (run->dom.has_dac ? PREALLOC_PREPARE_CHOWN : 0) | PREALLOC_PREPARE_DIR_FD,
		.page_size = be->page_size, .length = be->bytes,
		.nr_nodes = be->nr_nodes, .nodes = be->nodes, .node_bytes = be->node_bytes,
		.uid = run->dom.uid, .gid = run->dom.gid, .mode = 0600,
		.reserve_timeout_ms = run->set.deadline_s * 500,
		.lock_timeout_ms = run->set.deadline_s * 400,
		.holder = run->holder, .holder_check = run->check, .holder_expires = run->expires,
		.dir_fd = dir_fd,
	};
	double left_ms = (deadline - now_seconds()) * 1000;
	char path[4096];
	struct prealloc_job *job;
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, be->alias) >= sizeof(path))
		return -ENAMETOOLONG;
	o.path = path;
	/* The waits for the store's lock and for pool growth come out of the same deadline. */
	if (left_ms < 1) {
		snprintf(run->msg, sizeof(run->msg), "domain %s: deadline passed before %.300s",
			 run->dom.name, path);
		return -ETIMEDOUT;
	}
	o.lock_timeout_ms = (unsigned int)MIN((double)o.lock_timeout_ms, left_ms);
	o.reserve_timeout_ms = (unsigned int)MIN((double)o.reserve_timeout_ms, left_ms);
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
	run_log(run, 6, "%s: pre-faulted %s (%llu MiB on %u node(s), %llu pages added)",
		run->dom.name, path, (unsigned long long)(be->bytes >> 20), be->nr_nodes,
		(unsigned long long)info.added);
	return 0;
}

/* Backend i at start begin: its reserved warm file, else pre-faulted (or left to QEMU). */
static int start_one(struct hook_run *run, unsigned int i, int dir_fd, const char *dir,
		     double deadline)
{
	int r = -ENOENT;

	const struct dom_backend *be = &run->demand.backends[i];

	if (run_warm_eligible(run, i, NULL, 0) == 0) {
		r = run_warm_link(run, i, dir_fd, dir);
		if (r != -ENOENT)
			return r;
		run_log(run, 6, "%s: %s has no warm file reserved for it: %s", run->dom.name,
			be->alias, run_backend_prefaulted(run, i) ? "pre-faulting it"
			: "QEMU allocates it");
		/*
		 * A file reserved at prepare and lost since (expired, or quarantined
		 * at its take) left its hugepages unclaimed: claimed now, or refused.
		 */
		if (!run_backend_prefaulted(run, i) && be->page_size > PREALLOC_PAGE_4K &&
		    run_claimed(run, be->nodes[0], be->page_size) * be->page_size < be->bytes) {
			r = run_claim_backend(run, i);
			return r;
		}
	}
	return run_backend_prefaulted(run, i) ? prefault_one(run, i, dir_fd, dir, deadline) : 0;
}

int run_start(struct hook_run *run)
{
	uint64_t bytes = 0;
	unsigned int files = 0;
	char dir[4096];
	double deadline;
	int dir_fd, r = 0;

	if (!run->prefault && !run->warm)
		return 0;
	for (unsigned int i = 0; i < run->demand.nr_backends; i++)
		if (run->demand.backends[i].file && !run->host.backing_page) {
			run_log(run, 6, "%s: memory_backing_dir %s is on disk: "
				"nothing to pre-fault or link", run->dom.name, run->backing_dir);
			return 0;
		}
	for (unsigned int i = 0; i < run->demand.nr_backends; i++) {
		if (run_backend_prefaulted(run, i))
			bytes += run->demand.backends[i].bytes;
		files += run_backend_prefaulted(run, i) || run_warm_eligible(run, i, NULL, 0) == 0;
	}
	/* The deadline grows with the size at a conservative rate: a big guest is not cut off. */
	deadline = now_seconds() + run->set.deadline_s + (double)bytes / (double)run->set.prefault_rate;
	run->deadline = deadline;	/* the links' waits fit in it too */
	if (!files)
		return 0;
	/* The backstop, should a step overrun the deadline it was given. */
	alarm((unsigned int)(deadline - now_seconds()) + 5);
	/* libvirt labels the per-domain directory only when it creates it: never make it. */
	dir_fd = open_domain_dir(run, dir, sizeof(dir));
	if (dir_fd < 0)
		return dir_fd;
	for (unsigned int i = 0; r == 0 && i < run->demand.nr_backends; i++)
		r = start_one(run, i, dir_fd, dir, deadline);
	close(dir_fd);
	if (r < 0)
		run_release(run, &(uint64_t){ 0 });
	return r;
}

int run_release(struct hook_run *run, uint64_t *ret_returned)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	int r = prealloc_release_holder(run->ctx, run->holder, &info), w = run_warm_give(run);

	*ret_returned = info.returned;
	r = r == -ENOENT ? 0 : r;
	return r < 0 ? r : w < 0 ? w : 0;
}
