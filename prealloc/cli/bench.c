/* SPDX-License-Identifier: MIT */
/*
 * `prealloc bench`: options in, prealloc_calibrate() measures (see
 * prealloc.h), tables or JSON (docs/json.md) out (bench_render.c); with
 * --save the calibration is stored and `auto` uses it on this CPU model
 * from then on.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
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
		json_object *o = bench_results_json(res, &ci, path);

		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		bench_print_human(res, &ci);
		if (res->saved)
			bench_print_saved(res, path);
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
