/* SPDX-License-Identifier: MIT */
/*
 * Library misuse a VMM could commit, through the public API only, no root
 * (anonymous memory): two threads waiting on one job both return only once
 * it is done; a region freed while its job runs waits for the job (saying
 * so through the ctx's log) instead of unmapping memory under the workers;
 * a SIGBUS handler the caller installs while a TOUCH job runs is still
 * there after the job. (chunk_size near UINT64_MAX: test-engine.c.)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prealloc.h"
#include "../unit/tap.h"

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
	prealloc_ctx_free(ctx);
	return tap_done();
}
