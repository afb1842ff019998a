/* SPDX-License-Identifier: MIT */
/*
 * A job's work, per node: the region's extents on each node and the flow's
 * extra ranges, cut into page-aligned chunks by chunks_cut, one crew (and
 * one queue) per node. Extra ranges of node -1 are dealt round-robin by
 * chunk over the crews. Only chunks from the extents count for placement.
 * And where each worker runs: its node's CPUs, or one of them when the
 * job's workers are fixed; by which memory policy a populate of 4K shmem
 * places its pages.
 */
#include <stdlib.h>

#include "engine.h"

/* The crew for node, made (with its thread count) if the job has none yet. */
static struct node_crew *crew_get(struct prealloc_job *job, int node)
{
	struct node_crew *crew;

	for (unsigned int p = 0; p < job->nr_crews; p++)
		if (job->crews[p].node == node)
			return &job->crews[p];
	crew = &job->crews[job->nr_crews];
	crew->topo = topo_node(job->region->ctx, node);
	if (!crew->topo)
		return NULL;
	job->nr_crews++;
	crew->node = node;
	crew->threads = job->opts.threads ? job->opts.threads : crew->topo->nr_cpus;
	crew->threads = MAX(crew->threads, 1u);
	return crew;
}

/* Appends the chunks of ranges (all on one node) to crew; ret NULL counts only. */
static size_t crew_cut(struct node_crew *crew, const struct prealloc_extent *ranges,
		       unsigned int n, uint64_t page, uint64_t chunk, bool placed)
{
	struct chunk *c;
	size_t k = chunks_cut(ranges, n, page, chunk, NULL);

	if (!crew->chunks)
		return k;
	c = calloc(MAX(k, (size_t)1), sizeof(*c));
	if (!c)
		return SIZE_MAX;
	chunks_cut(ranges, n, page, chunk, c);
	for (size_t i = 0; i < k; i++)
		crew->chunks[crew->nr_chunks++] =
			(struct job_chunk){ c[i].offset, c[i].length, placed };
	free(c);
	return k;
}

/*
 * A node's extents, then its extra ranges; with fill false only counts
 * (into nr_chunks). Extra ranges of node -1 go round-robin by chunk.
 */
static int crews_cut(struct prealloc_job *job, const struct prealloc_extent *all, unsigned int n,
		     unsigned int nr_placed, const struct prealloc_extent *spread,
		     unsigned int nr_spread)
{
	uint64_t page = job->page_size;
	struct prealloc_extent *mine = calloc(MAX(n, 1u), sizeof(*mine));

	if (!mine)
		return -ENOMEM;
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		struct node_crew *crew = &job->crews[p];
		uint64_t chunk = job->opts.chunk_size
					 ? job->opts.chunk_size
					 : chunk_size_for(crew->bytes, page, crew->threads);

		if (job->opts.max_rate && !job->opts.chunk_size)
			chunk = MAX(MIN(chunk, JOB_PACED_CHUNK), page);

		for (int placed = 1; placed >= 0; placed--) {
			unsigned int k = 0;
			size_t got;

			for (unsigned int e = placed ? 0 : nr_placed; e < (placed ? nr_placed : n); e++)
				if (all[e].node == crew->node)
					mine[k++] = all[e];
			got = crew_cut(crew, mine, k, page, chunk, placed);
			if (got == SIZE_MAX)
				goto nomem;
			if (!crew->chunks)
				crew->nr_chunks += got;
		}
	}
	for (unsigned int e = 0; e < nr_spread; e++) {
		uint64_t chunk = job->opts.chunk_size
					 ? job->opts.chunk_size
					 : chunk_size_for(spread[e].length, page, job->nr_crews);
		size_t k = chunks_cut(&spread[e], 1, page, chunk, NULL);

		for (size_t i = 0; i < k; i++) {
			struct node_crew *crew = &job->crews[i % job->nr_crews];
			uint64_t off = spread[e].offset + i * MAX(ALIGN_DOWN(chunk, page), page);
			uint64_t len = MIN(spread[e].offset + spread[e].length - off,
					   MAX(ALIGN_DOWN(chunk, page), page));

			if (crew->chunks)
				crew->chunks[crew->nr_chunks] = (struct job_chunk){ off, len, false };
			crew->nr_chunks++;
			crew->bytes += crew->chunks ? len : 0;	/* once: the fill pass */
		}
	}
	free(mine);
	return 0;
nomem:
	free(mine);
	return -ENOMEM;
}

/* Extents and extra ranges in one array: extents first (nr_placed), node -1 extras apart. */
static int ranges_collect(struct prealloc_job *job, const struct job_range *extra, size_t nr_extra,
			  struct prealloc_extent **ret_all, unsigned int *ret_n,
			  unsigned int *ret_placed, struct prealloc_extent **ret_spread,
			  unsigned int *ret_spread_n)
{
	struct prealloc_region *reg = job->region;
	struct prealloc_extent *all = calloc(reg->nr_extents + nr_extra + 1, sizeof(*all));
	struct prealloc_extent *spread = calloc(nr_extra + 1, sizeof(*spread));
	unsigned int n = 0, s = 0;

	if (!all || !spread)
		goto nomem;
	for (unsigned int e = 0; e < reg->nr_extents; e++) {
		if (reg->extents[e].node < 0) {
			job->adopted = true;	/* not resident: nothing to clear or check */
			continue;
		}
		all[n++] = reg->extents[e];
	}
	*ret_placed = n;
	for (size_t i = 0; i < nr_extra; i++) {
		const struct job_range *x = &extra[i];

		if (x->offset % job->page_size || x->length % job->page_size || !x->length ||
		    x->offset > reg->length || x->length > reg->length - x->offset) {
			free(all);
			free(spread);
			return -EINVAL;
		}
		if (x->node < 0)
			spread[s++] = (struct prealloc_extent){ -1, x->offset, x->length };
		else
			all[n++] = (struct prealloc_extent){ x->node, x->offset, x->length };
	}
	*ret_all = all;
	*ret_n = n;
	*ret_spread = spread;
	*ret_spread_n = s;
	return 0;
nomem:
	free(all);
	free(spread);
	return -ENOMEM;
}

int crews_build(struct prealloc_job *job, const struct job_range *extra, size_t nr_extra)
{
	struct prealloc_extent *all = NULL, *spread = NULL;
	unsigned int n, nr_placed, nr_spread;
	int r;

	r = ranges_collect(job, extra, nr_extra, &all, &n, &nr_placed, &spread, &nr_spread);
	if (r < 0)
		return r;
	job->crews = calloc(n + 1, sizeof(*job->crews));
	r = -ENOMEM;
	if (!job->crews)
		goto out;
	r = -ENODEV;
	for (unsigned int e = 0; e < n; e++) {
		struct node_crew *crew = crew_get(job, all[e].node);

		if (!crew)
			goto out;
		crew->bytes += all[e].length;
		if (e < nr_placed)
			crew->placed_bytes += all[e].length;
	}
	/* Spread ranges and no node of its own: the first node with memory takes them. */
	if (nr_spread && !job->nr_crews && !crew_get(job, job->region->ctx->nodes[0].node))
		goto out;
	/* Count, allocate, fill. */
	r = crews_cut(job, all, n, nr_placed, spread, nr_spread);
	for (unsigned int p = 0; p < job->nr_crews && r == 0; p++) {
		struct node_crew *crew = &job->crews[p];

		crew->chunks = calloc(MAX(crew->nr_chunks, (size_t)1), sizeof(*crew->chunks));
		crew->nr_chunks = 0;
		if (!crew->chunks)
			r = -ENOMEM;
	}
	if (r == 0)
		r = crews_cut(job, all, n, nr_placed, spread, nr_spread);
	for (unsigned int p = 0; p < job->nr_crews && r == 0; p++) {
		struct node_crew *crew = &job->crews[p];
		size_t work = crew->nr_chunks;

		/* More workers than chunks would only wait at the barriers. */
		crew->threads = (unsigned int)MIN((size_t)crew->threads, MAX(work, (size_t)1));
		job->nr_workers += crew->threads;
	}
out:
	free(all);
	free(spread);
	return r;
}

/* The n-th CPU of set (wrapping; set not empty). */
static int nth_cpu(const cpu_set_t *set, unsigned int n)
{
	unsigned int count = (unsigned int)CPU_COUNT(set), seen = 0;

	n %= count;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set) && seen++ == n)
			return cpu;
	return 0;
}

/* Where worker t of crew runs: the node's CPUs, one of them when fixed, or anywhere allowed. */
void worker_affinity(const struct prealloc_job *job, const struct node_crew *crew,
			    unsigned int t, pthread_attr_t *attr)
{
	const cpu_set_t *set = &job->region->ctx->allowed;
	cpu_set_t one;

	if (!(job->opts.flags & PREALLOC_JOB_NO_PIN) && crew->topo->nr_cpus)
		set = &crew->topo->cpus;
	if (job->fixed_workers && CPU_COUNT(set)) {
		CPU_ZERO(&one);
		CPU_SET(nth_cpu(set, t), &one);
		set = &one;
	}
	pthread_attr_setaffinity_np(attr, sizeof(*set), set);
}

/*
 * A populate of bound 4K shmem: its workers place the pages by their own
 * policy, the region unbound meanwhile and bound again when they are done
 * (region_policy_by_workers says why).
 */
void crews_policy_begin(struct prealloc_job *job)
{
	if (job->opts.op != PREALLOC_OP_POPULATE || !region_policy_by_workers(job->region))
		return;
	job->worker_policy = region_bind(job->region, false) == 0;
	if (!job->worker_policy)
		region_bind(job->region, true);	/* the extents unbound before the failure */
}

void crews_policy_worker(struct prealloc_job *job, const struct node_crew *crew)
{
	int r = job->worker_policy ? thread_bind(crew->node) : 0;

	if (r < 0)
		job_fail(job, r, crew->node, 0);
}

void crews_policy_end(struct prealloc_job *job)
{
	int r = job->worker_policy ? region_bind(job->region, true) : 0;

	job->worker_policy = false;	/* once: before the check phase, or at the end */
	if (r < 0)
		job_fail(job, r, -1, 0);
}
