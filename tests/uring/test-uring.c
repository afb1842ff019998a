/* SPDX-License-Identifier: MIT */
/*
 * Completion into the caller's io_uring (docs/completion.md): each send
 * path on its own, the exact user_data and res of every CQE, cancel and
 * error results, SINGLE_ISSUER + DEFER_TASKRUN rings, a full CQ ring (the
 * CQE waits on the overflow list and still arrives), a ring closed early
 * (the eventfd still fires), a target that is no ring (the rest falls back
 * to the eventfd), the eventfd path's events, and both flows. Then every
 * stage of every path event by event (case_stages): done, cancelled and
 * failed jobs, read while they run and only after, on each ring kind, the
 * eventfd queue and the eventfd alone; two node crews (a fake sysfs); and
 * the fallback from a ring to the eventfd in the middle of a job (a
 * seccomp filter applied to every thread, in a child).
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <prealloc.h>

#include "tap.h"
#include "fakenodes.h"
#include "seccomp.h"

#define UD_END UINT64_C(0xe0d0000000000001)
#define UD_NODE UINT64_C(0x40de000000000002)
#define UD_PROG UINT64_C(0x9e09000000000003)
#define MAX_CQES 256

struct seen {
	unsigned int nr, ends, nodes, progress, others;
	int end_res, last_progress;
	bool ascending, flags_zero, end_last;
	uint64_t other_ud;
};

static struct prealloc_ctx *ctx;
static bool ringless_kernel;	/* 6.13+: IORING_REGISTER_SEND_MSG_RING exists */
/* The node of the one-worker cases: one pool, whatever the machine's node count. */
static int one_node;
/* The library was built with liburing; without it every path is the eventfd. */
static const bool lib_uring = LIB_HAS_URING;

static bool kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;

	uname(&u);
	sscanf(u.release, "%d.%d", &a, &b);
	return a > maj || (a == maj && b >= min);
}

static struct prealloc_region *anon(uint64_t len)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = len };
	struct prealloc_region *r = NULL;

	return prealloc_region_new(ctx, &ro, &r) == 0 ? r : NULL;
}

static struct prealloc_job *start(struct prealloc_region *reg, int op, unsigned int threads,
				  const struct prealloc_completion *c, int *ret_r)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = op, .threads = threads,
					.flags = PREALLOC_JOB_NO_PLACEMENT, .completion = c };
	struct prealloc_job *job = NULL;

	*ret_r = prealloc_job_start(reg, &jo, &job);
	return *ret_r == 0 ? job : NULL;
}

static void note(struct seen *s, uint64_t ud, int res, unsigned int flags)
{
	s->nr++;
	s->flags_zero &= flags == 0;
	s->end_last &= s->ends == 0;	/* nothing may follow the end */
	if (ud == UD_END) {
		s->ends++;
		s->end_res = res;
	} else if (ud == UD_NODE) {
		s->nodes++;
	} else if (ud == UD_PROG) {
		s->ascending &= res > s->last_progress;	/* each post a new mark */
		s->last_progress = res;
		s->progress++;
	} else {
		s->others++;
		s->other_ud = ud;
	}
}

static void seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	s->ascending = s->flags_zero = s->end_last = true;
	s->last_progress = -1;
}

/* Reaps the caller's ring until the end CQE (or 10 s): what io_uring_wait_cqe sees. */
static void reap(struct io_uring *ring, struct seen *s)
{
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring_cqe *cqe;

	while (s->ends == 0 && s->nr < MAX_CQES && io_uring_wait_cqe_timeout(ring, &cqe, &ts) == 0) {
		note(s, cqe->user_data, cqe->res, cqe->flags);
		io_uring_cqe_seen(ring, cqe);
	}
}

static void drain_events(struct prealloc_job *job, struct seen *s);

/* The end through whichever path the job took: the ring, or the eventfd's queue. */
static void collect(struct prealloc_job *job, struct io_uring *ring, struct seen *s)
{
	if (prealloc_job_notify(job) == PREALLOC_NOTIFY_EVENTFD)
		drain_events(job, s);
	else
		reap(ring, s);
}

static struct prealloc_completion completion(int ring_fd, unsigned int flags)
{
	return (struct prealloc_completion){
		.size = sizeof(struct prealloc_completion),
		.ring_fd = ring_fd,
		.flags = flags | PREALLOC_COMPLETION_NODES,
		.user_data_end = UD_END,
		.user_data_node = UD_NODE,
		.user_data_progress = UD_PROG,
		.progress_step = 8 << 20,
	};
}

static const char *path_name(int p)
{
	return p == PREALLOC_NOTIFY_URING_REGISTERED	 ? "registered"
	       : p == PREALLOC_NOTIFY_URING_PRIVATE_RING ? "private ring"
							 : "eventfd";
}

/* A 64 MiB populate through one path: every CQE exactly as documented. */
static void case_path(const char *name, unsigned int ring_flags, unsigned int cflags, int want)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct io_uring ring;
	struct prealloc_completion c;
	struct prealloc_region *reg = anon(64 << 20);
	struct prealloc_job *job;
	struct seen s;
	int r, nodes;

	r = io_uring_queue_init(8, &ring, ring_flags);
	if (r == -EINVAL && ring_flags) {
		tap_skip("%s: this kernel has no such ring flags (io_uring_setup: EINVAL)", name);
		prealloc_region_free(reg);
		return;
	}
	c = completion(ring.ring_fd, cflags);
	if (!lib_uring)
		want = PREALLOC_NOTIFY_EVENTFD;
	job = start(reg, PREALLOC_OP_POPULATE, 2, &c, &r);
	tap_ok(job != NULL, "%s: job started (%d)", name, r);
	if (!job)
		goto out;
	nodes = prealloc_job_node_count(job, NULL, 0);
	tap_ok(prealloc_job_notify(job) == want, "%s: path is %s (got %s)", name, path_name(want),
	       path_name(prealloc_job_notify(job)));
	if ((ring_flags & IORING_SETUP_DEFER_TASKRUN) && lib_uring) {
		struct io_uring_cqe *cqe;

		/* Done and joined, yet nothing shows until the owner enters the kernel. */
		prealloc_job_wait(job);
		tap_ok(io_uring_peek_cqe(&ring, &cqe) == -EAGAIN,
		       "%s: DEFER_TASKRUN: no CQE visible before the owner enters", name);
	}
	seen_init(&s);
	collect(job, &ring, &s);
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	tap_ok(s.ends == 1 && s.end_res == 0 && r == 0 && s.end_last,
	       "%s: one end CQE, last, user_data exact, res 0 (%u ends, res %d)", name, s.ends,
	       s.end_res);
	tap_ok(s.nodes == (unsigned int)nodes && s.others == 0 && s.flags_zero,
	       "%s: one node CQE per node (%u of %d), no stray user_data, flags 0", name, s.nodes,
	       nodes);
	tap_ok(s.progress >= 1 && s.progress <= 8 && s.ascending && s.last_progress <= 64,
	       "%s: progress CQEs every 8 MiB, MiB ascending (%u, last %d)", name, s.progress,
	       s.last_progress);
	tap_ok(rep.notify == want && rep.notify_error == (lib_uring ? 0 : -EOPNOTSUPP),
	       "%s: report says %s (error %d)", name, path_name(rep.notify), rep.notify_error);
	prealloc_job_free(job);
out:
	io_uring_queue_exit(&ring);
	prealloc_region_free(reg);
}

/* The end CQE's res is the job's result: -ECANCELED, -EBADMSG. */
static void case_results(int path_flags)
{
	struct io_uring ring;
	struct prealloc_completion c;
	struct prealloc_region *big = anon(UINT64_C(1) << 30);
	struct prealloc_job *job;
	struct seen s;
	int r;

	io_uring_queue_init(8, &ring, 0);
	c = completion(ring.ring_fd, path_flags);
	job = start(big, PREALLOC_OP_POPULATE, 1, &c, &r);
	prealloc_job_cancel(job);
	seen_init(&s);
	collect(job, &ring, &s);
	tap_ok(s.ends == 1 && s.end_res == -ECANCELED && prealloc_job_wait(job) == -ECANCELED,
	       "cancel (%s): the end CQE carries -ECANCELED (got %d)", path_name(prealloc_job_notify(job)),
	       s.end_res);
	prealloc_job_free(job);
	prealloc_region_free(big);

	/* A MAPPED range with one byte set, verified: -EBADMSG. */
	uint8_t *p = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MAPPED,
					   .flags = PREALLOC_REGION_NO_BIND, .addr = p,
					   .length = 4 << 20 };
	struct prealloc_region *reg = NULL;

	memset(p, 0, 4 << 20);
	p[12345] = 1;
	prealloc_region_new(ctx, &ro, &reg);
	job = start(reg, PREALLOC_OP_VERIFY, 1, &c, &r);
	seen_init(&s);
	collect(job, &ring, &s);
	tap_ok(s.ends == 1 && s.end_res == -EBADMSG && prealloc_job_wait(job) == -EBADMSG,
	       "verify finds a byte (%s): the end CQE carries -EBADMSG (got %d)",
	       path_name(prealloc_job_notify(job)), s.end_res);
	prealloc_job_free(job);
	prealloc_region_free(reg);
	munmap(p, 4 << 20);
	io_uring_queue_exit(&ring);
}

/*
 * A CQ ring already full of unreaped NOP completions: the kernel keeps the
 * end CQE on its overflow list (IORING_SQ_CQ_OVERFLOW), and it arrives
 * once the owner reaps. The post is no failure: no fallback.
 */
static void case_full_cq(const char *name, unsigned int ring_flags, int path_flags)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct io_uring ring;
	struct prealloc_completion c;
	struct prealloc_region *reg = anon(4 << 20);
	struct prealloc_job *job;
	struct seen s;
	unsigned int nops = 0;
	int r;

	if (!lib_uring) {
		tap_skip("%s: the library was built without liburing (-Dliburing=disabled)", name);
		prealloc_region_free(reg);
		return;
	}
	if (io_uring_queue_init(2, &ring, ring_flags) < 0) {
		tap_skip("%s: ring flags not supported here", name);
		prealloc_region_free(reg);
		return;
	}
	for (unsigned int i = 0; i < ring.cq.ring_entries; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		if (!sqe) {
			io_uring_submit(&ring);
			sqe = io_uring_get_sqe(&ring);
		}
		io_uring_prep_nop(sqe);
		sqe->user_data = 7;
	}
	io_uring_submit_and_wait(&ring, ring.cq.ring_entries);
	tap_ok(io_uring_cq_ready(&ring) == ring.cq.ring_entries, "%s: CQ ring full (%u of %u)",
	       name, io_uring_cq_ready(&ring), ring.cq.ring_entries);
	c = completion(ring.ring_fd, path_flags);
	c.flags &= ~PREALLOC_COMPLETION_NODES;
	c.progress_step = 0;
	job = start(reg, PREALLOC_OP_POPULATE, 1, &c, &r);
	prealloc_job_wait(job);
	if (!(ring_flags & IORING_SETUP_DEFER_TASKRUN))
		tap_ok(IO_URING_READ_ONCE(*ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW,
		       "%s: the end CQE went to the overflow list", name);
	seen_init(&s);
	/* Reap everything: the NOPs first, then what overflowed. */
	for (struct io_uring_cqe *cqe; s.ends == 0;) {
		struct __kernel_timespec ts = { .tv_sec = 5 };

		if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts) < 0)
			break;
		if (cqe->user_data == 7)
			nops++;
		else
			note(&s, cqe->user_data, cqe->res, cqe->flags);
		io_uring_cqe_seen(&ring, cqe);
	}
	prealloc_job_report(job, &rep);
	tap_ok(nops == ring.cq.ring_entries && s.ends == 1 && s.end_res == 0,
	       "%s: after %u NOPs the end CQE arrives, res 0", name, nops);
	tap_ok(rep.notify != PREALLOC_NOTIFY_EVENTFD && rep.notify_error == 0,
	       "%s: no fallback (report: %s, error %d)", name, path_name(rep.notify),
	       rep.notify_error);
	prealloc_job_free(job);
	io_uring_queue_exit(&ring);
	prealloc_region_free(reg);
}

/* The caller closes its ring while the job runs: the eventfd still fires. */
static void case_ring_closed(void)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct io_uring ring;
	struct prealloc_completion c;
	struct prealloc_region *reg = anon(256 << 20);
	struct prealloc_job *job;
	struct pollfd pfd;
	bool fired = false;
	uint64_t count;
	int r;

	io_uring_queue_init(8, &ring, 0);
	c = completion(ring.ring_fd, 0);
	job = start(reg, PREALLOC_OP_POPULATE, 1, &c, &r);
	io_uring_queue_exit(&ring);
	pfd = (struct pollfd){ .fd = prealloc_job_eventfd(job), .events = POLLIN };
	/* The eventfd path also fires at progress: read until done. A poll timeout is no firing. */
	while (poll(&pfd, 1, 20000) == 1 && read(pfd.fd, &count, sizeof(count)) > 0)
		if (prealloc_job_done(job)) {
			fired = true;
			break;
		}
	tap_ok(fired, "ring closed early: the eventfd fires at the end");
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	tap_ok(r == 0 && (rep.notify != PREALLOC_NOTIFY_EVENTFD) == lib_uring &&
		       rep.notify_error == (lib_uring ? 0 : -EOPNOTSUPP),
	       "ring closed early: job 0, its CQEs went to the ring the job still held (%s)",
	       path_name(rep.notify));
	prealloc_job_free(job);
	prealloc_region_free(reg);
}

/* Drains the eventfd path: poll, then every queued event, until the end. */
static void drain_events(struct prealloc_job *job, struct seen *s)
{
	struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };
	uint64_t ud, count;
	int res;

	while (s->ends == 0 && poll(&pfd, 1, 5000) == 1) {
		if (read(pfd.fd, &count, sizeof(count)) < 0)
			continue;
		while (prealloc_job_event(job, &ud, &res) == 1)
			note(s, ud, res, 0);
	}
}

/* The eventfd path carries the same (user_data, res) events. */
/*
 * step 0 keeps completion()'s 8 MiB; the whole 64 MiB makes the progress
 * mark one event, which a lost post would leave missing.
 */
static void case_eventfd(const char *name, int ring_fd, unsigned int flags, int want_error,
			 uint64_t step)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_completion c = completion(ring_fd, flags);
	struct prealloc_region *reg = anon(64 << 20);
	struct prealloc_job *job;
	struct seen s;
	int r, nodes;

	if (step)
		c.progress_step = step;
	job = start(reg, PREALLOC_OP_POPULATE, 2, &c, &r);
	nodes = prealloc_job_node_count(job, NULL, 0);
	seen_init(&s);
	drain_events(job, &s);
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	tap_ok(s.ends == 1 && s.end_res == 0 && s.end_last && s.others == 0,
	       "%s: the end event, last, user_data exact, res 0", name);
	tap_ok(s.nodes == (unsigned int)nodes && s.ascending && s.progress >= 1 &&
		       s.last_progress == 64,
	       "%s: %u node events, %u progress events ascending, the last at %d MiB of 64", name,
	       s.nodes, s.progress, s.last_progress);
	tap_ok(rep.notify == PREALLOC_NOTIFY_EVENTFD && rep.notify_error == want_error,
	       "%s: report says eventfd, error %d (got %d)", name, want_error, rep.notify_error);
	prealloc_job_free(job);
	prealloc_region_free(reg);
}

static void case_bad_args(void)
{
	struct prealloc_completion c = completion(1000, 0);
	struct prealloc_region *reg = anon(4 << 20);
	int r = 0;

	struct prealloc_job *job;

	close(1000);
	job = start(reg, PREALLOC_OP_POPULATE, 1, &c, &r);
	tap_ok(!job && r == -EBADF, "a ring_fd that is not open: -EBADF (got %d)", r);
	c = completion(-1, 1u << 20);
	job = start(reg, PREALLOC_OP_POPULATE, 1, &c, &r);
	tap_ok(!job && r == -EINVAL, "an unknown completion flag: -EINVAL (got %d)", r);
	prealloc_region_free(reg);
}

/* Both flows take the completion too: prepare a 4k file in /dev/shm, clear it, release it. */
static void case_flows(void)
{
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct io_uring ring;
	struct prealloc_completion c;
	struct prealloc_job *job = NULL;
	struct seen s;
	int r;

	io_uring_queue_init(8, &ring, 0);
	c = completion(ring.ring_fd, 0);
	struct prealloc_prepare_opts po = { .size = sizeof(po), .page_size = PREALLOC_PAGE_4K,
					    .length = 16 << 20, .dir = "/dev/shm",
					    .completion = &c };
	r = prealloc_prepare_start(ctx, &po, &job, &info);
	seen_init(&s);
	if (r == 0)
		collect(job, &ring, &s);
	tap_ok(r == 0 && s.ends == 1 && s.end_res == 0 && prealloc_job_wait(job) == 0,
	       "prepare flow: its end CQE arrives, res 0 (start %d)", r);
	if (job)
		prealloc_prepare_info(job, &info);
	prealloc_job_free(job);

	struct prealloc_clear_file_opts co = { .size = sizeof(co), .completion = &c };
	job = NULL;
	r = prealloc_clear_file_start(ctx, info.path, &co, &job, NULL);
	seen_init(&s);
	if (r == 0 && job)
		collect(job, &ring, &s);
	tap_ok(r == 0 && job && s.ends == 1 && s.end_res == 0, "clear-file flow: its end CQE, res 0");
	prealloc_job_free(job);
	tap_ok(prealloc_release(ctx, info.path, NULL) == 0, "the prepared file is released");
	io_uring_queue_exit(&ring);
}

/* ---- every stage of every path, event by event ---------------------------- */

#define MiB (UINT64_C(1) << 20)
#define PIECE (16 * MiB) /* JOB_STEP: one worker on 16 MiB chunks does one piece a chunk */

enum stage_kind { STAGE_DONE, STAGE_CANCEL, STAGE_FAIL };

struct event {
	uint64_t ud;
	int res;
};

/* Events in the order a consumer took them (or a worker posted them). */
struct trace {
	unsigned int nr, flags_set;
	struct event ev[MAX_CQES];
};

static void trace_add(struct trace *t, uint64_t ud, int res)
{
	if (t->nr < MAX_CQES)
		t->ev[t->nr++] = (struct event){ ud, res };
}

static bool trace_has_end(const struct trace *t)
{
	for (unsigned int i = 0; i < t->nr; i++)
		if (t->ev[i].ud == UD_END)
			return true;
	return false;
}

static void trace_print(const char *what, const struct trace *t, unsigned int from)
{
	printf("#   %s:", what);
	for (unsigned int i = from; i < t->nr; i++) {
		const struct event *e = &t->ev[i];

		printf(" %s%d",
		       e->ud == UD_END	  ? "E"
		       : e->ud == UD_NODE ? "N"
		       : e->ud == UD_PROG ? "P"
					  : "?",
		       e->res);
	}
	printf("\n");
}

static bool trace_eq(const struct trace *a, unsigned int a_from, const struct trace *b,
		     unsigned int b_from)
{
	if (a->nr - a_from != b->nr - b_from)
		return false;
	for (unsigned int i = 0; i < a->nr - a_from; i++)
		if (a->ev[a_from + i].ud != b->ev[b_from + i].ud ||
		    a->ev[a_from + i].res != b->ev[b_from + i].res)
			return false;
	return true;
}

/*
 * What one worker posts, in order, for a job that did done bytes in 16 MiB
 * pieces (the last one shorter): a progress event where a piece crosses a
 * step mark (res: MiB done so far), then the one node's event, then the end.
 */
static void posts_one_worker(struct trace *t, uint64_t done, uint64_t step, bool nodes, int end)
{
	for (uint64_t at = 0, next; step && at < done; at = next) {
		next = at + PIECE < done ? at + PIECE : done;
		if (next / step > at / step)
			trace_add(t, UD_PROG, (int)(next >> 20));
	}
	if (nodes)
		trace_add(t, UD_NODE, one_node);
	trace_add(t, UD_END, end);
}

/* The eventfd queue of posts from..: each run of progress events merged into its last. */
static void posts_merged(struct trace *dst, const struct trace *posts, unsigned int from)
{
	for (unsigned int i = from; i < posts->nr; i++) {
		const struct event *e = &posts->ev[i];

		if (e->ud == UD_PROG && dst->nr && dst->ev[dst->nr - 1].ud == UD_PROG)
			dst->ev[dst->nr - 1].res = e->res;
		else
			trace_add(dst, e->ud, e->res);
	}
}

/*
 * A consumer of the eventfd queue that reads while the job runs takes the
 * posts in order, missing only progress events a later progress event
 * replaced before it looked: never a node event, never the end, never the
 * progress event right before one of them.
 */
static bool trace_taken_while_running(const struct trace *got, const struct trace *posts,
				      unsigned int from)
{
	unsigned int j = from;

	for (unsigned int i = 0; i < got->nr; i++, j++) {
		for (; j < posts->nr; j++) {
			bool merged_away = posts->ev[j].ud == UD_PROG && j + 1 < posts->nr &&
					   posts->ev[j + 1].ud == UD_PROG;

			if (posts->ev[j].ud == got->ev[i].ud && posts->ev[j].res == got->ev[i].res)
				break;
			if (!merged_away)
				return false;
		}
		if (j == posts->nr)
			return false;
	}
	return j == posts->nr;
}

/* Everything the caller's ring holds now; DEFER_TASKRUN's task work runs first. */
static void ring_drain(struct io_uring *ring, struct trace *t)
{
	struct io_uring_cqe *cqe;

	io_uring_get_events(ring);
	while (io_uring_peek_cqe(ring, &cqe) == 0) {
		trace_add(t, cqe->user_data, cqe->res);
		t->flags_set += cqe->flags != 0;
		io_uring_cqe_seen(ring, cqe);
	}
}

/*
 * The caller's loop blocked on its ring until the end CQE (or 5 s without
 * one); *ret_done_at_wake: prealloc_job_done() was 1 when the end came.
 */
static void ring_until_end(struct prealloc_job *job, struct io_uring *ring, struct trace *t,
			   bool *ret_done_at_wake)
{
	struct __kernel_timespec ts = { .tv_sec = 5 };
	struct io_uring_cqe *cqe;

	while (!trace_has_end(t) && t->nr < MAX_CQES &&
	       io_uring_wait_cqe_timeout(ring, &cqe, &ts) == 0) {
		trace_add(t, cqe->user_data, cqe->res);
		t->flags_set += cqe->flags != 0;
		io_uring_cqe_seen(ring, cqe);
	}
	*ret_done_at_wake = prealloc_job_done(job) == 1;
}

/* The eventfd's counter (0 when not readable: it is non-blocking). */
static uint64_t efd_count(struct prealloc_job *job)
{
	uint64_t count = 0;

	if (read(prealloc_job_eventfd(job), &count, sizeof(count)) != sizeof(count))
		return 0;
	return count;
}

static void efd_take(struct prealloc_job *job, struct trace *t)
{
	uint64_t ud;
	int res;

	while (t->nr < MAX_CQES && prealloc_job_event(job, &ud, &res) == 1)
		trace_add(t, ud, res);
}

/* Poll the eventfd, take what is queued, until the end; returns the counter's sum. */
static uint64_t efd_until_end(struct prealloc_job *job, struct trace *t, bool *ret_done_at_wake)
{
	struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };
	uint64_t sum = 0;

	*ret_done_at_wake = true;
	while (!trace_has_end(t) && t->nr < MAX_CQES && poll(&pfd, 1, 5000) == 1) {
		sum += efd_count(job);
		efd_take(job, t);
		if (trace_has_end(t))
			*ret_done_at_wake = prealloc_job_done(job) == 1;
	}
	return sum;
}

struct path_case {
	const char *name;
	unsigned int ring_flags; /* the caller's ring */
	unsigned int cflags;	 /* completion flags, NODES apart */
	int ring_fd;		 /* 0: the caller's ring; -1: none given */
	bool no_completion;	 /* opts.completion NULL: the eventfd alone */
	int want;		 /* enum prealloc_notify */
};

struct stage {
	const char *name;
	int kind; /* enum stage_kind */
	uint64_t len, step;
	bool nodes; /* PREALLOC_COMPLETION_NODES */
};

#define SI IORING_SETUP_SINGLE_ISSUER
#define DT (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN)
#define NO_PRIV PREALLOC_COMPLETION_NO_PRIVATE_RING
#define NO_REG PREALLOC_COMPLETION_NO_REGISTERED

static const struct path_case paths[] = {
	{ "ringless, plain ring", 0, NO_PRIV, 0, false, PREALLOC_NOTIFY_URING_REGISTERED },
	{ "ringless, SINGLE_ISSUER", SI, NO_PRIV, 0, false, PREALLOC_NOTIFY_URING_REGISTERED },
	{ "ringless, DEFER_TASKRUN", DT, NO_PRIV, 0, false, PREALLOC_NOTIFY_URING_REGISTERED },
	{ "private ring, plain ring", 0, NO_REG, 0, false, PREALLOC_NOTIFY_URING_PRIVATE_RING },
	{ "private ring, SINGLE_ISSUER", SI, NO_REG, 0, false, PREALLOC_NOTIFY_URING_PRIVATE_RING },
	{ "private ring, DEFER_TASKRUN", DT, NO_REG, 0, false, PREALLOC_NOTIFY_URING_PRIVATE_RING },
	{ "eventfd (COMPLETION_EVENTFD)", 0, PREALLOC_COMPLETION_EVENTFD, 0, false,
	  PREALLOC_NOTIFY_EVENTFD },
	{ "eventfd (ring_fd -1)", 0, 0, -1, false, PREALLOC_NOTIFY_EVENTFD },
	{ "eventfd alone (no completion)", 0, 0, -1, true, PREALLOC_NOTIFY_EVENTFD },
};

static const struct stage stages[] = {
	{ "done", STAGE_DONE, 64 * MiB, 16 * MiB, true },
	{ "done, step 8 MiB (two marks a piece, one post)", STAGE_DONE, 64 * MiB, 8 * MiB, true },
	{ "done, 40 MiB (a last short piece)", STAGE_DONE, 40 * MiB, 16 * MiB, true },
	{ "done, one step of 64 MiB", STAGE_DONE, 64 * MiB, 64 * MiB, true },
	{ "done, no progress", STAGE_DONE, 64 * MiB, 0, true },
	{ "done, no node events", STAGE_DONE, 64 * MiB, 16 * MiB, false },
	{ "cancelled", STAGE_CANCEL, 1024 * MiB, 16 * MiB, true },
	{ "verify fails", STAGE_FAIL, 64 * MiB, 16 * MiB, true },
};

#define DIRTY_AT (40 * MiB + 123)

static struct prealloc_region *anon_one_node(uint64_t len)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = len, .nr_nodes = 1, .nodes = &one_node };
	struct prealloc_region *r = NULL;

	return prealloc_region_new(ctx, &ro, &r) == 0 ? r : NULL;
}

/* A MAPPED range, zeroed, with one byte set at DIRTY_AT: verify fails -EBADMSG. */
static struct prealloc_region *dirty_region(struct prealloc_ctx *on, uint64_t len,
					    unsigned int nr_nodes, const int *nodes,
					    uint8_t **ret_p)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct prealloc_region_opts ro = { .size = sizeof(ro),
					   .backing = PREALLOC_BACKING_MAPPED,
					   .flags = PREALLOC_REGION_NO_BIND,
					   .addr = p,
					   .length = len,
					   .nr_nodes = nr_nodes,
					   .nodes = nodes };
	struct prealloc_region *reg = NULL;

	*ret_p = p == MAP_FAILED ? NULL : p;
	if (!*ret_p)
		return NULL;
	memset(p, 0, len);
	p[DIRTY_AT] = 0x5a;
	if (prealloc_region_new(on, &ro, &reg) < 0) {
		munmap(p, len);
		*ret_p = NULL;
	}
	return reg;
}

static int stage_result(const struct stage *st)
{
	return st->kind == STAGE_CANCEL ? -ECANCELED : st->kind == STAGE_FAIL ? -EBADMSG : 0;
}

/* Once a worker counted its first step: the job runs, and has posted something. */
static void cancel_running(struct prealloc_job *job)
{
	uint64_t done = 0;

	while (!done && !prealloc_job_done(job))
		prealloc_job_progress(job, &done, NULL);
	prealloc_job_cancel(job);
}

/*
 * One worker, 16 MiB chunks: the posts are known exactly from the bytes the
 * job did. A ring gets every post; the eventfd queue gets them with
 * progress merged, all of them when read after the job, the ones not
 * replaced when read during it; the eventfd alone is readable once, at the
 * end. Either way: exactly one end, last, with the job's result.
 */
static void case_stage(const struct path_case *pc, const struct stage *st, bool after)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_completion c = completion(-1, pc->cflags);
	struct trace got = { 0 }, posts = { 0 }, want = { 0 };
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.threads = 1,
		.chunk_size = PIECE,
		.op = st->kind == STAGE_FAIL ? PREALLOC_OP_VERIFY : PREALLOC_OP_POPULATE,
		.flags = PREALLOC_JOB_NO_PLACEMENT,
		.completion = pc->no_completion ? NULL : &c,
	};
	int path = lib_uring ? pc->want : PREALLOC_NOTIFY_EVENTFD, r;
	const char *mode = after ? "read after" : "read during";
	struct prealloc_region *reg;
	struct prealloc_job *job = NULL;
	bool has_ring = pc->ring_fd == 0, done_at_wake = true, ok;
	uint64_t count = 0;
	struct io_uring ring;
	uint8_t *p = NULL;

	if (has_ring && io_uring_queue_init(64, &ring, pc->ring_flags) < 0) {
		tap_skip("%s: this kernel has no such ring (io_uring_setup)", pc->name);
		return;
	}
	c.ring_fd = has_ring ? ring.ring_fd : -1;
	c.progress_step = st->step;
	if (!st->nodes)
		c.flags &= ~PREALLOC_COMPLETION_NODES;
	reg = st->kind == STAGE_FAIL ? dirty_region(ctx, st->len, 1, &one_node, &p)
				     : anon_one_node(st->len);
	r = reg ? prealloc_job_start(reg, &jo, &job) : -ENOMEM;
	if (r < 0) {
		tap_ok(0, "%s, %s, %s: job started (%d)", pc->name, st->name, mode, r);
		goto out;
	}
	if (st->kind == STAGE_CANCEL)
		cancel_running(job);
	if (pc->no_completion) {
		struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };

		/* During: the first wakeup is the end. */
		if (!after && poll(&pfd, 1, 5000) == 1)
			done_at_wake = prealloc_job_done(job) == 1;
		r = prealloc_job_wait(job);
		count = efd_count(job);
		efd_take(job, &got);
	} else if (path != PREALLOC_NOTIFY_EVENTFD) {
		if (!after)
			ring_until_end(job, &ring, &got, &done_at_wake);
		r = prealloc_job_wait(job);
		ring_drain(&ring, &got); /* after: all of it; during: nothing may follow the end */
		count = efd_count(job);
		efd_take(job, &got); /* nothing queues on a ring path */
	} else {
		if (!after)
			count = efd_until_end(job, &got, &done_at_wake);
		r = prealloc_job_wait(job);
		count += efd_count(job);
		efd_take(job, &got);
	}
	prealloc_job_report(job, &rep);
	posts_one_worker(&posts, rep.bytes_done, st->step, st->nodes, stage_result(st));
	if (pc->no_completion)
		ok = got.nr == 0 && count == 1 && done_at_wake;
	else if (path != PREALLOC_NOTIFY_EVENTFD)
		ok = trace_eq(&got, 0, &posts, 0) && got.flags_set == 0 && count == 1 &&
		     done_at_wake;
	else if (after) {
		posts_merged(&want, &posts, 0);
		ok = trace_eq(&got, 0, &want, 0) && count >= got.nr;
	} else {
		ok = trace_taken_while_running(&got, &posts, 0) && done_at_wake;
	}
	if (!tap_ok(ok, "%s, %s, %s: %s", pc->name, st->name, mode,
		    pc->no_completion ? "no events, the eventfd readable once, at the end"
		    : path != PREALLOC_NOTIFY_EVENTFD
			    ? "every post, in order, flags 0, one end last"
		    : after ? "progress merged into one, node and end events apart, one end last"
			    : "posts in order, only replaced progress missing, one end last")) {
		trace_print("got", &got, 0);
		trace_print("posts", &posts, 0);
		printf("#   eventfd counter %llu, done at the end's wakeup %d\n",
		       (unsigned long long)count, done_at_wake);
	}
	tap_ok(r == stage_result(st) && rep.notify == path &&
		       (st->kind != STAGE_CANCEL || (rep.cancelled && rep.bytes_done < st->len)) &&
		       (st->kind != STAGE_FAIL ||
			(rep.error == -EBADMSG && rep.error_offset == DIRTY_AT && !rep.cancelled)),
	       "%s, %s, %s: wait %d, report: %s, error %d at %llu, cancelled %d, %llu MiB done",
	       pc->name, st->name, mode, r, path_name(rep.notify), rep.error,
	       (unsigned long long)rep.error_offset, rep.cancelled,
	       (unsigned long long)(rep.bytes_done >> 20));
out:
	prealloc_job_free(job);
	prealloc_region_free(reg);
	if (p)
		munmap(p, st->len);
	if (has_ring)
		io_uring_queue_exit(&ring);
}

static void case_stages(void)
{
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		if (paths[i].want == PREALLOC_NOTIFY_URING_REGISTERED && !ringless_kernel &&
		    lib_uring) {
			tap_skip("%s: kernel before 6.13 has no IORING_REGISTER_SEND_MSG_RING",
				 paths[i].name);
			continue;
		}
		for (size_t s = 0; s < sizeof(stages) / sizeof(stages[0]); s++)
			for (int after = 0; after <= 1; after++)
				case_stage(&paths[i], &stages[s], after);
	}
}

/* ---- two nodes: a pool per node, on a one-node machine too ------------------ */

static struct fakenodes fake;

/*
 * Two workers, one a node, post concurrently, so the order is not known;
 * what is: one node event for each of node 0 and node 1 (res the node,
 * never the job's error), progress strictly ascending in whole 16 MiB
 * pieces up to the job's last byte (no event lost), one end, last, with
 * the job's result. Read after the job, the eventfd queue has no two
 * progress events in a row (they merge). Done: node 0 has 16 MiB, node 1
 * 48 MiB (an uneven split); fails: verify finds a byte in node 1's half.
 */
static void case_two_nodes_stage(struct prealloc_ctx *c2, const struct path_case *pc,
				 const struct stage *st, bool after)
{
	static const int nodes[] = { 0, 1 };
	static const uint64_t uneven[] = { 16 * MiB, 48 * MiB };
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_completion c = completion(-1, pc->cflags);
	struct prealloc_region_opts ro = { .size = sizeof(ro),
					   .backing = PREALLOC_BACKING_ANON,
					   .flags = PREALLOC_REGION_NO_BIND,
					   .length = st->len,
					   .nr_nodes = 2,
					   .nodes = nodes,
					   .node_bytes = uneven };
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.threads = 1,
		.chunk_size = PIECE,
		.op = st->kind == STAGE_FAIL ? PREALLOC_OP_VERIFY : PREALLOC_OP_POPULATE,
		.flags = PREALLOC_JOB_NO_PLACEMENT,
		.completion = &c,
	};
	int path = lib_uring ? pc->want : PREALLOC_NOTIFY_EVENTFD, want_end = stage_result(st);
	unsigned int ends = 0, node_seen[2] = { 0 }, strays = 0, pairs = 0;
	const char *mode = after ? "read after" : "read during";
	struct prealloc_region *reg = NULL;
	struct prealloc_job *job = NULL;
	bool has_ring = pc->ring_fd == 0, done_at_wake = true, ascending = true, ok;
	int last_progress = 0, end_res = 1, r, nr;
	struct trace got = { 0 };
	struct io_uring ring;
	uint8_t *p = NULL;

	if (has_ring && io_uring_queue_init(64, &ring, pc->ring_flags) < 0) {
		tap_skip("two nodes, %s: this kernel has no such ring (io_uring_setup)", pc->name);
		return;
	}
	c.ring_fd = has_ring ? ring.ring_fd : -1;
	c.progress_step = st->step;
	if (st->kind == STAGE_FAIL)
		reg = dirty_region(c2, st->len, 2, nodes, &p);
	else if (prealloc_region_new(c2, &ro, &reg) < 0)
		reg = NULL;
	r = reg ? prealloc_job_start(reg, &jo, &job) : -ENOMEM;
	if (r < 0) {
		tap_ok(0, "two nodes, %s, %s, %s: job started (%d)", pc->name, st->name, mode, r);
		goto out;
	}
	nr = prealloc_job_node_count(job, NULL, 0);
	if (path != PREALLOC_NOTIFY_EVENTFD) {
		if (!after)
			ring_until_end(job, &ring, &got, &done_at_wake);
		r = prealloc_job_wait(job);
		ring_drain(&ring, &got);
	} else {
		if (!after)
			efd_until_end(job, &got, &done_at_wake);
		r = prealloc_job_wait(job);
		efd_take(job, &got);
	}
	prealloc_job_report(job, &rep);
	for (unsigned int i = 0; i < got.nr; i++) {
		const struct event *e = &got.ev[i];

		if (e->ud == UD_END) {
			ends++;
			end_res = e->res;
		} else if (e->ud == UD_NODE && (e->res == 0 || e->res == 1)) {
			node_seen[e->res]++;
		} else if (e->ud == UD_PROG) {
			ascending &= e->res > last_progress && (uint64_t)e->res % 16 == 0;
			last_progress = e->res;
			pairs += i && got.ev[i - 1].ud == UD_PROG;
		} else {
			strays++;
		}
	}
	ok = nr == 2 && ends == 1 && got.nr && got.ev[got.nr - 1].ud == UD_END &&
	     end_res == want_end && node_seen[0] == 1 && node_seen[1] == 1 && strays == 0 &&
	     ascending && (uint64_t)last_progress == rep.bytes_done >> 20 && done_at_wake &&
	     got.flags_set == 0 && (path != PREALLOC_NOTIFY_EVENTFD || !after || pairs == 0);
	if (!tap_ok(ok,
		    "two nodes, %s, %s, %s: nodes 0 and 1 once each, progress ascending to %llu "
		    "MiB, one end %d, last",
		    pc->name, st->name, mode, (unsigned long long)(rep.bytes_done >> 20), want_end))
		trace_print("got", &got, 0);
	if (st->kind == STAGE_FAIL)
		tap_ok(r == -EBADMSG && rep.error_node == 1 && rep.error_offset == DIRTY_AT,
		       "two nodes, %s, %s, %s: wait %d, the error on node %d at %llu", pc->name,
		       st->name, mode, r, rep.error_node, (unsigned long long)rep.error_offset);
out:
	prealloc_job_free(job);
	prealloc_region_free(reg);
	if (p)
		munmap(p, st->len);
	if (has_ring)
		io_uring_queue_exit(&ring);
}

static void case_two_nodes(const char *state_dir)
{
	static const struct stage two[] = {
		{ "done, 16 + 48 MiB", STAGE_DONE, 64 * MiB, 16 * MiB, true },
		{ "verify fails on node 1", STAGE_FAIL, 64 * MiB, 16 * MiB, true },
	};
	struct prealloc_ctx *c2 = fakenodes_ctx(&fake, state_dir);

	if (fake.sys[0])
		tap_remove_at_exit(fake.sys);

	if (tap_ok(c2 != NULL, "two nodes: a ctx over a sysfs with nodes 0 and 1 (%s)", fake.sys)) {
		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
			if (paths[i].no_completion)
				continue; /* no events to tell nodes apart */
			if (paths[i].want == PREALLOC_NOTIFY_URING_REGISTERED && !ringless_kernel &&
			    lib_uring)
				continue; /* said once, in case_stages */
			for (size_t s = 0; s < sizeof(two) / sizeof(two[0]); s++)
				for (int after = 0; after <= 1; after++)
					case_two_nodes_stage(c2, &paths[i], &two[s], after);
		}
	}
	prealloc_ctx_free(c2);
	fakenodes_remove(&fake);
}

/* ---- the fallback from a ring to the eventfd, mid-job ----------------------- */

/* Runs fn in a child (a filter cannot be removed); its TAP lines count as ours. */
static void in_child(void (*fn)(const void *), const void *arg)
{
	unsigned int counts[2];
	int p[2], status;
	pid_t pid;

	fflush(stdout);
	if (pipe(p) < 0 || (pid = fork()) < 0) {
		tap_ok(0, "fork");
		return;
	}
	if (pid == 0) {
		close(p[0]);
		fn(arg);
		counts[0] = tap_count;
		counts[1] = tap_failed;
		fflush(stdout);
		_exit(write(p[1], counts, sizeof(counts)) == sizeof(counts) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], counts, sizeof(counts)) == sizeof(counts)) {
		tap_count = counts[0];
		tap_failed = counts[1];
	} else {
		tap_ok(0, "the child died before reporting");
	}
	close(p[0]);
	waitpid(pid, &status, 0);
}

/*
 * A sandbox applied while the job runs, to every thread of the process
 * (TSYNC: the job's worker too): io_uring_register fails EPERM (the
 * ringless send), or io_uring_enter on any ring but the caller's own (the
 * job's private ring). 0 or -errno.
 */
static int deny_midjob(unsigned int which, int caller_ring)
{
	struct sock_filter f[16];
	unsigned int n = 0;

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	if (which & DENY_REGISTER) {
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      __NR_io_uring_register, 0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(
			BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
	}
	if (which & DENY_ENTER) {
		/* Not enter: on to the allow; enter on the caller's ring: allowed too. */
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      __NR_io_uring_enter, 0, 3);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						      offsetof(struct seccomp_data, args[0]));
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (unsigned int)caller_ring, 1, 0);
		f[n++] = (struct sock_filter)BPF_STMT(
			BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0)
		return -errno;
	return 0;
}

struct fallback_case {
	const struct path_case *path;
	unsigned int deny; /* what the sandbox takes away */
	bool cancel, after;
};

/*
 * One worker, 512 MiB in 16 MiB pieces: the first progress CQE arrives on
 * the caller's ring, then the sandbox comes. The ring holds exactly the
 * posts before it, in order; every post from the first refused one on
 * queues behind the eventfd: read after the job, exactly those posts with
 * progress merged (the refused one included, unless a later progress
 * replaced it), read during, in order with only replaced progress missing;
 * the end once, last, with the job's result, on the eventfd. The report and
 * prealloc_job_notify() say eventfd, -EPERM.
 */
static void fallback_child(const void *arg)
{
	const struct fallback_case *fc = arg;
	const struct path_case *pc = fc->path;
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_completion c;
	struct prealloc_job_opts jo = { .size = sizeof(jo),
					.threads = 1,
					.chunk_size = PIECE,
					.op = PREALLOC_OP_POPULATE,
					.flags = PREALLOC_JOB_NO_PLACEMENT,
					.completion = &c };
	struct trace on_ring = { 0 }, on_efd = { 0 }, posts = { 0 }, want = { 0 };
	struct __kernel_timespec ts = { .tv_sec = 5 };
	char name[160];
	struct prealloc_region *reg = anon_one_node(512 * MiB);
	struct prealloc_job *job = NULL;
	struct io_uring_cqe *cqe;
	struct io_uring ring;
	bool ok, running, done_at_wake = true;
	int r, want_end = fc->cancel ? -ECANCELED : 0;

	snprintf(name, sizeof(name), "mid-job fallback, %s, %s, %s", pc->name,
		 fc->cancel ? "cancelled" : "done", fc->after ? "read after" : "read during");
	if (io_uring_queue_init(64, &ring, pc->ring_flags) < 0) {
		tap_skip("%s: this kernel has no such ring (io_uring_setup)", name);
		prealloc_region_free(reg);
		return;
	}
	c = completion(ring.ring_fd, pc->cflags);
	c.progress_step = PIECE;
	r = reg ? prealloc_job_start(reg, &jo, &job) : -ENOMEM;
	if (!tap_ok(r == 0 && prealloc_job_notify(job) == pc->want, "%s: job started (%d), %s",
		    name, r, job ? path_name(prealloc_job_notify(job)) : "-"))
		goto out;
	if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts) == 0) {
		trace_add(&on_ring, cqe->user_data, cqe->res);
		io_uring_cqe_seen(&ring, cqe);
	}
	r = deny_midjob(fc->deny, ring.ring_fd);
	running = !prealloc_job_done(job);
	if (!tap_ok(r == 0 && running,
		    "%s: sandbox applied to every thread (%d), job still running", name, r))
		goto out;
	if (fc->cancel)
		prealloc_job_cancel(job);
	/* During: the caller's loop on its ring, on the eventfd once the path says so (10 s). */
	for (unsigned int ticks = 0;
	     !fc->after && !trace_has_end(&on_ring) && !trace_has_end(&on_efd) && ticks < 500;
	     ticks++) {
		struct __kernel_timespec tick = { .tv_nsec = 20000000 };

		if (prealloc_job_notify(job) != PREALLOC_NOTIFY_EVENTFD) {
			if (io_uring_wait_cqe_timeout(&ring, &cqe, &tick) == 0) {
				trace_add(&on_ring, cqe->user_data, cqe->res);
				io_uring_cqe_seen(&ring, cqe);
			}
			continue;
		}
		ring_drain(&ring, &on_ring); /* what was posted before the switch */
		efd_until_end(job, &on_efd, &done_at_wake);
		break;
	}
	r = prealloc_job_wait(job);
	ring_drain(&ring, &on_ring);
	efd_take(job, &on_efd);
	prealloc_job_report(job, &rep);
	posts_one_worker(&posts, rep.bytes_done, PIECE, true, want_end);
	/* The ring's part: a prefix of the posts, progress only. */
	ok = on_ring.nr >= 1 && on_ring.nr < posts.nr;
	for (unsigned int i = 0; ok && i < on_ring.nr; i++)
		ok = on_ring.ev[i].ud == UD_PROG && on_ring.ev[i].ud == posts.ev[i].ud &&
		     on_ring.ev[i].res == posts.ev[i].res;
	if (!tap_ok(ok, "%s: the ring holds the posts before the sandbox, in order (%u)", name,
		    on_ring.nr))
		trace_print("ring", &on_ring, 0);
	if (fc->after) {
		posts_merged(&want, &posts, on_ring.nr);
		ok = trace_eq(&on_efd, 0, &want, 0);
	} else {
		ok = trace_taken_while_running(&on_efd, &posts, on_ring.nr) && done_at_wake;
	}
	if (!tap_ok(ok,
		    "%s: the eventfd holds every later post, the refused one too, one end %d last",
		    name, want_end)) {
		trace_print("eventfd", &on_efd, 0);
		trace_print("posts", &posts, 0);
	}
	tap_ok(r == want_end && rep.notify == PREALLOC_NOTIFY_EVENTFD &&
		       rep.notify_error == -EPERM &&
		       prealloc_job_notify(job) == PREALLOC_NOTIFY_EVENTFD,
	       "%s: wait %d, report: %s, error %d", name, r, path_name(rep.notify),
	       rep.notify_error);
out:
	prealloc_job_free(job);
	prealloc_region_free(reg);
	io_uring_queue_exit(&ring);
}

static void case_fallbacks(void)
{
	static const struct {
		bool cancel, after;
	} how[] = { { false, true }, { false, false }, { true, true } };

	if (!lib_uring) {
		tap_skip("mid-job fallback: the library was built without liburing");
		return;
	}
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		const struct path_case *pc = &paths[i];
		unsigned int deny =
			pc->want == PREALLOC_NOTIFY_URING_REGISTERED ? DENY_REGISTER : DENY_ENTER;

		if (pc->want == PREALLOC_NOTIFY_EVENTFD)
			continue;
		if (pc->want == PREALLOC_NOTIFY_URING_REGISTERED && !ringless_kernel)
			continue; /* said once, in case_stages */
		for (size_t h = 0; h < sizeof(how) / sizeof(how[0]); h++) {
			struct fallback_case fc = { pc, deny, how[h].cancel, how[h].after };

			in_child(fallback_child, &fc);
		}
	}
}

int main(void)
{
	const unsigned int dt = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	int best, pipefd[2];
	char tmpl[] = "/tmp/prealloc-uring.XXXXXX";
	struct prealloc_ctx_opts co = { .size = sizeof(co), .state_dir = mkdtemp(tmpl) };

	if (co.state_dir)
		tap_remove_at_exit(tmpl);
	if (prealloc_ctx_new_opts(&co, &ctx) < 0) {
		printf("Bail out! no context\n");
		return 1;
	}
	ringless_kernel = kernel_at_least(6, 13);
	if (prealloc_default_nodes(ctx, &one_node, 1) < 1)
		one_node = 0;
	best = ringless_kernel ? PREALLOC_NOTIFY_URING_REGISTERED : PREALLOC_NOTIFY_URING_PRIVATE_RING;
	case_path("default", 0, 0, best);
	case_path("private ring forced", 0, PREALLOC_COMPLETION_NO_REGISTERED,
		  PREALLOC_NOTIFY_URING_PRIVATE_RING);
	if (ringless_kernel)
		case_path("ringless forced", 0, PREALLOC_COMPLETION_NO_PRIVATE_RING,
			  PREALLOC_NOTIFY_URING_REGISTERED);
	else
		tap_skip("ringless send: kernel before 6.13 has no IORING_REGISTER_SEND_MSG_RING");
	case_path("SINGLE_ISSUER|DEFER_TASKRUN, default", dt, 0, best);
	case_path("SINGLE_ISSUER|DEFER_TASKRUN, private ring", dt,
		  PREALLOC_COMPLETION_NO_REGISTERED, PREALLOC_NOTIFY_URING_PRIVATE_RING);
	case_path("SINGLE_ISSUER alone", IORING_SETUP_SINGLE_ISSUER, 0, best);
	case_results(0);
	case_results(PREALLOC_COMPLETION_NO_REGISTERED);
	case_full_cq("full CQ, default", 0, 0);
	case_full_cq("full CQ, private ring", 0, PREALLOC_COMPLETION_NO_REGISTERED);
	case_full_cq("full CQ, DEFER_TASKRUN", dt, 0);
	case_ring_closed();
	case_eventfd("eventfd forced", 0, PREALLOC_COMPLETION_EVENTFD, 0, 0);
	case_eventfd("no ring (ring_fd -1)", -1, 0, 0, 0);
	case_eventfd("both uring paths excluded", 0,
		     PREALLOC_COMPLETION_NO_REGISTERED | PREALLOC_COMPLETION_NO_PRIVATE_RING,
		     -EOPNOTSUPP, 0);
	/*
	 * A target that is no ring: the first post fails -EBADFD and falls
	 * back with the rest: that event too reaches the eventfd, not lost.
	 */
	if (pipe(pipefd) == 0) {
		case_eventfd("target is a pipe", pipefd[0], 0, lib_uring ? -EBADFD : -EOPNOTSUPP,
			     64 << 20);
		close(pipefd[0]);
		close(pipefd[1]);
	}
	case_bad_args();
	case_flows();
	case_stages();
	case_two_nodes(tmpl);
	case_fallbacks();
	prealloc_ctx_free(ctx);
	/* The store the prepare flow left (its file is released): nothing else is in there. */
	for (size_t i = 0; i < 2; i++) {
		char path[sizeof(tmpl) + 16];

		snprintf(path, sizeof(path), "%s/%s", tmpl, i ? "lock" : "store");
		unlink(path);
	}
	rmdir(tmpl);
	return tap_done();
}
