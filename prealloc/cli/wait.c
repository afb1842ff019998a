/* SPDX-License-Identifier: MIT */
/*
 * How the CLI waits for its jobs: through the same completion path a VMM
 * uses (docs/completion.md). With io_uring, one ring carries the job's end
 * and progress CQEs, a multishot poll of the signalfd and the progress
 * bar's redraw timeout; where io_uring is not allowed (or not built), the
 * job's eventfd and the signalfd under poll(2).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "config.h"
#if PREALLOC_HAVE_LIBURING
#include <liburing.h>
#endif

enum { UD_END = 1, UD_PROGRESS, UD_SIGNAL, UD_REDRAW };
#define REDRAW_MS 100

void cli_wait_open(struct cli_wait *w)
{
	*w = (struct cli_wait){
		.completion = {
			.size = sizeof(w->completion),
			.ring_fd = -1,
			.user_data_end = UD_END,
			.user_data_progress = UD_PROGRESS,
			.progress_step = 64 << 20,
		},
	};
#if PREALLOC_HAVE_LIBURING
	struct io_uring *ring = calloc(1, sizeof(*ring));

	/* Refused (seccomp, the sysctl): the job's eventfd, and its report says so. */
	if (ring && io_uring_queue_init(8, ring, 0) == 0) {
		w->ring = ring;
		w->completion.ring_fd = ring->ring_fd;
	} else {
		free(ring);
	}
#endif
}

void cli_wait_close(struct cli_wait *w)
{
#if PREALLOC_HAVE_LIBURING
	if (w->ring)
		io_uring_queue_exit(w->ring);
	free(w->ring);
	w->ring = NULL;
#else
	(void)w;
#endif
}

/* The first signal cancels the job (the rollback runs); later ones change nothing. */
static void on_signal(struct prealloc_job *job, int sfd, int *got_signal)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (!*got_signal) {
			*got_signal = (int)si.ssi_signo;
			prealloc_job_cancel(job);
		}
}

static void redraw(struct prealloc_job *job, double start, bool show_progress)
{
	if (show_progress && now_seconds() - start > 1.0)
		progress_draw(job, now_seconds() - start, false);
}

#if PREALLOC_HAVE_LIBURING
static void arm(struct io_uring *ring, uint64_t ud, int sfd, struct __kernel_timespec *ts)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (ud == UD_SIGNAL)
		io_uring_prep_poll_multishot(sqe, sfd, POLLIN);
	else
		io_uring_prep_timeout(sqe, ts, 0, 0);
	io_uring_sqe_set_data64(sqe, ud);
}

/* The ring loop: until the end CQE. Returns the first signal, or 0. */
static int run_uring(struct io_uring *ring, struct prealloc_job *job, int sfd, bool show)
{
	struct __kernel_timespec ts = { .tv_nsec = REDRAW_MS * 1000000 };
	double start = now_seconds();
	int got_signal = 0;
	bool end = false;

	if (sfd >= 0)
		arm(ring, UD_SIGNAL, sfd, NULL);
	arm(ring, UD_REDRAW, -1, &ts);
	while (!end && io_uring_submit_and_wait(ring, 1) >= 0) {
		struct io_uring_cqe *cqe;
		unsigned int head, seen = 0;

		io_uring_for_each_cqe(ring, head, cqe) {
			seen++;
			if (cqe->user_data == UD_END)
				end = true;
			else if (cqe->user_data == UD_SIGNAL)
				on_signal(job, sfd, &got_signal);
			if (cqe->user_data == UD_SIGNAL && !(cqe->flags & IORING_CQE_F_MORE))
				arm(ring, UD_SIGNAL, sfd, NULL);
			if (cqe->user_data == UD_REDRAW)
				arm(ring, UD_REDRAW, -1, &ts);
		}
		io_uring_cq_advance(ring, seen);
		redraw(job, start, show);
	}
	/* The poll and the timeout stay armed until cli_wait_close() tears the ring down. */
	return got_signal;
}
#endif

/* The eventfd loop: it turns readable at the end (and at each event on this path). */
static int run_poll(struct prealloc_job *job, int sfd, bool show)
{
	double start = now_seconds();
	int got_signal = 0;
	struct pollfd pfd[2] = {
		{ .fd = prealloc_job_eventfd(job), .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
	};

	while (!prealloc_job_done(job)) {
		int n = poll(pfd, sfd >= 0 ? 2 : 1, REDRAW_MS);
		uint64_t count;

		if (n > 0 && (pfd[0].revents & POLLIN) && read(pfd[0].fd, &count, sizeof(count)) < 0)
			count = 0;	/* EAGAIN: nothing to take */
		if (n > 0 && sfd >= 0 && (pfd[1].revents & POLLIN))
			on_signal(job, sfd, &got_signal);
		redraw(job, start, show);
	}
	return got_signal;
}

int job_run(struct prealloc_job *job, struct cli_wait *w, int sfd, bool show_progress)
{
	double start = now_seconds();
	int sig;

#if PREALLOC_HAVE_LIBURING
	if (w && w->ring && prealloc_job_notify(job) != PREALLOC_NOTIFY_EVENTFD)
		sig = run_uring(w->ring, job, sfd, show_progress);
	else
#endif
		sig = run_poll(job, sfd, show_progress);
	(void)w;
	if (show_progress && now_seconds() - start > 1.0)
		progress_draw(job, now_seconds() - start, true);
	return sig;
}
