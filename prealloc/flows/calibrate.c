/* SPDX-License-Identifier: MIT */
/*
 * prealloc_calibrate: measure every clear kernel asked for, and auto as it
 * runs, single-threaded by size and at a large size by thread count,
 * through the job engine, and build the calibration (clear/calibration.c stores
 * it; clear/calibration_figures.c holds the arithmetic). The buffer is written once
 * before any timing (in a nested VM the host faults memory in on first
 * touch); every timed pass starts from the same state: drained from the
 * caches, then written by ordinary stores, on the CPU that clears it; the
 * kernels run in a different order in each repetition; each figure is the
 * median of the repetitions, and how close auto comes to the best is
 * judged within each repetition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "flows.h"

#define NK PREALLOC_CALIBRATE_KERNELS
/* Each sample clears at least this much, in passes over small buffers. */
#define SAMPLE_BYTES (UINT64_C(64) << 20)

struct bench {
	struct prealloc_ctx *ctx;
	struct prealloc_calibrate_opts o;
	struct prealloc_calibrate_result *res;
	uint8_t *buf;
	int node;		/* the workers' node: the first of the default nodes */
	const char *drain;	/* the NT kernel that drains the buffer before each pass; NULL: none */
	/* Every sample, GB/s: the sizes' points first, then the thread counts'. */
	double samples[PREALLOC_CALIBRATE_SIZES + PREALLOC_CALIBRATE_THREADS][NK]
		      [PREALLOC_CALIBRATE_REPEAT_MAX];
	unsigned int reps[PREALLOC_CALIBRATE_SIZES + PREALLOC_CALIBRATE_THREADS]; /* per point */
	struct prealloc_calibrate_result figures;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return x < y ? -1 : x > y;
}

/*
 * One pass of kernel over region (size bytes) by threads workers, one chunk
 * each, as ONE job: its seconds run from the gate opening to the last
 * worker, so thread creation and the job's setup are not timed. Workers
 * are fixed: worker i runs on the node's i-th CPU and takes chunk i, so
 * each chunk is cleared on the CPU that wrote it in the pass before.
 * Seconds, <0 on error.
 */
static double timed_pass(struct prealloc_region *region, const char *kernel, uint64_t size,
			 unsigned int threads, uint64_t *cached)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_CLEAR,
		.flags = PREALLOC_JOB_NO_PLACEMENT,
		.threads = threads,
		.chunk_size = ALIGN_UP(size / threads, PREALLOC_PAGE_4K),
		.clear_kernel = kernel,
	};
	const struct job_spec spec = { .fixed_workers = true };
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_job *job;
	int r;

	r = job_start_spec(region, &jo, &spec, &job);
	if (r < 0)
		return -1;
	r = prealloc_job_wait(job);
	if (r == 0)
		r = prealloc_job_report(job, &rep);
	prealloc_job_free(job);
	if (cached)
		*cached += rep.clear_cached_bytes;
	return r == 0 && rep.seconds > 0 ? rep.seconds : -1;
}

/*
 * One sample, GB/s (<0 on error): the memory a clear meets in use is memory
 * that was just written (a guest's, a previous user's), so each timed pass
 * follows untimed passes by the same workers: one of NT stores (drain,
 * when an NT kernel is built: it takes the buffer out of the caches
 * whatever the sample before left there), then res->writes of ordinary
 * stores (1: written once since it left the caches; 2: written again,
 * which an Intel L3 keeps as reused while it drops what was written once). The
 * sample sums such passes until SAMPLE_BYTES are cleared. Without the
 * drain each kernel would meet the cache state the sample before it left
 * (docs/kernels.md, "Calibration", has what that did). *cached counts the
 * timed passes' bytes cleared by cached stores.
 */
static double calibrate_sample(const struct bench *b, struct prealloc_region *region,
			       const char *kernel, uint64_t size, unsigned int threads,
			       uint64_t *cached)
{
	unsigned int rounds = (unsigned int)MAX(UINT64_C(1), SAMPLE_BYTES / size);
	double seconds = 0;

	for (unsigned int i = 0; i < rounds; i++) {
		double t;

		if (b->drain && timed_pass(region, b->drain, size, threads, NULL) < 0)
			return -1;
		for (unsigned int w = 0; w < b->res->writes; w++)
			if (timed_pass(region, "c", size, threads, NULL) < 0)
				return -1;
		t = timed_pass(region, kernel, size, threads, cached);
		if (t < 0)
			return -1;
		seconds += t;
	}
	return (double)size * rounds / seconds / 1e9;
}

/*
 * What auto picks for a point, size bytes (page aligned) over threads
 * workers: as a ctx with no calibration runs it (cal NULL: the rules, and
 * the ranking measured here over the probe limit) or under cal.
 */
static struct clear_choice point_choice(const struct bench *b, uint64_t size, unsigned int threads,
					const struct clear_calibration *cal)
{
	return clear_select_auto(b->ctx, ALIGN_UP(size / threads, PREALLOC_PAGE_4K), threads, cal,
				 NULL, 0);
}

/*
 * Medians of the samples per kernel at size with threads workers, into
 * gbps; the samples stay in s (per kernel, in the order of the
 * repetitions), *ret_rep how many; ret_auto (24 bytes): what auto ran;
 * *auto_cached: the share of auto's timed bytes its cached kernel cleared.
 */
static int measure(struct bench *b, uint64_t size, unsigned int threads,
		   double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], double *gbps, char *ret_auto,
		   double *auto_cached, unsigned int *ret_rep)
{
	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_MAPPED,
		.flags = PREALLOC_REGION_NO_BIND,
		.addr = b->buf,
		.length = ALIGN_DOWN(size, PREALLOC_PAGE_4K),
		.nr_nodes = 1,
		.nodes = &b->node,
	};
	unsigned int nk = b->res->nr_kernels, rep = 0;
	uint64_t cached = 0, rounds = MAX(UINT64_C(1), SAMPLE_BYTES / ro.length);
	struct prealloc_region *region;
	const char *name[NK];
	int r;

	/* The last column is auto: what the built-in rules run for this point. */
	for (unsigned int k = 0; k + 1 < nk; k++)
		name[k] = b->res->kernels[k];
	name[nk - 1] = point_choice(b, ro.length, threads, NULL).name;
	snprintf(ret_auto, 24, "%s", name[nk - 1]);
	r = prealloc_region_new(b->ctx, &ro, &region);
	if (r < 0)
		return r;
	/*
	 * Each repetition runs the kernels in its own order: a pass leaves the
	 * cache's replacement state behind, which the drain does not undo, so
	 * no kernel may always follow the same one (docs/kernels.md,
	 * "Calibration").
	 */
	do {
		unsigned int order[NK];
		bool failed = false;

		calibration_order(order, nk, rep);
		for (unsigned int k = 0; k < nk; k++) {
			s[order[k]][rep] = calibrate_sample(b, region, name[order[k]], ro.length,
							    threads,
							    order[k] == nk - 1 ? &cached : NULL);
			failed |= s[order[k]][rep] < 0;
		}
		rep++;
		if (failed)	/* calibration_medians() below says -EIO */
			break;
	} while (!calibration_enough((const double (*)[PREALLOC_CALIBRATE_REPEAT_MAX])s, nk, rep,
				     b->res->repeat, b->res->repeat_max));
	prealloc_region_free(region);
	*ret_rep = rep;
	*auto_cached = (double)cached / ((double)ro.length * (double)rounds * rep);
	return calibration_medians((const double (*)[PREALLOC_CALIBRATE_REPEAT_MAX])s, nk, rep, gbps);
}

/*
 * chosen's paired ratio to the best at one point (b->samples' index, its
 * medians gbps): auto's own column (the last) when chosen is what auto ran
 * there, as timed; else chosen's column; 0 when neither.
 */
static double chosen_ratio(const struct bench *b, unsigned int point, const double *gbps,
			   const char *chosen, const char *auto_ran)
{
	unsigned int nk = b->res->nr_kernels, best = calibration_best(nk - 1, gbps);

	if (!strcmp(chosen, auto_ran))
		return calibration_paired_ratio(b->samples[point], b->reps[point], nk - 1, best,
						NULL);
	for (unsigned int k = 0; k + 1 < nk; k++)
		if (!strcmp(b->res->kernels[k], chosen))
			return calibration_paired_ratio(b->samples[point], b->reps[point], k, best,
							NULL);
	return 0;
}

/* One point's pick under cal (ran: by the rules), and how well each did. */
static void mark_point(struct bench *b, unsigned int point, uint64_t size, unsigned int threads,
		       const double *gbps, const struct clear_calibration *cal, const char *ran,
		       char *ret_cal, double *ret_auto_ratio, double *ret_cal_ratio)
{
	uint64_t len = ALIGN_DOWN(size, PREALLOC_PAGE_4K);	/* as measure() cut it */

	snprintf(ret_cal, 24, "%s", point_choice(b, len, threads, cal).name);
	*ret_auto_ratio = chosen_ratio(b, point, gbps, ran, ran);
	*ret_cal_ratio = chosen_ratio(b, point, gbps, ret_cal, ran);
}

/* What automatic selection picks at each point under cal, and how well it and the rules did. */
static void mark_choices(struct bench *b)
{
	struct prealloc_calibrate_result *res = b->res;
	const struct cpu_id *cpu = &b->ctx->cpu;
	struct clear_calibration cal = { .family = cpu->family, .model = cpu->model };

	snprintf(cal.vendor, sizeof(cal.vendor), "%s", cpu->vendor);
	snprintf(cal.model_name, sizeof(cal.model_name), "%s", cpu->model_name);
	cal.nr_classes = res->calibration.nr_classes;
	for (unsigned int i = 0; i < cal.nr_classes; i++) {
		cal.classes[i].max_bytes = res->calibration.classes[i].max_bytes;
		memcpy(cal.classes[i].kernel, res->calibration.classes[i].kernel, 24);
	}
	for (unsigned int i = 0; i < res->nr_sizes; i++)
		mark_point(b, i, res->sizes[i], 1, res->size_gbps[i], &cal, res->size_auto[i],
			   res->size_calibrated[i], &res->size_auto_ratio[i],
			   &res->size_calibrated_ratio[i]);
	for (unsigned int i = 0; i < res->nr_threads; i++)
		mark_point(b, PREALLOC_CALIBRATE_SIZES + i, res->large_size, res->threads[i],
			   res->threads_gbps[i], &cal, res->threads_auto[i],
			   res->threads_calibrated[i], &res->threads_auto_ratio[i],
			   &res->threads_calibrated_ratio[i]);
}

/* Kernels: the ones named (each known and usable here), else every usable one. */
static int resolve_kernels(struct bench *b)
{
	struct prealloc_calibrate_result *res = b->res;

	res->bad_kernel = -1;
	for (unsigned int i = 0; i < clear_kernels_count && !b->drain; i++)
		if (clear_kernels[i].nontemporal &&
		    clear_kernel_usable(&clear_kernels[i], b->ctx->cpu.features))
			b->drain = clear_kernels[i].name;
	for (unsigned int i = 0; i < clear_kernels_count && !b->o.nr_kernels; i++)
		if (clear_kernel_usable(&clear_kernels[i], b->ctx->cpu.features) &&
		    res->nr_kernels + 1 < NK)
			snprintf(res->kernels[res->nr_kernels++], 24, "%s", clear_kernels[i].name);
	for (unsigned int i = 0; i < b->o.nr_kernels; i++) {
		const struct clear_kernel *k = clear_kernel_find(b->o.kernels[i]);

		res->bad_kernel = (int)i;
		if (!k)
			return -ENOENT;
		if (!clear_kernel_usable(k, b->ctx->cpu.features))
			return -EOPNOTSUPP;
		snprintf(res->kernels[res->nr_kernels++], 24, "%s", k->name);
	}
	res->bad_kernel = -1;
	if (!res->nr_kernels)
		return -EINVAL;
	/* Auto, timed as it runs: the rules' kernel, or the probe between two. */
	snprintf(res->kernels[res->nr_kernels++], 24, "auto");
	return 0;
}

/* Sizes and thread counts, defaulted and sorted; the buffer they need, capped. */
static int plan_points(struct bench *b)
{
	struct prealloc_calibrate_result *res = b->res;
	uint64_t llc = b->ctx->cpu.llc_bytes ? b->ctx->cpu.llc_bytes : UINT64_C(32) << 20;
	uint64_t avail = (uint64_t)sysconf(_SC_AVPHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t cap = avail / 2, top = MAX(MIN(8 * llc, cap), UINT64_C(1) << 20);
	/*
	 * Sizes start below the cached limit: a CPU that reports a large LLC
	 * it shares (a guest's 480 MiB) would otherwise start at 120 MiB, and
	 * a saved calibration would take NT for the small footprints too.
	 */
	uint64_t first = MAX(MIN(llc / 4, clear_cached_limit(llc) / 2), UINT64_C(1) << 20);
	unsigned int cpus = (unsigned int)CPU_COUNT(&b->ctx->allowed);

	res->nr_sizes = MIN(b->o.nr_sizes, (unsigned int)PREALLOC_CALIBRATE_SIZES);
	memcpy(res->sizes, b->o.sizes, sizeof(res->sizes));
	for (uint64_t s = first; !b->o.nr_sizes && res->nr_sizes < 6 && s <= top; s *= 2)
		res->sizes[res->nr_sizes++] = s;
	res->nr_threads = MIN(b->o.nr_threads, (unsigned int)PREALLOC_CALIBRATE_THREADS);
	memcpy(res->threads, b->o.threads, sizeof(res->threads));
	for (unsigned int t = 1; !b->o.nr_threads && t < cpus &&
				 res->nr_threads < PREALLOC_CALIBRATE_THREADS - 1; t *= 2)
		res->threads[res->nr_threads++] = t;
	if (!b->o.nr_threads)
		res->threads[res->nr_threads++] = MAX(MIN(cpus, 256u), 1u);
	for (unsigned int i = 0; i < res->nr_sizes; i++)
		if (res->sizes[i] < PREALLOC_PAGE_4K)
			return -EINVAL;
	for (unsigned int i = 0; i < res->nr_threads; i++)
		if (!res->threads[i] || res->threads[i] > 256)
			return -EINVAL;
	if (!res->nr_sizes || !res->nr_threads)
		return -EINVAL;
	qsort(res->sizes, res->nr_sizes, sizeof(res->sizes[0]), cmp_u64);
	qsort(res->threads, res->nr_threads, sizeof(res->threads[0]), cmp_uint);
	res->large_size = b->o.large_size ? b->o.large_size
					  : MAX(UINT64_C(1) << 30, res->sizes[res->nr_sizes - 1]);
	res->large_size = ALIGN_DOWN(MIN(res->large_size, cap), PREALLOC_PAGE_4K);
	res->buffer_bytes = MAX(res->large_size, res->sizes[res->nr_sizes - 1]);
	res->buffer_limit = cap;
	return res->buffer_bytes > cap ? -ENOMEM : 0;
}

/*
 * How noisy the machine was: per point and kernel, the interquartile range
 * of the samples over their median; the median of those.
 */
static void measure_spread(struct bench *b)
{
	struct prealloc_calibrate_result *res = b->res;
	unsigned int n = 0;
	double spreads[(PREALLOC_CALIBRATE_SIZES + PREALLOC_CALIBRATE_THREADS) * NK];
	double v[PREALLOC_CALIBRATE_REPEAT_MAX];

	for (unsigned int i = 0; i < res->nr_sizes + res->nr_threads; i++) {
		/* The sizes' points, then the thread counts' (see struct bench). */
		unsigned int p = i < res->nr_sizes ? i : PREALLOC_CALIBRATE_SIZES + i - res->nr_sizes;
		unsigned int rep = b->reps[p];

		for (unsigned int k = 0; k < res->nr_kernels; k++) {
			double mid;

			memcpy(v, b->samples[p][k], rep * sizeof(v[0]));
			mid = calibration_median(v, rep);
			spreads[n++] = (v[rep * 3 / 4] - v[rep / 4]) / mid;
		}
	}
	res->spread = n ? calibration_median(spreads, n) : 0;
}

/* Every point, single-threaded sizes first. */
static int measure_all(struct bench *b)
{
	struct prealloc_calibrate_result *res = b->res;
	int r = 0;

	for (unsigned int i = 0; i < res->nr_sizes && r == 0; i++)
		r = measure(b, res->sizes[i], 1, b->samples[i], res->size_gbps[i], res->size_auto[i],
			    &res->size_auto_cached[i], &b->reps[i]);
	for (unsigned int i = 0; i < res->nr_threads && r == 0; i++)
		r = measure(b, res->large_size, res->threads[i],
			    b->samples[PREALLOC_CALIBRATE_SIZES + i], res->threads_gbps[i],
			    res->threads_auto[i], &res->threads_auto_cached[i],
			    &b->reps[PREALLOC_CALIBRATE_SIZES + i]);
	for (unsigned int i = 0; i < res->nr_sizes; i++)
		res->size_repeat[i] = b->reps[i];
	for (unsigned int i = 0; i < res->nr_threads; i++)
		res->threads_repeat[i] = b->reps[PREALLOC_CALIBRATE_SIZES + i];
	return r;
}

EXPORT int prealloc_calibrate(struct prealloc_ctx *ctx, const struct prealloc_calibrate_opts *opts,
			      struct prealloc_calibrate_result *ret)
{
	struct prealloc_calibrate_result *res;
	struct bench *b;
	int r;

	if (!ctx || !opts || !ret || ret->size < sizeof(size_t))
		return -EINVAL;
	b = calloc(1, sizeof(*b));	/* 17 KiB of samples and figures: not on the stack */
	if (!b)
		return -ENOMEM;
	b->ctx = ctx;
	b->res = res = &b->figures;
	res->size = sizeof(*res);
	r = copy_sized_in(&b->o, sizeof(b->o), opts);
	if (r < 0)
		goto out;
	res->repeat = b->o.repeat ? b->o.repeat : PREALLOC_CALIBRATE_REPEAT_AUTO_MIN;
	res->repeat_max = b->o.repeat ? b->o.repeat : PREALLOC_CALIBRATE_REPEAT_AUTO_MAX;
	res->writes = b->o.writes ? b->o.writes : 1;
	if (res->repeat > PREALLOC_CALIBRATE_REPEAT_MAX || b->o.nr_kernels + 1 > NK ||
	    res->writes > PREALLOC_CALIBRATE_WRITES_MAX)
		r = -EINVAL;
	else if (prealloc_default_nodes(ctx, &b->node, 1) < 1)
		r = -ENODEV;
	if (r == 0)
		r = resolve_kernels(b);
	if (r == 0)
		r = plan_points(b);
	if (r < 0)
		goto out;
	b->buf = mmap(NULL, res->buffer_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	if (b->buf == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	/* Large pages like guest memory has, and every page faulted before timing. */
	madvise(b->buf, res->buffer_bytes, MADV_HUGEPAGE);
	memset(b->buf, 1, res->buffer_bytes);
	r = measure_all(b);
	munmap(b->buf, res->buffer_bytes);
	if (r < 0)
		goto out;
	measure_spread(b);
	calibration_build(res);
	mark_choices(b);
	if (b->o.flags & PREALLOC_CALIBRATE_SAVE) {
		r = prealloc_calibration_save(ctx, &res->calibration, b->o.path);
		res->saved = r == 0;
	}
out:
	copy_sized_out(ret, res, sizeof(*res));
	free(b);
	return r;
}
