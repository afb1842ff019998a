/* SPDX-License-Identifier: MIT */
/*
 * Completion into the caller's io_uring (a job's sinks[2]): each event
 * becomes one CQE, posted with IORING_OP_MSG_RING either without a ring of
 * ours (io_uring_register(-1, IORING_REGISTER_SEND_MSG_RING), Linux 6.13+)
 * or from a small private ring. Where neither is allowed the events queue
 * here and the job's eventfd is written for each (prealloc_job_event reads
 * them). The path is chosen once at start by a probe; a post that fails
 * later moves the rest of the job's events to the queue. Built without
 * liburing, only the queue exists. The CQE encoding is in prealloc.h.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "engine.h"

#if PREALLOC_HAVE_LIBURING
#include <liburing.h>
#include <sys/syscall.h>
#ifndef IORING_REGISTER_SEND_MSG_RING
#define IORING_REGISTER_SEND_MSG_RING 31	/* Linux 6.13; liburing 2.3 predates it */
#endif
#endif

#define COMPLETION_FLAGS                                                                  \
	(PREALLOC_COMPLETION_NODES | PREALLOC_COMPLETION_NO_REGISTERED |                  \
	 PREALLOC_COMPLETION_NO_PRIVATE_RING | PREALLOC_COMPLETION_EVENTFD)

struct notify_event {
	uint64_t user_data;
	int res;
	bool progress;
};

struct notify {
	struct prealloc_completion c;
	int ring_fd;		/* our duplicate of c.ring_fd, -1 none */
	int efd;		/* the job's eventfd, not ours */
	/* Posts are serialised: CQEs leave in order, and the private ring has one submitter. */
	pthread_mutex_t lock;
	int path;		/* enum prealloc_notify, under lock */
	int error;		/* why not io_uring, negative errno, under lock */
	atomic_uint_fast64_t bytes;	/* progress over all nodes */
	uint64_t marks_posted;	/* progress steps posted, under lock */
#if PREALLOC_HAVE_LIBURING
	struct io_uring ring;	/* PRIVATE_RING */
	bool ring_ready;
#endif
	struct notify_event *queue;	/* EVENTFD path, under lock */
	size_t nr_queued, cap;
};

#if PREALLOC_HAVE_LIBURING
/* The ringless send: io_uring_register runs one MSG_RING itself. 0 or -errno. */
static int send_registered(int target, uint64_t user_data, int res)
{
	struct io_uring_sqe sqe;
	long r;

	memset(&sqe, 0, sizeof(sqe));
	io_uring_prep_msg_ring(&sqe, target, (unsigned int)res, user_data, 0);
	r = syscall(__NR_io_uring_register, -1, IORING_REGISTER_SEND_MSG_RING, &sqe, 1);
	return r < 0 ? -errno : 0;
}

/* One MSG_RING from the private ring, and its own completion reaped. 0 or -errno. */
static int send_private(struct io_uring *ring, int target, uint64_t user_data, int res)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	int r;

	if (!sqe)
		return -EBUSY;	/* cannot happen: one SQE in flight at a time, under lock */
	io_uring_prep_msg_ring(sqe, target, (unsigned int)res, user_data, 0);
	r = io_uring_submit(ring);
	if (r < 0)
		return r;
	do
		r = io_uring_wait_cqe(ring, &cqe);
	while (r == -EINTR);
	if (r < 0)
		return r;
	r = cqe->res;
	io_uring_cqe_seen(ring, cqe);
	return r < 0 ? r : 0;
}

/*
 * Each path is probed with a MSG_RING aimed at the job's eventfd, which is
 * no ring: -EBADFD proves the kernel took the request that far (and posts
 * nothing). -EINVAL means the kernel has no such request (pre-6.13 for the
 * ringless send, pre-5.18 for MSG_RING); -EPERM a seccomp filter or the
 * sysctl; -ENOSYS no io_uring at all.
 */
static int probe_result(int r)
{
	return r == -EBADFD ? 0 : r == -EINVAL ? -EOPNOTSUPP : r < 0 ? r : -EPROTO;
}

static void notify_choose(struct notify *n)
{
	unsigned int flags = n->c.flags;
	int r;

	n->error = -EOPNOTSUPP;	/* both paths excluded by flags */
	if (!(flags & PREALLOC_COMPLETION_NO_REGISTERED)) {
		r = probe_result(send_registered(n->efd, 0, 0));
		if (r == 0) {
			n->path = PREALLOC_NOTIFY_URING_REGISTERED;
			n->error = 0;
			return;
		}
		n->error = r;
	}
	if (!(flags & PREALLOC_COMPLETION_NO_PRIVATE_RING)) {
		r = io_uring_queue_init(2, &n->ring, 0);
		if (r == 0) {
			r = probe_result(send_private(&n->ring, n->efd, 0, 0));
			if (r == 0) {
				n->ring_ready = true;
				n->path = PREALLOC_NOTIFY_URING_PRIVATE_RING;
				n->error = 0;
				return;
			}
			io_uring_queue_exit(&n->ring);
		}
		n->error = r;
	}
}
#else
static void notify_choose(struct notify *n)
{
	n->error = -EOPNOTSUPP;	/* built without liburing */
}
#endif

/* The EVENTFD path: queue the event (progress merged) and wake the caller. */
static void queue_locked(struct notify *n, uint64_t user_data, int res, bool progress)
{
	struct notify_event *last = n->nr_queued ? &n->queue[n->nr_queued - 1] : NULL;
	uint64_t one = 1;

	if (progress && last && last->progress) {
		last->res = res;
	} else {
		if (n->nr_queued == n->cap) {
			size_t cap = n->cap ? n->cap * 2 : 8;
			struct notify_event *q = realloc(n->queue, cap * sizeof(*q));

			if (!q)
				return;	/* the event is lost; the end's eventfd write still comes */
			n->queue = q;
			n->cap = cap;
		}
		n->queue[n->nr_queued++] = (struct notify_event){ user_data, res, progress };
	}
	/* A counter of 2^64-2 is unreachable: at most one write per event. */
	if (write(n->efd, &one, sizeof(one)) < 0)
		return;
}

static void post_locked(struct notify *n, uint64_t user_data, int res, bool progress)
{
#if PREALLOC_HAVE_LIBURING
	int r = 0;

	if (n->path == PREALLOC_NOTIFY_URING_REGISTERED)
		r = send_registered(n->ring_fd, user_data, res);
	else if (n->path == PREALLOC_NOTIFY_URING_PRIVATE_RING)
		r = send_private(&n->ring, n->ring_fd, user_data, res);
	if (n->path != PREALLOC_NOTIFY_EVENTFD) {
		if (r == 0)
			return;
		/* The ring refused (-EBADFD, -EOVERFLOW) or a sandbox came since: fall back. */
		n->error = r;
		n->path = PREALLOC_NOTIFY_EVENTFD;
	}
#endif
	queue_locked(n, user_data, res, progress);
}

static void post(struct notify *n, uint64_t user_data, int res, bool progress)
{
	pthread_mutex_lock(&n->lock);
	post_locked(n, user_data, res, progress);
	pthread_mutex_unlock(&n->lock);
}

static int notify_node_done(void *data, int node, int res)
{
	struct notify *n = data;

	(void)res;	/* a node's error comes with the end */
	if (n->c.flags & PREALLOC_COMPLETION_NODES)
		post(n, n->c.user_data_node, node, false);
	return 0;
}

static int notify_job_done(void *data, int res)
{
	struct notify *n = data;

	post(n, n->c.user_data_end, res, false);
	return 0;
}

/* Called after every step of every worker: an atomic add unless a step mark is crossed. */
static void notify_progress(void *data, uint64_t bytes)
{
	struct notify *n = data;
	uint64_t step = n->c.progress_step, old, total;

	if (!step)
		return;
	old = atomic_fetch_add(&n->bytes, bytes);
	if ((old + bytes) / step == old / step)
		return;
	pthread_mutex_lock(&n->lock);
	total = atomic_load(&n->bytes);
	if (total / step > n->marks_posted) {
		n->marks_posted = total / step;
		post_locked(n, n->c.user_data_progress, (int)MIN(total >> 20, (uint64_t)INT_MAX),
			    true);
	}
	pthread_mutex_unlock(&n->lock);
}

static void notify_release(void *data)
{
	struct notify *n = data;

#if PREALLOC_HAVE_LIBURING
	if (n->ring_ready)
		io_uring_queue_exit(&n->ring);
#endif
	if (n->ring_fd >= 0)
		close(n->ring_fd);
	pthread_mutex_destroy(&n->lock);
	free(n->queue);
	free(n);
}

static const struct job_sink_ops notify_ops = {
	.node_done = notify_node_done,
	.job_done = notify_job_done,
	.release = notify_release,
	.progress = notify_progress,
};

int notify_open(const struct prealloc_completion *c, int efd, unsigned int nr_nodes,
		struct job_sink *ret_sink)
{
	struct notify *n;
	int r;

	if (!c)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	r = copy_sized_in(&n->c, sizeof(n->c), c);
	if (r == 0 && (n->c.flags & ~COMPLETION_FLAGS))
		r = -EINVAL;
	if (r < 0) {
		free(n);
		return r;
	}
	/*
	 * The most the queue ever holds: one progress (merged), a node event
	 * per node (all progress comes before them), the end. Made now, so
	 * that no event, the end least of all, can be lost to a failed
	 * allocation later.
	 */
	n->cap = (size_t)nr_nodes + 2;
	n->queue = calloc(n->cap, sizeof(*n->queue));
	if (!n->queue) {
		free(n);
		return -ENOMEM;
	}
	n->efd = efd;
	n->ring_fd = -1;
	n->path = PREALLOC_NOTIFY_EVENTFD;
	pthread_mutex_init(&n->lock, NULL);
	if (n->c.ring_fd >= 0 && !(n->c.flags & PREALLOC_COMPLETION_EVENTFD)) {
		/* Our own reference: a ring closed early, or its fd number reused, gets nothing wrong. */
		n->ring_fd = fcntl(n->c.ring_fd, F_DUPFD_CLOEXEC, 3);
		if (n->ring_fd < 0) {
			r = -errno;
			notify_release(n);
			return r;
		}
		notify_choose(n);
	}
	*ret_sink = (struct job_sink){ &notify_ops, n };
	return 0;
}

int notify_path(const struct job_sink *sink, int *ret_error)
{
	struct notify *n = sink->data;
	int path;

	if (sink->ops != &notify_ops) {
		*ret_error = 0;
		return PREALLOC_NOTIFY_EVENTFD;
	}
	pthread_mutex_lock(&n->lock);
	path = n->path;
	*ret_error = n->error;
	pthread_mutex_unlock(&n->lock);
	return path;
}

int notify_event(const struct job_sink *sink, uint64_t *ret_user_data, int *ret_res)
{
	struct notify *n = sink->data;
	int got = 0;

	if (sink->ops != &notify_ops)
		return 0;
	pthread_mutex_lock(&n->lock);
	if (n->nr_queued) {
		*ret_user_data = n->queue[0].user_data;
		*ret_res = n->queue[0].res;
		memmove(n->queue, n->queue + 1, (n->nr_queued - 1) * sizeof(*n->queue));
		n->nr_queued--;
		got = 1;
	}
	pthread_mutex_unlock(&n->lock);
	return got;
}
