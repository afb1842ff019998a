/* SPDX-License-Identifier: MIT */
/*
 * bench-notify latency [RUNS]: completion latency, from the job's end (its
 *   flow's finish, the moment before any completion is posted) to the
 *   waiting VMM thread holding the news: a CQE from io_uring_wait_cqe (each
 *   send path; plain and SINGLE_ISSUER|DEFER_TASKRUN rings), or the eventfd
 *   through poll(2) + read. Modes alternate run by run; medians and p90, us.
 * bench-notify ticks [MiB] [RUNS]: an event loop's 1 ms IORING_OP_TIMEOUT
 *   tick on the VMM's ring while MiB of 4k memfd is populated (all CPUs,
 *   and all but one), against an idle loop: median over runs of the worst
 *   and the p99 tick delay, ms.
 * Reports only (docs/benchmarks.md has figures and the command).
 */
#include <liburing.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

static struct prealloc_ctx *ctx;
static _Atomic int64_t t_end;	/* ns, set by the flow's finish */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int finish_stamp(struct prealloc_job *job, int status, void *arg)
{
	(void)job;
	(void)arg;
	atomic_store(&t_end, now_ns());
	return status;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int64_t pct(int64_t *v, unsigned int n, unsigned int p)
{
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[(n - 1) * p / 100];
}

struct mode {
	const char *name;
	unsigned int ring_flags;	/* ~0u: eventfd + poll, no ring */
	unsigned int cflags;
};

/* One job over a 2 MiB region; the latency of one mode's wait, ns. */
static int64_t one_run(struct prealloc_region *reg, const struct mode *m)
{
	struct io_uring ring;
	struct prealloc_completion c = { .size = sizeof(c), .ring_fd = -1, .flags = m->cflags,
					 .user_data_end = 42 };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .threads = 1,
					.flags = PREALLOC_JOB_NO_PLACEMENT, .completion = &c };
	const struct job_flow flow = { .finish = finish_stamp };
	const struct job_spec spec = { .flow = &flow };
	struct prealloc_job *job;
	int64_t seen = 0;
	uint64_t count;

	if (m->ring_flags != ~0u) {
		if (io_uring_queue_init(4, &ring, m->ring_flags) < 0)
			return -1;
		c.ring_fd = ring.ring_fd;
	}
	if (job_start_spec(reg, &jo, &spec, &job) < 0)
		return -1;
	if (m->ring_flags != ~0u) {
		struct io_uring_cqe *cqe;

		if (io_uring_wait_cqe(&ring, &cqe) == 0)
			seen = now_ns();
		io_uring_cqe_seen(&ring, cqe);
	} else {
		struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };

		if (poll(&pfd, 1, -1) == 1 && read(pfd.fd, &count, sizeof(count)) > 0)
			seen = now_ns();
	}
	prealloc_job_free(job);
	if (m->ring_flags != ~0u)
		io_uring_queue_exit(&ring);
	return seen - atomic_load(&t_end);
}

static int bench_latency(unsigned int runs)
{
	const unsigned int dt = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
	const struct mode modes[] = {
		{ "eventfd + poll", ~0u, 0 },
		{ "io_uring, ringless send", 0, PREALLOC_COMPLETION_NO_PRIVATE_RING },
		{ "io_uring, private ring", 0, PREALLOC_COMPLETION_NO_REGISTERED },
		{ "DEFER_TASKRUN ring, ringless", dt, PREALLOC_COMPLETION_NO_PRIVATE_RING },
		{ "DEFER_TASKRUN ring, private ring", dt, PREALLOC_COMPLETION_NO_REGISTERED },
	};
	enum { NR = sizeof(modes) / sizeof(modes[0]) };
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = 2 << 20 };
	struct prealloc_region *reg;
	int64_t *lat = calloc(NR * runs, sizeof(*lat));

	if (!lat || prealloc_region_new(ctx, &ro, &reg) < 0)
		return 1;
	for (unsigned int r = 0; r < runs; r++)
		for (unsigned int m = 0; m < NR; m++)
			lat[m * runs + r] = one_run(reg, &modes[m]);
	printf("completion latency, job end to the waiting thread, %u runs each (us)\n", runs);
	printf("%-34s %8s %8s\n", "mode", "median", "p90");
	for (unsigned int m = 0; m < NR; m++)
		printf("%-34s %8.1f %8.1f\n", modes[m].name, pct(lat + m * runs, runs, 50) / 1e3,
		       pct(lat + m * runs, runs, 90) / 1e3);
	prealloc_region_free(reg);
	free(lat);
	return 0;
}

/* A 1 ms absolute-deadline tick on ring until *stop; the tick delays, ns, in d. */
static unsigned int tick_loop(struct io_uring *ring, struct prealloc_job *job, int64_t *d,
			      unsigned int max)
{
	int64_t deadline = now_ns() + 1000000;
	unsigned int n = 0;

	while (n < max && (job ? !prealloc_job_done(job) : n < 200)) {
		struct __kernel_timespec ts = { deadline / 1000000000, deadline % 1000000000 };
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		struct io_uring_cqe *cqe;

		io_uring_prep_timeout(sqe, &ts, 0, IORING_TIMEOUT_ABS);
		io_uring_submit(ring);
		if (io_uring_wait_cqe(ring, &cqe) < 0)
			break;
		io_uring_cqe_seen(ring, cqe);
		d[n++] = now_ns() - deadline;
		while (deadline <= now_ns())
			deadline += 1000000;
	}
	return n;
}

static int bench_ticks(uint64_t mib, unsigned int runs)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	const unsigned int threads[] = { 0, (unsigned int)(cpus > 1 ? cpus - 1 : 1) };
	enum { MAX = 100000 };
	int64_t *d = calloc(MAX, sizeof(*d)), worst[3][64], p99[3][64];
	struct io_uring ring;

	if (!d || runs > 64 || io_uring_queue_init(4, &ring, 0) < 0)
		return 1;
	for (unsigned int r = 0; r < runs; r++) {
		unsigned int n = tick_loop(&ring, NULL, d, MAX);

		worst[0][r] = pct(d, n, 100);
		p99[0][r] = pct(d, n, 99);
		for (unsigned int t = 0; t < 2; t++) {
			struct prealloc_region_opts ro = { .size = sizeof(ro),
							   .backing = PREALLOC_BACKING_MEMFD,
							   .page_size = PREALLOC_PAGE_4K,
							   .length = mib << 20 };
			struct prealloc_job_opts jo = { .size = sizeof(jo), .threads = threads[t] };
			struct prealloc_region *reg;
			struct prealloc_job *job;

			if (prealloc_region_new(ctx, &ro, &reg) < 0 ||
			    prealloc_job_start(reg, &jo, &job) < 0)
				return 1;
			n = tick_loop(&ring, job, d, MAX);
			worst[t + 1][r] = pct(d, n, 100);
			p99[t + 1][r] = pct(d, n, 99);
			prealloc_job_free(job);
			prealloc_region_free(reg);
		}
	}
	printf("1 ms tick delay on the VMM's ring, %llu MiB 4k memfd populated, %u runs, "
	       "%ld CPUs (ms, medians over runs)\n", (unsigned long long)mib, runs, cpus);
	printf("%-34s %8s %8s\n", "while", "worst", "p99");
	printf("%-34s %8.3f %8.3f\n", "idle (no job)", pct(worst[0], runs, 50) / 1e6,
	       pct(p99[0], runs, 50) / 1e6);
	printf("%-34s %8.3f %8.3f\n", "populate, threads = all CPUs", pct(worst[1], runs, 50) / 1e6,
	       pct(p99[1], runs, 50) / 1e6);
	printf("threads = %-24u %8.3f %8.3f\n", threads[1], pct(worst[2], runs, 50) / 1e6,
	       pct(p99[2], runs, 50) / 1e6);
	io_uring_queue_exit(&ring);
	free(d);
	return 0;
}

int main(int argc, char **argv)
{
	int r;

	if (argc < 2 || (strcmp(argv[1], "latency") && strcmp(argv[1], "ticks"))) {
		fprintf(stderr, "usage: bench-notify latency [RUNS] | ticks [MiB] [RUNS]\n");
		return 2;
	}
	if (prealloc_ctx_new(&ctx) < 0)
		return 1;
	if (!strcmp(argv[1], "latency"))
		r = bench_latency(argc > 2 ? (unsigned int)atoi(argv[2]) : 500);
	else
		r = bench_ticks(argc > 2 ? strtoull(argv[2], NULL, 10) : 1024,
				argc > 3 ? (unsigned int)atoi(argv[3]) : 5);
	prealloc_ctx_free(ctx);
	return r;
}
