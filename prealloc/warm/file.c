/* SPDX-License-Identifier: MIT */
/*
 * A warm file, as take, give, fill and status see it (docs/warm.md): where
 * files of a page size live, which record is which file, the checks a file
 * coming back from its holder must pass, and a new file made through
 * prepare's own flow (warm: recorded POPULATING, kept at its staged name,
 * the warm pool's own link, READY once populated and proven zero).
 */
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

const char *warm_mount(struct prealloc_ctx *ctx, const char *mount, uint64_t page_size)
{
	if (mount && *mount)
		return mount;
	if (page_size == PREALLOC_PAGE_4K)
		return "/dev/shm";
	return prealloc_hugetlbfs_mount(ctx, page_size);
}

bool warm_is(const struct record *r, int node, uint64_t page_size, uint64_t dev)
{
	return r->warm != WARM_NONE && r->warm_node == node && r->page_size == page_size &&
	       r->dev == dev;
}

void warm_record_mount(const struct record *r, char *buf, size_t len)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", r->tmp);
	snprintf(buf, len, "%s", dirname(dirname(tmp)));
}

long warm_target_of(const struct warm_conf *conf, const uint64_t *devs, const struct record *r)
{
	for (unsigned int i = 0; i < conf->nr; i++)
		if (devs[i] && warm_is(r, conf->t[i].node, conf->t[i].page_size, devs[i]))
			return i;
	return -1;
}

bool warm_single_tenant(const struct warm_conf *conf, const uint64_t *devs, const struct record *r)
{
	long t = warm_target_of(conf, devs, r);

	return t >= 0 && conf->t[t].single_tenant;
}

int warm_open(const struct record *r, struct stat *ret_st)
{
	struct statx stx;
	/* Never wait on a lease its holder took (-EWOULDBLOCK: in use), under the lock least. */
	int fd = open(r->tmp, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	if (file_statx(fd, "", AT_EMPTY_PATH, &stx) < 0 || !record_is_file(r, &stx) ||
	    fstat(fd, ret_st) < 0) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* Removes the holder's link at r->path, if it is still this file's. */
int warm_unlink_path(const struct record *r, bool must)
{
	char dir[4096];
	struct statx stx;
	int dfd, err;

	if (!r->path[0])
		return 0;	/* reserved, never linked */
	snprintf(dir, sizeof(dir), "%s", r->path);
	dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return must ? -errno : 0;
	err = file_statx(dfd, strrchr(r->path, '/') + 1, AT_SYMLINK_NOFOLLOW, &stx);
	if (err == 0 && !record_is_file(r, &stx))
		err = -ESTALE;
	if (err == 0 && unlinkat(dfd, strrchr(r->path, '/') + 1, 0) < 0)
		err = -errno;
	close(dfd);
	return must || err == 0 ? err : 0;
}

bool warm_in_use(struct prealloc_ctx *ctx, const struct record *r, int fd)
{
	(void)ctx;
	(void)r;
	/*
	 * A lease refused, or not to be had at all: in use. Never a walk of
	 * /proc, whose cost is every other user's processes and descriptors:
	 * this runs under the store's lock, or between two of its steps.
	 */
	return file_sole_open(fd) != 0;
}

void warm_seize(const struct record *r)
{
	(void)!fchownat(AT_FDCWD, r->tmp, 0, 0, AT_SYMLINK_NOFOLLOW);
	(void)!fchmodat(AT_FDCWD, r->tmp, 0600, 0);
}

int warm_check(struct prealloc_ctx *ctx, struct record *r)
{
	struct stat st;
	int fd, r_;

	/*
	 * The holder's uid loses the file first, by its name in the root-only
	 * staging directory, before it is opened: the holder can then take no
	 * lease of its own (nor reopen an O_PATH fd through /proc), and with
	 * fs.protected_hardlinks make no new link, so the count read after is
	 * final.
	 */
	warm_seize(r);
	fd = warm_open(r, &st);
	if (fd == -EWOULDBLOCK)
		return -EBUSY;	/* a lease of the holder's, taken before: in use */
	if (fd < 0)
		return fd;
	warm_trim(ctx, r, fd);	/* nothing past its record is left to anyone */
	r_ = fstat(fd, &st) < 0 ? -errno : 0;
	if (r_ == 0 && (st.st_uid != 0 || (st.st_mode & 07777) != 0600))
		r_ = -EPERM;	/* not seized: never counted free (QUARANTINED) */
	if (r_ == 0 && st.st_nlink != 1)
		r_ = -EMLINK;
	else if (r_ == 0 && warm_in_use(ctx, r, fd))
		r_ = -EBUSY;
	close(fd);
	return r_;
}

void warm_returned(struct prealloc_ctx *ctx, struct store *s, struct record *r, int check)
{
	/*
	 * Still open or mapped (-EBUSY) is DIRTY too: its pages are never
	 * cleared in place without a lease, and a new file takes its place.
	 */
	r->path[0] = '\0';
	memset(&r->owner, 0, sizeof(r->owner));
	r->has_uid = false;	/* root's again */
	/* Back from a holder: no label of a declaration's, so no declaration (declared.c). */
	r->declared[0] = '\0';
	r->declared_sum = 0;
	/* The caller's save writes it. */
	if (check == 0 || check == -EBUSY)
		warm_move(NULL, NULL, r, PREALLOC_WARM_DIRTY);
	else
		warm_quarantine(ctx, s, r, warm_check_why(check));
}

int warm_region(struct prealloc_ctx *ctx, const struct record *r, uint64_t length,
		struct prealloc_region **ret)
{
	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_FILE,
		.flags = PREALLOC_REGION_EXISTING,
		.length = length,
		.path = r->tmp,
		.page_size = r->page_size,
		.nr_nodes = 1,
		.nodes = &r->warm_node,
	};

	return region_new_at(ctx, &ro, AT_FDCWD, ret);
}

int warm_grow(struct prealloc_ctx *ctx, struct record *r, int fd, uint64_t length)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_POPULATE,
		.flags = PREALLOC_JOB_VERIFY,
	};
	struct prealloc_region *region;
	int err;

	if (ftruncate(fd, (off_t)length) < 0)
		return -errno;
	err = warm_region(ctx, r, length, &region);
	if (err == 0) {
		err = prealloc_run(region, &jo, NULL);
		prealloc_region_free(region);
	}
	if (err < 0) {
		(void)!ftruncate(fd, (off_t)r->size);	/* its new pages go back */
		return err;
	}
	r->size = length;
	return 0;
}

void warm_note(struct prealloc_warm_fill_info *info, const char *fmt, ...)
{
	va_list ap;

	if (info->message[0])
		return;		/* the first failure */
	va_start(ap, fmt);
	vsnprintf(info->message, sizeof(info->message), fmt, ap);
	va_end(ap);
}

/* Whether fd (-1: none) is readable now: serve was asked to stop. */
bool warm_stop_asked(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return fd >= 0 && poll(&p, 1, 0) > 0;
}

/* The job to its end; a readable stop_fd cancels it first (-ECANCELED). */
int warm_job_finish(struct prealloc_job *job, const struct warm_pace *pace)
{
	struct pollfd p[2] = { { .fd = prealloc_job_eventfd(job), .events = POLLIN },
			       { .fd = pace->stop_fd, .events = POLLIN } };
	int timeout = pace->progress ? 100 : -1, err;
	uint64_t count;

	if (pace->progress)
		pace->progress(pace->userdata, job);	/* its start: the rate's clock */
	while ((pace->stop_fd >= 0 || pace->progress) && !prealloc_job_done(job)) {
		if (poll(p, pace->stop_fd >= 0 ? 2 : 1, timeout) < 0 && errno != EINTR)
			break;
		if (pace->stop_fd >= 0 && p[1].revents) {
			prealloc_job_cancel(job);
			break;
		}
		if (p[0].revents && !pace->progress)
			break;	/* its end: the wait below returns at once */
		/* Read, or poll would say readable again at once; the end is job_done's. */
		if (p[0].revents && read(p[0].fd, &count, sizeof(count)) < 0)
			count = 0;
		if (pace->progress)
			pace->progress(pace->userdata, job);
	}
	err = prealloc_job_wait(job);
	if (pace->progress)
		pace->progress(pace->userdata, job);	/* its end: the bar at its last */
	return err;
}

/* A new warm file's record as admission first writes it: POPULATING, of its node. */
static void created_record(struct record *r, void *arg)
{
	warm_move(NULL, NULL, r, PREALLOC_WARM_POPULATING);
	r->warm_node = *(const int *)arg;
}

/* Its commit: READY in the warm pool (saved: the move writes it). */
static int created_ready(const struct prealloc_ctx *ctx, struct store *s, struct record *r,
			 void *arg)
{
	(void)arg;
	return warm_move(ctx, s, r, PREALLOC_WARM_READY);
}

int warm_create(struct prealloc_ctx *ctx, int node, uint64_t page_size, const char *mount,
		uint64_t length, const struct warm_pace *pace, char *why, size_t why_len,
		uint64_t *ret_id, struct prealloc_warm_fill_info *phases)
{
	struct prealloc_prepare_info pinfo = { .size = sizeof(pinfo) };
	struct prealloc_prepare_opts po = {
		.size = sizeof(po),
		.flags = PREALLOC_PREPARE_VERIFY | PREALLOC_PREPARE_GROW_POOLS,
		.page_size = page_size,
		.length = length,
		.nr_nodes = 1,
		.nodes = &node,
		.dir = mount,
		.threads = pace->threads,
	};
	/* Staged (its staged name is the warm pool's link), never another's pages. */
	struct prepare_more more = {
		.max_rate = pace->max_rate, .idle = pace->idle, .stay_staged = true,
		.admit_flags = PREALLOC_ADMIT_KEEP_WARM, .record_made = created_record,
		.committed = created_ready, .arg = &node,
	};
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_job *job;
	double t0 = now_seconds(), t1;
	struct stat ms;
	int err;

	err = prepare_start(ctx, &po, &more, &job, &pinfo);
	t1 = now_seconds();
	if (err == 0) {
		err = warm_job_finish(job, pace);	/* stopped: rolled back, nothing left */
		prealloc_prepare_info(job, &pinfo);
		if (phases && prealloc_job_report(job, &rep) == 0) {
			double rest = now_seconds() - t1 - rep.seconds - rep.verify_seconds;

			phases->populate_seconds += rep.seconds;
			phases->verify_seconds += rep.verify_seconds;
			phases->commit_seconds += rest > 0 ? rest : 0;
		}
		prealloc_job_free(job);
	}
	if (phases)
		phases->admit_seconds += t1 - t0;
	if (err < 0)
		snprintf(why, why_len, "%s", pinfo.message[0] ? pinfo.message : strerror(-err));
	if (err == 0 && ret_id)
		*ret_id = pinfo.record_id;
	if (err == 0 && stat(mount, &ms) == 0) {
		struct counter_change c[] = {
			{ COUNTER_FILL_RATE, (uint64_t)((double)length / (now_seconds() - t0)), true },
			{ COUNTER_CREATED, 1, false },
		};

		counter_change_all(ctx, (uint64_t)ms.st_dev, node, page_size, c, 2);
	}
	return err;
}
