/* SPDX-License-Identifier: MIT */
/*
 * The job a caller holds, while the engine (engine.c) runs it: its first
 * failure (job_fail, which the workers call), progress, cancel, completion,
 * the wait, and the reports. Reports read only what the job copied or
 * counted itself, never the region, which a flow may have freed. Starting
 * and freeing a job, above both, are start.c's.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* The job's first failure kept (where it happened), and every worker told to stop. */
void job_fail(struct prealloc_job *job, int err, int node, uint64_t offset)
{
	pthread_mutex_lock(&job->lock);
	if (!job->error) {
		job->error = err;
		job->error_node = node;
		job->error_offset = offset;
	}
	pthread_mutex_unlock(&job->lock);
	atomic_store(&job->cancel, 1);
}

EXPORT int prealloc_job_progress(struct prealloc_job *job, uint64_t *ret_done, uint64_t *ret_total)
{
	uint64_t done = 0, total = 0;

	if (!job)
		return -EINVAL;
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		done += atomic_load(&job->crews[p].bytes_done);
		total += job->crews[p].bytes * job->rounds;
	}
	if (ret_done)
		*ret_done = done;
	if (ret_total)
		*ret_total = total;
	return 0;
}

EXPORT int prealloc_job_node_progress(struct prealloc_job *job, int node, uint64_t *ret_done,
				      uint64_t *ret_total)
{
	if (!job)
		return -EINVAL;
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		if (job->crews[p].node != node)
			continue;
		if (ret_done)
			*ret_done = atomic_load(&job->crews[p].bytes_done);
		if (ret_total)
			*ret_total = job->crews[p].bytes * job->rounds;
		return 0;
	}
	return -ENOENT;
}

EXPORT int prealloc_job_node_count(struct prealloc_job *job, int *ret_nodes, unsigned int max)
{
	if (!job || (max && !ret_nodes))
		return -EINVAL;
	for (unsigned int p = 0; p < job->nr_crews && p < max; p++)
		ret_nodes[p] = job->crews[p].node;
	return (int)job->nr_crews;
}

EXPORT int prealloc_job_cancel(struct prealloc_job *job)
{
	if (!job)
		return -EINVAL;
	atomic_store(&job->cancel, 1);
	return 0;
}

EXPORT int prealloc_job_eventfd(struct prealloc_job *job)
{
	return job ? job->efd : -EINVAL;
}

EXPORT int prealloc_job_event(struct prealloc_job *job, uint64_t *ret_user_data, int *ret_res)
{
	if (!job || !ret_user_data || !ret_res)
		return -EINVAL;
	return notify_event(&job->sinks[2], ret_user_data, ret_res);
}

EXPORT int prealloc_job_notify(struct prealloc_job *job)
{
	int error;

	if (!job)
		return -EINVAL;
	return notify_path(&job->sinks[2], &error);
}

EXPORT int prealloc_job_done(struct prealloc_job *job)
{
	if (!job)
		return -EINVAL;
	return atomic_load(&job->done);
}

/* A job handle that is not (or no longer) a live job, where that can be seen cheaply. */
static bool job_bad(struct prealloc_job *job)
{
	return !job || atomic_load(&job->magic) != JOB_MAGIC;
}

int job_join(struct prealloc_job *job)
{
	pthread_mutex_lock(&job->join_lock);
	if (!atomic_load(&job->joined)) {
		for (unsigned int w = 0; w < job->nr_workers; w++)
			pthread_join(job->workers[w].tid, NULL);
		atomic_store(&job->joined, true);
	}
	pthread_mutex_unlock(&job->join_lock);
	return job->result;
}

EXPORT int prealloc_job_wait(struct prealloc_job *job)
{
	return job_bad(job) ? -EINVAL : job_join(job);
}

void job_fill_report(struct prealloc_job *job, struct prealloc_report *ret_report)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	const char *kernel = job->op->kernel ? job->op->kernel(job->op_state) : NULL;

	rep.op = job->opts.op;
	rep.method = job->op->method(job->op_state);
	if (kernel)
		snprintf(rep.clear_kernel, sizeof(rep.clear_kernel), "%s", kernel);
	if (job->op->cached_bytes)
		rep.clear_cached_bytes = job->op->cached_bytes(job->op_state);
	rep.page_size = job->page_size;
	rep.seconds = job->t_op_end > job->t_start ? job->t_op_end - job->t_start : 0;
	rep.verify_seconds = job->t_check_end > job->t_check_start
				     ? job->t_check_end - job->t_check_start
				     : 0;
	rep.nr_nodes = job->nr_crews;
	rep.nonzero_offset = UINT64_MAX;
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		struct node_crew *crew = &job->crews[p];
		uint64_t nz = atomic_load(&crew->nonzero);

		rep.bytes += crew->bytes * job->rounds;
		rep.bytes_done += atomic_load(&crew->bytes_done);
		rep.threads += crew->threads;
		if (nz && nz - 1 < rep.nonzero_offset)
			rep.nonzero_offset = nz - 1;
	}
	pthread_mutex_lock(&job->lock);
	rep.error = job->error;
	rep.error_node = job->error ? job->error_node : -1;
	rep.error_offset = job->error_offset;
	pthread_mutex_unlock(&job->lock);
	rep.cancelled = atomic_load(&job->cancel) && !rep.error;
	rep.notify = notify_path(&job->sinks[2], &rep.notify_error);
	*ret_report = rep;
}

int job_fill_node_report(struct prealloc_job *job, unsigned int index,
			 struct prealloc_node_report *ret_report)
{
	struct prealloc_node_report rep = { .size = sizeof(rep) };
	struct node_crew *crew;

	if (index >= job->nr_crews)
		return -ENOENT;
	crew = &job->crews[index];
	rep.node = crew->node;
	rep.threads = crew->threads;
	rep.bytes = crew->bytes * job->rounds;
	rep.bytes_done = atomic_load(&crew->bytes_done);
	rep.seconds = crew->end > job->t_start ? crew->end - job->t_start : 0;
	rep.pages_on_node = atomic_load(&crew->on);
	rep.pages_off_node = atomic_load(&crew->off);
	rep.pages_missing = atomic_load(&crew->missing);
	rep.cpu_samples_off = atomic_load(&crew->cpu_samples_off);
	for (unsigned int k = 0; k < ARRAY_SIZE(rep.cpus_seen); k++)
		rep.cpus_seen[k] = atomic_load(&crew->cpus_seen[k]);
	rep.huge_bytes = atomic_load(&crew->huge_bytes);
	*ret_report = rep;
	return 0;
}

EXPORT int prealloc_job_report(struct prealloc_job *job, struct prealloc_report *ret_report)
{
	struct prealloc_report rep;

	if (!job || !ret_report || ret_report->size < sizeof(size_t))
		return -EINVAL;
	if (!job->joined)
		return -EBUSY;
	job_fill_report(job, &rep);
	copy_sized_out(ret_report, &rep, sizeof(rep));
	return 0;
}

EXPORT int prealloc_job_node_report(struct prealloc_job *job, unsigned int index,
				    struct prealloc_node_report *ret_report)
{
	struct prealloc_node_report rep;
	int r;

	if (!job || !ret_report || ret_report->size < sizeof(size_t))
		return -EINVAL;
	if (!job->joined)
		return -EBUSY;
	r = job_fill_node_report(job, index, &rep);
	if (r < 0)
		return r;
	copy_sized_out(ret_report, &rep, sizeof(rep));
	return 0;
}
