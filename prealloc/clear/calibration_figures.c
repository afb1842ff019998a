/* SPDX-License-Identifier: MIT */
/*
 * What prealloc_calibrate's figures say, pure: the median, auto's paired
 * ratio to each kernel, the order the kernels run in per repetition, and
 * the calibration built from the medians (flows/calibrate.c measures them).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clear.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double calibration_median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(v[0]), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int calibration_medians(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
			unsigned int rep, double *gbps)
{
	double sorted[PREALLOC_CALIBRATE_REPEAT_MAX];
	int r = 0;

	for (unsigned int k = 0; k < nk; k++) {
		memcpy(sorted, s[k], rep * sizeof(sorted[0]));
		gbps[k] = calibration_median(sorted, rep);
		if (sorted[0] <= 0)
			r = -EIO;
	}
	return r;
}

/*
 * Against the best kernel only, not the lowest over every kernel: kernels
 * that run the same stores (glibc's memset is REP STOSB at these sizes)
 * would count the machine's noise once per twin. On the Xeon guest that
 * gave 0.93 where auto ran memset, with medians of 29.3 against REP
 * STOSB's 29.2.
 *
 * The standard error of a median of n samples is about 1.2533 sigma /
 * sqrt(n), sigma estimated as the interquartile range over 1.349, which
 * one repetition a neighbour disturbed does not inflate.
 */
double calibration_paired_ratio(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int rep,
				unsigned int chosen, unsigned int best, double *ret_error)
{
	double r[PREALLOC_CALIBRATE_REPEAT_MAX], mid;

	for (unsigned int i = 0; i < rep; i++)
		r[i] = s[chosen][i] / s[best][i];
	mid = calibration_median(r, rep);
	if (ret_error)
		*ret_error = rep < 4 || mid <= 0 ? 1 :
			1.2533 * (r[rep * 3 / 4] - r[rep / 4]) / 1.349 / sqrt((double)rep) / mid;
	return mid;
}

/*
 * On the Xeon guest one kernel's samples spread by 2-9 % in most cells (up
 * to 42 % written twice at 32-64 MiB, where the L3 the host shares
 * decides), and with 5 repetitions a run put auto under 0.95 in 1-3 of 8
 * runs per probed cell; a point that spreads little stops at the minimum.
 */
bool calibration_enough(const double (*s)[PREALLOC_CALIBRATE_REPEAT_MAX], unsigned int nk,
			unsigned int rep, unsigned int min, unsigned int max)
{
	double gbps[PREALLOC_CALIBRATE_KERNELS], error;

	if (rep >= max)
		return true;
	if (rep < min || nk < 2)
		return rep >= min;
	calibration_medians(s, nk - 1, rep, gbps);
	calibration_paired_ratio(s, rep, nk - 1, calibration_best(nk - 1, gbps), &error);
	return error <= PREALLOC_CALIBRATE_PRECISION;
}

/* Fisher-Yates over an LCG seeded by the repetition. */
void calibration_order(unsigned int *order, unsigned int n, unsigned int seed)
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

unsigned int calibration_best(unsigned int nk, const double *gbps)
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
			double top = g[calibration_best(res->nr_kernels - 1, g)];

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
 * Where auto ran a probe (between the cached and probe limits) and came
 * within PAIR_KEEP of the best kernel, the class keeps the probe: the best
 * kernel there won in the one cache state the bench made, and in the other
 * it can be 0.18-0.69 of the best (docs/kernels.md), while the probe cost
 * 0.7-2 % where one kernel plainly won.
 */
#define PAIR_KEEP 0.95

/* The winner at size i: the best kernel, or the probe auto ran there. */
static void size_winner(const struct prealloc_calibrate_result *res, unsigned int i,
			struct prealloc_calibration_class *ret)
{
	unsigned int nk = res->nr_kernels - 1, best = calibration_best(nk, res->size_gbps[i]);
	double top = res->size_gbps[i][best], mine = res->size_gbps[i][nk];

	if (strchr(res->size_auto[i], '/') && mine >= PAIR_KEEP * top) {
		ret->gbps = mine;
		snprintf(ret->kernel, sizeof(ret->kernel), "%s", res->size_auto[i]);
	} else {
		ret->gbps = top;
		snprintf(ret->kernel, sizeof(ret->kernel), "%s", res->kernels[best]);
	}
}

/*
 * Classes: each measured size's winner covers footprints up to the
 * geometric middle with the next size; most_even() covers the rest.
 * Neighbours with one winner merge.
 */
void calibration_build(struct prealloc_calibrate_result *res)
{
	struct prealloc_calibration_class all[PREALLOC_CALIBRATE_SIZES + 1];
	struct prealloc_calibration *cal = &res->calibration;
	unsigned int n = 0, top = res->nr_threads - 1, best;

	for (unsigned int i = 0; i < res->nr_sizes; i++) {
		uint64_t next = i + 1 < res->nr_sizes ? res->sizes[i + 1] : res->large_size;

		next = MAX(next, res->sizes[i]);
		all[n].max_bytes = (uint64_t)sqrt((double)res->sizes[i] * (double)next);
		size_winner(res, i, &all[n]);
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
