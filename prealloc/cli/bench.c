/* SPDX-License-Identifier: MIT */
/*
 * `prealloc bench`: measure every clear kernel this CPU can run at sizes
 * from below the last-level cache to well above it, single-threaded, and
 * at a large size by thread count; mark what automatic selection picks;
 * with --save, persist the fastest kernel per size class so `auto` uses it
 * on this CPU model from then on.
 *
 * The buffer is written once before any timing (in a nested VM the host
 * faults its memory in on first touch), kernels are interleaved within each
 * repetition so drift hits all of them alike, and each figure is the median
 * of the repetitions. The "c" kernel is glibc's memset: the anchor.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

#define MAX_KERNELS 8
#define MAX_OF(a, b) ((a) > (b) ? (a) : (b))
#define MIN_OF(a, b) ((a) < (b) ? (a) : (b))
#define MAX_SIZES 7		/* one calibration class each, plus one for threads */
#define MAX_THREADS_LIST 16
#define MAX_REPEAT 101
/* Each timed sample clears at least this much, looping over small buffers. */
#define SAMPLE_BYTES (UINT64_C(128) << 20)

struct bench_args {
	uint64_t sizes[MAX_SIZES];
	unsigned int nr_sizes;
	unsigned int threads[MAX_THREADS_LIST];
	unsigned int nr_threads;
	uint64_t threads_size;	/* the large size of the by-threads table */
	const char *kernels[MAX_KERNELS];
	unsigned int nr_kernels;
	unsigned int repeat;
	bool json, save;
};

/* One pool of pinned workers; the calling thread is worker 0. */
struct bench_pool {
	pthread_barrier_t start, done;
	pthread_t tids[256];
	unsigned int nr;
	int cpus[256];
	/* The current task, set by worker 0 between barriers. */
	uint8_t *buf;
	uint64_t size;		/* whole buffer; each worker clears its slice */
	unsigned int iters;
	const char *kernel;
	bool stop;
};

struct bench_worker {
	struct bench_pool *pool;
	unsigned int index;
};

static const char usage_text[] =
	"Usage: prealloc bench [OPTIONS]\n"
	"Measure every clear kernel this CPU can run (GB/s, median of --repeat runs),\n"
	"single-threaded by size and at a large size by thread count, and mark the\n"
	"kernel that automatic selection ('auto') picks.\n"
	"\n"
	"  -s, --sizes LIST     sizes to measure single-threaded (default: LLC/4 to\n"
	"                       8x LLC, doubling; at most 7)\n"
	"  -t, --threads LIST   thread counts at the large size (default: 1, 2, 4, ...\n"
	"                       and every allowed CPU)\n"
	"      --large SIZE     the size of the by-threads table (default: 1G, or the\n"
	"                       largest of --sizes if larger)\n"
	"  -k, --kernels LIST   kernels to measure (default: all usable here)\n"
	"  -r, --repeat N       runs per figure (default: 5)\n"
	"      --save           store the winner per size class for this CPU model;\n"
	"                       'auto' uses it from then on\n"
	"      --json           print one JSON document (docs/json.md)\n"
	"  -h, --help           this text\n";

static int parse_u(const char *s, unsigned int max, unsigned int *ret)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || s[0] == '-' || v == 0 || v > max)
		return -EINVAL;
	*ret = (unsigned int)v;
	return 0;
}

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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int parse_args(int argc, char **argv, struct bench_args *a)
{
	enum { OPT_SAVE = 256, OPT_JSON, OPT_LARGE };
	static const struct option opts[] = {
		{ "sizes", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "large", required_argument, NULL, OPT_LARGE },
		{ "kernels", required_argument, NULL, 'k' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "save", no_argument, NULL, OPT_SAVE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "s:t:k:r:h";
	char *save, *tok;
	int c;

	a->repeat = 5;
	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->nr_sizes = 0;
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				uint64_t v;

				if (a->nr_sizes == MAX_SIZES) {
					cli_error("--sizes: at most %d sizes", MAX_SIZES);
					return -EXIT_USAGE;
				}
				if (prealloc_parse_size(tok, &v) < 0 || v < 4096) {
					cli_error("--sizes: invalid size '%s' (at least 4K)", tok);
					return -EXIT_USAGE;
				}
				a->sizes[a->nr_sizes++] = v;
			}
			break;
		case 't':
			a->nr_threads = 0;
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (a->nr_threads == MAX_THREADS_LIST ||
				    parse_u(tok, 256, &a->threads[a->nr_threads]) < 0) {
					cli_error("--threads: invalid list at '%s' (at most %d counts, "
						  "each 1-256)", tok, MAX_THREADS_LIST);
					return -EXIT_USAGE;
				}
				a->nr_threads++;
			}
			break;
		case OPT_LARGE:
			if (prealloc_parse_size(optarg, &a->threads_size) < 0 ||
			    a->threads_size < (UINT64_C(1) << 20)) {
				cli_error("--large: invalid size '%s' (at least 1M)", optarg);
				return -EXIT_USAGE;
			}
			break;
		case 'k':
			a->nr_kernels = 0;
			for (tok = strtok_r(optarg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (a->nr_kernels == MAX_KERNELS) {
					cli_error("--kernels: at most %d kernels", MAX_KERNELS);
					return -EXIT_USAGE;
				}
				a->kernels[a->nr_kernels++] = tok;
			}
			break;
		case 'r':
			if (parse_u(optarg, MAX_REPEAT, &a->repeat) < 0) {
				cli_error("--repeat: invalid count '%s' (1-%d)", optarg, MAX_REPEAT);
				return -EXIT_USAGE;
			}
			break;
		case OPT_SAVE:
			a->save = true;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			return -option_error("bench", argv, short_opts, opts);
		}
	}
	if (optind < argc) {
		cli_error("bench: unexpected argument '%s'", argv[optind]);
		return -EXIT_USAGE;
	}
	return 0;
}

/* Kernel names: usable ones only; an unknown name is a usage error. */
static int resolve_kernels(struct prealloc_ctx *ctx, struct bench_args *a)
{
	const char *usable[MAX_KERNELS];
	int n = prealloc_clear_kernels(ctx, usable, MAX_KERNELS);
	char probe[64];

	if (n < 0)
		return -EXIT_FAILURE_RUN;
	if (!a->nr_kernels) {
		for (int i = 0; i < n && i < MAX_KERNELS; i++)
			a->kernels[a->nr_kernels++] = usable[i];
		return 0;
	}
	for (unsigned int i = 0; i < a->nr_kernels; i++) {
		int r = prealloc_clear_range(probe, sizeof(probe), a->kernels[i]);

		if (r == -ENOENT || !strcmp(a->kernels[i], "auto")) {
			cli_error("--kernels: unknown clear kernel '%s'", a->kernels[i]);
			return -EXIT_USAGE;
		}
		if (r < 0) {
			cli_error("--kernels: the %s kernel cannot run on this CPU", a->kernels[i]);
			return -EXIT_ENVIRONMENT;
		}
	}
	return 0;
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* Worker index's share of the buffer, in whole 4 KiB pages. */
static void slice(const struct bench_pool *p, unsigned int index, uint8_t **ret_addr,
		  uint64_t *ret_len)
{
	uint64_t pages = p->size / 4096, per = pages / p->nr, extra = pages % p->nr;
	uint64_t first = index * per + MIN_LEN((uint64_t)index, extra);

	*ret_addr = p->buf + first * 4096;
	*ret_len = (per + (index < extra ? 1 : 0)) * 4096;
	if (index == p->nr - 1)
		*ret_len += p->size % 4096;
}

static void work(struct bench_pool *p, unsigned int index)
{
	uint8_t *addr;
	uint64_t len;

	slice(p, index, &addr, &len);
	for (unsigned int i = 0; i < p->iters; i++)
		prealloc_clear_range(addr, len, p->kernel);
}

static void *worker_main(void *arg)
{
	struct bench_worker *w = arg;
	struct bench_pool *p = w->pool;

	pin_to(p->cpus[w->index]);
	for (;;) {
		pthread_barrier_wait(&p->start);
		if (p->stop)
			break;
		work(p, w->index);
		pthread_barrier_wait(&p->done);
	}
	return NULL;
}

static struct bench_worker workers[256];

static int pool_start(struct bench_pool *p, unsigned int nr, const int *cpus, unsigned int nr_cpus)
{
	p->nr = nr;
	p->stop = false;
	for (unsigned int i = 0; i < nr; i++)
		p->cpus[i] = nr_cpus ? cpus[i % nr_cpus] : -1;
	pthread_barrier_init(&p->start, NULL, nr);
	pthread_barrier_init(&p->done, NULL, nr);
	pin_to(p->cpus[0]);
	for (unsigned int i = 1; i < nr; i++) {
		workers[i] = (struct bench_worker){ .pool = p, .index = i };
		/*
		 * On failure the workers made so far stay parked at the start
		 * barrier until the process exits: they touch nothing there.
		 */
		if (pthread_create(&p->tids[i], NULL, worker_main, &workers[i]) != 0)
			return -EAGAIN;
	}
	return 0;
}

static void pool_stop(struct bench_pool *p)
{
	p->stop = true;
	if (p->nr > 1) {
		pthread_barrier_wait(&p->start);
		for (unsigned int i = 1; i < p->nr; i++)
			pthread_join(p->tids[i], NULL);
	}
	pthread_barrier_destroy(&p->start);
	pthread_barrier_destroy(&p->done);
}

/* One timed sample: every worker clears its slice iters times; GB/s. */
static double sample(struct bench_pool *p, const char *kernel, uint64_t size)
{
	double t0, t1;

	p->kernel = kernel;
	p->size = size;
	p->iters = (unsigned int)MAX_OF(UINT64_C(1), SAMPLE_BYTES / size);
	pthread_barrier_wait(&p->start);
	t0 = now_wall();
	work(p, 0);
	pthread_barrier_wait(&p->done);
	t1 = now_wall();
	return (double)size * p->iters / (t1 - t0) / 1e9;
}

/*
 * Medians of repeat samples for each kernel at size with pool's workers;
 * kernels interleaved within each repetition. gbps[k] gets the result.
 */
static void measure(struct bench_pool *p, const struct bench_args *a, uint64_t size,
		    double *gbps)
{
	double s[MAX_KERNELS][MAX_REPEAT];

	for (unsigned int k = 0; k < a->nr_kernels; k++)	/* settle each kernel once */
		sample(p, a->kernels[k], size);
	for (unsigned int r = 0; r < a->repeat; r++)
		for (unsigned int k = 0; k < a->nr_kernels; k++)
			s[k][r] = sample(p, a->kernels[(k + r) % a->nr_kernels], size);
	for (unsigned int k = 0; k < a->nr_kernels; k++) {
		double v[MAX_REPEAT];

		/* Sample k of repetition r measured kernel (k + r) % n. */
		for (unsigned int r = 0; r < a->repeat; r++) {
			unsigned int slot = (k + a->nr_kernels - r % a->nr_kernels) % a->nr_kernels;

			v[r] = s[slot][r];
		}
		qsort(v, a->repeat, sizeof(v[0]), cmp_double);
		gbps[k] = a->repeat % 2 ? v[a->repeat / 2]
					: (v[a->repeat / 2 - 1] + v[a->repeat / 2]) / 2;
	}
}

static int kernel_index(const struct bench_args *a, const char *name)
{
	for (unsigned int k = 0; k < a->nr_kernels; k++)
		if (!strcmp(a->kernels[k], name))
			return (int)k;
	return -1;
}

static unsigned int best_of(const struct bench_args *a, const double *gbps)
{
	unsigned int best = 0;

	for (unsigned int k = 1; k < a->nr_kernels; k++)
		if (gbps[k] > gbps[best])
			best = k;
	return best;
}

static const char *label(const char *kernel)
{
	return strcmp(kernel, "c") ? kernel : "c=memset";
}

struct bench_results {
	double single[MAX_SIZES][MAX_KERNELS];
	const char *single_auto[MAX_SIZES];
	double by_threads[MAX_THREADS_LIST][MAX_KERNELS];
	const char *threads_auto[MAX_THREADS_LIST];
};

static void print_row_values(const struct bench_args *a, const double *gbps, const char *chosen)
{
	int ai = chosen ? kernel_index(a, chosen) : -1;
	unsigned int best = best_of(a, gbps);

	for (unsigned int k = 0; k < a->nr_kernels; k++)
		printf(" %9.2f%c", gbps[k], (int)k == ai ? '*' : ' ');
	printf(" %-10s", label(a->kernels[best]));
	if (ai >= 0)
		printf(" %5.2f", gbps[ai] / gbps[best]);
	else
		printf(" %5s", "-");
	printf("\n");
}

static void print_header(const struct bench_args *a, const char *first)
{
	printf("%-9s", first);
	for (unsigned int k = 0; k < a->nr_kernels; k++)
		printf(" %10s", label(a->kernels[k]));
	printf(" %-10s %5s\n", "best", "auto/best");
}

static void print_human(const struct bench_args *a, const struct bench_results *res,
			const struct prealloc_cpu_info *ci)
{
	char s[32];

	printf("cpu: %s (%s family 0x%x model 0x%x), LLC %s\n", ci->model_name, ci->vendor,
	       ci->family, ci->model, format_size(ci->llc_bytes, s, sizeof(s)));
	printf("GB/s, median of %u; * = the kernel auto picks (built-in rules); c is glibc memset\n",
	       a->repeat);
	printf("\nsingle thread, by size:\n");
	print_header(a, "size");
	for (unsigned int i = 0; i < a->nr_sizes; i++) {
		printf("%-9s", format_size(a->sizes[i], s, sizeof(s)));
		print_row_values(a, res->single[i], res->single_auto[i]);
	}
	printf("\n%s, by threads:\n", format_size(a->threads_size, s, sizeof(s)));
	print_header(a, "threads");
	for (unsigned int i = 0; i < a->nr_threads; i++) {
		printf("%-9u", a->threads[i]);
		print_row_values(a, res->by_threads[i], res->threads_auto[i]);
	}
}

static json_object *row_json(const struct bench_args *a, const double *gbps, const char *chosen)
{
	json_object *o = json_object_new_object(), *r = json_object_new_object();
	unsigned int best = best_of(a, gbps);
	int ai = chosen ? kernel_index(a, chosen) : -1;

	for (unsigned int k = 0; k < a->nr_kernels; k++)
		json_object_object_add(r, a->kernels[k],
				       json_object_new_double(round(gbps[k] * 1000) / 1000));
	json_object_object_add(o, "gb_per_s", r);
	json_object_object_add(o, "best", json_object_new_string(a->kernels[best]));
	json_object_object_add(o, "auto", chosen ? json_object_new_string(chosen) : NULL);
	json_object_object_add(o, "auto_to_best",
			       ai >= 0 ? json_object_new_double(round(gbps[ai] / gbps[best] * 1000) /
								 1000)
				       : NULL);
	return o;
}

static json_object *results_json(const struct bench_args *a, const struct bench_results *res,
				 const struct prealloc_cpu_info *ci)
{
	json_object *o = json_object_new_object(), *cpu = json_object_new_object();
	json_object *single = json_object_new_array(), *threads = json_object_new_array();
	json_object *kernels = json_object_new_array();

	json_object_object_add(o, "command", json_object_new_string("bench"));
	json_object_object_add(cpu, "vendor", json_object_new_string(ci->vendor));
	json_object_object_add(cpu, "model_name", json_object_new_string(ci->model_name));
	json_object_object_add(cpu, "family", json_object_new_int((int)ci->family));
	json_object_object_add(cpu, "model", json_object_new_int((int)ci->model));
	json_object_object_add(cpu, "llc_bytes", json_object_new_uint64(ci->llc_bytes));
	json_object_object_add(o, "cpu", cpu);
	json_object_object_add(o, "repeat", json_object_new_int((int)a->repeat));
	for (unsigned int k = 0; k < a->nr_kernels; k++)
		json_object_array_add(kernels, json_object_new_string(a->kernels[k]));
	json_object_object_add(o, "kernels", kernels);
	for (unsigned int i = 0; i < a->nr_sizes; i++) {
		json_object *r = row_json(a, res->single[i], res->single_auto[i]);

		json_object_object_add(r, "size", json_object_new_uint64(a->sizes[i]));
		json_object_array_add(single, r);
	}
	json_object_object_add(o, "single_thread", single);
	json_object_object_add(o, "threads_size", json_object_new_uint64(a->threads_size));
	for (unsigned int i = 0; i < a->nr_threads; i++) {
		json_object *r = row_json(a, res->by_threads[i], res->threads_auto[i]);

		json_object_object_add(r, "threads", json_object_new_int((int)a->threads[i]));
		json_object_array_add(threads, r);
	}
	json_object_object_add(o, "by_threads", threads);
	return o;
}

/*
 * Classes from the single-thread sweep: each measured size's winner covers
 * footprints up to the geometric middle between it and the next size; the
 * by-threads winner at the most threads covers the largest footprints (the
 * way a big `prealloc clear` runs). Neighbours with one winner merge.
 */
static void build_calibration(const struct bench_args *a, const struct bench_results *res,
			      struct prealloc_calibration *cal)
{
	struct prealloc_calibration_class all[MAX_SIZES + 1];
	unsigned int n = 0, top = a->nr_threads - 1;

	for (unsigned int i = 0; i < a->nr_sizes; i++) {
		uint64_t next = i + 1 < a->nr_sizes ? a->sizes[i + 1] : a->threads_size;
		unsigned int best = best_of(a, res->single[i]);

		if (next <= a->sizes[i])
			next = a->sizes[i];
		all[n].max_bytes = (uint64_t)sqrt((double)a->sizes[i] * (double)next);
		all[n].gbps = res->single[i][best];
		snprintf(all[n].kernel, sizeof(all[n].kernel), "%s", a->kernels[best]);
		if (!n || all[n].max_bytes > all[n - 1].max_bytes)
			n++;
	}
	for (unsigned int i = 0; i < a->nr_threads; i++)
		if (a->threads[i] > a->threads[top])
			top = i;
	if (a->nr_threads) {
		/*
		 * The largest footprints come from one worker or many alike, so
		 * take the kernel whose worst ratio to the best over the thread
		 * counts is highest: one that is never far behind, rather than
		 * the 2% winner at full threads that trails by 9% on one.
		 */
		unsigned int best = 0;
		double best_score = -1;

		for (unsigned int k = 0; k < a->nr_kernels; k++) {
			double score = 1;

			for (unsigned int t = 0; t < a->nr_threads; t++) {
				double top_gbps = res->by_threads[t][best_of(a, res->by_threads[t])];

				if (top_gbps > 0)
					score = MIN_OF(score, res->by_threads[t][k] / top_gbps);
			}
			if (score > best_score) {
				best_score = score;
				best = k;
			}
		}
		all[n].max_bytes = UINT64_MAX;
		all[n].gbps = res->by_threads[top][best];
		snprintf(all[n].kernel, sizeof(all[n].kernel), "%s", a->kernels[best]);
		n++;
	} else if (n) {
		all[n - 1].max_bytes = UINT64_MAX;
	}
	memset(cal, 0, sizeof(*cal));
	cal->size = sizeof(*cal);
	for (unsigned int i = 0; i < n; i++) {
		struct prealloc_calibration_class *last =
			cal->nr_classes ? &cal->classes[cal->nr_classes - 1] : NULL;

		if (last && !strcmp(last->kernel, all[i].kernel)) {
			last->max_bytes = all[i].max_bytes;
			last->gbps = MAX_OF(last->gbps, all[i].gbps);
		} else if (cal->nr_classes < PREALLOC_CALIBRATION_CLASSES) {
			cal->classes[cal->nr_classes++] = all[i];
		}
	}
	if (cal->nr_classes)
		cal->classes[cal->nr_classes - 1].max_bytes = UINT64_MAX;
}

/* What auto picks now that the calibration is active, against the best measured. */
static void show_calibrated(struct prealloc_ctx *ctx, const struct bench_args *a,
			    const struct bench_results *res, json_object *o)
{
	for (unsigned int pass = 0; pass < 2; pass++) {
		unsigned int n = pass ? a->nr_threads : a->nr_sizes;
		json_object *rows = o ? json_object_object_get(o, pass ? "by_threads" : "single_thread")
				      : NULL;

		if (!o)
			printf("%s", pass ? "" : "auto with it:");
		for (unsigned int i = 0; i < n; i++) {
			unsigned int t = pass ? a->threads[i] : 1;
			uint64_t size = pass ? (a->threads_size + t - 1) / t : a->sizes[i];
			const double *g = pass ? res->by_threads[i] : res->single[i];
			const char *name = NULL;
			int k;
			char s[32];

			prealloc_clear_choose(ctx, size, t, &name, NULL, 0);
			k = kernel_index(a, name);
			if (o) {
				json_object *row = json_object_array_get_idx(rows, i);

				json_object_object_add(row, "auto_calibrated", json_object_new_string(name));
				json_object_object_add(row, "auto_calibrated_to_best",
						       k < 0 ? NULL
							     : json_object_new_double(
								       round(g[k] / g[best_of(a, g)] *
									     1000) / 1000));
				continue;
			}
			if (pass)
				printf(" %ux%s", t, format_size(size, s, sizeof(s)));
			else
				printf(" %s", format_size(size, s, sizeof(s)));
			printf(" %s", name);
			if (k >= 0)
				printf(" (%.2f)", g[k] / g[best_of(a, g)]);
		}
	}
	if (!o)
		printf("\n");
}

static void default_sizes(struct bench_args *a, uint64_t llc, uint64_t cap)
{
	uint64_t s = MAX_OF(llc / 4, UINT64_C(1) << 20);

	if (a->nr_sizes)
		return;
	for (; a->nr_sizes < 6 && s <= MAX_OF(cap, UINT64_C(1) << 20); s *= 2)
		a->sizes[a->nr_sizes++] = s;
}

static void default_threads(struct bench_args *a, unsigned int nr_cpus)
{
	if (a->nr_threads)
		return;
	for (unsigned int t = 1; t < nr_cpus && a->nr_threads < MAX_THREADS_LIST - 1; t *= 2)
		a->threads[a->nr_threads++] = t;
	a->threads[a->nr_threads++] = MIN_LEN(nr_cpus, 256u);
}

int cmd_bench(int argc, char **argv)
{
	struct bench_args a = { 0 };
	struct prealloc_cpu_info ci = { .size = sizeof(ci) };
	struct prealloc_ctx *ctx = NULL;
	static struct bench_pool pool;
	struct bench_results res;
	struct prealloc_calibration cal;
	int cpus[256], nr_cpus = 0;
	uint64_t llc, avail, cap, bufsize;
	uint8_t *buf = MAP_FAILED;
	cpu_set_t allowed;
	int ret, r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? EXIT_OK : -r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	prealloc_cpu_info(ctx, &ci);
	ret = resolve_kernels(ctx, &a);
	if (ret < 0)
		goto out;
	/* The marks show the built-in rules, whatever calibration is saved. */
	prealloc_calibration_unload(ctx);

	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (int c = 0; c < CPU_SETSIZE && nr_cpus < 256; c++)
			if (CPU_ISSET(c, &allowed))
				cpus[nr_cpus++] = c;
	llc = ci.llc_bytes ? ci.llc_bytes : UINT64_C(32) << 20;
	/* Use at most half of the memory available now. */
	avail = (uint64_t)sysconf(_SC_AVPHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	cap = avail / 2;
	default_sizes(&a, llc, MIN_LEN(8 * llc, cap));
	default_threads(&a, nr_cpus ? (unsigned int)nr_cpus : 1);
	qsort(a.sizes, a.nr_sizes, sizeof(a.sizes[0]), cmp_u64);
	qsort(a.threads, a.nr_threads, sizeof(a.threads[0]), cmp_uint);
	if (!a.threads_size)
		a.threads_size = MAX_OF(UINT64_C(1) << 30, a.sizes[a.nr_sizes - 1]);
	a.threads_size = MIN_LEN(a.threads_size, cap);
	bufsize = MAX_OF(a.threads_size, a.sizes[a.nr_sizes - 1]);
	if (bufsize > cap) {
		char s1[32], s2[32];

		cli_error("%s to measure, but only %s may be used (half the available memory)",
			  format_size(bufsize, s1, sizeof(s1)), format_size(cap, s2, sizeof(s2)));
		ret = -EXIT_NO_MEMORY;
		goto out;
	}
	buf = mmap(NULL, bufsize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		cli_error("cannot map %llu bytes: %s", (unsigned long long)bufsize, strerror(errno));
		ret = -EXIT_NO_MEMORY;
		goto out;
	}
	/* Large pages like guest memory has, and every page faulted before timing. */
	madvise(buf, bufsize, MADV_HUGEPAGE);
	memset(buf, 1, bufsize);
	pool.buf = buf;

	if (!a.json)
		fprintf(stderr, "measuring %u kernels at %u sizes and %u thread counts...\n",
			a.nr_kernels, a.nr_sizes, a.nr_threads);
	if (pool_start(&pool, 1, cpus, (unsigned int)nr_cpus) < 0) {
		ret = -EXIT_FAILURE_RUN;
		goto out;
	}
	for (unsigned int i = 0; i < a.nr_sizes; i++) {
		measure(&pool, &a, a.sizes[i], res.single[i]);
		prealloc_clear_choose(ctx, a.sizes[i], 1, &res.single_auto[i], NULL, 0);
	}
	pool_stop(&pool);
	for (unsigned int i = 0; i < a.nr_threads; i++) {
		unsigned int t = a.threads[i];

		if (pool_start(&pool, t, cpus, (unsigned int)nr_cpus) < 0) {
			cli_error("cannot start %u threads", t);
			ret = -EXIT_FAILURE_RUN;
			goto out;
		}
		measure(&pool, &a, a.threads_size, res.by_threads[i]);
		pool_stop(&pool);
		prealloc_clear_choose(ctx, (a.threads_size + t - 1) / t, t, &res.threads_auto[i],
				      NULL, 0);
	}

	json_object *o = a.json ? results_json(&a, &res, &ci) : NULL;

	if (!a.json)
		print_human(&a, &res, &ci);
	ret = 0;
	if (a.save) {
		char path[4096] = "";

		build_calibration(&a, &res, &cal);
		prealloc_calibration_path(path, sizeof(path));
		r = prealloc_calibration_save(ctx, &cal, NULL);
		if (r < 0) {
			cli_error("cannot save the calibration to %s: %s", path[0] ? path : "(no path)",
				  strerror(-r));
			ret = -EXIT_ENVIRONMENT;
		} else if (!a.json) {
			char s[32];

			printf("\nsaved to %s (auto uses it on this CPU model):\n", path);
			for (unsigned int i = 0; i < cal.nr_classes; i++) {
				if (cal.classes[i].max_bytes == UINT64_MAX)
					printf("  larger          %-10s %.2f GB/s\n",
					       cal.classes[i].kernel, cal.classes[i].gbps);
				else
					printf("  up to %-9s %-10s %.2f GB/s\n",
					       format_size(cal.classes[i].max_bytes, s, sizeof(s)),
					       cal.classes[i].kernel, cal.classes[i].gbps);
			}
		}
		if (r == 0)
			show_calibrated(ctx, &a, &res, o);
		if (o && r == 0) {
			json_object *c = json_object_new_object(), *cl = json_object_new_array();

			json_object_object_add(c, "path", json_object_new_string(path));
			for (unsigned int i = 0; i < cal.nr_classes; i++) {
				json_object *e = json_object_new_object();

				json_object_object_add(e, "max_bytes",
						       json_object_new_uint64(cal.classes[i].max_bytes));
				json_object_object_add(e, "kernel",
						       json_object_new_string(cal.classes[i].kernel));
				json_object_object_add(e, "gb_per_s",
						       json_object_new_double(
							       round(cal.classes[i].gbps * 1000) / 1000));
				json_object_array_add(cl, e);
			}
			json_object_object_add(c, "classes", cl);
			json_object_object_add(o, "calibration", c);
		}
	}
	if (o) {
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	}
out:
	if (buf != MAP_FAILED)
		munmap(buf, bufsize);
	prealloc_ctx_free(ctx);
	return -ret;
}
