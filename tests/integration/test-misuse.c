/* SPDX-License-Identifier: MIT */
/*
 * Library misuse a VMM could commit, through the public API only, no root
 * (anonymous memory): two threads waiting on one job both return only once
 * it is done; a region freed while its job runs waits for the job (saying
 * so through the ctx's log) instead of unmapping memory under the workers;
 * a SIGBUS handler the caller installs while a TOUCH job runs is still
 * there after the job. Completion: a struct scribbled over and freed after
 * start, older and newer struct sizes, prealloc_job_event's arguments and
 * calls after the end, two threads taking one job's events at once.
 * (chunk_size near UINT64_MAX: test-engine.c.)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prealloc.h"
#include "tap.h"

#define MiB (UINT64_C(1) << 20)

static struct prealloc_ctx *ctx;

static struct prealloc_region *region_make(uint64_t len)
{
	struct prealloc_region_opts ro = {
		.size = sizeof(ro), .backing = PREALLOC_BACKING_ANON, .length = len,
	};
	struct prealloc_region *region = NULL;
	int r = prealloc_region_new(ctx, &ro, &region);

	if (r < 0)
		printf("# region: %s\n", strerror(-r));
	return region;
}

static struct prealloc_job *job_begin(struct prealloc_region *region, unsigned int flags,
				      unsigned int threads)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo), .op = PREALLOC_OP_POPULATE, .flags = flags, .threads = threads,
	};
	struct prealloc_job *job = NULL;
	int r = prealloc_job_start(region, &jo, &job);

	if (r < 0)
		printf("# job start: %s\n", strerror(-r));
	return r < 0 ? NULL : job;
}

struct waiter {
	struct prealloc_job *job;
	int result;
	int done_at_return;	/* prealloc_job_done() when wait returned */
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;

	w->result = prealloc_job_wait(w->job);
	w->done_at_return = prealloc_job_done(w->job);
	return NULL;
}

/* Several rounds: the race between the two joiners is not hit every time. */
static void test_two_waiters(void)
{
	int bad = 0, rounds = 6;

	for (int round = 0; round < rounds; round++) {
		struct prealloc_region *region = region_make(256 * MiB);
		struct prealloc_job *job = region ? job_begin(region, 0, 4) : NULL;
		struct waiter w[3];
		pthread_t t[3];

		if (!job) {
			tap_ok(0, "two waiters: a job");
			prealloc_region_free(region);
			return;
		}
		for (int i = 0; i < 3; i++) {
			w[i] = (struct waiter){ .job = job, .result = 1 };
			pthread_create(&t[i], NULL, wait_thread, &w[i]);
		}
		for (int i = 0; i < 3; i++) {
			struct timespec limit;

			clock_gettime(CLOCK_REALTIME, &limit);
			limit.tv_sec += 20;
			/* Two joins of one worker can hang: a bounded failure, not a timeout. */
			if (pthread_timedjoin_np(t[i], NULL, &limit) != 0) {
				tap_ok(0, "round %d: waiter %d still waits after 20 s", round, i);
				exit(tap_done());
			}
		}
		for (int i = 0; i < 3; i++)
			if (w[i].result != 0 || w[i].done_at_return != 1) {
				printf("# round %d waiter %d: result %d, done %d at return\n", round,
				       i, w[i].result, w[i].done_at_return);
				bad++;
			}
		tap_ok(prealloc_job_wait(job) == 0, "round %d: a later wait returns 0 too", round);
		prealloc_job_free(job);
		prealloc_region_free(region);
	}
	tap_ok(bad == 0, "three threads waiting on one job each return 0 once it is done (%d bad)",
	       bad);
}

static atomic_int warnings;
static char warning[512];

static void log_cb(void *userdata, int level, const char *msg)
{
	(void)userdata;
	if (level <= PREALLOC_LOG_WARNING && atomic_fetch_add(&warnings, 1) == 0)
		snprintf(warning, sizeof(warning), "%s", msg);
}

static void test_free_region_while_running(void)
{
	struct prealloc_region *region = region_make(1024 * MiB);
	struct prealloc_job *job = region ? job_begin(region, 0, 1) : NULL;
	struct prealloc_report rep = { .size = sizeof(rep) };
	int done_before, r;

	if (!job) {
		tap_ok(0, "region freed while running: a job");
		prealloc_region_free(region);
		return;
	}
	done_before = prealloc_job_done(job);
	prealloc_region_free(region);	/* the misuse: the job still runs */
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	if (done_before)
		printf("# the job was done before the free: nothing to prove this run\n");
	tap_ok(r == 0 && rep.error == 0 && rep.bytes_done == rep.bytes,
	       "the job finished unharmed: the free waited for it (r %d, %llu of %llu bytes)", r,
	       (unsigned long long)rep.bytes_done, (unsigned long long)rep.bytes);
	tap_ok(done_before || (atomic_load(&warnings) == 1 && strstr(warning, "prealloc_job_wait")),
	       "the ctx's log said so once: \"%s\"", warning);
	prealloc_job_free(job);
}

static void vmm_sigbus(int sig)
{
	(void)sig;
}

static void test_sigbus_handler_kept(void)
{
	struct prealloc_region *region = region_make(256 * MiB);
	struct prealloc_job *job = region ? job_begin(region, PREALLOC_JOB_TOUCH, 2) : NULL;
	struct sigaction sa = { .sa_handler = vmm_sigbus }, cur;

	if (!job) {
		tap_ok(0, "SIGBUS: a TOUCH job");
		prealloc_region_free(region);
		return;
	}
	sigaction(SIGBUS, NULL, &cur);
	tap_ok((cur.sa_flags & SA_SIGINFO) && cur.sa_handler != SIG_DFL,
	       "the TOUCH job installed its SIGBUS guard");
	sigaction(SIGBUS, &sa, NULL);	/* the VMM's own, installed meanwhile */
	tap_ok(prealloc_job_wait(job) == 0, "the TOUCH job succeeded");
	prealloc_job_free(job);
	sigaction(SIGBUS, NULL, &cur);
	tap_ok(!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == vmm_sigbus,
	       "the VMM's SIGBUS handler is still installed after the job");

	signal(SIGBUS, SIG_DFL);
	job = job_begin(region, PREALLOC_JOB_TOUCH, 2);
	tap_ok(job && prealloc_job_wait(job) == 0, "a second TOUCH job");
	prealloc_job_free(job);
	sigaction(SIGBUS, NULL, &cur);
	tap_ok(!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_DFL,
	       "left alone, the guard puts back what it found (SIG_DFL)");
	prealloc_region_free(region);
}

/* ---- completion misuse: the caller's struct, the event queue ---------------- */

#define UD_END UINT64_C(0xe0d0000000000001)
#define UD_NODE UINT64_C(0x40de000000000002)
#define UD_PROG UINT64_C(0x9e09000000000003)

/* Events taken from a job's eventfd queue. */
struct taken {
	unsigned int ends, nodes, progress, strays, after_end;
	int end_res, last_progress;
	bool ascending;
	bool progress_seen[257]; /* by MiB: one event taken twice shows in two threads */
};

static void take(struct prealloc_job *job, struct taken *t)
{
	uint64_t ud;
	int res;

	/* Bounded: a queue that never empties is a failure, not a hang. */
	for (int n = 0; n < 4096 && prealloc_job_event(job, &ud, &res) == 1; n++) {
		t->after_end += t->ends;
		if (ud == UD_END) {
			t->ends++;
			t->end_res = res;
		} else if (ud == UD_NODE && res >= 0) {
			t->nodes++;
		} else if (ud == UD_PROG) {
			t->ascending &= res > t->last_progress;
			t->last_progress = res;
			t->progress++;
			if (res > 0 && res <= 256)
				t->progress_seen[res] = true;
		} else {
			t->strays++;
		}
	}
}

/* Node events a job posts: one per node it works on. */
static unsigned int nodes(struct prealloc_job *job)
{
	int n = job ? prealloc_job_node_count(job, NULL, 0) : -1;

	return n < 0 ? 0 : (unsigned int)n;
}

static struct prealloc_job *job_completion(struct prealloc_region *region,
					   const struct prealloc_completion *c, int *ret_r)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo),
					.op = PREALLOC_OP_POPULATE,
					.flags = PREALLOC_JOB_NO_PLACEMENT,
					.threads = 2,
					.completion = c };
	struct prealloc_job *job = NULL;

	*ret_r = prealloc_job_start(region, &jo, &job);
	return *ret_r < 0 ? NULL : job;
}

/*
 * The completion is read at start only: a caller that scribbles over its
 * struct and frees it while the job runs still gets its events with the
 * user_data it gave.
 */
static void test_completion_scribbled(void)
{
	struct prealloc_region *region = region_make(64 * MiB);
	struct prealloc_completion *c = malloc(sizeof(*c));
	struct taken t = { .ascending = true };
	struct prealloc_job *job;
	int r;

	*c = (struct prealloc_completion){ .size = sizeof(*c),
					   .ring_fd = -1,
					   .flags = PREALLOC_COMPLETION_NODES,
					   .user_data_end = UD_END,
					   .user_data_node = UD_NODE,
					   .user_data_progress = UD_PROG,
					   .progress_step = 16 * MiB };
	job = region ? job_completion(region, c, &r) : NULL;
	memset(c, 0xa5, sizeof(*c));
	free(c);
	if (!job) {
		tap_ok(0, "completion scribbled over: a job");
		prealloc_region_free(region);
		return;
	}
	r = prealloc_job_wait(job);
	take(job, &t);
	tap_ok(r == 0 && t.ends == 1 && t.end_res == 0 && t.nodes == nodes(job) && t.strays == 0 &&
		       t.ascending && t.last_progress == 64,
	       "completion scribbled over and freed after start: the events carry what was given "
	       "(%u ends, %u nodes, last progress %d, %u strays)",
	       t.ends, t.nodes, t.last_progress, t.strays);
	prealloc_job_free(job);
	prealloc_region_free(region);
}

/*
 * Sized like every options struct: an older caller's smaller struct (no
 * progress fields) gets no progress events, whatever lies past its size;
 * a newer caller's larger one is taken with a zero tail and refused
 * (-E2BIG) with anything else there; a size below a size_t is -EINVAL.
 */
static void test_completion_sizes(void)
{
	const size_t old_size = offsetof(struct prealloc_completion, user_data_progress);
	struct prealloc_region *region = region_make(32 * MiB);
	union {
		struct prealloc_completion c;
		uint8_t bytes[sizeof(struct prealloc_completion) + 16];
	} u;
	struct taken t = { .ascending = true };
	struct prealloc_job *job;
	int r;

	if (!region) {
		tap_ok(0, "completion sizes: a region");
		return;
	}
	memset(&u, 0, sizeof(u));
	u.c = (struct prealloc_completion){ .size = old_size,
					    .ring_fd = -1,
					    .flags = PREALLOC_COMPLETION_NODES,
					    .user_data_end = UD_END,
					    .user_data_node = UD_NODE,
					    /* past the old size: must not be read */
					    .user_data_progress = UD_PROG,
					    .progress_step = MiB };
	job = job_completion(region, &u.c, &r);
	if (job) {
		r = prealloc_job_wait(job);
		take(job, &t);
	}
	tap_ok(job && r == 0 && t.ends == 1 && t.end_res == 0 && t.nodes == nodes(job) &&
		       t.progress == 0 && t.strays == 0,
	       "an older, smaller completion: no progress events from bytes past its size (%u), "
	       "one end",
	       t.progress);
	prealloc_job_free(job);

	u.c.size = sizeof(u);
	u.c.progress_step = 0;
	u.bytes[sizeof(u.c) + 3] = 1;
	job = job_completion(region, &u.c, &r);
	tap_ok(!job && r == -E2BIG, "a newer, larger completion with a non-zero tail: -E2BIG (%d)",
	       r);
	prealloc_job_free(job);
	u.bytes[sizeof(u.c) + 3] = 0;
	t = (struct taken){ .ascending = true };
	job = job_completion(region, &u.c, &r);
	if (job) {
		r = prealloc_job_wait(job);
		take(job, &t);
	}
	tap_ok(job && r == 0 && t.ends == 1 && t.nodes == nodes(job),
	       "a newer, larger completion with a zero tail: taken, one end (%d)", r);
	prealloc_job_free(job);
	u.c.size = sizeof(size_t) - 1;
	job = job_completion(region, &u.c, &r);
	tap_ok(!job && r == -EINVAL, "a completion sized below its size field: -EINVAL (%d)", r);
	prealloc_job_free(job);
	prealloc_region_free(region);
}

/*
 * prealloc_job_event without a place for the event is -EINVAL; on a job
 * without a completion there is never an event; once the end is taken no
 * event comes again, however often the caller asks.
 */
static void test_event_calls(void)
{
	struct prealloc_region *region = region_make(16 * MiB);
	struct prealloc_completion c = { .size = sizeof(c),
					 .ring_fd = -1,
					 .user_data_end = UD_END };
	struct prealloc_job *job = NULL, *plain;
	uint64_t ud = 7, count = 0;
	int res = 7, r, again = 0;

	plain = region ? job_begin(region, 0, 1) : NULL;
	if (!plain) {
		tap_ok(0, "event calls: a job");
		prealloc_region_free(region);
		return;
	}
	tap_ok(prealloc_job_event(NULL, &ud, &res) == -EINVAL &&
		       prealloc_job_event(plain, NULL, &res) == -EINVAL &&
		       prealloc_job_event(plain, &ud, NULL) == -EINVAL,
	       "prealloc_job_event: a NULL job or output is -EINVAL");
	r = prealloc_job_wait(plain);
	if (read(prealloc_job_eventfd(plain), &count, sizeof(count)) != sizeof(count))
		count = 0;
	tap_ok(r == 0 && prealloc_job_event(plain, &ud, &res) == 0 && count == 1,
	       "no completion: no events, the eventfd counted once, at the end (%llu)",
	       (unsigned long long)count);
	prealloc_job_free(plain);
	job = job_completion(region, &c, &r);
	if (job) {
		prealloc_job_wait(job);
		r = prealloc_job_event(job, &ud, &res);
		for (int i = 0; i < 5; i++)
			again += prealloc_job_event(job, &ud, &res) != 0;
	}
	tap_ok(job && r == 1 && again == 0,
	       "the end taken: prealloc_job_event stays 0 after it (%d more)", again);
	prealloc_job_free(job);
	prealloc_region_free(region);
}

struct drainer {
	struct prealloc_job *job;
	atomic_int *ended;
	struct taken t;
};

static void *drain_thread(void *arg)
{
	struct drainer *d = arg;
	struct timespec limit, now;

	clock_gettime(CLOCK_MONOTONIC, &limit);
	limit.tv_sec += 10;
	do {
		take(d->job, &d->t);
		if (d->t.ends)
			atomic_store(d->ended, 1);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (!atomic_load(d->ended) && now.tv_sec < limit.tv_sec);
	take(d->job, &d->t);
	return NULL;
}

/*
 * Two threads take events from one job at once (the queue is the job's,
 * under its lock): between them exactly one end and one node event, no
 * progress event taken by both, each thread's progress ascending, and the
 * whole reached; nothing after a thread's end. Several rounds: a race is
 * not hit every time.
 */
static void test_events_two_threads(void)
{
	struct prealloc_completion c = { .size = sizeof(c),
					 .ring_fd = -1,
					 .flags = PREALLOC_COMPLETION_NODES,
					 .user_data_end = UD_END,
					 .user_data_node = UD_NODE,
					 .user_data_progress = UD_PROG,
					 .progress_step = 4 * MiB };
	int bad_round = -1, rounds = 6;

	for (int round = 0; round < rounds; round++) {
		struct prealloc_region *region = region_make(256 * MiB);
		atomic_int ended = 0;
		struct drainer d[2] = { { .ended = &ended, .t = { .ascending = true } },
					{ .ended = &ended, .t = { .ascending = true } } };
		struct prealloc_job *job;
		pthread_t th[2];
		int r, twice = 0;

		job = region ? job_completion(region, &c, &r) : NULL;
		if (!job) {
			tap_ok(0, "events from two threads: a job");
			prealloc_region_free(region);
			return;
		}
		for (int i = 0; i < 2; i++) {
			d[i].job = job;
			pthread_create(&th[i], NULL, drain_thread, &d[i]);
		}
		for (int i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		r = prealloc_job_wait(job);
		take(job, &d[0].t); /* nothing may be left */
		for (int mib = 1; mib <= 256; mib++)
			twice += d[0].t.progress_seen[mib] && d[1].t.progress_seen[mib];
		if (r != 0 || twice || d[0].t.ends + d[1].t.ends != 1 ||
		    d[0].t.nodes + d[1].t.nodes != nodes(job) || !d[0].t.ascending ||
		    !d[1].t.ascending || d[0].t.after_end || d[1].t.after_end ||
		    d[0].t.strays + d[1].t.strays ||
		    (d[0].t.last_progress != 256 && d[1].t.last_progress != 256)) {
			printf("# round %d: wait %d, ends %u + %u, nodes %u + %u, ascending %d %d, "
			       "last progress %d %d, %d taken twice\n",
			       round, r, d[0].t.ends, d[1].t.ends, d[0].t.nodes, d[1].t.nodes,
			       d[0].t.ascending, d[1].t.ascending, d[0].t.last_progress,
			       d[1].t.last_progress, twice);
			bad_round = round;
		}
		prealloc_job_free(job);
		prealloc_region_free(region);
		if (bad_round >= 0)
			break;	/* one is enough; a lost end would make each wait 10 s */
	}
	tap_ok(bad_round < 0,
	       "events from two threads at once: one end, one node event, progress ascending to "
	       "256 MiB, in %d rounds (first bad: %d)",
	       rounds, bad_round);
}

int main(void)
{
	int r = prealloc_ctx_new(&ctx);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!tap_ok(r == 0, "a ctx (%d)", r))
		return tap_done();
	prealloc_ctx_set_log(ctx, log_cb, NULL);
	test_two_waiters();
	test_free_region_while_running();
	test_sigbus_handler_kept();
	test_completion_scribbled();
	test_completion_sizes();
	test_event_calls();
	test_events_two_threads();
	prealloc_ctx_free(ctx);
	return tap_done();
}
