/* SPDX-License-Identifier: MIT */
/*
 * A job's check phase: where its pages are, counted into each node's crew
 * (4K pages: each worker its own chunks from pagemap, where page frames
 * can be read; else all at once from numa_maps when the mappings line up
 * with the extents, else chunk by chunk with move_pages), the bytes huge pages map, and
 * whether each chunk reads back as zero. The reading itself is
 * memory/placement.c's.
 */
#include <stdatomic.h>

#include "engine.h"

/* Placement is counted in pages of this size: THP may be split, so 4K there. */
static uint64_t placement_step(const struct prealloc_job *job)
{
	return job->backing == PREALLOC_BACKING_ANON_THP ? PREALLOC_PAGE_4K : job->page_size;
}

/* The crew of the region extent holding [first, last) (region offsets), NULL if none. */
static struct node_crew *extent_crew(struct prealloc_job *job, uint64_t first, uint64_t last,
				     bool *ret_straddles)
{
	struct prealloc_region *reg = job->region;
	unsigned int e;

	*ret_straddles = false;
	for (e = 0; e < reg->nr_extents; e++)
		if (reg->extents[e].offset <= first &&
		    last <= reg->extents[e].offset + reg->extents[e].length)
			break;
	if (e == reg->nr_extents) {
		*ret_straddles = true;
		return NULL;
	}
	for (unsigned int p = 0; p < job->nr_crews; p++)
		if (reg->extents[e].node >= 0 && job->crews[p].node == reg->extents[e].node)
			return &job->crews[p];
	return NULL;
}

/* placement_scan callback: one mapping's per-node counts go to its extent's crew. */
static int scan_mapping(void *arg, uint64_t start, uint64_t end, uint64_t unit,
			const uint64_t *counts)
{
	struct prealloc_job *job = arg;
	uint64_t base = (uintptr_t)job->addr, step = placement_step(job), on, all = 0;
	bool straddles;
	struct node_crew *crew = extent_crew(job, start - base, end - base, &straddles);

	if (straddles)
		return -ENOTSUP;	/* a mapping across extents: count page by page */
	if (!crew)
		return 0;		/* node -1: not resident, never counted */
	for (int n = 0; n < PREALLOC_MAX_NODES; n++)
		all += counts[n];
	on = counts[crew->node] * unit / step;
	atomic_fetch_add(&crew->on, on);
	atomic_fetch_add(&crew->off, all * unit / step - on);
	return 0;
}

/*
 * Counts every crew's pages at once from numa_maps, which is ~5x cheaper
 * than move_pages per page. On any mismatch the counts are reset and the
 * workers fall back to pagemap or move_pages chunk by chunk.
 */
static void placement_scan_job(struct prealloc_job *job)
{
	uint64_t step = placement_step(job);
	/* A caller's mapping may be anything: numa_maps, else move_pages. */
	bool pagemap = step == PREALLOC_PAGE_4K && job->backing != PREALLOC_BACKING_MAPPED &&
		       placement_pagemap_ok();

	/*
	 * 4K pages of our own mappings (anonymous and shmem): the workers read
	 * their own chunks' frames, all at once (pagemap.c). 2 GiB of 4K shmem:
	 * 6 ms after the last store at 2 threads, 11 at 1, where the numa_maps
	 * walk took 10-13 ms after it. Not THP: numa_maps counts a huge page in
	 * one step (0.1 ms for 2 GiB), pagemap writes 512 entries (1.5 ms).
	 */
	if (pagemap && !job->region->thp) {
		job->placement_pagemap = true;
		return;
	}
	if (placement_scan(job->addr, job->region->length, scan_mapping, job) < 0) {
		for (unsigned int p = 0; p < job->nr_crews; p++) {
			atomic_store(&job->crews[p].on, 0);
			atomic_store(&job->crews[p].off, 0);
		}
		job->placement_pagemap = pagemap;
		return;
	}
	for (unsigned int p = 0; p < job->nr_crews; p++) {
		struct node_crew *crew = &job->crews[p];
		uint64_t pages = crew->placed_bytes / step, seen = crew->on + crew->off;

		atomic_store(&crew->missing, pages > seen ? pages - seen : 0);
	}
	job->placement_scanned = true;
}

/* huge_scan callback: a THP mapping's huge bytes go to its extent's crew. */
static int huge_mapping(void *arg, uint64_t start, uint64_t end, uint64_t huge)
{
	struct prealloc_job *job = arg;
	uint64_t base = (uintptr_t)job->addr;
	bool straddles;
	struct node_crew *crew = extent_crew(job, start - base, end - base, &straddles);

	if (crew)
		atomic_fetch_add(&crew->huge_bytes, huge);
	return 0;
}

/*
 * Bytes mapped by huge pages: smaps for THP regions (anonymous THP carries
 * a 2M page_size, yet only smaps says what THP really maps), all of them
 * for hugetlb, none for 4K. smaps walks every page table of the process:
 * for 2 GiB of 4K shmem it took 10-13 ms of a 0.44 s populate, to count
 * nothing, so no other region reads it.
 */
static void huge_scan_job(struct prealloc_job *job)
{
	if (job->region->thp) {
		huge_scan(job->addr, job->region->length, huge_mapping, job);
		return;
	}
	if (job->page_size > PREALLOC_PAGE_4K)
		for (unsigned int p = 0; p < job->nr_crews; p++)
			atomic_store(&job->crews[p].huge_bytes, job->crews[p].bytes);
}

void check_scan_job(struct prealloc_job *job)
{
	/* Bound again first: unbound extents' mappings merge, and numa_maps could not split them. */
	crews_policy_end(job);
	if (!(job->opts.flags & PREALLOC_JOB_NO_PLACEMENT))
		placement_scan_job(job);
	huge_scan_job(job);
}

struct zero_call {
	const uint8_t *p;
	uint64_t len, nz;
};

static int zero_run(void *arg)
{
	struct zero_call *z = arg;

	z->nz = zero_check(z->p, z->len);
	return 0;
}

/*
 * [offset, offset + len) of the region read back for zeroes, the lowest
 * non-zero offset kept in crew; a SIGBUS (the file shrank) fails at the
 * page that faulted (*ret_at).
 */
static int zero_range(struct prealloc_job *job, struct node_crew *crew, uint64_t offset,
		      uint64_t len, uint64_t *ret_at)
{
	struct zero_call z = { job->addr + offset, len, len };
	uint64_t fault = 0;
	int r;

	r = sigbus_guarded(job->addr + offset, len, zero_run, &z, &fault);
	if (r < 0) {
		*ret_at = offset + ALIGN_DOWN(fault, job->page_size);
		return r;
	}
	if (z.nz < len) {
		uint64_t want = offset + z.nz + 1, cur = atomic_load(&crew->nonzero);

		while ((cur == 0 || want < cur) &&
		       !atomic_compare_exchange_weak(&crew->nonzero, &cur, want))
			;
	}
	return 0;
}

/*
 * Read back in the same worker right after each step is faulted in, where
 * the check phase made a second pass over the whole mapping: what the
 * kernel's zeroing left in the caches is read from there. On the Zen 2
 * guest of issue 52 (no ERMS, kernel 6.18): 4 GiB of 2M pages populated and
 * verified in 0.288 s against 0.360 s, the populate alone 0.17; 0.218 s
 * once the read went through the AVX2 zero scan (docs/warm.md).
 */
int check_fused_piece(struct prealloc_job *job, struct node_crew *crew, const struct job_op *op,
		      void *state, uint64_t offset, uint64_t len, uint64_t *ret_at)
{
	uint64_t step = MAX(job->page_size, JOB_FUSED_STEP);

	for (uint64_t off = 0; off < len; off += step) {
		uint64_t n = MIN(step, len - off);
		int r = op->piece(state, job->addr + offset + off, n);

		if (r < 0) {
			*ret_at = offset + off;
			return r;
		}
		r = zero_range(job, crew, offset + off, n, ret_at);
		if (r < 0)
			return r;
	}
	return 0;
}

int check_chunk(struct prealloc_job *job, struct node_crew *crew, const struct job_chunk *c,
		uint64_t *ret_at)
{
	uint8_t *p = job->addr + c->offset;
	/* zero_fused: read back already, as the op went. */
	bool zeroes = !job->zero_fused && ((job->opts.flags & PREALLOC_JOB_VERIFY) ||
					   job->opts.op == PREALLOC_OP_VERIFY);
	int r;

	if (c->placed && !(job->opts.flags & PREALLOC_JOB_NO_PLACEMENT) &&
	    !job->placement_scanned) {
		uint64_t on = 0, off = 0, missing = 0;

		r = job->placement_pagemap
			    ? placement_pagemap(p, c->length, crew->node, &on, &off, &missing)
			    : -ENOENT;
		if (r == -ENOENT)
			r = placement_query(p, c->length, placement_step(job), crew->node, &on,
					    &off, &missing);
		if (r < 0) {
			*ret_at = c->offset;
			return r;
		}
		atomic_fetch_add(&crew->on, on);
		atomic_fetch_add(&crew->off, off);
		atomic_fetch_add(&crew->missing, missing);
	}
	/* A SIGBUS reading back (the file shrank) fails the job at the page that faulted. */
	return zeroes ? zero_range(job, crew, c->offset, c->length, ret_at) : 0;
}
