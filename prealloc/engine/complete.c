/* SPDX-License-Identifier: MIT */
/*
 * A job's end, which the last worker out brings about (engine.c): a node's
 * done when its crew's last worker is out, and once every worker is, the
 * verify verdict, the region let go, the flow's finish, done, then the
 * sinks. And the hold on the region from the job's start until then, so
 * that a region is not freed under its workers.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "engine.h"

/* The first non-zero byte, then pages off their node or missing: the verify verdict. */
static void job_verdict(struct prealloc_job *job)
{
	bool zeroes = (job->opts.flags & PREALLOC_JOB_VERIFY) || job->opts.op == PREALLOC_OP_VERIFY;
	uint64_t first = UINT64_MAX;
	int node = -1;

	if (!zeroes || job->error || atomic_load(&job->cancel))
		return;
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		uint64_t nz = atomic_load(&job->crews[p].nonzero);

		if (nz && nz - 1 < first) {
			first = nz - 1;
			node = job->crews[p].node;
		}
	}
	if (first != UINT64_MAX) {
		job_fail(job, -EBADMSG, node, first);
		return;
	}
	if ((job->opts.flags & PREALLOC_JOB_NO_PLACEMENT) || job->adopted)
		return;
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		struct node_crew *crew = &job->crews[p];

		if (atomic_load(&crew->off) || atomic_load(&crew->missing)) {
			job_fail(job, -EXDEV, crew->node, 0);
			return;
		}
	}
}

/* The job works on its region from start until its finish: free waits meanwhile. */
void region_hold(struct prealloc_job *job)
{
	pthread_mutex_lock(&job->region->jobs_lock);
	job->region->jobs++;
	pthread_mutex_unlock(&job->region->jobs_lock);
	job->region_held = true;
}

void region_unhold(struct prealloc_job *job)
{
	struct prealloc_region *r = job->region;

	if (!job->region_held)
		return;
	job->region_held = false;
	pthread_mutex_lock(&r->jobs_lock);
	r->jobs--;
	pthread_cond_broadcast(&r->jobs_done);
	pthread_mutex_unlock(&r->jobs_lock);	/* r may be freed from here on */
}

/*
 * Once, when every worker is out: the verdict, the flow's finish, then
 * done, then the sinks. Nothing here touches the region after finish.
 */
void job_complete(struct prealloc_job *job)
{
	int status;

	if (job->start_failed)
		return;
	crews_policy_end(job);
	job_verdict(job);
	region_unhold(job);	/* before finish, which may free the region */
	status = job->error ? job->error : atomic_load(&job->cancel) ? -ECANCELED : 0;
	if (job->flow.finish)
		status = job->flow.finish(job, status, job->flow.arg);
	pthread_mutex_lock(&job->lock);
	if (status < 0 && status != -ECANCELED && !job->error) {
		job->error = status;
		job->error_node = -1;
	}
	job->result = status;
	pthread_mutex_unlock(&job->lock);
	atomic_store(&job->done, 1);
	for (unsigned int s = 0; s < ARRAY_SIZE(job->sinks); s++)
		if (job->sinks[s].ops && job->sinks[s].ops->job_done)
			job->sinks[s].ops->job_done(job->sinks[s].data, status);
}

void node_complete(struct prealloc_job *job, struct node_crew *crew)
{
	int res;

	if (job->start_failed)
		return;
	pthread_mutex_lock(&job->lock);
	res = job->error && job->error_node == crew->node ? job->error : 0;
	pthread_mutex_unlock(&job->lock);
	for (unsigned int s = 0; s < ARRAY_SIZE(job->sinks); s++)
		if (job->sinks[s].ops && job->sinks[s].ops->node_done)
			job->sinks[s].ops->node_done(job->sinks[s].data, crew->node, res);
}
