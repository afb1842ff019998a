/* SPDX-License-Identifier: MIT */
/*
 * A background job (PREALLOC_JOB_IDLE, max_rate): workers at SCHED_IDLE
 * that nap between steps so that a node's bytes stay under max_rate, and
 * that leave SCHED_IDLE before the completion (docs/warm.md).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

/*
 * max_rate: the node's bytes so far (writes and reads) may not run ahead of
 * t_start + bytes / rate; the worker naps until they don't, seeing cancel.
 */
void job_pace(struct prealloc_job *job, struct node_crew *crew, uint64_t bytes)
{
	uint64_t rate = job->opts.max_rate, done;
	double ahead;

	if (!rate)
		return;
	done = atomic_fetch_add(&crew->paced, bytes) + bytes;
	ahead = job->t_start + (double)done / (double)rate - now_seconds();
	while (ahead > 0 && !atomic_load(&job->cancel)) {
		double nap = MIN(ahead, 0.05);
		struct timespec ts = { 0, (long)(nap * 1e9) };

		nanosleep(&ts, NULL);
		ahead -= nap;
	}
}

/*
 * PREALLOC_JOB_IDLE: this worker runs only when nothing else wants the CPU
 * (idle true), or again as the caller's threads do (idle false: before the
 * completion, whose flow finish may take the store's lock that a guest's
 * start waits for: never behind a starved idle thread).
 */
void worker_idle(bool idle, int *policy, struct sched_param *param, int *nice)
{
	struct sched_param sp = { 0 };

	if (idle) {
		pthread_getschedparam(pthread_self(), policy, param);
		*nice = getpriority(PRIO_PROCESS, (id_t)gettid());
		if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) != 0)
			setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
		return;
	}
	pthread_setschedparam(pthread_self(), *policy, param);
	setpriority(PRIO_PROCESS, (id_t)gettid(), *nice);
}
