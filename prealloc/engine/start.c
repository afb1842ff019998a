/* SPDX-License-Identifier: MIT */
/*
 * A job's start and end through the public API (prealloc_job_start,
 * prealloc_job_free) and the synchronous calls over them (job_sync for the
 * flows, prealloc_run): above both the engine that runs a job (engine.c)
 * and the job a caller holds (job.c), which call neither back.
 */
#include <stdatomic.h>

#include "engine.h"

EXPORT int prealloc_job_start(struct prealloc_region *region, const struct prealloc_job_opts *opts,
			      struct prealloc_job **ret_job)
{
	return job_start_spec(region, opts, NULL, ret_job);
}

EXPORT void prealloc_job_free(struct prealloc_job *job)
{
	unsigned int want = JOB_MAGIC;

	if (!job)
		return;
	/*
	 * Poisoned first: a second free that still finds the memory (two
	 * threads freeing at once) sees it and does nothing. Once the memory
	 * is gone nothing can tell; free exactly once.
	 */
	if (!atomic_compare_exchange_strong(&job->magic, &want, JOB_FREED))
		return;
	if (!atomic_load(&job->joined)) {
		atomic_store(&job->cancel, 1);
		job_join(job);
	}
	job_free(job);
}

int job_sync(struct prealloc_job *job, int (*info)(struct prealloc_job *job, void *ret_info),
	     void *ret_info, struct prealloc_report *ret_report)
{
	int r = prealloc_job_wait(job);

	if (info && ret_info)
		info(job, ret_info);
	if (ret_report)
		prealloc_job_report(job, ret_report);
	prealloc_job_free(job);
	return r;
}

EXPORT int prealloc_run(struct prealloc_region *region, const struct prealloc_job_opts *opts,
			struct prealloc_report *ret_report)
{
	struct prealloc_job *job;
	int r;

	r = prealloc_job_start(region, opts, &job);
	return r < 0 ? r : job_sync(job, NULL, NULL, ret_report);
}
