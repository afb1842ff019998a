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
 * halves while NT leads, on memory drained by NT stores and written once.
 *
 * The result is a small text file beside the calibration (its path +
 * ".ranking"), one per CPU model and microcode:
 *
 *   version 2
 *   vendor GenuineIntel
 *   family 6
 *   model 167
 *   model_name Intel(R) Xeon(R) Processor
 *   microcode 0x1
 *   buffer 16777216 rounds 7 seconds 0.082 level 1
 *   kernel avx2_nt 26.88
 *   kernel avx512_nt 26.75
 *   crossover avx2_nt seconds 0.021
 *   at 8388608 rounds 5 c 13.10 avx2_nt 10.05 ratio 0.77
 * This file holds the measurement, the file format and the small file
 * helpers the calibration shares; clear/auto.c decides when.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clear.h"

#define RANK_VERSION 2	/* 2: the crossover's lines; a version 1 file is measured again */
#define RANK_BUDGET_S 0.15
#define RANK_MIN_ROUNDS 4
#define RANK_MAX_ROUNDS 15
#define RANK_SLICE (UINT64_C(8) << 20)
#define RANK_LEVEL 0.03		/* within 3 %: level; the table's order decides */
#define RANK_BUF (UINT64_C(16) << 20)
#define CROSS_BUDGET_S 0.06
#define CROSS_MIN_ROUNDS 5
#define CROSS_MAX_ROUNDS 15
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

void cpu_microcode(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");

	snprintf(buf, len, "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (strncmp(line, "microcode", 9) || !v)
			continue;
		v += strspn(v + 1, " \t") + 1;
		v[strcspn(v, " \t\n")] = '\0';
		snprintf(buf, len, "%s", v);
		break;
	}
	if (f)
		fclose(f);
}

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

/* The crossover: from the cached limit down by halves while NT leads, on buf. */
static void cross_measure(const struct cpu_id *cpu, uint8_t *buf, uint64_t buf_bytes,
			  struct clear_crossover *ret)
{
	struct clear_choice probe = clear_select(cpu, clear_probe_limit(cpu->llc_bytes), 1, NULL,
						 NULL, 0);
	const struct clear_kernel *c = clear_kernel_find("c");
	double t0 = now_seconds();

	memset(ret, 0, sizeof(*ret));
	if (!probe.nt || !c || !c->fn)
		return;	/* no probe here (NT slow or none): nothing it could change */
	snprintf(ret->nt, sizeof(ret->nt), "%s", probe.nt->name);
	for (uint64_t bytes = MIN(clear_cached_limit(cpu->llc_bytes), buf_bytes);
	     bytes >= CLEAR_PROBE_MIN && ret->nr < CLEAR_CROSS_SIZES; bytes /= 2) {
		cross_rounds(c, probe.nt, buf, bytes, t0 + CROSS_BUDGET_S, &ret->at[ret->nr]);
		if (ret->at[ret->nr++].nt_over_cached < CLEAR_CROSS_LEAD ||
		    now_seconds() - t0 > CROSS_BUDGET_S)
			break;
	}
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

bool clear_rank_matches(const struct clear_rank *rank, const struct cpu_id *cpu)
{
	char mc[24];

	cpu_microcode(mc, sizeof(mc));
	return !strcmp(rank->vendor, cpu->vendor) && rank->family == cpu->family &&
	       rank->model == cpu->model && !strcmp(rank->model_name, cpu->model_name) &&
	       !strcmp(rank->microcode, mc);
}

int clear_rank_format(const struct clear_rank *rank, const struct clear_crossover *x, char *buf,
		      size_t len)
{
	size_t off;
	int n = snprintf(buf, len,
			 "# prealloc: the clear kernels ranked for large clears, measured here\n"
			 "version %u\nvendor %s\nfamily %u\nmodel %u\nmodel_name %s\nmicrocode %s\n"
			 "buffer %" PRIu64 " rounds %u seconds %.3f level %d\n",
			 RANK_VERSION, rank->vendor, rank->family, rank->model, rank->model_name,
			 rank->microcode, rank->buffer_bytes, rank->rounds, rank->seconds,
			 rank->level);

	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	off = (size_t)n;
	for (unsigned int i = 0; i < rank->nr; i++) {
		n = snprintf(buf + off, len - off, "kernel %s %.2f\n", rank->k[i].kernel,
			     rank->k[i].gbps);
		if (n < 0 || (size_t)n >= len - off)
			return -ENOSPC;
		off += (size_t)n;
	}
	if (!x || !x->nr)
		return (int)off;
	n = snprintf(buf + off, len - off, "crossover %s seconds %.3f\n", x->nt, x->seconds);
	for (unsigned int i = 0; i < x->nr && n >= 0 && (size_t)n < len - off; i++) {
		off += (size_t)n;
		n = snprintf(buf + off, len - off, "at %" PRIu64 " rounds %u c %.2f %s %.2f ratio %.3f\n",
			     x->at[i].bytes, x->at[i].rounds, x->at[i].cached_gbps, x->nt,
			     x->at[i].nt_gbps, x->at[i].nt_over_cached);
	}
	if (n < 0 || (size_t)n >= len - off)
		return -ENOSPC;
	return (int)(off + (size_t)n);
}

/* A crossover line ("crossover ..." or "at ...") into x: 1 taken, 0 not one, -EINVAL malformed. */
static int cross_line(const char *line, struct clear_crossover *x)
{
	char name[CLEAR_KERNEL_NAME_MAX + 8];
	struct clear_cross_point a;

	if (!strncmp(line, "crossover ", 10)) {
		if (sscanf(line, "crossover %31s seconds %lf", name, &x->seconds) != 2 ||
		    strlen(name) >= sizeof(x->nt) || !clear_kernel_find(name))
			return -EINVAL;
		memcpy(x->nt, name, strlen(name) + 1);
		return 1;
	}
	if (strncmp(line, "at ", 3))
		return 0;
	if (sscanf(line, "at %" SCNu64 " rounds %u c %lf %31s %lf ratio %lf", &a.bytes, &a.rounds,
		   &a.cached_gbps, name, &a.nt_gbps, &a.nt_over_cached) != 6 ||
	    !x->nt[0] || strcmp(name, x->nt) || x->nr >= CLEAR_CROSS_SIZES ||
	    !(a.nt_over_cached > 0) || (x->nr && a.bytes >= x->at[x->nr - 1].bytes))
		return -EINVAL;
	x->at[x->nr++] = a;
	return 1;
}

/* One line of the file into r or x; -EINVAL for anything else. */
static int rank_line(char *line, struct clear_rank *r, struct clear_crossover *x,
		     unsigned int *version)
{
	char name[CLEAR_KERNEL_NAME_MAX + 8];
	int level = 0, taken;
	double g;

	if (line[0] == '#' || line[0] == '\0')
		return 0;
	taken = cross_line(line, x);
	if (taken)
		return taken < 0 ? taken : 0;
	if (sscanf(line, "version %u", version) == 1 || sscanf(line, "family %u", &r->family) == 1 ||
	    sscanf(line, "model %u", &r->model) == 1)
		return 0;
	if (!strncmp(line, "vendor ", 7))
		return snprintf(r->vendor, sizeof(r->vendor), "%s", line + 7) < 0 ? -EINVAL : 0;
	if (!strncmp(line, "model_name ", 11))
		return snprintf(r->model_name, sizeof(r->model_name), "%s", line + 11) < 0 ? -EINVAL
											  : 0;
	if (!strncmp(line, "microcode ", 10))
		return snprintf(r->microcode, sizeof(r->microcode), "%s", line + 10) < 0 ? -EINVAL
											 : 0;
	if (sscanf(line, "buffer %" SCNu64 " rounds %u seconds %lf level %d", &r->buffer_bytes,
		   &r->rounds, &r->seconds, &level) == 4) {
		r->level = level;
		return 0;
	}
	if (sscanf(line, "kernel %31s %lf", name, &g) != 2 || r->nr >= CLEAR_RANK_MAX ||
	    strlen(name) >= sizeof(r->k[0].kernel) || !clear_kernel_find(name) || !(g > 0))
		return -EINVAL;
	memcpy(r->k[r->nr].kernel, name, strlen(name) + 1);
	r->k[r->nr++].gbps = g;
	return 0;
}

int clear_rank_parse(const char *text, struct clear_rank *ret, struct clear_crossover *ret_cross)
{
	struct clear_rank r = { 0 };
	struct clear_crossover x = { 0 };
	unsigned int version = 0;
	char line[256];

	while (*text) {
		size_t n = strcspn(text, "\n");

		if (n >= sizeof(line))
			return -EINVAL;
		memcpy(line, text, n);
		line[n] = '\0';
		text += n + (text[n] == '\n');
		if (rank_line(line, &r, &x, &version) < 0)
			return -EINVAL;
	}
	if (version != RANK_VERSION || !r.vendor[0] || !r.nr || (x.nt[0] && !x.nr))
		return -EINVAL;
	*ret = r;
	if (ret_cross)
		*ret_cross = x;
	return 0;
}

int small_file_read(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	/* These files are a few hundred bytes; a full buffer is not one of them. */
	return r < 0 ? r : got + 1 == len ? -EINVAL : 0;
}

int small_file_write(const char *path, const char *text, size_t len)
{
	char *tmp;
	int fd, r = 0;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		return r;
	}
	/* Readable by all: it names kernels, nothing secret. */
	if (fchmod(fd, 0644) < 0 || (r = fd_write_all(fd, text, len)) < 0 || fsync(fd) < 0)
		r = r < 0 ? r : -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}
