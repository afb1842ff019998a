/* SPDX-License-Identifier: MIT */
/*
 * Which kernel clears large memory fastest, measured on this machine
 * rather than assumed from a table of the CPUs seen so far: a new CPU
 * (AMD Zen 5 had CLZERO 18-27 % ahead of the AVX2 NT stores the table put
 * first) gets its own answer. Above the probe limit the kernels differ by
 * 15-30 % or by 2x, far above the noise, unlike the cache crossover.
 *
 * The measurement: every usable kernel clears 8 MiB slices of one 16 MiB
 * buffer (THP, faulted in first), each slice flushed from the caches
 * first (CLFLUSH), so that every kernel starts from memory as a large
 * clear meets it: not cached, not dirty. A buffer past the LLC would do
 * that by itself, but these VMs report a 480 MiB LLC and the first touch
 * of fresh memory pays the hypervisor's fault (64 MiB took 0.145 s to
 * fault in, 512 MiB 1.3 s with the samples). Rounds alternate the
 * kernels' order and move each over every slice; the first round is a
 * warm-up, not counted. It stops once the leader's lower quartile clears
 * every other kernel's upper one, after 15 rounds, or after RANK_BUDGET_S:
 * 0.15-0.18 s in all on the Xeon guest (docs/kernels.md).
 *
 * Then the crossover at and below the cached limit (where the rule keeps
 * cached stores, 0.70 of NT at 8 MiB on a 260 MiB-LLC Emerald Rapids):
 * memset against the probe's NT kernel from the cached limit down by
 * halves while NT leads, on memory drained by NT stores and written once;
 * where memset held at the cached limit, from twice it up by doubling
 * while memset holds, to the probe limit (between the limits the rule
 * probes each piece; a Zen 5 ran memset at 2.2x its probe's pair at 16
 * MiB). Sizes past the ranking's buffer get one of the probe limit,
 * faulted in once (its time kept apart in the figures).
 *
 * The result is kept in a small text file beside the calibration
 * (clear/rank_file.c). This file holds the measurement; clear/auto.c
 * decides when.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "clear.h"

#define RANK_BUDGET_S 0.15
#define RANK_MIN_ROUNDS 4
#define RANK_MAX_ROUNDS 15
#define RANK_SLICE (UINT64_C(8) << 20)
#define RANK_LEVEL 0.03		/* within 3 %: level; the table's order decides */
#define RANK_BUF (UINT64_C(16) << 20)
#define CROSS_MIN_ROUNDS 5
#define CROSS_MAX_ROUNDS 15
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The q-quantile (0..1) of n samples, sorted into tmp. */
static double quantile(const double *v, unsigned int n, double q, double *tmp)
{
	double k;
	unsigned int f;

	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	k = (n - 1) * q;
	f = (unsigned int)k;
	return f + 1 < n ? tmp[f] + (tmp[f + 1] - tmp[f]) * (k - f) : tmp[f];
}

struct rank_run {
	const struct clear_kernel *k[CLEAR_RANK_MAX];
	unsigned int nr, rounds;
	double s[CLEAR_RANK_MAX][RANK_MAX_ROUNDS];
};

/* Whether the leader (by median) is known: its lower quartile over everyone's upper. */
static bool rank_known(const struct rank_run *run, unsigned int *ret_order)
{
	double med[CLEAR_RANK_MAX], tmp[RANK_MAX_ROUNDS], lead_q1, q3;
	bool known = true;

	for (unsigned int i = 0; i < run->nr; i++) {
		med[i] = quantile(run->s[i], run->rounds, 0.5, tmp);
		ret_order[i] = i;
	}
	for (unsigned int i = 1; i < run->nr; i++)	/* insertion sort, best first */
		for (unsigned int j = i; j > 0 && med[ret_order[j]] > med[ret_order[j - 1]]; j--) {
			unsigned int t = ret_order[j];

			ret_order[j] = ret_order[j - 1];
			ret_order[j - 1] = t;
		}
	lead_q1 = quantile(run->s[ret_order[0]], run->rounds, 0.25, tmp);
	for (unsigned int i = 1; i < run->nr; i++) {
		q3 = quantile(run->s[ret_order[i]], run->rounds, 0.75, tmp);
		known = known && lead_q1 > q3;
	}
	return known;
}

/* Rounds of every kernel over the buffer's slices, until the leader is known. */
static void rank_rounds(struct rank_run *run, uint8_t *buf, uint64_t bytes, double t0,
			unsigned int *ret_order)
{
	const uint64_t slice = RANK_SLICE, slices = bytes / RANK_SLICE;

	for (unsigned int r = 0; r <= RANK_MAX_ROUNDS; r++) {
		for (unsigned int j = 0; j < run->nr; j++) {
			unsigned int k = (r + j) % run->nr;
			uint8_t *p = buf + ((r * run->nr + j) % slices) * slice;
			double t;

			arch_cache_flush(p, slice);
			t = now_seconds();
			run->k[k]->fn(p, slice);
			t = now_seconds() - t;
			if (r > 0)	/* round 0 faults the buffer in */
				run->s[k][r - 1] = (double)slice / (t > 0 ? t : 1e-9) / 1e9;
		}
		run->rounds = r;
		if (r >= RANK_MIN_ROUNDS &&
		    (rank_known(run, ret_order) || now_seconds() - t0 > RANK_BUDGET_S || r == RANK_MAX_ROUNDS))
			return;
	}
}

/* This thread's CPU time: a neighbour that preempts it mid-pass is not counted. */
static double thread_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* GB/s of k over [p, p + bytes) met as the bench meets it: drained by nt's stores, written once. */
static double cross_sample(const struct clear_kernel *k, const struct clear_kernel *nt, uint8_t *p,
			   uint64_t bytes)
{
	double t;

	nt->fn(p, bytes);
	memset(p, 0x5a, bytes);
	t = thread_seconds();
	k->fn(p, bytes);
	t = thread_seconds() - t;
	return (double)bytes / (t > 0 ? t : 1e-9) / 1e9;
}

/*
 * Rounds of c and nt (who goes first alternates) at bytes, until the
 * median of their paired ratios is known to lie on one side of
 * CLEAR_CROSS_LEAD (its quartiles both there), CROSS_MAX_ROUNDS, or past
 * deadline; into *ret.
 */
static void cross_rounds(const struct clear_kernel *c, const struct clear_kernel *nt, uint8_t *buf,
			 uint64_t bytes, double deadline, struct clear_cross_point *ret)
{
	double sc[CROSS_MAX_ROUNDS], sn[CROSS_MAX_ROUNDS], ratio[CROSS_MAX_ROUNDS];
	double tmp[CROSS_MAX_ROUNDS];
	unsigned int r = 0;

	while (r < CROSS_MAX_ROUNDS) {
		if (r % 2) {
			sn[r] = cross_sample(nt, nt, buf, bytes);
			sc[r] = cross_sample(c, nt, buf, bytes);
		} else {
			sc[r] = cross_sample(c, nt, buf, bytes);
			sn[r] = cross_sample(nt, nt, buf, bytes);
		}
		ratio[r] = sn[r] / sc[r];
		r++;
		if (r >= CROSS_MIN_ROUNDS &&
		    (quantile(ratio, r, 0.25, tmp) >= CLEAR_CROSS_LEAD ||
		     quantile(ratio, r, 0.75, tmp) < CLEAR_CROSS_LEAD || now_seconds() > deadline))
			break;
	}
	ret->bytes = bytes;
	ret->rounds = r;
	ret->cached_gbps = quantile(sc, r, 0.5, tmp);
	ret->nt_gbps = quantile(sn, r, 0.5, tmp);
	ret->nt_over_cached = quantile(ratio, r, 0.5, tmp);
}

uint64_t clear_cross_next(const struct clear_crossover *x, uint64_t cached_limit,
			  uint64_t buf_bytes, double elapsed)
{
	uint64_t bytes;

	if (!x->nr)
		bytes = MIN(cached_limit, buf_bytes);
	else if (x->at[x->nr - 1].nt_over_cached < CLEAR_CROSS_LEAD ||
		 elapsed > CLEAR_CROSS_BUDGET_S)
		return 0;	/* memset held there, or the time is up */
	else
		bytes = x->at[x->nr - 1].bytes / 2;
	return bytes >= CLEAR_PROBE_MIN && x->nr < CLEAR_CROSS_SIZES ? bytes : 0;
}

uint64_t clear_cross_next_up(const struct clear_crossover *x, uint64_t cached_limit,
			     uint64_t probe_limit, double elapsed)
{
	uint64_t bytes;

	if (!x->nr || x->at[0].bytes != cached_limit ||
	    x->at[0].nt_over_cached >= CLEAR_CROSS_LEAD || elapsed > CLEAR_CROSS_UP_BUDGET_S ||
	    x->nr_up >= CLEAR_CROSS_UP_SIZES)
		return 0;	/* NT led at the limit (or it was not measured), or out of time */
	if (!x->nr_up)
		bytes = cached_limit * 2;
	else if (x->up[x->nr_up - 1].nt_over_cached >= CLEAR_CROSS_LEAD)
		return 0;	/* NT leads from here up */
	else
		bytes = x->up[x->nr_up - 1].bytes * 2;
	return bytes <= probe_limit ? bytes : 0;
}

/*
 * Upward from the cached limit, on buf while it holds the size, else on
 * one buffer of the probe limit faulted in at the first size that needs
 * it (its time in ret->fault_seconds, not the deadline's).
 */
static void cross_measure_up(const struct cpu_id *cpu, const struct clear_kernel *c,
			     const struct clear_kernel *nt, uint8_t *buf, uint64_t buf_bytes,
			     struct clear_crossover *ret)
{
	uint64_t limit = clear_cached_limit(cpu->llc_bytes), probe = clear_probe_limit(cpu->llc_bytes);
	uint8_t *big = MAP_FAILED;
	double t0 = now_seconds();

	for (uint64_t bytes = clear_cross_next_up(ret, limit, probe, 0); bytes;
	     bytes = clear_cross_next_up(ret, limit, probe,
					 now_seconds() - t0 - ret->fault_seconds)) {
		if (bytes > buf_bytes && big == MAP_FAILED) {
			double f = now_seconds();

			big = mmap(NULL, probe, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
			if (big == MAP_FAILED)
				break;
			madvise(big, probe, MADV_HUGEPAGE);
			madvise(big, probe, MADV_POPULATE_WRITE);
			ret->fault_seconds += now_seconds() - f;
		}
		cross_rounds(c, nt, bytes > buf_bytes ? big : buf, bytes,
			     t0 + ret->fault_seconds + CLEAR_CROSS_UP_BUDGET_S,
			     &ret->up[ret->nr_up++]);
	}
	if (big != MAP_FAILED)
		munmap(big, probe);
}

/* The crossover: from the cached limit down by halves while NT leads, on buf; then up. */
static void cross_measure(const struct cpu_id *cpu, uint8_t *buf, uint64_t buf_bytes,
			  struct clear_crossover *ret)
{
	struct clear_choice probe = clear_select(cpu, clear_probe_limit(cpu->llc_bytes), 1, NULL,
						 NULL, 0);
	const struct clear_kernel *c = clear_kernel_find("c");
	uint64_t limit = clear_cached_limit(cpu->llc_bytes);
	double t0 = now_seconds();

	memset(ret, 0, sizeof(*ret));
	if (!probe.nt || !c || !c->fn)
		return;	/* no probe here (NT slow or none): nothing it could change */
	snprintf(ret->nt, sizeof(ret->nt), "%s", probe.nt->name);
	for (uint64_t bytes = clear_cross_next(ret, limit, buf_bytes, 0); bytes;
	     bytes = clear_cross_next(ret, limit, buf_bytes, now_seconds() - t0))
		cross_rounds(c, probe.nt, buf, bytes, t0 + CLEAR_CROSS_BUDGET_S,
			     &ret->at[ret->nr++]);
	cross_measure_up(cpu, c, probe.nt, buf, buf_bytes, ret);
	ret->seconds = now_seconds() - t0;
}

int clear_rank_measure(const struct cpu_id *cpu, struct clear_rank *ret,
		       struct clear_crossover *ret_cross)
{
	uint64_t bytes = RANK_BUF;
	struct clear_choice table = clear_select(cpu, UINT64_MAX / 2, 1, NULL, NULL, 0);
	unsigned int order[CLEAR_RANK_MAX];
	struct rank_run *run = calloc(1, sizeof(*run));
	double t0 = now_seconds();
	uint8_t *buf;

	if (!run)
		return -ENOMEM;
	for (unsigned int i = 0; i < clear_kernels_count && run->nr < CLEAR_RANK_MAX; i++)
		if (clear_kernel_usable(&clear_kernels[i], cpu->features))
			run->k[run->nr++] = &clear_kernels[i];
	if (run->nr < 2) {
		free(run);
		return -ENOENT;	/* nothing to rank */
	}
	buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		   -1, 0);
	if (buf == MAP_FAILED) {
		free(run);
		return -errno;
	}
	madvise(buf, bytes, MADV_HUGEPAGE);
	madvise(buf, bytes, MADV_POPULATE_WRITE);	/* else round 0 pays it: not counted */
	rank_rounds(run, buf, bytes, t0, order);
	if (ret_cross)
		cross_measure(cpu, buf, bytes, ret_cross);
	munmap(buf, bytes);

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->vendor, sizeof(ret->vendor), "%s", cpu->vendor);
	snprintf(ret->model_name, sizeof(ret->model_name), "%s", cpu->model_name);
	ret->family = cpu->family;
	ret->model = cpu->model;
	cpu_microcode(ret->microcode, sizeof(ret->microcode));
	ret->buffer_bytes = bytes;
	ret->rounds = run->rounds;
	ret->nr = run->nr;
	for (unsigned int i = 0; i < run->nr; i++) {
		double tmp[RANK_MAX_ROUNDS];

		snprintf(ret->k[i].kernel, sizeof(ret->k[i].kernel), "%s", run->k[order[i]]->name);
		ret->k[i].gbps = quantile(run->s[order[i]], run->rounds, 0.5, tmp);
	}
	/* Level with the table's choice: the table's stays first, so runs do not flap. */
	ret->level = ret->k[1].gbps >= ret->k[0].gbps * (1 - RANK_LEVEL);
	for (unsigned int i = 1; ret->level && table.kernel && i < ret->nr &&
				 ret->k[i].gbps >= ret->k[0].gbps * (1 - RANK_LEVEL); i++)
		if (!strcmp(ret->k[i].kernel, table.name)) {
			typeof(ret->k[0]) t = ret->k[0];

			ret->k[0] = ret->k[i];
			ret->k[i] = t;
		}
	/* The ranking's own time: the crossover's is its own figure. */
	ret->seconds = now_seconds() - t0 - (ret_cross ? ret_cross->seconds : 0);
	free(run);
	return 0;
}
