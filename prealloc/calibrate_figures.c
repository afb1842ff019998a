/* SPDX-License-Identifier: MIT */
/*
 * What prealloc_calibrate's figures say, pure: the median, auto's paired
 * ratio to each kernel, the order the kernels run in per repetition, and
 * the calibration built from the medians (calibrate_run.c measures them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double calibrate_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double calibrate_paired_ratio(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
			      unsigned int rep, unsigned int chosen)
{
	double worst = 1, r[PREALLOC_CALIBRATE_REPEAT_MAX];

	for (unsigned int k = 0; k < nk; k++) {
		for (unsigned int i = 0; i < rep; i++)
			r[i] = s[chosen][i] / s[k][i];
		worst = MIN(worst, calibrate_median(r, rep));
	}
	return worst;
}

/* Fisher-Yates over an LCG seeded by the repetition. */
void calibrate_order(unsigned int *order, unsigned int n, unsigned int seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (unsigned int k = 0; k < n; k++)
		order[k] = k;
	for (unsigned int k = n; k > 1; k--) {
		unsigned int j, t;

		x = x * 1664525u + 1013904223u;
		j = (x >> 16) % k;
		t = order[k - 1];
		order[k - 1] = order[j];
		order[j] = t;
	}
}

static unsigned int best_of(unsigned int nk, const double *gbps)
{
	unsigned int best = 0;

	for (unsigned int k = 1; k < nk; k++)
		if (gbps[k] > gbps[best])
			best = k;
	return best;
}

/*
 * The largest footprints come from one worker or many alike, so take the
 * kernel whose worst ratio to the best over the thread counts is highest:
 * one never far behind, rather than the 2% winner at full threads that
 * trails by 9% on one.
 */
static unsigned int most_even(const struct prealloc_calibrate_result *res)
{
	unsigned int best = 0;
	double best_score = -1;

	for (unsigned int k = 0; k + 1 < res->nr_kernels; k++) {
		double score = 1;

		for (unsigned int t = 0; t < res->nr_threads; t++) {
			const double *g = res->threads_gbps[t];
			double top = g[best_of(res->nr_kernels - 1, g)];

			if (top > 0)
				score = MIN(score, g[k] / top);
		}
		if (score > best_score) {
			best_score = score;
			best = k;
		}
	}
	return best;
}

/*
 * Classes: each measured size's winner covers footprints up to the
 * geometric middle with the next size; most_even() covers the rest.
 * Neighbours with one winner merge.
 */
void calibrate_build(struct prealloc_calibrate_result *res)
{
	struct prealloc_calibration_class all[PREALLOC_CALIBRATE_SIZES + 1];
	struct prealloc_calibration *cal = &res->calibration;
	unsigned int n = 0, nk = res->nr_kernels - 1, top = res->nr_threads - 1, best;

	for (unsigned int i = 0; i < res->nr_sizes; i++) {
		uint64_t next = i + 1 < res->nr_sizes ? res->sizes[i + 1] : res->large_size;

		best = best_of(nk, res->size_gbps[i]);
		next = MAX(next, res->sizes[i]);
		all[n].max_bytes = (uint64_t)sqrt((double)res->sizes[i] * (double)next);
		all[n].gbps = res->size_gbps[i][best];
		snprintf(all[n].kernel, sizeof(all[n].kernel), "%s", res->kernels[best]);
		if (!n || all[n].max_bytes > all[n - 1].max_bytes)
			n++;
	}
	best = most_even(res);
	all[n].max_bytes = UINT64_MAX;
	all[n].gbps = res->threads_gbps[top][best];
	snprintf(all[n].kernel, sizeof(all[n].kernel), "%s", res->kernels[best]);
	n++;
	memset(cal, 0, sizeof(*cal));
	cal->size = sizeof(*cal);
	for (unsigned int i = 0; i < n; i++) {
		struct prealloc_calibration_class *last =
			cal->nr_classes ? &cal->classes[cal->nr_classes - 1] : NULL;

		if (last && !strcmp(last->kernel, all[i].kernel)) {
			last->max_bytes = all[i].max_bytes;
			last->gbps = MAX(last->gbps, all[i].gbps);
		} else if (cal->nr_classes < PREALLOC_CALIBRATION_CLASSES) {
			cal->classes[cal->nr_classes++] = all[i];
		}
	}
	cal->classes[cal->nr_classes - 1].max_bytes = UINT64_MAX;
}
