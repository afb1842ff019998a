/* SPDX-License-Identifier: MIT */
/*
 * The engine: one crew of workers per node, all nodes at once. Workers are
 * created pinned to their node's CPUs and wait at a gate until all exist
 * (thread creation takes mmap_lock for write and would queue behind
 * populating threads), then drain their node's chunk queue with the job's
 * op, one step at a time. A barrier separates the timed op from the serial
 * op and the check phase (placement, zeroes, huge pages); the last worker
 * out settles the verdict, runs the flow's finish and posts completion
 * (complete.c). What a worker does to memory lives in ops.c; the engine
 * only calls it.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine.h"

static void note_cpu(struct node_crew *crew, bool pinned)
{
	int cpu = sched_getcpu();

	if (cpu < 0 || cpu >= PREALLOC_MAX_CPUS)
		return;
	atomic_fetch_or(&crew->cpus_seen[cpu / 64], UINT64_C(1) << (cpu % 64));
	if (pinned && !CPU_ISSET(cpu, &crew->topo->cpus))
		atomic_fetch_add(&crew->cpu_samples_off, 1);
}

/* A step's bytes to the sinks that count progress (the io_uring completion's steps). */
static void sinks_progress(struct prealloc_job *job, uint64_t bytes)
{
	for (unsigned int s = 0; s < ARRAY_SIZE(job->sinks); s++)
		if (job->sinks[s].ops && job->sinks[s].ops->progress)
			job->sinks[s].ops->progress(job->sinks[s].data, bytes);
}

/*
 * One chunk, in steps of at most max(page size, JOB_STEP): cancel is seen
 * and progress moves after each step. Returns 0, -ECANCELED or the op's error.
 */
static int work_chunk(struct prealloc_job *job, struct node_crew *crew, const struct job_op *op,
		      void *state, const struct job_chunk *c)
{
	uint64_t step = MAX(job->page_size, op->step ? op->step : JOB_STEP);

	for (uint64_t off = 0; off < c->length; off += step) {
		uint64_t len = MIN(step, c->length - off), at = c->offset + off;
		int r;

		if (atomic_load(&job->cancel))
			return -ECANCELED;
		if (job->zero_fused && op == job->op)
			r = check_fused_piece(job, crew, op, state, c->offset + off, len, &at);
		else
			r = op->piece(state, job->addr + c->offset + off, len);
		if (r < 0) {
			job_fail(job, r, crew->node, at);
			return r;
		}
		atomic_fetch_add(&crew->bytes_done, len);
		sinks_progress(job, len);
		job_pace(job, crew, len);
		/* Tests stop here: the region's first step done, the rest not. */
		if (c->offset == 0 && off == 0)
			test_pause("mid-op");
	}
	return 0;
}

/* The worker's next chunk: its own next one when workers are fixed, else the queue's. */
static size_t next_chunk(struct prealloc_job *job, const struct job_worker *w, size_t *fixed_next)
{
	size_t i = *fixed_next;

	if (!job->fixed_workers)
		return atomic_fetch_add(&w->crew->next, 1);
	*fixed_next += w->crew->threads;
	return i;
}

static void op_phase(struct prealloc_job *job, const struct job_worker *w)
{
	struct node_crew *crew = w->crew;
	bool pinned = !(job->opts.flags & PREALLOC_JOB_NO_PIN);
	size_t total = crew->nr_chunks, fixed_next = w->index, i;

	while (!atomic_load(&job->cancel) && (i = next_chunk(job, w, &fixed_next)) < total) {
		note_cpu(crew, pinned);
		if (work_chunk(job, crew, job->op, job->op_state,
			       &crew->chunks[i]) < 0)
			break;
	}
}

/* The serial op: one thread, every node's chunks in order, cancel between steps. */
static void serial_phase(struct prealloc_job *job)
{
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		struct node_crew *crew = &job->crews[p];

		for (size_t i = 0; i < crew->nr_chunks; i++)
			if (work_chunk(job, crew, job->serial, job->serial_state, &crew->chunks[i]) < 0)
				return;
	}
}

static void time_max(struct prealloc_job *job, double *slot, double *slot2)
{
	double t = now_seconds();

	pthread_mutex_lock(&job->lock);
	if (t > *slot)
		*slot = t;
	if (slot2 && t > *slot2)
		*slot2 = t;
	pthread_mutex_unlock(&job->lock);
}

static void *worker_main(void *arg)
{
	struct job_worker *w = arg;
	struct prealloc_job *job = w->job;
	struct node_crew *crew = w->crew;
	bool idle = job->opts.flags & PREALLOC_JOB_IDLE;
	struct sched_param param = { 0 };
	int policy = SCHED_OTHER, nice = 0;
	size_t i;

	/* The gate opens once every worker exists: all start together. */
	pthread_mutex_lock(&job->lock);
	while (!job->gate_open)
		pthread_cond_wait(&job->gate, &job->lock);
	pthread_mutex_unlock(&job->lock);
	if (job->gate_abandon)
		return NULL;
	crews_policy_worker(job, crew);
	if (idle)
		worker_idle(true, &policy, &param, &nice);

	op_phase(job, w);
	time_max(job, &crew->end, &job->t_op_end);

	if (pthread_barrier_wait(&job->barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
		if (job->serial && !atomic_load(&job->cancel)) {
			serial_phase(job);
			time_max(job, &job->t_op_end, NULL);
		}
		/* Tests stop here: the op done, the check phase (read-back) not begun. */
		test_pause("before-check");
		job->t_check_start = now_seconds();
		if (!atomic_load(&job->cancel))
			check_scan_job(job);
	}
	pthread_barrier_wait(&job->barrier);

	while (!atomic_load(&job->cancel) &&
	       (i = atomic_fetch_add(&crew->next_check, 1)) < crew->nr_chunks) {
		uint64_t at;
		int r = check_chunk(job, crew, &crew->chunks[i], &at);

		if (r < 0)
			job_fail(job, r, crew->node, at);
		if (!job->zero_fused)	/* else only placement is left to count */
			job_pace(job, crew, crew->chunks[i].length);
	}
	time_max(job, &job->t_check_end, NULL);
	if (idle)
		worker_idle(false, &policy, &param, &nice);

	if (atomic_fetch_add(&crew->finished, 1) + 1 == crew->threads)
		node_complete(job, crew);
	if (atomic_fetch_add(&job->finished, 1) + 1 == job->nr_workers)
		job_complete(job);
	return NULL;
}

static int efd_job_done(void *data, int res)
{
	struct prealloc_job *job = data;
	uint64_t one = 1;

	(void)res;
	/* The counter cannot overflow with one write. */
	return write(job->efd, &one, sizeof(one)) < 0 ? -errno : 0;
}

static const struct job_sink_ops efd_sink_ops = { .job_done = efd_job_done };

static void job_destroy(struct prealloc_job *job)
{
	if (!job)
		return;
	for (unsigned int p = 0; p < job->nr_crews; p++)
		free(job->crews[p].chunks);
	free(job->crews);
	free(job->workers);
	if (job->barrier_ready)
		pthread_barrier_destroy(&job->barrier);
	if (job->op && job->op->teardown && job->op_state)
		job->op->teardown(job->op_state);
	if (job->serial && job->serial->teardown && job->serial_state)
		job->serial->teardown(job->serial_state);
	if (job->flow.destroy)
		job->flow.destroy(job->flow.arg);
	for (unsigned int s = 0; s < ARRAY_SIZE(job->sinks); s++)
		if (job->sinks[s].ops && job->sinks[s].ops->release)
			job->sinks[s].ops->release(job->sinks[s].data);
	pthread_cond_destroy(&job->gate);
	pthread_mutex_destroy(&job->lock);
	pthread_mutex_destroy(&job->join_lock);
	if (job->efd >= 0)
		close(job->efd);
	free(job);
}

void job_free(struct prealloc_job *job)
{
	job_destroy(job);
}

/* Creates every worker pinned to its node; returns how many exist in *ret_made. */
static int workers_spawn(struct prealloc_job *job, unsigned int *ret_made)
{
	pthread_attr_t attr;
	unsigned int w = 0;
	int r = 0;

	pthread_attr_init(&attr);
	for (unsigned int p = 0; p < job->nr_crews && r == 0; p++) {
		struct node_crew *crew = &job->crews[p];

		for (unsigned int t = 0; t < crew->threads; t++) {
			worker_affinity(job, crew, t, &attr);
			job->workers[w].job = job;
			job->workers[w].crew = crew;
			job->workers[w].index = t;
			r = -pthread_create(&job->workers[w].tid, &attr, worker_main, &job->workers[w]);
			if (r < 0)
				break;	/* e.g. EAGAIN: a task limit (pids.max) was hit */
			w++;
		}
	}
	pthread_attr_destroy(&attr);
	*ret_made = w;
	return r;
}

/*
 * Every worker made waits at the gate. The barrier for the check phase
 * counts only those; if one could not be made, the rest are released
 * cancelled, do nothing, and are joined.
 */
static int workers_start(struct prealloc_job *job)
{
	unsigned int w;
	int r;

	job->workers = calloc(job->nr_workers, sizeof(*job->workers));
	if (!job->workers)
		return -ENOMEM;
	r = workers_spawn(job, &w);
	if (w) {
		int rb = -pthread_barrier_init(&job->barrier, NULL, w);

		if (rb < 0 && r == 0)
			r = rb;
		job->barrier_ready = rb == 0;
	}
	if (r < 0) {
		job->start_failed = true;
		atomic_store(&job->cancel, 1);
	}
	if (r < 0 && !job->barrier_ready)
		job->gate_abandon = true;	/* no barrier to meet at: stay at the gate */
	pthread_mutex_lock(&job->lock);
	job->t_start = now_seconds();
	job->gate_open = true;
	pthread_cond_broadcast(&job->gate);
	pthread_mutex_unlock(&job->lock);
	if (r < 0)
		for (unsigned int k = 0; k < w; k++)
			pthread_join(job->workers[k].tid, NULL);
	return r;
}

/* Options, op, serial op and chunk size checked and copied in. */
static int job_setup(struct prealloc_job *job, struct prealloc_region *region,
		     const struct prealloc_job_opts *opts, const struct job_spec *spec)
{
	struct job_op_args args = { .region = region, .opts = &job->opts };
	int r;

	r = copy_sized_in(&job->opts, sizeof(job->opts), opts);
	if (r < 0)
		return r;
	job->op = spec && spec->op ? spec->op : job_op_find(job->opts.op);
	if (!job->op || job->op->serial)
		return -EINVAL;
	/* Not 0: whole pages, no larger than the region, so offsets cannot wrap. */
	if (job->opts.chunk_size &&
	    (job->opts.chunk_size % region->page_size ||
	     job->opts.chunk_size > ALIGN_UP(region->length, region->page_size)))
		return -EINVAL;
	if (spec) {
		if (spec->serial && !spec->serial->serial)
			return -EINVAL;
		job->serial = spec->serial;
		job->fixed_workers = spec->fixed_workers;
		if (spec->flow)
			job->flow = *spec->flow;
		if (spec->sink)
			job->sinks[1] = *spec->sink;
	}
	job->rounds = job->serial ? 2 : 1;
	job->zero_fused = job->op->op == PREALLOC_OP_POPULATE &&
			  (job->opts.flags & PREALLOC_JOB_VERIFY);
	if (job->op->setup) {
		r = job->op->setup(&args, &job->op_state);
		if (r < 0)
			return r;
	}
	if (job->serial && job->serial->setup) {
		args.arg = spec->serial_arg;
		return job->serial->setup(&args, &job->serial_state);
	}
	return 0;
}

int job_start_spec(struct prealloc_region *region, const struct prealloc_job_opts *opts,
		   const struct job_spec *spec, struct prealloc_job **ret_job)
{
	struct prealloc_job *job;
	int r;

	if (!region || !opts || !ret_job)
		return -EINVAL;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->efd = -1;
	atomic_init(&job->magic, JOB_MAGIC);
	pthread_mutex_init(&job->lock, NULL);
	pthread_mutex_init(&job->join_lock, NULL);
	pthread_cond_init(&job->gate, NULL);
	job->region = region;
	job->addr = region->addr;
	job->page_size = region->page_size;
	job->backing = region->backing;
	job->sinks[0] = (struct job_sink){ &efd_sink_ops, job };
	r = job_setup(job, region, opts, spec);
	if (r < 0)
		goto fail;
	region_hold(job);
	r = crews_build(job, spec ? spec->extra : NULL, spec ? spec->nr_extra : 0);
	if (r < 0)
		goto fail;
	job->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (job->efd < 0) {
		r = -errno;
		goto fail;
	}
	/* The caller's struct is read here only: the sink keeps its own copy. */
	r = notify_open(job->opts.completion, job->efd, job->nr_crews, &job->sinks[2]);
	job->opts.completion = NULL;
	if (r < 0)
		goto fail;
	if (job->nr_workers == 0) {
		/* Nothing resident to work on: done at once, on this thread. */
		job_complete(job);
		job->joined = true;
		*ret_job = job;
		return 0;
	}
	crews_policy_begin(job);
	r = workers_start(job);
	if (r < 0)
		goto fail;
	*ret_job = job;
	return 0;
fail:
	crews_policy_end(job);
	/* A flow's arg is the caller's again when the start fails. */
	job->flow.destroy = NULL;
	job->sinks[1].ops = NULL;
	region_unhold(job);
	job_destroy(job);
	return r;
}

void *job_flow_arg(struct prealloc_job *job)
{
	return job ? job->flow.arg : NULL;
}
