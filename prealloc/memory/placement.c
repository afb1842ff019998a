/* SPDX-License-Identifier: MIT */
/*
 * Where pages are, and whether memory reads as zero. Two ways to learn
 * placement: /proc/self/numa_maps, where the kernel counts a whole mapping's
 * pages per node in one walk, and move_pages, asked page by page (batched),
 * for ranges that do not line up with whole mappings.
 */
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"
#include "engine.h"

#define QUERY_BATCH 1024

int placement_query(uint8_t *addr, uint64_t len, uint64_t page_size, int node,
		    uint64_t *ret_on, uint64_t *ret_off, uint64_t *ret_missing)
{
	void *pages[QUERY_BATCH];
	int status[QUERY_BATCH];
	uint64_t on = 0, off = 0, missing = 0;
	uint64_t npages = len / page_size;

	for (uint64_t done = 0; done < npages;) {
		unsigned int n = (unsigned int)MIN(npages - done, QUERY_BATCH);

		for (unsigned int i = 0; i < n; i++)
			pages[i] = addr + (done + i) * page_size;
		/* nodes == NULL: only report where each page is. */
		if (move_pages(0, n, pages, NULL, status, 0) < 0)
			return -errno;
		for (unsigned int i = 0; i < n; i++) {
			if (status[i] == node)
				on++;
			else if (status[i] >= 0)
				off++;
			else
				missing++;
		}
		done += n;
	}
	*ret_on += on;
	*ret_off += off;
	*ret_missing += missing;
	return 0;
}

uint64_t zero_check(const uint8_t *addr, uint64_t len)
{
	uint64_t i = 0;

	/* 64 bytes at a time; the compiler vectorises the OR. */
	for (; i + 64 <= len; i += 64) {
		const uint64_t *q = (const uint64_t *)(addr + i);
		uint64_t acc = 0;

		for (int k = 0; k < 8; k++)
			acc |= q[k];
		if (acc)
			break;
	}
	for (; i < len; i++)
		if (addr[i])
			return i;
	return len;
}

struct vma_span {
	uint64_t start, end;
};

/* The whole text of a /proc file. */
static char *slurp(const char *path)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	FILE *f = fopen(path, "re");

	if (!buf || !f) {
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	for (;;) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		len += n;
		if (len < cap - 1)
			break;
		char *bigger = realloc(buf, cap * 2);

		if (!bigger) {
			free(buf);
			fclose(f);
			return NULL;
		}
		buf = bigger;
		cap *= 2;
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

/* Mappings in [lo, hi) from /proc/self/maps; they must tile it exactly. */
static int spans_in(uint64_t lo, uint64_t hi, struct vma_span **ret, size_t *ret_n)
{
	char *maps = slurp("/proc/self/maps"), *line, *save = NULL;
	struct vma_span *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t expect = lo;
	int r = 0;

	if (!maps)
		return -ENOTSUP;
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, e;

		if (sscanf(line, "%llx-%llx", &s, &e) != 2 || e <= lo || s >= hi)
			continue;
		if (s != expect) {	/* straddles the start, or a gap */
			r = -ENOTSUP;
			break;
		}
		if (n == cap) {
			struct vma_span *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = (struct vma_span){ s, e };
		expect = e;
	}
	free(maps);
	if (!r && expect != hi)
		r = -ENOTSUP;	/* straddles the end, or ends short */
	if (r) {
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int placement_scan(uint8_t *addr, uint64_t len, placement_fn fn, void *arg)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len;
	uint64_t *counts = NULL;
	struct vma_span *v = NULL;
	char *nm = NULL, *line, *save = NULL;
	size_t n = 0, seen = 0;
	int r;

	r = spans_in(lo, hi, &v, &n);
	if (r < 0)
		return r;
	counts = calloc(PREALLOC_MAX_NODES, sizeof(*counts));
	nm = slurp("/proc/self/numa_maps");
	if (!counts || !nm) {
		r = -ENOTSUP;
		goto out;
	}
	for (line = strtok_r(nm, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, kb = 4;
		char *tok, *tsave = NULL;
		size_t i;

		if (sscanf(line, "%llx", &start) != 1 || start < lo || start >= hi)
			continue;
		for (i = 0; i < n && v[i].start != start; i++)
			;
		if (i == n) {	/* the mappings changed between the two reads */
			r = -EAGAIN;
			goto out;
		}
		memset(counts, 0, PREALLOC_MAX_NODES * sizeof(*counts));
		for (tok = strtok_r(line, " ", &tsave); tok; tok = strtok_r(NULL, " ", &tsave)) {
			unsigned long long node, pages;
			char tail;

			if (sscanf(tok, "N%llu=%llu%c", &node, &pages, &tail) == 2 &&
			    node < PREALLOC_MAX_NODES)
				counts[node] = pages;
			else
				sscanf(tok, "kernelpagesize_kB=%llu", &kb);
		}
		r = fn(arg, v[i].start, v[i].end, (uint64_t)kb << 10, counts);
		if (r < 0)
			goto out;
		seen++;
	}
	r = seen == n ? 0 : -EAGAIN;
out:
	free(nm);
	free(counts);
	free(v);
	return r;
}

/* The smaps fields that count huge-page-mapped bytes, in kB. */
static const char *const huge_fields[] = { "AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:" };

/* Adds a smaps line's huge kB; notes VmFlags hg. */
static void huge_line(const char *line, uint64_t *huge, bool *hg)
{
	unsigned long long kb;

	for (size_t f = 0; f < ARRAY_SIZE(huge_fields); f++) {
		size_t n = strlen(huge_fields[f]);

		if (!strncmp(line, huge_fields[f], n) && sscanf(line + n, "%llu", &kb) == 1)
			*huge += (uint64_t)kb << 10;
	}
	if (!strncmp(line, "VmFlags:", 8) && strstr(line + 8, " hg"))
		*hg = true;
}

int huge_scan(uint8_t *addr, uint64_t len, huge_fn fn, void *arg)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len, start = 0, end = 0, huge = 0;
	char *sm = slurp("/proc/self/smaps"), *line, *save = NULL;
	bool in = false, hg = false;
	int r = 0;

	if (!sm)
		return -ENOTSUP;
	for (line = strtok_r(sm, "\n", &save); line && r == 0; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, e;
		char c;

		/* A mapping's header: "start-end perms ..."; no field name parses so. */
		if (sscanf(line, "%llx-%llx %c", &s, &e, &c) == 3) {
			in = e > lo && s < hi;
			start = MAX(s, lo);
			end = MIN(e, hi);
			huge = 0;
			hg = false;
			continue;
		}
		if (!in)
			continue;
		huge_line(line, &huge, &hg);
		/* VmFlags is a mapping's last field. */
		if (!strncmp(line, "VmFlags:", 8))
			r = fn(arg, start, end, huge, hg);
	}
	free(sm);
	return r;
}

/* ---- the job's check phase ------------------------------------------------ */

/* Placement is counted in pages of this size: THP may be split, so 4K there. */
static uint64_t placement_step(const struct prealloc_job *job)
{
	return job->backing == PREALLOC_BACKING_ANON_THP ? PREALLOC_PAGE_4K : job->page_size;
}

/* The pool of the region extent holding [first, last) (region offsets), NULL if none. */
static struct node_pool *extent_pool(struct prealloc_job *job, uint64_t first, uint64_t last,
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
	for (unsigned int p = 0; p < job->nr_pools; p++)
		if (reg->extents[e].node >= 0 && job->pools[p].node == reg->extents[e].node)
			return &job->pools[p];
	return NULL;
}

/* placement_scan callback: one mapping's per-node counts go to its extent's pool. */
static int scan_mapping(void *arg, uint64_t start, uint64_t end, uint64_t unit,
			const uint64_t *counts)
{
	struct prealloc_job *job = arg;
	uint64_t base = (uintptr_t)job->addr, step = placement_step(job), on, all = 0;
	bool straddles;
	struct node_pool *pool = extent_pool(job, start - base, end - base, &straddles);

	if (straddles)
		return -ENOTSUP;	/* a mapping across extents: count page by page */
	if (!pool)
		return 0;		/* node -1: not resident, never counted */
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
	uint64_t step = placement_step(job);

	if (placement_scan(job->addr, job->region->length, scan_mapping, job) < 0) {
		for (unsigned int p = 0; p < job->nr_pools; p++) {
			atomic_store(&job->pools[p].on, 0);
			atomic_store(&job->pools[p].off, 0);
		}
		return;
	}
	for (unsigned int p = 0; p < job->nr_pools; p++) {
		struct node_pool *pool = &job->pools[p];
		uint64_t pages = pool->placed_bytes / step, seen = pool->on + pool->off;

		atomic_store(&pool->missing, pages > seen ? pages - seen : 0);
	}
	job->placement_scanned = true;
}

/* huge_scan callback: a THP mapping's huge bytes go to its extent's pool. */
static int huge_mapping(void *arg, uint64_t start, uint64_t end, uint64_t huge, bool madv_huge)
{
	struct prealloc_job *job = arg;
	uint64_t base = (uintptr_t)job->addr;
	bool straddles;
	struct node_pool *pool = extent_pool(job, start - base, end - base, &straddles);

	/* anon THP always; shmem (FILE/MEMFD) only when made with PREALLOC_REGION_THP. */
	if (pool && (job->backing == PREALLOC_BACKING_ANON_THP || madv_huge))
		atomic_fetch_add(&pool->huge_bytes, huge);
	return 0;
}

/* Bytes mapped by huge pages: all of them for hugetlb, smaps for THP, none for 4K. */
static void huge_scan_job(struct prealloc_job *job)
{
	if (job->page_size > PREALLOC_PAGE_4K) {
		for (unsigned int p = 0; p < job->nr_pools; p++)
			atomic_store(&job->pools[p].huge_bytes, job->pools[p].bytes);
		return;
	}
	if (job->backing == PREALLOC_BACKING_ANON || job->backing == PREALLOC_BACKING_MAPPED)
		return;
	huge_scan(job->addr, job->region->length, huge_mapping, job);
}

void check_scan_job(struct prealloc_job *job)
{
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

void check_chunk(struct prealloc_job *job, struct node_pool *pool, const struct job_chunk *c)
{
	uint8_t *p = job->addr + c->offset;
	bool zeroes = (job->opts.flags & PREALLOC_JOB_VERIFY) || job->opts.op == PREALLOC_OP_VERIFY;
	struct zero_call z = { p, c->length, c->length };
	uint64_t fault = 0;
	int r;

	if (c->placed && !(job->opts.flags & PREALLOC_JOB_NO_PLACEMENT) &&
	    !job->placement_scanned) {
		uint64_t on = 0, off = 0, missing = 0;

		r = placement_query(p, c->length, placement_step(job), pool->node, &on, &off,
				    &missing);
		if (r < 0) {
			job_fail(job, r, pool->node, c->offset);
			return;
		}
		atomic_fetch_add(&pool->on, on);
		atomic_fetch_add(&pool->off, off);
		atomic_fetch_add(&pool->missing, missing);
	}
	if (!zeroes)
		return;
	/* A SIGBUS reading back (the file shrank) fails the job at the page that faulted. */
	r = sigbus_guarded(p, c->length, zero_run, &z, &fault);
	if (r < 0) {
		job_fail(job, r, pool->node, c->offset + ALIGN_DOWN(fault, job->page_size));
		return;
	}
	if (z.nz < c->length) {
		uint64_t want = c->offset + z.nz + 1, cur = atomic_load(&pool->nonzero);

		while ((cur == 0 || want < cur) &&
		       !atomic_compare_exchange_weak(&pool->nonzero, &cur, want))
			;
	}
}
