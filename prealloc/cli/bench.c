/* SPDX-License-Identifier: MIT */
/*
 * `prealloc bench`: options in, prealloc_calibrate() measures (see
 * prealloc.h), tables or JSON (docs/json.md) out. Each row marks the kernel
 * automatic selection picks by the built-in rules; with --save the
 * calibration is stored and `auto` uses it on this CPU model from then on.
 * The "c" kernel is glibc's memset: the anchor.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* One column of the library's stays for auto. */
#define MAX_KERNELS (PREALLOC_CALIBRATE_KERNELS - 1)
#define MAX_SIZES PREALLOC_CALIBRATE_SIZES
#define MAX_THREADS_LIST PREALLOC_CALIBRATE_THREADS
#define MAX_REPEAT PREALLOC_CALIBRATE_REPEAT_MAX

struct bench_args {
	struct prealloc_calibrate_opts o;
	bool json;
};

static const char usage_text[] =
	"Usage: prealloc bench [OPTIONS]\n"
	"Measure every clear kernel this CPU can run (GB/s, the median of the runs),\n"
	"single-threaded by size and at a large size by thread count, and what\n"
	"automatic selection ('auto', by the built-in rules) runs at each point.\n"
	"\n"
	"  -s, --sizes LIST     sizes to measure single-threaded (default: from LLC/4\n"
	"                       or half the cached limit if smaller, to 8x LLC,\n"
	"                       doubling; at most 6; given: at most 7)\n"
	"  -t, --threads LIST   thread counts at the large size (default: 1, 2, 4, ...\n"
	"                       and every allowed CPU)\n"
	"      --large SIZE     the size of the by-threads table (default: 1G, or the\n"
	"                       largest of --sizes if larger)\n"
	"  -k, --kernels LIST   kernels to measure (default: all usable here)\n"
	"  -r, --repeat N       runs per point (default: 7 or more, up to 31, until\n"
	"                       auto's ratio to the best is known to 1 %)\n"
	"  -w, --writes N       times the memory is written (ordinary stores) after it\n"
	"                       left the caches, before each timed clear: 1 (default),\n"
	"                       written once; 2, written again (data in use) (1-4)\n"
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

/* --sizes: at most MAX_SIZES sizes, each at least 4K. */
static int parse_sizes(char *arg, struct prealloc_calibrate_opts *o)
{
	char *save, *tok;

	o->nr_sizes = 0;
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (o->nr_sizes == MAX_SIZES) {
			cli_error("--sizes: at most %d sizes", MAX_SIZES);
			return -EXIT_USAGE;
		}
		if (prealloc_parse_size(tok, &v) < 0 || v < 4096) {
			cli_error("--sizes: invalid size '%s' (at least 4K)", tok);
			return -EXIT_USAGE;
		}
		o->sizes[o->nr_sizes++] = v;
	}
	return 0;
}

/* --threads: at most MAX_THREADS_LIST counts, each 1-256. */
static int parse_thread_list(char *arg, struct prealloc_calibrate_opts *o)
{
	char *save, *tok;

	o->nr_threads = 0;
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nr_threads == MAX_THREADS_LIST ||
		    parse_u(tok, 256, &o->threads[o->nr_threads]) < 0) {
			cli_error("--threads: invalid list at '%s' (at most %d counts, each 1-256)", tok,
				  MAX_THREADS_LIST);
			return -EXIT_USAGE;
		}
		o->nr_threads++;
	}
	return 0;
}

/* --kernels: names, checked by the library (unknown: a usage error there). */
static int parse_kernels(char *arg, struct prealloc_calibrate_opts *o)
{
	char *save, *tok;

	o->nr_kernels = 0;
	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->nr_kernels == MAX_KERNELS) {
			cli_error("--kernels: at most %d kernels", MAX_KERNELS);
			return -EXIT_USAGE;
		}
		o->kernels[o->nr_kernels++] = tok;
	}
	return 0;
}

enum { OPT_SAVE = 256, OPT_JSON, OPT_LARGE };
static const struct option bench_opts[] = {
	{ "sizes", required_argument, NULL, 's' },
	{ "threads", required_argument, NULL, 't' },
	{ "large", required_argument, NULL, OPT_LARGE },
	{ "kernels", required_argument, NULL, 'k' },
	{ "repeat", required_argument, NULL, 'r' },
	{ "writes", required_argument, NULL, 'w' },
	{ "save", no_argument, NULL, OPT_SAVE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{}
};
static const char bench_short_opts[] = "s:t:k:r:w:h";

/* One option getopt_long returned: 0 taken, 1 --help (printed), or -exit code. */
static int bench_option(int c, char **argv, struct bench_args *a)
{
	switch (c) {
	case 's':
		return parse_sizes(optarg, &a->o);
	case 't':
		return parse_thread_list(optarg, &a->o);
	case OPT_LARGE:
		if (prealloc_parse_size(optarg, &a->o.large_size) < 0 ||
		    a->o.large_size < (UINT64_C(1) << 20)) {
			cli_error("--large: invalid size '%s' (at least 1M)", optarg);
			return -EXIT_USAGE;
		}
		return 0;
	case 'k':
		return parse_kernels(optarg, &a->o);
	case 'r':
		if (parse_u(optarg, MAX_REPEAT, &a->o.repeat) < 0) {
			cli_error("--repeat: invalid count '%s' (1-%d)", optarg, MAX_REPEAT);
			return -EXIT_USAGE;
		}
		return 0;
	case 'w':
		if (parse_u(optarg, PREALLOC_CALIBRATE_WRITES_MAX, &a->o.writes) < 0) {
			cli_error("--writes: invalid count '%s' (1-%d)", optarg,
				  PREALLOC_CALIBRATE_WRITES_MAX);
			return -EXIT_USAGE;
		}
		return 0;
	case OPT_SAVE:
		a->o.flags |= PREALLOC_CALIBRATE_SAVE;
		return 0;
	case OPT_JSON:
		a->json = true;
		return 0;
	case 'h':
		fputs(usage_text, stdout);
		return 1;
	default:
		return -option_error("bench", argv, bench_short_opts, bench_opts);
	}
}

static int parse_args(int argc, char **argv, struct bench_args *a)
{
	int c, r = 0;

	optind = 1;
	while (r == 0 && (c = getopt_long(argc, argv, bench_short_opts, bench_opts, NULL)) != -1)
		r = bench_option(c, argv, a);
	if (r == 0 && cli_extra_arg("bench", argc, argv, NULL))
		r = -EXIT_USAGE;
	return r;
}

static const char *label(const char *kernel)
{
	return strcmp(kernel, "c") ? kernel : "c=memset";
}

static int kernel_index(const struct prealloc_calibrate_result *res, const char *name)
{
	for (unsigned int k = 0; k < res->nr_kernels; k++)
		if (!strcmp(res->kernels[k], name))
			return (int)k;
	return -1;
}

/* The fastest kernel; the last column is auto, not a kernel. */
static unsigned int best_of(const struct prealloc_calibrate_result *res, const double *gbps)
{
	unsigned int best = 0;

	for (unsigned int k = 1; k + 1 < res->nr_kernels; k++)
		if (gbps[k] > gbps[best])
			best = k;
	return best;
}

/*
 * chosen: what auto ran (a kernel, marked *, or a probe's pair, with the
 * share its cached kernel cleared); ratio: its paired ratio to the best (0:
 * not measured).
 */
static void print_row_values(const struct prealloc_calibrate_result *res, const double *gbps,
			     const char *chosen, double cached, double ratio, unsigned int rep)
{
	int ai = kernel_index(res, chosen);
	unsigned int best = best_of(res, gbps);
	char ran[40];

	for (unsigned int k = 0; k < res->nr_kernels; k++)
		printf(" %9.2f%c", gbps[k], (int)k == ai ? '*' : ' ');
	if (ai >= 0)
		snprintf(ran, sizeof(ran), "%s", label(chosen));
	else
		snprintf(ran, sizeof(ran), "%s %.0f%%", chosen, cached * 100);
	printf(" %-10s %-15s", label(res->kernels[best]), ran);
	if (ratio > 0)
		printf(" %9.2f", ratio);
	else
		printf(" %9s", "-");
	printf(" %4u\n", rep);
}

static void print_header(const struct prealloc_calibrate_result *res, const char *first)
{
	printf("%-9s", first);
	for (unsigned int k = 0; k < res->nr_kernels; k++)
		printf(" %10s", label(res->kernels[k]));
	printf(" %-10s %-15s %9s %4s\n", "best", "auto ran", "auto/best", "runs");
}

static void print_human(const struct prealloc_calibrate_result *res,
			const struct prealloc_cpu_info *ci)
{
	char s[32];

	printf("cpu: %s (%s family 0x%x model 0x%x), LLC %s\n", ci->model_name, ci->vendor,
	       ci->family, ci->model, prealloc_format_size(ci->llc_bytes, s, sizeof(s)));
	printf("GB/s, median of the runs, each clear on memory written %u time%s since it\n"
	       "left the caches; c is glibc memset; auto: as it runs with no calibration, a\n"
	       "kernel (*) or a probe per piece between two (c/NT, with the share cleared by\n"
	       "c); auto/best: median over the runs of auto against the best kernel (the\n"
	       "highest median) in the same run\n",
	       res->writes, res->writes == 1 ? "" : "s");
	if (res->repeat == res->repeat_max)
		printf("runs: %u per point (--repeat)\n", res->repeat);
	else
		printf("runs: %u-%u per point, until auto/best is known to %.0f %%\n", res->repeat,
		       res->repeat_max, PREALLOC_CALIBRATE_PRECISION * 100);
	printf("noise: one kernel's samples spread by %.0f %% (interquartile range over median)%s\n",
	       res->spread * 100,
	       res->spread > 0.05 ? "; a busy machine: ratios within that are not differences" : "");
	printf("\nsingle thread, by size:\n");
	print_header(res, "size");
	for (unsigned int i = 0; i < res->nr_sizes; i++) {
		printf("%-9s", prealloc_format_size(res->sizes[i], s, sizeof(s)));
		print_row_values(res, res->size_gbps[i], res->size_auto[i], res->size_auto_cached[i],
				 res->size_auto_ratio[i], res->size_repeat[i]);
	}
	printf("\n%s, by threads:\n", prealloc_format_size(res->large_size, s, sizeof(s)));
	print_header(res, "threads");
	for (unsigned int i = 0; i < res->nr_threads; i++) {
		printf("%-9u", res->threads[i]);
		print_row_values(res, res->threads_gbps[i], res->threads_auto[i],
				 res->threads_auto_cached[i], res->threads_auto_ratio[i],
				 res->threads_repeat[i]);
	}
}

static json_object *ratio_json(double ratio)
{
	return ratio > 0 ? json_object_new_double(round(ratio * 1000) / 1000) : NULL;
}

/* ratios: the paired ratios of the pick by the rules and under the calibration. */
static json_object *row_json(const struct prealloc_calibrate_result *res, const double *gbps,
			     const char *chosen, double cached, const char *calibrated,
			     const double ratios[2], unsigned int rep)
{
	json_object *o = json_object_new_object(), *r = json_object_new_object();

	for (unsigned int k = 0; k < res->nr_kernels; k++)
		json_object_object_add(r, res->kernels[k],
				       json_object_new_double(round(gbps[k] * 1000) / 1000));
	json_object_object_add(o, "gb_per_s", r);
	json_object_object_add(o, "best", json_object_new_string(res->kernels[best_of(res, gbps)]));
	json_object_object_add(o, "auto", json_object_new_string(chosen));
	json_object_object_add(o, "auto_to_best", ratio_json(ratios[0]));
	json_object_object_add(o, "auto_cached_share",
			       json_object_new_double(round(cached * 1000) / 1000));
	json_object_object_add(o, "repeat", json_object_new_int((int)rep));
	if (res->saved) {
		json_object_object_add(o, "auto_calibrated", json_object_new_string(calibrated));
		json_object_object_add(o, "auto_calibrated_to_best", ratio_json(ratios[1]));
	}
	return o;
}

static json_object *calibration_json(const struct prealloc_calibrate_result *res, const char *path)
{
	json_object *c = json_object_new_object(), *cl = json_object_new_array();

	json_object_object_add(c, "path", json_object_new_string(path));
	for (unsigned int i = 0; i < res->calibration.nr_classes; i++) {
		const struct prealloc_calibration_class *k = &res->calibration.classes[i];
		json_object *e = json_object_new_object();

		json_object_object_add(e, "max_bytes", json_object_new_uint64(k->max_bytes));
		json_object_object_add(e, "kernel", json_object_new_string(k->kernel));
		json_object_object_add(e, "gb_per_s", json_object_new_double(round(k->gbps * 1000) / 1000));
		json_object_array_add(cl, e);
	}
	json_object_object_add(c, "classes", cl);
	return c;
}

static json_object *results_json(const struct prealloc_calibrate_result *res,
				 const struct prealloc_cpu_info *ci, const char *path)
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
	json_object_object_add(o, "repeat", json_object_new_int((int)res->repeat));
	json_object_object_add(o, "repeat_max", json_object_new_int((int)res->repeat_max));
	json_object_object_add(o, "spread", json_object_new_double(round(res->spread * 1000) / 1000));
	json_object_object_add(o, "writes", json_object_new_int((int)res->writes));
	for (unsigned int k = 0; k < res->nr_kernels; k++)
		json_object_array_add(kernels, json_object_new_string(res->kernels[k]));
	json_object_object_add(o, "kernels", kernels);
	for (unsigned int i = 0; i < res->nr_sizes; i++) {
		const double ratios[2] = { res->size_auto_ratio[i], res->size_calibrated_ratio[i] };
		json_object *r = row_json(res, res->size_gbps[i], res->size_auto[i],
					  res->size_auto_cached[i], res->size_calibrated[i], ratios,
					  res->size_repeat[i]);

		json_object_object_add(r, "size", json_object_new_uint64(res->sizes[i]));
		json_object_array_add(single, r);
	}
	json_object_object_add(o, "single_thread", single);
	json_object_object_add(o, "threads_size", json_object_new_uint64(res->large_size));
	for (unsigned int i = 0; i < res->nr_threads; i++) {
		const double ratios[2] = { res->threads_auto_ratio[i],
					   res->threads_calibrated_ratio[i] };
		json_object *r = row_json(res, res->threads_gbps[i], res->threads_auto[i],
					  res->threads_auto_cached[i], res->threads_calibrated[i],
					  ratios, res->threads_repeat[i]);

		json_object_object_add(r, "threads", json_object_new_int((int)res->threads[i]));
		json_object_array_add(threads, r);
	}
	json_object_object_add(o, "by_threads", threads);
	if (res->saved)
		json_object_object_add(o, "calibration", calibration_json(res, path));
	return o;
}

/* The saved classes, and what auto picks with them against the best measured. */
static void print_saved(const struct prealloc_calibrate_result *res, const char *path)
{
	char s[32];

	printf("\nsaved to %s (auto uses it on this CPU model):\n", path);
	for (unsigned int i = 0; i < res->calibration.nr_classes; i++) {
		const struct prealloc_calibration_class *c = &res->calibration.classes[i];

		if (c->max_bytes == UINT64_MAX)
			printf("  larger          %-10s %.2f GB/s\n", c->kernel, c->gbps);
		else
			printf("  up to %-9s %-10s %.2f GB/s\n", prealloc_format_size(c->max_bytes, s, sizeof(s)),
			       c->kernel, c->gbps);
	}
	printf("auto with it:");
	for (unsigned int i = 0; i < res->nr_sizes; i++) {
		printf(" %s %s", prealloc_format_size(res->sizes[i], s, sizeof(s)), res->size_calibrated[i]);
		if (res->size_calibrated_ratio[i] > 0)
			printf(" (%.2f)", res->size_calibrated_ratio[i]);
	}
	for (unsigned int i = 0; i < res->nr_threads; i++) {
		unsigned int t = res->threads[i];

		printf(" %ux%s %s", t, prealloc_format_size((res->large_size + t - 1) / t, s, sizeof(s)),
		       res->threads_calibrated[i]);
		if (res->threads_calibrated_ratio[i] > 0)
			printf(" (%.2f)", res->threads_calibrated_ratio[i]);
	}
	printf("\n");
}

/* Message and exit code for a measurement that could not run. */
static int calibrate_failed(const struct bench_args *a, const struct prealloc_calibrate_result *res,
			    int r)
{
	char s1[32], s2[32];

	if ((r == -ENOENT || r == -EOPNOTSUPP) && res->bad_kernel >= 0) {
		const char *k = a->o.kernels[res->bad_kernel];

		if (r == -ENOENT) {
			cli_error("--kernels: unknown clear kernel '%s'", k);
			return EXIT_USAGE;
		}
		cli_error("--kernels: the %s kernel cannot run on this CPU", k);
		return EXIT_ENVIRONMENT;
	}
	if (r == -ENOMEM && res->buffer_bytes > res->buffer_limit) {
		cli_error("%s to measure, but only %s may be used (half the available memory)",
			  prealloc_format_size(res->buffer_bytes, s1, sizeof(s1)),
			  prealloc_format_size(res->buffer_limit, s2, sizeof(s2)));
		return EXIT_NO_MEMORY;
	}
	cli_error("cannot measure the clear kernels: %s", strerror(-r));
	return r == -ENOMEM ? EXIT_NO_MEMORY : EXIT_FAILURE_RUN;
}

int cmd_bench(int argc, char **argv)
{
	struct bench_args a = { .o = { .size = sizeof(a.o) } };
	struct prealloc_cpu_info ci = { .size = sizeof(ci) };
	struct prealloc_calibrate_result *res;
	struct prealloc_ctx *ctx;
	char path[4096] = "", why[320] = "";
	const char *name = "";
	int ret = EXIT_OK, r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? EXIT_OK : -r;
	ctx = cli_context();
	res = calloc(1, sizeof(*res));
	if (!ctx || !res) {
		prealloc_ctx_free(ctx);
		free(res);
		return EXIT_FAILURE_RUN;
	}
	res->size = sizeof(*res);
	prealloc_cpu_info(ctx, &ci);
	prealloc_calibration_path(path, sizeof(path));
	if (!a.json)
		fprintf(stderr, "measuring the clear kernels...\n");
	r = prealloc_calibrate(ctx, &a.o, res);
	/* A calibration built means everything was measured; only the save failed. */
	if (r < 0 && !res->calibration.nr_classes) {
		ret = calibrate_failed(&a, res, r);
		goto out;
	}
	if (a.json) {
		json_object *o = results_json(res, &ci, path);

		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		print_human(res, &ci);
		if (res->saved)
			print_saved(res, path);
		/* What a large clear runs, and why: a calibration, or the ranking measured here. */
		else if (prealloc_clear_choose(ctx, UINT64_C(1) << 30, 1, &name, why, sizeof(why)) == 0)
			printf("\nauto for a 1 GiB clear: %s (%s)\n", name, why);
	}
	if (r < 0) {
		cli_error("cannot save the calibration to %s: %s", path[0] ? path : "(no path)",
			  strerror(-r));
		ret = EXIT_ENVIRONMENT;
	}
out:
	free(res);
	prealloc_ctx_free(ctx);
	return ret;
}
