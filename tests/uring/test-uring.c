/* SPDX-License-Identifier: MIT */
/*
 * Completion into the caller's io_uring (docs/completion.md): each send
 * path on its own, the exact user_data and res of every CQE, cancel and
 * error results, SINGLE_ISSUER + DEFER_TASKRUN rings, a full CQ ring (the
 * CQE waits on the overflow list and still arrives), a ring closed early
 * (the eventfd still fires), a target that is no ring (the rest falls back
 * to the eventfd), the eventfd path's events, and both flows.
 */
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <prealloc.h>

#include "../unit/tap.h"

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
	uint64_t count;
	int r;

	io_uring_queue_init(8, &ring, 0);
	c = completion(ring.ring_fd, 0);
	job = start(reg, PREALLOC_OP_POPULATE, 1, &c, &r);
	io_uring_queue_exit(&ring);
	pfd = (struct pollfd){ .fd = prealloc_job_eventfd(job), .events = POLLIN };
	/* The eventfd path also fires at progress: read until done. */
	while (poll(&pfd, 1, 20000) == 1 && read(pfd.fd, &count, sizeof(count)) > 0 &&
	       !prealloc_job_done(job))
		;
	tap_ok(prealloc_job_done(job) == 1, "ring closed early: the eventfd fires at the end");
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

int main(void)
{
	const unsigned int dt = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	int best, pipefd[2];
	char tmpl[] = "/tmp/prealloc-uring.XXXXXX";
	struct prealloc_ctx_opts co = { .size = sizeof(co), .state_dir = mkdtemp(tmpl) };

	if (prealloc_ctx_new_opts(&co, &ctx) < 0) {
		printf("Bail out! no context\n");
		return 1;
	}
	ringless_kernel = kernel_at_least(6, 13);
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
	prealloc_ctx_free(ctx);
	rmdir(tmpl);
	return tap_done();
}
