/* SPDX-License-Identifier: MIT */
/*
 * Run: one worker pool per node, all nodes at once. Workers are created
 * pinned to their node's CPUs and wait at a gate until all exist (thread
 * creation takes mmap_lock for write and would queue behind populating
 * threads), then drain their node's chunk queue. A barrier separates the
 * timed operation from the placement query and zero check.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "clear.h"

struct node_pool {
	const struct topo_node *topo;
	int node;
	unsigned int threads;
	uint64_t bytes;
	struct plan_chunk *chunks;
	size_t nr_chunks;
	atomic_size_t next;		/* op queue */
	atomic_size_t next_check;	/* verify queue */
	atomic_uint_fast64_t bytes_done;
	atomic_uint_fast64_t on, off, missing;
	atomic_uint_fast64_t cpu_samples_off;
	atomic_uint_fast64_t cpus_seen[PREALLOC_MAX_CPUS / 64];
	atomic_uint_fast64_t nonzero;	/* lowest non-zero region offset + 1, 0 none */
	double end;			/* latest worker end, under job->lock */
};

struct worker {
	struct prealloc_job *job;
	struct node_pool *pool;
	pthread_t tid;
};

struct prealloc_job {
	struct prealloc_region *region;
	struct prealloc_job_opts opts;
	const struct clear_kernel *kernel;
	struct node_pool *pools;
	unsigned int nr_pools;
	struct worker *workers;
	unsigned int nr_workers;
	pthread_cond_t gate;		/* workers wait here until all exist */
	bool gate_open, gate_abandon;	/* under lock */
	pthread_barrier_t barrier;	/* before and after the check phase */
	bool barrier_ready;
	pthread_mutex_t lock;
	atomic_int cancel;
	atomic_int touch;		/* populate fell back to touching */
	atomic_uint finished;
	int error, error_node;
	uint64_t error_offset;
	double t_start, t_op_end, t_check_start, t_check_end;
	int efd;
	bool joined;
	bool guard;
	bool placement_scanned;	/* counts came from numa_maps; skip move_pages */
	uint64_t page_size;	/* the region's: the flow may free the region in finish */
	struct job_flow flow;
	int result;		/* the flow's verdict */
};

static void job_fail(struct prealloc_job *job, int err, int node, uint64_t offset)
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

static void note_cpu(struct node_pool *pool, bool pinned)
{
	int cpu = sched_getcpu();

	if (cpu < 0 || cpu >= PREALLOC_MAX_CPUS)
		return;
	atomic_fetch_or(&pool->cpus_seen[cpu / 64], UINT64_C(1) << (cpu % 64));
	if (pinned && !CPU_ISSET(cpu, &pool->topo->cpus))
		atomic_fetch_add(&pool->cpu_samples_off, 1);
}

/*
 * The SIGBUS guard for the touch fallback is process-wide, and an embedding
 * VMM may have its own SIGBUS handler (memory errors): install it only when
 * a job really touches, once per job, before any worker touches.
 */
static int job_touch_guard(struct prealloc_job *job)
{
	int r = 0;

	pthread_mutex_lock(&job->lock);
	if (!job->guard) {
		r = touch_guard_install();
		job->guard = r == 0;
	}
	pthread_mutex_unlock(&job->lock);
	return r;
}

static int op_chunk(struct prealloc_job *job, uint8_t *p, uint64_t len)
{
	/* The touch step: a THP region may fall back to 4K pages, so touch each. */
	uint64_t page = job->region->backing == PREALLOC_BACKING_ANON_THP ? PREALLOC_PAGE_4K
									   : job->region->page_size;
	int r;

	switch (job->opts.op) {
	case PREALLOC_OP_POPULATE:
		if (atomic_load(&job->touch))
			return populate_chunk(p, len, page, true);
		r = populate_chunk(p, len, page, false);
		if (r == -EINVAL) {
			/* No MADV_POPULATE_WRITE here (before 5.14): touch instead. */
			r = job_touch_guard(job);
			if (r < 0)
				return r;
			atomic_store(&job->touch, 1);
			r = populate_chunk(p, len, page, true);
		}
		return r;
	case PREALLOC_OP_CLEAR:
		job->kernel->fn(p, len);
		return 0;
	default:
		return 0;
	}
}

/* Placement is counted in pages of this size: THP may be split, so 4K there. */
static uint64_t placement_step(const struct prealloc_region *reg)
{
	return reg->backing == PREALLOC_BACKING_ANON_THP ? PREALLOC_PAGE_4K : reg->page_size;
}

/* placement_scan callback: one mapping's per-node counts go to its extent's pool. */
static int scan_mapping(void *arg, uint64_t start, uint64_t end, uint64_t unit,
			const uint64_t *counts)
{
	struct prealloc_job *job = arg;
	struct prealloc_region *reg = job->region;
	uint64_t first = start - (uintptr_t)reg->addr, last = end - (uintptr_t)reg->addr;
	uint64_t step = placement_step(reg), on, all = 0;
	struct node_pool *pool = NULL;
	unsigned int e;

	for (e = 0; e < reg->nr_extents; e++)
		if (reg->extents[e].offset <= first &&
		    last <= reg->extents[e].offset + reg->extents[e].length)
			break;
	if (e == reg->nr_extents)
		return -ENOTSUP;	/* a mapping across extents: count page by page */
	if (reg->extents[e].node < 0)
		return 0;
	for (unsigned int p = 0; p < job->nr_pools; p++)
		if (job->pools[p].node == reg->extents[e].node)
			pool = &job->pools[p];
	if (!pool)
		return -ENOTSUP;
	for (int n = 0; n < PREALLOC_MAX_NODES; n++)
		all += counts[n];
	on = counts[pool->node] * unit / step;
	atomic_fetch_add(&pool->on, on);
	atomic_fetch_add(&pool->off, all * unit / step - on);
	return 0;
}

/*
 * Counts every pool's pages at once from numa_maps, which is ~5x cheaper
 * than move_pages per page. On any mismatch the counts are reset and the
 * workers fall back to move_pages chunk by chunk.
 */
static void placement_scan_job(struct prealloc_job *job)
{
	struct prealloc_region *reg = job->region;
	uint64_t step = placement_step(reg);

	if (placement_scan(reg->addr, reg->length, scan_mapping, job) < 0) {
		for (unsigned int p = 0; p < job->nr_pools; p++) {
			atomic_store(&job->pools[p].on, 0);
			atomic_store(&job->pools[p].off, 0);
		}
		return;
	}
	for (unsigned int p = 0; p < job->nr_pools; p++) {
		struct node_pool *pool = &job->pools[p];
		uint64_t pages = pool->bytes / step, seen = pool->on + pool->off;

		atomic_store(&pool->missing, pages > seen ? pages - seen : 0);
	}
	job->placement_scanned = true;
}

static void check_chunk(struct prealloc_job *job, struct node_pool *pool,
			const struct plan_chunk *c)
{
	struct prealloc_region *reg = job->region;
	uint8_t *p = reg->addr + c->offset;
	bool zeroes = (job->opts.flags & PREALLOC_JOB_VERIFY) || job->opts.op == PREALLOC_OP_VERIFY;

	if (!(job->opts.flags & PREALLOC_JOB_NO_PLACEMENT) && !job->placement_scanned) {
		uint64_t on = 0, off = 0, missing = 0;
		int r = placement_query(p, c->length, placement_step(reg), pool->node, &on, &off,
					&missing);

		if (r < 0) {
			job_fail(job, r, pool->node, c->offset);
			return;
		}
		atomic_fetch_add(&pool->on, on);
		atomic_fetch_add(&pool->off, off);
		atomic_fetch_add(&pool->missing, missing);
	}
	if (zeroes) {
		uint64_t nz = zero_check(p, c->length);

		if (nz < c->length) {
			uint64_t want = c->offset + nz + 1, cur = atomic_load(&pool->nonzero);

			while ((cur == 0 || want < cur) &&
			       !atomic_compare_exchange_weak(&pool->nonzero, &cur, want))
				;
		}
	}
}

/* The job's outcome so far. */
static int job_status(struct prealloc_job *job)
{
	if (job->error)
		return job->error;
	return atomic_load(&job->cancel) ? -ECANCELED : 0;
}

static void job_finish(struct prealloc_job *job)
{
	job->result = job_status(job);
	if (job->flow.finish)
		job->result = job->flow.finish(job, job->result, job->flow.arg);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct prealloc_job *job = w->job;
	struct node_pool *pool = w->pool;
	bool pinned = !(job->opts.flags & PREALLOC_JOB_NO_PIN);
	size_t i;
	double t;

	/* The gate opens once every worker exists: all start together. */
	pthread_mutex_lock(&job->lock);
	while (!job->gate_open)
		pthread_cond_wait(&job->gate, &job->lock);
	pthread_mutex_unlock(&job->lock);
	if (job->gate_abandon)
		return NULL;

	while (!atomic_load(&job->cancel) &&
	       (i = atomic_fetch_add(&pool->next, 1)) < pool->nr_chunks) {
		const struct plan_chunk *c = &pool->chunks[i];
		int r;

		note_cpu(pool, pinned);
		r = op_chunk(job, job->region->addr + c->offset, c->length);
		if (r < 0) {
			job_fail(job, r, pool->node, c->offset);
			break;
		}
		atomic_fetch_add(&pool->bytes_done, c->length);
	}
	t = now_seconds();
	pthread_mutex_lock(&job->lock);
	if (t > pool->end)
		pool->end = t;
	if (t > job->t_op_end)
		job->t_op_end = t;
	pthread_mutex_unlock(&job->lock);

	if (pthread_barrier_wait(&job->barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
		job->t_check_start = now_seconds();
		if (!(job->opts.flags & PREALLOC_JOB_NO_PLACEMENT) && !atomic_load(&job->cancel))
			placement_scan_job(job);
	}
	pthread_barrier_wait(&job->barrier);

	while (!atomic_load(&job->cancel) &&
	       (i = atomic_fetch_add(&pool->next_check, 1)) < pool->nr_chunks)
		check_chunk(job, pool, &pool->chunks[i]);

	t = now_seconds();
	pthread_mutex_lock(&job->lock);
	if (t > job->t_check_end)
		job->t_check_end = t;
	pthread_mutex_unlock(&job->lock);

	if (atomic_fetch_add(&job->finished, 1) + 1 == job->nr_workers) {
		uint64_t one = 1;

		job_finish(job);

		if (write(job->efd, &one, sizeof(one)) < 0) {
			/* The counter cannot overflow with one write; nothing to do. */
		}
	}
	return NULL;
}

static int pools_build(struct prealloc_job *job)
{
	struct prealloc_region *reg = job->region;
	struct prealloc_ctx *ctx = reg->ctx;

	job->pools = calloc(reg->nr_extents, sizeof(*job->pools));
	if (!job->pools)
		return -ENOMEM;
	for (unsigned int e = 0; e < reg->nr_extents; e++) {
		const struct prealloc_extent *ext = &reg->extents[e];
		struct node_pool *pool = NULL;

		if (ext->node < 0)
			continue;	/* not resident: nothing to clear or check */

		for (unsigned int p = 0; p < job->nr_pools; p++)
			if (job->pools[p].node == ext->node)
				pool = &job->pools[p];
		if (!pool) {
			pool = &job->pools[job->nr_pools++];
			pool->node = ext->node;
			pool->topo = topo_node(ctx, ext->node);
			if (!pool->topo)
				return -ENODEV;
			pool->threads = job->opts.threads ? job->opts.threads : pool->topo->nr_cpus;
			pool->threads = MAX(pool->threads, 1u);
		}
		pool->bytes += ext->length;
	}
	for (unsigned int p = 0; p < job->nr_pools; p++) {
		struct node_pool *pool = &job->pools[p];
		uint64_t chunk = job->opts.chunk_size
					 ? job->opts.chunk_size
					 : plan_chunk_size(pool->bytes, reg->page_size, pool->threads);
		struct prealloc_extent *mine;
		unsigned int n = 0;

		mine = calloc(reg->nr_extents, sizeof(*mine));
		if (!mine)
			return -ENOMEM;
		for (unsigned int e = 0; e < reg->nr_extents; e++)
			if (reg->extents[e].node == pool->node)
				mine[n++] = reg->extents[e];
		pool->nr_chunks = plan_chunks(mine, n, reg->page_size, chunk, NULL);
		pool->chunks = calloc(pool->nr_chunks, sizeof(*pool->chunks));
		if (!pool->chunks) {
			free(mine);
			return -ENOMEM;
		}
		plan_chunks(mine, n, reg->page_size, chunk, pool->chunks);
		free(mine);
		/* More workers than chunks would only wait at the barriers. */
		pool->threads = (unsigned int)MIN((size_t)pool->threads, MAX(pool->nr_chunks, (size_t)1));
		job->nr_workers += pool->threads;
	}
	return 0;
}

static void job_destroy(struct prealloc_job *job)
{
	if (!job)
		return;
	for (unsigned int p = 0; p < job->nr_pools; p++)
		free(job->pools[p].chunks);
	free(job->pools);
	free(job->workers);
	if (job->barrier_ready)
		pthread_barrier_destroy(&job->barrier);
	if (job->guard)
		touch_guard_remove();
	pthread_cond_destroy(&job->gate);
	pthread_mutex_destroy(&job->lock);
	if (job->efd >= 0)
		close(job->efd);
	if (job->flow.destroy)
		job->flow.destroy(job->flow.arg);
	free(job);
}

EXPORT int prealloc_job_start(struct prealloc_region *region, const struct prealloc_job_opts *opts,
			      struct prealloc_job **ret_job)
{
	return job_start_spec(region, opts, NULL, ret_job);
}

void *job_flow_arg(struct prealloc_job *job)
{
	return job->flow.arg;
}

int job_start_spec(struct prealloc_region *region, const struct prealloc_job_opts *opts,
		   const struct job_spec *spec, struct prealloc_job **ret_job)
{
	struct prealloc_job *job;
	pthread_attr_t attr;
	unsigned int w = 0;
	int r;

	if (!region || !opts || !ret_job)
		return -EINVAL;
	job = calloc(1, sizeof(*job));
	if (!job)
		return -ENOMEM;
	job->efd = -1;
	pthread_mutex_init(&job->lock, NULL);
	pthread_cond_init(&job->gate, NULL);
	job->region = region;
	job->page_size = region->page_size;
	if (spec && spec->flow)
		job->flow = *spec->flow;
	r = copy_sized_in(&job->opts, sizeof(job->opts), opts);
	if (r < 0)
		goto fail;
	if (job->opts.op < PREALLOC_OP_POPULATE || job->opts.op > PREALLOC_OP_VERIFY) {
		r = -EINVAL;
		goto fail;
	}
	if (job->opts.op == PREALLOC_OP_CLEAR) {
		const char *name = job->opts.clear_kernel;
		char why[128];

		if (!name || !strcmp(name, "auto")) {
			job->kernel = clear_select_region(region, job->opts.threads, why, sizeof(why));
		} else {
			job->kernel = clear_kernel_find(name);
			if (!job->kernel) {
				r = -ENOENT;
				goto fail;
			}
			if (!clear_kernel_usable(job->kernel, cpu_get()->features)) {
				r = -EOPNOTSUPP;
				goto fail;
			}
		}
	}
	if (job->opts.op == PREALLOC_OP_POPULATE && (job->opts.flags & PREALLOC_JOB_TOUCH))
		job->touch = 1;
	if (job->touch) {
		r = job_touch_guard(job);
		if (r < 0)
			goto fail;
	}

	r = pools_build(job);
	if (r < 0)
		goto fail;
	job->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (job->efd < 0) {
		r = -errno;
		goto fail;
	}
	if (job->nr_workers == 0) {
		/* Nothing resident to work on: done at once. */
		uint64_t one = 1;

		job_finish(job);

		if (write(job->efd, &one, sizeof(one)) < 0) {
			r = -errno;
			goto fail;
		}
		*ret_job = job;
		return 0;
	}
	job->workers = calloc(job->nr_workers, sizeof(*job->workers));
	if (!job->workers) {
		r = -ENOMEM;
		goto fail;
	}
	r = 0;
	pthread_attr_init(&attr);
	for (unsigned int p = 0; p < job->nr_pools && r == 0; p++) {
		struct node_pool *pool = &job->pools[p];

		if (!(job->opts.flags & PREALLOC_JOB_NO_PIN) && pool->topo->nr_cpus)
			pthread_attr_setaffinity_np(&attr, sizeof(pool->topo->cpus), &pool->topo->cpus);
		else
			pthread_attr_setaffinity_np(&attr, sizeof(region->ctx->allowed),
						    &region->ctx->allowed);
		for (unsigned int t = 0; t < pool->threads; t++) {
			job->workers[w].job = job;
			job->workers[w].pool = pool;
			r = -pthread_create(&job->workers[w].tid, &attr, worker_main, &job->workers[w]);
			if (r < 0)
				break;	/* e.g. EAGAIN: a task limit (pids.max) was hit */
			w++;
		}
	}
	pthread_attr_destroy(&attr);

	/*
	 * Every worker made waits at the gate. The barrier for the check
	 * phase counts only those; if one could not be made, the rest are
	 * released cancelled, do nothing, and are joined.
	 */
	if (w) {
		int rb = -pthread_barrier_init(&job->barrier, NULL, w);

		if (rb < 0 && r == 0)
			r = rb;
		job->barrier_ready = rb == 0;
	}
	if (r < 0)
		atomic_store(&job->cancel, 1);
	if (r < 0 && !job->barrier_ready) {
		/* No barrier to meet at: the workers must not pass the gate. */
		job->gate_abandon = true;
	}
	pthread_mutex_lock(&job->lock);
	job->t_start = now_seconds();
	job->gate_open = true;
	pthread_cond_broadcast(&job->gate);
	pthread_mutex_unlock(&job->lock);
	if (r < 0) {
		for (unsigned int k = 0; k < w; k++)
			pthread_join(job->workers[k].tid, NULL);
		goto fail;
	}
	*ret_job = job;
	return 0;
fail:
	/* A job that never started: its flow's state is the caller's again. */
	job->flow.destroy = NULL;
	job_destroy(job);
	return r;
}

EXPORT int prealloc_job_progress(struct prealloc_job *job, uint64_t *ret_done, uint64_t *ret_total)
{
	uint64_t done = 0, total = 0;

	if (!job)
		return -EINVAL;
	for (unsigned int p = 0; p < job->nr_pools; p++) {
		done += atomic_load(&job->pools[p].bytes_done);
		total += job->pools[p].bytes;
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
	for (unsigned int p = 0; p < job->nr_pools; p++) {
		if (job->pools[p].node != node)
			continue;
		if (ret_done)
			*ret_done = atomic_load(&job->pools[p].bytes_done);
		if (ret_total)
			*ret_total = job->pools[p].bytes;
		return 0;
	}
	return -ENOENT;
}

EXPORT int prealloc_job_node_count(struct prealloc_job *job, int *ret_nodes, unsigned int max)
{
	if (!job || (max && !ret_nodes))
		return -EINVAL;
	for (unsigned int p = 0; p < job->nr_pools && p < max; p++)
		ret_nodes[p] = job->pools[p].node;
	return (int)job->nr_pools;
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

EXPORT int prealloc_job_done(struct prealloc_job *job)
{
	if (!job)
		return -EINVAL;
	return atomic_load(&job->finished) == job->nr_workers;
}

EXPORT int prealloc_job_wait(struct prealloc_job *job)
{
	if (!job)
		return -EINVAL;
	if (!job->joined) {
		for (unsigned int w = 0; w < job->nr_workers; w++)
			pthread_join(job->workers[w].tid, NULL);
		job->joined = true;
	}
	return job->result;
}

EXPORT int prealloc_job_report(struct prealloc_job *job, struct prealloc_report *ret_report)
{
	if (!job || !ret_report || ret_report->size < sizeof(size_t))
		return -EINVAL;
	if (!job->joined)
		return -EBUSY;
	return job_fill_report(job, ret_report);
}

int job_fill_report(struct prealloc_job *job, struct prealloc_report *ret_report)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	rep.op = job->opts.op;
	if (job->opts.op == PREALLOC_OP_POPULATE)
		rep.method = job->touch ? PREALLOC_METHOD_TOUCH : PREALLOC_METHOD_POPULATE_WRITE;
	else if (job->opts.op == PREALLOC_OP_CLEAR)
		rep.method = PREALLOC_METHOD_CLEAR;
	else
		rep.method = PREALLOC_METHOD_NONE;
	if (job->kernel)
		snprintf(rep.clear_kernel, sizeof(rep.clear_kernel), "%s", job->kernel->name);
	rep.page_size = job->page_size;
	rep.seconds = job->t_op_end > job->t_start ? job->t_op_end - job->t_start : 0;
	rep.verify_seconds = job->t_check_end > job->t_check_start
				     ? job->t_check_end - job->t_check_start
				     : 0;
	rep.nr_nodes = job->nr_pools;
	rep.nonzero_offset = UINT64_MAX;
	for (unsigned int p = 0; p < job->nr_pools; p++) {
		struct node_pool *pool = &job->pools[p];
		uint64_t nz = atomic_load(&pool->nonzero);

		rep.bytes += pool->bytes;
		rep.bytes_done += atomic_load(&pool->bytes_done);
		rep.threads += pool->threads;
		if (nz && nz - 1 < rep.nonzero_offset)
			rep.nonzero_offset = nz - 1;
	}
	/* A verdict of the flow's (verify, commit) is the job's error too. */
	rep.error = job->error ? job->error : job->result == -ECANCELED ? 0 : job->result;
	rep.error_node = job->error ? job->error_node : -1;
	rep.error_offset = job->error_offset;
	rep.cancelled = atomic_load(&job->cancel) && !job->error;
	copy_sized_out(ret_report, &rep, sizeof(rep));
	return 0;
}

EXPORT int prealloc_job_node_report(struct prealloc_job *job, unsigned int index,
				    struct prealloc_node_report *ret_report)
{
	if (!job || !ret_report || ret_report->size < sizeof(size_t))
		return -EINVAL;
	if (!job->joined)
		return -EBUSY;
	return job_fill_node_report(job, index, ret_report);
}

int job_fill_node_report(struct prealloc_job *job, unsigned int index,
			 struct prealloc_node_report *ret_report)
{
	struct prealloc_node_report rep = { .size = sizeof(rep) };
	struct node_pool *pool;

	if (index >= job->nr_pools)
		return -ENOENT;
	pool = &job->pools[index];
	rep.node = pool->node;
	rep.threads = pool->threads;
	rep.bytes = pool->bytes;
	rep.bytes_done = atomic_load(&pool->bytes_done);
	rep.seconds = pool->end > job->t_start ? pool->end - job->t_start : 0;
	rep.pages_on_node = atomic_load(&pool->on);
	rep.pages_off_node = atomic_load(&pool->off);
	rep.pages_missing = atomic_load(&pool->missing);
	rep.cpu_samples_off = atomic_load(&pool->cpu_samples_off);
	for (unsigned int k = 0; k < ARRAY_SIZE(rep.cpus_seen); k++)
		rep.cpus_seen[k] = atomic_load(&pool->cpus_seen[k]);
	copy_sized_out(ret_report, &rep, sizeof(rep));
	return 0;
}

EXPORT void prealloc_job_free(struct prealloc_job *job)
{
	if (!job)
		return;
	if (!job->joined) {
		prealloc_job_cancel(job);
		prealloc_job_wait(job);
	}
	job_destroy(job);
}

EXPORT int prealloc_run(struct prealloc_region *region, const struct prealloc_job_opts *opts,
			struct prealloc_report *ret_report)
{
	struct prealloc_job *job;
	int r;

	r = prealloc_job_start(region, opts, &job);
	if (r < 0)
		return r;
	r = prealloc_job_wait(job);
	if (ret_report)
		prealloc_job_report(job, ret_report);
	prealloc_job_free(job);
	return r;
}
