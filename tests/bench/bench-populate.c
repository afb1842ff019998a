/* SPDX-License-Identifier: MIT */
/*
 * bench-populate: first fault-in of fresh memory, side by side in one run.
 *
 * For each backing (4K anonymous, THP anonymous, 2M hugetlb memfd, optionally
 * 4K memfd) and each thread count it times, in interleaved order over R
 * repetitions on fresh memory each time:
 *   raw       N pthreads pinned to the node's CPUs, released at a barrier,
 *             each calling MADV_POPULATE_WRITE on an equal slice;
 *   prealloc  prealloc_region_new() + prealloc_run(POPULATE), default flags
 *             (the move_pages placement query included);
 *   noplace   the same with PREALLOC_JOB_NO_PLACEMENT;
 *   rawbind   (--raw-bind) raw on a mapping MPOL_BIND to the first node, as
 *             prealloc binds it: separates the policy's cost from the library's.
 * Raw with one thread is always measured: it is the single-threaded anchor.
 * Each backing is warmed up first (populate and free its size) because in a
 * nested VM the host faults guest memory in on its first touch.
 *
 * A benchmark reports; it never fails a test suite. Exit status 0 unless
 * the arguments are wrong or a run fails outright.
 *
 * --oneshot populates one region through the library and exits, so that a
 * script can time it as a whole process, like QEMU (bench-qemu.sh).
 */
#include <errno.h>
#include <getopt.h>
#include <linux/mman.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "prealloc.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004U
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21U << 26)
#endif

#define MAX_THREAD_COUNTS 8
#define MAX_REPS 101
#define MAX_METHODS (4 * MAX_THREAD_COUNTS + 1)
#define PAGE_2M (UINT64_C(2) << 20)

enum backing_kind { B_ANON4K, B_THP, B_HUGETLB2M, B_MEMFD4K, NR_BACKINGS };

static const struct backing_desc {
	const char *name;
	const char *what;
	int lib_backing;	/* enum prealloc_backing */
	uint64_t page_size;
} backings[NR_BACKINGS] = {
	[B_ANON4K] = { "anon4k", "anonymous private, 4K (MADV_NOHUGEPAGE)",
		       PREALLOC_BACKING_ANON, PREALLOC_PAGE_4K },
	[B_THP] = { "thp", "anonymous private, THP (MADV_HUGEPAGE)",
		    PREALLOC_BACKING_ANON_THP, PREALLOC_PAGE_2M },
	[B_HUGETLB2M] = { "hugetlb2m", "memfd hugetlb 2M, shared",
			  PREALLOC_BACKING_MEMFD, PREALLOC_PAGE_2M },
	[B_MEMFD4K] = { "memfd4k", "memfd (shmem) 4K, shared",
			PREALLOC_BACKING_MEMFD, PREALLOC_PAGE_4K },
};

enum method_kind { M_RAW, M_PREALLOC, M_NOPLACE, M_RAWBIND };
static const char *const method_names[] = { "raw", "prealloc", "noplace", "rawbind" };

struct sample {
	double wall;		/* whole call: threads created to threads joined */
	double op;		/* barrier release to last worker done */
	double verify;		/* prealloc: report.verify_seconds */
	double thp_frac;	/* share of the region in huge pages (THP only) */
};

struct method {
	enum method_kind kind;
	unsigned int threads;
	unsigned int n;
	struct sample s[MAX_REPS];
};

struct opts {
	uint64_t size;
	unsigned int reps;
	unsigned int warmups;
	unsigned int threads[MAX_THREAD_COUNTS];
	unsigned int nr_threads;
	bool want[NR_BACKINGS];
	bool noplace;
	bool rawbind;
	bool raw_only;		/* --raw-only: the raw leg alone, at the thread counts asked */
	const char *json;
	/* --oneshot */
	bool oneshot;
	bool skip_populate;
};

static struct prealloc_ctx *ctx;
static int nodes[64];
static unsigned int nr_nodes;
static cpu_set_t node_cpus[64];

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench-populate: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* ---- raw: the reference every VMM could write ---------------------------- */

struct raw_job {
	uint8_t *addr;
	uint64_t len;
	unsigned int threads;
	pthread_barrier_t barrier;
	double t_release;
	double t_end;		/* latest worker end, under lock */
	pthread_mutex_t lock;
	int error;
};

struct raw_worker {
	struct raw_job *job;
	unsigned int index;
	pthread_t tid;
};

static void *raw_worker_main(void *arg)
{
	struct raw_worker *w = arg;
	struct raw_job *job = w->job;
	/* Equal slices in whole 2 MiB units, so no huge page is split. */
	uint64_t units = job->len / PAGE_2M;
	uint64_t begin = units * w->index / job->threads * PAGE_2M;
	uint64_t end = units * (w->index + 1) / job->threads * PAGE_2M;
	int err = 0;
	double t;

	if (w->index + 1 == job->threads)
		end = job->len;
	if (pthread_barrier_wait(&job->barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
		job->t_release = now();
	pthread_barrier_wait(&job->barrier);

	while (end > begin && madvise(job->addr + begin, end - begin, MADV_POPULATE_WRITE) < 0) {
		if (errno != EINTR && errno != EAGAIN) {
			err = -errno;
			break;
		}
	}
	t = now();
	pthread_mutex_lock(&job->lock);
	if (t > job->t_end)
		job->t_end = t;
	if (err && !job->error)
		job->error = err;
	pthread_mutex_unlock(&job->lock);
	return NULL;
}

/* Populates [addr, addr+len) with threads workers; fills wall and op. */
static int raw_populate(uint8_t *addr, uint64_t len, unsigned int threads, struct sample *ret)
{
	struct raw_worker *w = calloc(threads, sizeof(*w));
	struct raw_job job = { .addr = addr, .len = len, .threads = threads };
	pthread_attr_t attr;
	unsigned int i;
	double t0;
	int r = 0;

	if (!w)
		return -ENOMEM;
	pthread_mutex_init(&job.lock, NULL);
	pthread_barrier_init(&job.barrier, NULL, threads);
	pthread_attr_init(&attr);
	t0 = now();
	for (i = 0; i < threads; i++) {
		/* Worker i serves node i mod nodes, like one pool per node. */
		pthread_attr_setaffinity_np(&attr, sizeof(cpu_set_t), &node_cpus[i % nr_nodes]);
		w[i] = (struct raw_worker){ .job = &job, .index = i };
		r = -pthread_create(&w[i].tid, &attr, raw_worker_main, &w[i]);
		if (r < 0)
			die("pthread_create", r);
	}
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	ret->wall = now() - t0;
	ret->op = job.t_end - job.t_release;
	pthread_attr_destroy(&attr);
	pthread_barrier_destroy(&job.barrier);
	pthread_mutex_destroy(&job.lock);
	free(w);
	return job.error;
}

/* Fresh memory of one backing, mapped the way prealloc maps it, unbound. */
static uint8_t *raw_map(enum backing_kind b, uint64_t len, int *ret_fd)
{
	uint8_t *p, *aligned;
	unsigned int mflags;

	*ret_fd = -1;
	if (b == B_ANON4K || b == B_THP) {
		p = mmap(NULL, len + PAGE_2M, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		/* THP needs 2 MiB alignment; trim the slack on both sides. */
		aligned = (uint8_t *)(((uintptr_t)p + PAGE_2M - 1) & ~(uintptr_t)(PAGE_2M - 1));
		if (aligned > p)
			munmap(p, aligned - p);
		if (aligned + len < p + len + PAGE_2M)
			munmap(aligned + len, p + len + PAGE_2M - (aligned + len));
		if (madvise(aligned, len, b == B_THP ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) < 0) {
			munmap(aligned, len);
			return NULL;
		}
		return aligned;
	}
	mflags = MFD_CLOEXEC | (b == B_HUGETLB2M ? MFD_HUGETLB | MFD_HUGE_2MB : 0);
	*ret_fd = memfd_create("bench-populate", mflags);
	if (*ret_fd < 0)
		return NULL;
	if (ftruncate(*ret_fd, (off_t)len) < 0)
		goto fail;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, *ret_fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	return p;
fail:
	close(*ret_fd);
	*ret_fd = -1;
	return NULL;
}

static void raw_unmap(uint8_t *p, uint64_t len, int fd)
{
	munmap(p, len);
	if (fd >= 0)
		close(fd);
}

/* Share of anonymous memory in huge pages right now (THP check). */
static double thp_fraction(uint64_t len)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (double)(kb << 10) / (double)len;
}

/* MPOL_BIND to the first node, as prealloc binds a one-node region. */
static int raw_bind(uint8_t *p, uint64_t len)
{
	unsigned long mask[16] = { 0 };
	const unsigned int bits = 8 * sizeof(unsigned long);

	if (nodes[0] < 0 || nodes[0] >= (int)(16 * bits))
		return -EINVAL;
	mask[nodes[0] / bits] |= 1UL << (nodes[0] % bits);
	return mbind(p, len, MPOL_BIND, mask, 16 * bits + 1, 0) < 0 ? -errno : 0;
}

static int run_raw(enum backing_kind b, uint64_t len, unsigned int threads, bool bind,
		   struct sample *ret)
{
	uint8_t *p;
	int fd, r;

	p = raw_map(b, len, &fd);
	if (!p)
		return -errno;
	if (bind) {
		r = raw_bind(p, len);
		if (r < 0) {
			raw_unmap(p, len, fd);
			return r;
		}
	}
	r = raw_populate(p, len, threads, ret);
	ret->verify = 0;
	ret->thp_frac = b == B_THP ? thp_fraction(len) : 0;
	raw_unmap(p, len, fd);
	return r;
}

/* ---- prealloc: the library under test ------------------------------------ */

static int run_prealloc(enum backing_kind b, uint64_t len, unsigned int threads, bool noplace,
			struct sample *ret)
{
	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = backings[b].lib_backing,
		.page_size = backings[b].page_size,
		.length = len,
	};
	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_POPULATE,
		.flags = noplace ? PREALLOC_JOB_NO_PLACEMENT : 0,
		.threads = threads,
	};
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_region *reg;
	double t0;
	int r;

	r = prealloc_region_new(ctx, &ro, &reg);
	if (r < 0)
		return r;
	t0 = now();
	r = prealloc_run(reg, &jo, &rep);
	ret->wall = now() - t0;
	ret->op = rep.seconds;
	ret->verify = rep.verify_seconds;
	ret->thp_frac = b == B_THP ? thp_fraction(len) : 0;
	prealloc_region_free(reg);
	return r;
}

static int run_method(enum backing_kind b, uint64_t len, const struct method *m,
		      struct sample *ret)
{
	/* Raw gets as many threads in all as prealloc's pools together. */
	if (m->kind == M_RAW)
		return run_raw(b, len, m->threads * nr_nodes, false, ret);
	if (m->kind == M_RAWBIND)
		return run_raw(b, len, m->threads, true, ret);
	return run_prealloc(b, len, m->threads, m->kind == M_NOPLACE, ret);
}

/* ---- statistics and output ----------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

enum field { F_WALL, F_OP, F_VERIFY, F_THP };

static double field_of(const struct sample *s, enum field f)
{
	switch (f) {
	case F_WALL:
		return s->wall;
	case F_OP:
		return s->op;
	case F_VERIFY:
		return s->verify;
	default:
		return s->thp_frac;
	}
}

static double median(const struct method *m, enum field f)
{
	double v[MAX_REPS];

	if (!m->n)
		return 0;
	for (unsigned int i = 0; i < m->n; i++)
		v[i] = field_of(&m->s[i], f);
	qsort(v, m->n, sizeof(v[0]), cmp_double);
	return m->n % 2 ? v[m->n / 2] : (v[m->n / 2 - 1] + v[m->n / 2]) / 2;
}

static double extreme(const struct method *m, enum field f, bool want_max)
{
	double x = m->n ? field_of(&m->s[0], f) : 0;

	for (unsigned int i = 1; i < m->n; i++) {
		double v = field_of(&m->s[i], f);

		if (want_max ? v > x : v < x)
			x = v;
	}
	return x;
}

static double gbps(uint64_t len, double seconds)
{
	return seconds > 0 ? (double)len / seconds / 1e9 : 0;
}

static const struct method *find_method(const struct method *m, unsigned int nr,
					enum method_kind kind, unsigned int threads)
{
	for (unsigned int i = 0; i < nr; i++)
		if (m[i].kind == kind && m[i].threads == threads && m[i].n)
			return &m[i];
	return NULL;
}

static double ratio(const struct method *a, const struct method *b, enum field fa, enum field fb)
{
	if (!a || !b || median(a, fa) <= 0)
		return 0;
	/* Throughput ratio a/b is the inverse of the time ratio. */
	return median(b, fb) / median(a, fa);
}

static void print_backing(enum backing_kind b, const struct opts *o, const struct method *m,
			  unsigned int nr, double busy)
{
	const struct method *raw1 = find_method(m, nr, M_RAW, 1);

	printf("\n### %s: %s, %.2f GiB, %u repetitions\n\n", backings[b].name, backings[b].what,
	       o->size / 1073741824.0, o->reps);
	/* Other work on the same CPUs shows up as tasks waiting to run. */
	printf("CPU pressure while measuring (PSI some: time a runnable task waited for a CPU): "
	       "%.0f%%\n\n", 100 * busy);
	printf("| method | threads | median s | GB/s | min..max s | op s (GB/s) | placement s |"
	       " THP %% |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (unsigned int i = 0; i < nr; i++) {
		double w = median(&m[i], F_WALL), op = median(&m[i], F_OP);

		if (!m[i].n)
			continue;
		printf("| %s | %u | %.3f | %.2f | %.3f..%.3f | %.3f (%.2f) | ",
		       method_names[m[i].kind], m[i].threads, w, gbps(o->size, w),
		       extreme(&m[i], F_WALL, false), extreme(&m[i], F_WALL, true), op,
		       gbps(o->size, op));
		if (m[i].kind == M_RAW || m[i].kind == M_RAWBIND)
			printf("- | ");
		else
			printf("%.3f | ", median(&m[i], F_VERIFY));
		if (b == B_THP)
			printf("%.0f |\n", 100 * extreme(&m[i], F_THP, false));
		else
			printf("- |\n");
	}
	printf("\n| threads | prealloc/raw | noplace/raw | prealloc op/raw op | raw N/1 |"
	       " prealloc N/1 |\n");
	printf("|---|---|---|---|---|---|\n");
	for (unsigned int t = 0; t < o->nr_threads; t++) {
		unsigned int n = o->threads[t];
		const struct method *raw = find_method(m, nr, M_RAW, n);
		const struct method *pre = find_method(m, nr, M_PREALLOC, n);
		const struct method *np = find_method(m, nr, M_NOPLACE, n);
		const struct method *pre1 = find_method(m, nr, M_PREALLOC, 1);

		printf("| %u | %.3f | ", n, ratio(pre, raw, F_WALL, F_WALL));
		if (np)
			printf("%.3f | ", ratio(np, raw, F_WALL, F_WALL));
		else
			printf("- | ");
		printf("%.3f | %.2f | %.2f |\n", ratio(pre, raw, F_OP, F_OP),
		       ratio(raw, raw1, F_WALL, F_WALL), ratio(pre, pre1, F_WALL, F_WALL));
	}
	fflush(stdout);
}

static void json_backing(FILE *f, enum backing_kind b, const struct opts *o,
			 const struct method *m, unsigned int nr, bool first)
{
	bool first_m = true;

	fprintf(f, "%s\n    {\"backing\": \"%s\", \"bytes\": %llu, \"methods\": [", first ? "" : ",",
		backings[b].name, (unsigned long long)o->size);
	for (unsigned int i = 0; i < nr; i++) {
		if (!m[i].n)
			continue;
		fprintf(f, "%s\n      {\"method\": \"%s\", \"threads\": %u, \"median_s\": %.6f,"
			" \"gbps\": %.3f, \"median_op_s\": %.6f, \"median_placement_s\": %.6f,"
			" \"samples_s\": [", first_m ? "" : ",", method_names[m[i].kind],
			m[i].threads, median(&m[i], F_WALL), gbps(o->size, median(&m[i], F_WALL)),
			median(&m[i], F_OP), median(&m[i], F_VERIFY));
		for (unsigned int k = 0; k < m[i].n; k++)
			fprintf(f, "%s%.6f", k ? ", " : "", m[i].s[k].wall);
		fprintf(f, "]}");
		first_m = false;
	}
	fprintf(f, "\n    ]}");
}

/* ---- driver -------------------------------------------------------------- */

static unsigned int build_methods(const struct opts *o, struct method *m)
{
	unsigned int nr = 0;
	bool have1 = false;

	for (unsigned int t = 0; t < o->nr_threads; t++)
		have1 |= o->threads[t] == 1;
	if (!have1 && !o->raw_only)
		m[nr++] = (struct method){ .kind = M_RAW, .threads = 1 };
	for (unsigned int t = 0; t < o->nr_threads; t++) {
		m[nr++] = (struct method){ .kind = M_RAW, .threads = o->threads[t] };
		if (o->raw_only)
			continue;
		m[nr++] = (struct method){ .kind = M_PREALLOC, .threads = o->threads[t] };
		if (o->noplace)
			m[nr++] = (struct method){ .kind = M_NOPLACE, .threads = o->threads[t] };
		if (o->rawbind)
			m[nr++] = (struct method){ .kind = M_RAWBIND, .threads = o->threads[t] };
	}
	return nr;
}

static uint64_t hugetlb2m_free(void)
{
	char line[256];
	unsigned long long n = 0;
	FILE *f = fopen("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "re");

	if (!f)
		return 0;
	if (!fgets(line, sizeof(line), f) || sscanf(line, "%llu", &n) != 1)
		n = 0;
	fclose(f);
	return n;
}

static bool backing_usable(enum backing_kind b, const struct opts *o)
{
	if (b == B_HUGETLB2M && hugetlb2m_free() * PAGE_2M < o->size) {
		printf("\n### %s: skipped: %llu free 2M hugepages, %llu needed (reserve them: "
		       "echo N > /proc/sys/vm/nr_hugepages)\n", backings[b].name,
		       (unsigned long long)hugetlb2m_free(),
		       (unsigned long long)(o->size / PAGE_2M));
		return false;
	}
	return true;
}

/* Microseconds some runnable task waited for a CPU (PSI), 0 if unknown. */
static uint64_t cpu_pressure_us(void)
{
	unsigned long long total = 0;
	char line[256];
	FILE *f = fopen("/proc/pressure/cpu", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "some avg10=%*f avg60=%*f avg300=%*f total=%llu", &total) == 1)
			break;
	fclose(f);
	return total;
}

static void bench_backing(enum backing_kind b, const struct opts *o, FILE *json, bool first)
{
	static struct method m[MAX_METHODS];
	unsigned int nr = build_methods(o, m);
	unsigned int max_threads = 1;
	struct sample s;
	uint64_t psi0 = cpu_pressure_us();
	double t0 = now(), busy;
	int r;

	for (unsigned int t = 0; t < o->nr_threads; t++)
		if (o->threads[t] > max_threads)
			max_threads = o->threads[t];
	/* Warm-up: the host backs guest memory on first touch; pay that here. */
	for (unsigned int i = 0; i < o->warmups; i++) {
		r = run_raw(b, o->size, max_threads, false, &s);
		if (r < 0)
			die("warm-up populate", r);
		fprintf(stderr, "bench-populate: %s warm-up %u: %.3f s\n", backings[b].name, i + 1,
			s.wall);
	}
	for (unsigned int rep = 0; rep < o->reps; rep++) {
		for (unsigned int i = 0; i < nr; i++) {
			r = run_method(b, o->size, &m[i], &m[i].s[m[i].n]);
			if (r < 0) {
				fprintf(stderr, "bench-populate: %s %s %u threads: %s\n",
					backings[b].name, method_names[m[i].kind], m[i].threads,
					strerror(-r));
				exit(1);
			}
			m[i].n++;
		}
	}
	busy = (cpu_pressure_us() - psi0) / 1e6 / (now() - t0);
	fprintf(stderr, "bench-populate: %s done in %.1f s\n", backings[b].name, now() - t0);
	print_backing(b, o, m, nr, busy);
	if (json)
		json_backing(json, b, o, m, nr, first);
}

/* First line of a small text file, newline dropped; "?" if unreadable. */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	snprintf(buf, len, "?");
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static void cpuinfo_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(buf, len, "%s", colon + 2);
		break;
	}
	fclose(f);
}

static void describe_machine(const struct opts *o)
{
	struct prealloc_cpu_info ci = { .size = sizeof(ci) };
	char thp[128], order[32];
	struct utsname u;

	prealloc_cpu_info(ctx, &ci);
	if (!ci.model_name[0])
		cpuinfo_model(ci.model_name, sizeof(ci.model_name));
	uname(&u);
	read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	read_line("/sys/module/page_reporting/parameters/page_reporting_order", order,
		  sizeof(order));
	printf("## bench-populate\n\n");
	printf("- CPU: %s (family 0x%x model 0x%x), %ld CPUs online, %u node(s)\n",
	       ci.model_name, ci.family, ci.model, sysconf(_SC_NPROCESSORS_ONLN), nr_nodes);
	printf("- kernel %s, THP: %s, libprealloc %s\n", u.release, thp, prealloc_version());
	/* A guest reporting free pages to the host refaults them on the host. */
	printf("- free page reporting order: %s (%s)\n", order,
	       !strcmp(order, "?") ? "no page_reporting" :
	       atoi(order) > 10 ? "off: freed memory stays host-backed" :
	       "on: freed memory may be handed back to the host between runs");
	printf("- size %.2f GiB, %u repetitions, %u warm-up(s) per backing, threads:",
	       o->size / 1073741824.0, o->reps, o->warmups);
	for (unsigned int t = 0; t < o->nr_threads; t++)
		printf(" %u", o->threads[t]);
	printf(" (per node)\n");
	printf("- seconds: whole call (threads created to joined) for raw, the prealloc_run() call"
	       " for prealloc; 'op s' is barrier release to last worker done (prealloc: "
	       "report.seconds); GB/s = 10^9 bytes per second\n");
}

static int parse_threads(const char *s, struct opts *o)
{
	char *end;

	o->nr_threads = 0;
	while (*s) {
		unsigned long v = strtoul(s, &end, 10);

		if (end == s || v == 0 || v > 4096 || o->nr_threads == MAX_THREAD_COUNTS)
			return -EINVAL;
		o->threads[o->nr_threads++] = (unsigned int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -EINVAL;
	}
	return o->nr_threads ? 0 : -EINVAL;
}

static int parse_backings(const char *s, struct opts *o)
{
	char buf[256], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", s);
	memset(o->want, 0, sizeof(o->want));
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned int b;

		for (b = 0; b < NR_BACKINGS; b++)
			if (!strcmp(tok, backings[b].name))
				break;
		if (b == NR_BACKINGS)
			return -EINVAL;
		o->want[b] = true;
	}
	return 0;
}

/* One region through the library, then exit: timed from outside. */
static int oneshot(const struct opts *o)
{
	struct sample s = { 0 };
	unsigned int b;
	int r = 0;

	for (b = 0; b < NR_BACKINGS; b++)
		if (o->want[b])
			break;
	if (b == NR_BACKINGS)
		return -EINVAL;
	if (o->skip_populate) {
		struct prealloc_region_opts ro = {
			.size = sizeof(ro),
			.backing = backings[b].lib_backing,
			.page_size = backings[b].page_size,
			.length = o->size,
		};
		struct prealloc_region *reg;

		r = prealloc_region_new(ctx, &ro, &reg);
		if (r == 0)
			prealloc_region_free(reg);
		return r;
	}
	r = run_prealloc(b, o->size, o->threads[0], o->noplace, &s);
	if (r == 0)
		printf("%.6f %.6f %.6f\n", s.wall, s.op, s.verify);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-populate [options]\n"
		"  --size SIZE        bytes per region (default 2G; K/M/G/T suffixes)\n"
		"  --reps N           repetitions, interleaved (default 5)\n"
		"  --warmup N         populate+free passes per backing before timing (default 2)\n"
		"  --threads LIST     thread counts per node, e.g. 1,2 (default 1 and all CPUs)\n"
		"  --backing LIST     anon4k,thp,hugetlb2m,memfd4k (default anon4k,thp,hugetlb2m)\n"
		"  --no-placement     also time prealloc with PREALLOC_JOB_NO_PLACEMENT\n"
		"  --raw-bind         also time raw on a mapping MPOL_BIND to the first node\n"
		"  --raw-only         time raw alone, at the thread counts asked (another\n"
		"                     tool's reference: bench-warm-fill.sh)\n"
		"  --json FILE        also write the results as JSON\n"
		"  --oneshot          populate one region (first backing, first thread count) and"
		" exit\n"
		"  --skip-populate    with --oneshot: create and free the region only\n");
}

/* The ctx, its nodes and each node's CPUs; the thread counts by default: 1 and node 0's CPUs. */
static void machine_read(struct opts *o)
{
	int r;

	r = prealloc_ctx_new(&ctx);
	if (r < 0)
		die("prealloc_ctx_new", r);
	r = prealloc_nodes(ctx, nodes, 64);
	if (r <= 0 || r > 64)
		die("prealloc_nodes", r < 0 ? r : -ERANGE);
	nr_nodes = (unsigned int)r;
	for (unsigned int i = 0; i < nr_nodes; i++) {
		int cpus[1024];
		int n = prealloc_node_cpus(ctx, nodes[i], cpus, 1024);

		CPU_ZERO(&node_cpus[i]);
		for (int k = 0; k < n && k < 1024; k++)
			CPU_SET(cpus[k], &node_cpus[i]);
		if (n <= 0)
			sched_getaffinity(0, sizeof(cpu_set_t), &node_cpus[i]);
	}
	if (!o->nr_threads) {
		struct prealloc_node_info ni = { .size = sizeof(ni) };

		prealloc_node_info(ctx, nodes[0], &ni);
		o->threads[o->nr_threads++] = 1;
		if (ni.nr_cpus > 1)
			o->threads[o->nr_threads++] = ni.nr_cpus;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "reps", required_argument, NULL, 'r' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "threads", required_argument, NULL, 't' },
		{ "backing", required_argument, NULL, 'b' },
		{ "no-placement", no_argument, NULL, 'n' },
		{ "raw-bind", no_argument, NULL, 'B' },
		{ "raw-only", no_argument, NULL, 'R' },
		{ "json", required_argument, NULL, 'j' },
		{ "oneshot", no_argument, NULL, 'o' },
		{ "skip-populate", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct opts o = { .size = UINT64_C(2) << 30, .reps = 5, .warmups = 2 };
	FILE *json = NULL;
	bool first = true;
	int c, r;

	o.want[B_ANON4K] = o.want[B_THP] = o.want[B_HUGETLB2M] = true;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (prealloc_parse_size(optarg, &o.size) < 0 || o.size % PAGE_2M || !o.size)
				die("--size must be a non-zero multiple of 2M", EINVAL);
			break;
		case 'r':
			o.reps = (unsigned int)atoi(optarg);
			if (o.reps < 1 || o.reps > MAX_REPS)
				die("--reps must be 1..101", EINVAL);
			break;
		case 'w':
			o.warmups = (unsigned int)atoi(optarg);
			break;
		case 't':
			if (parse_threads(optarg, &o) < 0)
				die("--threads wants a list like 1,2", EINVAL);
			break;
		case 'b':
			if (parse_backings(optarg, &o) < 0)
				die("--backing wants anon4k,thp,hugetlb2m,memfd4k", EINVAL);
			break;
		case 'n':
			o.noplace = true;
			break;
		case 'B':
			o.rawbind = true;
			break;
		case 'R':
			o.raw_only = true;
			break;
		case 'j':
			o.json = optarg;
			break;
		case 'o':
			o.oneshot = true;
			break;
		case 'k':
			o.skip_populate = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}

	machine_read(&o);

	if (o.oneshot) {
		r = oneshot(&o);
		prealloc_ctx_free(ctx);
		if (r < 0)
			die("oneshot", r);
		return 0;
	}

	describe_machine(&o);
	if (o.json) {
		json = fopen(o.json, "we");
		if (!json)
			die(o.json, errno);
		fprintf(json, "{\n  \"size\": %llu, \"reps\": %u, \"backings\": [",
			(unsigned long long)o.size, o.reps);
	}
	for (unsigned int b = 0; b < NR_BACKINGS; b++) {
		if (!o.want[b] || !backing_usable(b, &o))
			continue;
		bench_backing(b, &o, json, first);
		first = false;
	}
	if (json) {
		fprintf(json, "\n  ]\n}\n");
		fclose(json);
	}
	prealloc_ctx_free(ctx);
	return 0;
}
