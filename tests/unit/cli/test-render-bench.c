/* SPDX-License-Identifier: MIT */
/*
 * `prealloc bench`'s document and tables (docs/json.md, "Bench") from a
 * prealloc_calibrate_result with a distinct value in every field, rendered
 * by bench_render.c's own code, each key and column held to its field;
 * and the exit status of a measurement that could not run (bench.c). Both
 * keep their helpers static, so they are included here whole (cmd_bench
 * with them; the copies in the CLI's library are then never linked in).
 */
#include "cli/bench.c"
#include "cli/bench_render.c"

#include "json-check.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

static const char *const path = "/tmp/prealloc-test/calibration";

static void fill(struct prealloc_calibrate_result *res, struct prealloc_cpu_info *ci)
{
	static const char *const kernels[] = { "c", "movnti", "avx2_nt", "auto" };
	static const double size_gbps[2][4] = { { 11.125, 13.25, 12.5, 14.375 },
						{ 21.5, 19.75, 23.625, 22.875 } };
	static const double threads_gbps[2][4] = { { 31.5, 33.25, 35.125, 34.5 },
						   { 45.75, 41.5, 43.25, 44.625 } };

	*res = (struct prealloc_calibrate_result){
		.size = sizeof(*res),
		.bad_kernel = -1,
		.repeat = 7,
		.repeat_max = 31,
		.nr_kernels = 4,
		.nr_sizes = 2,
		.sizes = { 1 * MiB, 8 * MiB },
		/* Each row's auto, best and calibrated pick differ. */
		.size_auto = { "avx2_nt", "c/avx2_nt" },
		.size_calibrated = { "c", "c/movnti" },
		.nr_threads = 2,
		.threads = { 3, 12 },
		.large_size = 3 * GiB,
		.threads_auto = { "c", "c/movnti" },
		.threads_calibrated = { "movnti", "avx2_nt" },
		.calibration = { .size = sizeof(res->calibration), .nr_classes = 2,
				 .classes = { { 3 * MiB, "movnti", 12.875 },
					      { UINT64_MAX, "c/avx2_nt", 24.125 } } },
		.saved = 1,
		.size_auto_ratio = { 0.875, 1.0625 },
		.size_calibrated_ratio = { 0.75, 0 },
		.threads_auto_ratio = { 0.625, 0.9375 },
		.threads_calibrated_ratio = { 1.125, 0.8125 },
		.spread = 0.140625,
		.writes = 2,
		.size_auto_cached = { 0.5, 0.375 },
		.threads_auto_cached = { 0.0625, 0.6875 },
		.size_repeat = { 9, 17 },
		.threads_repeat = { 23, 29 },
	};
	for (unsigned int k = 0; k < 4; k++) {
		snprintf(res->kernels[k], sizeof(res->kernels[k]), "%s", kernels[k]);
		for (unsigned int i = 0; i < 2; i++) {
			res->size_gbps[i][k] = size_gbps[i][k];
			res->threads_gbps[i][k] = threads_gbps[i][k];
		}
	}
	*ci = (struct prealloc_cpu_info){ .size = sizeof(*ci), .vendor = "AuthenticAMD",
					  .model_name = "Test CPU 9000", .family = 25,
					  .model = 17, .stepping = 2, .llc_bytes = 96 * MiB };
}

static double r3(double v)
{
	return round(v * 1000) / 1000;
}

/* The keys of o in exactly this order (docs/json.md gives the bench's order). */
static void keys_in_order(json_object *o, const char *what, const char *const *keys)
{
	size_t i = 0;
	bool same = o != NULL;

	if (o) {
		json_object_object_foreach(o, k, v) {
			(void)v;
			same = same && keys[i] && !strcmp(k, keys[i]);
			i++;
		}
	}
	tap_ok(same && !keys[i], "%s: its keys in the documented order", what);
}

/* One row of single_thread or by_threads against row i of the result. */
static void row_json_matches(json_object *j, const struct prealloc_calibrate_result *res,
			     bool by_threads, unsigned int i, const char *best)
{
	static const char *const size_keys[] = { "gb_per_s", "best", "auto", "auto_to_best",
		"auto_cached_share", "repeat", "auto_calibrated", "auto_calibrated_to_best",
		"size", NULL };
	static const char *const threads_keys[] = { "gb_per_s", "best", "auto", "auto_to_best",
		"auto_cached_share", "repeat", "auto_calibrated", "auto_calibrated_to_best",
		"threads", NULL };
	const double *gbps = by_threads ? res->threads_gbps[i] : res->size_gbps[i];
	double auto_ratio = by_threads ? res->threads_auto_ratio[i] : res->size_auto_ratio[i];
	double cal_ratio = by_threads ? res->threads_calibrated_ratio[i]
				      : res->size_calibrated_ratio[i];
	json_object *g = json_object_object_get(j, "gb_per_s");
	char what[48];

	snprintf(what, sizeof(what), "%s row %u", by_threads ? "by_threads" : "single_thread", i);
	keys_in_order(j, what, by_threads ? threads_keys : size_keys);
	for (unsigned int k = 0; k < res->nr_kernels; k++)
		is_double(g, what, res->kernels[k], r3(gbps[k]), 1e-9);
	is_string(j, what, "best", best);
	is_string(j, what, "auto", by_threads ? res->threads_auto[i] : res->size_auto[i]);
	is_double(j, what, "auto_to_best", r3(auto_ratio), 1e-9);
	is_double(j, what, "auto_cached_share",
		  r3(by_threads ? res->threads_auto_cached[i] : res->size_auto_cached[i]), 1e-9);
	is_int(j, what, "repeat", by_threads ? res->threads_repeat[i] : res->size_repeat[i]);
	is_string(j, what, "auto_calibrated",
		  by_threads ? res->threads_calibrated[i] : res->size_calibrated[i]);
	if (cal_ratio > 0)
		is_double(j, what, "auto_calibrated_to_best", r3(cal_ratio), 1e-9);
	else
		is_null(j, what, "auto_calibrated_to_best");
	if (by_threads)
		is_int(j, what, "threads", res->threads[i]);
	else
		is_u64(j, what, "size", res->sizes[i]);
}

static void test_json(void)
{
	static const char *const keys[] = { "command", "cpu", "repeat", "repeat_max", "spread",
		"writes", "kernels", "single_thread", "threads_size", "by_threads", "calibration",
		NULL };
	static const char *const cpu_keys[] = { "vendor", "model_name", "family", "model",
		"llc_bytes", NULL };
	struct prealloc_calibrate_result *res = calloc(1, sizeof(*res));
	struct prealloc_cpu_info ci;
	json_object *o, *back, *cpu, *arr, *cal, *classes;
	const char *w = "bench";

	fill(res, &ci);
	o = bench_results_json(res, &ci, path);
	back = json_tokener_parse(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	if (!tap_ok(back != NULL, "bench: the document parses")) {
		free(res);
		return;
	}
	keys_in_order(back, w, keys);
	is_string(back, w, "command", "bench");
	cpu = json_object_object_get(back, "cpu");
	has_keys(cpu, "bench cpu", cpu_keys);
	is_string(cpu, "bench cpu", "vendor", ci.vendor);
	is_string(cpu, "bench cpu", "model_name", ci.model_name);
	is_int(cpu, "bench cpu", "family", ci.family);
	is_int(cpu, "bench cpu", "model", ci.model);
	is_u64(cpu, "bench cpu", "llc_bytes", ci.llc_bytes);
	is_int(back, w, "repeat", res->repeat);
	is_int(back, w, "repeat_max", res->repeat_max);
	is_double(back, w, "spread", r3(res->spread), 1e-9);
	is_int(back, w, "writes", res->writes);
	arr = json_object_object_get(back, "kernels");
	tap_ok(arr && json_object_array_length(arr) == 4 &&
		       !strcmp(json_object_get_string(json_object_array_get_idx(arr, 0)), "c") &&
		       !strcmp(json_object_get_string(json_object_array_get_idx(arr, 1)), "movnti") &&
		       !strcmp(json_object_get_string(json_object_array_get_idx(arr, 2)), "avx2_nt") &&
		       !strcmp(json_object_get_string(json_object_array_get_idx(arr, 3)), "auto"),
	       "bench: kernels in column order, auto last");
	arr = json_object_object_get(back, "single_thread");
	if (tap_ok(arr && json_object_array_length(arr) == 2, "bench: two single_thread rows")) {
		row_json_matches(json_object_array_get_idx(arr, 0), res, false, 0, "movnti");
		row_json_matches(json_object_array_get_idx(arr, 1), res, false, 1, "avx2_nt");
	}
	is_u64(back, w, "threads_size", res->large_size);
	arr = json_object_object_get(back, "by_threads");
	if (tap_ok(arr && json_object_array_length(arr) == 2, "bench: two by_threads rows")) {
		row_json_matches(json_object_array_get_idx(arr, 0), res, true, 0, "avx2_nt");
		row_json_matches(json_object_array_get_idx(arr, 1), res, true, 1, "c");
	}
	cal = json_object_object_get(back, "calibration");
	is_string(cal, "bench calibration", "path", path);
	classes = json_object_object_get(cal, "classes");
	if (tap_ok(classes && json_object_array_length(classes) == 2, "bench: two classes")) {
		for (unsigned int i = 0; i < 2; i++) {
			json_object *c = json_object_array_get_idx(classes, i);
			const struct prealloc_calibration_class *k = &res->calibration.classes[i];

			is_u64(c, "bench class", "max_bytes", k->max_bytes);
			is_string(c, "bench class", "kernel", k->kernel);
			is_double(c, "bench class", "gb_per_s", r3(k->gbps), 1e-9);
		}
	}
	json_object_put(back);

	/* Not saved: neither the calibration nor the rows' calibrated pair. */
	res->saved = 0;
	o = bench_results_json(res, &ci, path);
	arr = json_object_object_get(o, "single_thread");
	is_absent(o, "bench unsaved", "calibration");
	is_absent(json_object_array_get_idx(arr, 0), "bench unsaved row", "auto_calibrated");
	is_absent(json_object_array_get_idx(arr, 0), "bench unsaved row", "auto_calibrated_to_best");
	json_object_put(o);
	free(res);
}

/* line, its runs of spaces made one, is want. */
static void is_words(const char *line, const char *want)
{
	char got[512];
	size_t n = 0;

	for (const char *p = line; *p && n + 1 < sizeof(got); p++)
		if (*p != ' ' || (n && got[n - 1] != ' '))
			got[n++] = *p;
	while (n && got[n - 1] == ' ')
		n--;
	got[n] = '\0';
	tap_ok(!strcmp(got, want), "words '%s' (got '%s')", want, got);
}

static bool near(double got, double want, int digits)
{
	return fabs(got - want) <= 0.5 * pow(10, -digits) + 1e-9;
}

/*
 * A table row: first (the size or thread count), each kernel's GB/s with a
 * '*' on the one auto ran, the best kernel, what auto ran (a probe's pair
 * with its cached share), auto/best ('-' for 0), the runs.
 */
static void row_text_matches(const char *line, const char *first,
			     const struct prealloc_calibrate_result *res, const double *gbps,
			     const char *chosen, double cached, double ratio, unsigned int rep,
			     const char *best)
{
	char copy[512], *tok[32], *save, *t, want[48];
	unsigned int n = 0, f, at;
	bool ok = true, pair = kernel_index(res, chosen) < 0;

	snprintf(copy, sizeof(copy), "%s", line);
	for (t = strtok_r(copy, " ", &save); t && n < 32; t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	f = strchr(first, ' ') ? 2 : 1;
	if (!tap_ok(n == f + res->nr_kernels + (pair ? 5 : 4), "row '%s': %u columns [%s]", first,
		    n, line))
		return;
	snprintf(want, sizeof(want), "%s%s%s", tok[0], f == 2 ? " " : "", f == 2 ? tok[1] : "");
	tap_ok(!strcmp(want, first), "row '%s': first column (got '%s')", first, want);
	for (unsigned int k = 0; k < res->nr_kernels; k++) {
		bool star = tok[f + k][strlen(tok[f + k]) - 1] == '*';

		ok = ok && near(strtod(tok[f + k], NULL), gbps[k], 2) &&
		     star == !strcmp(res->kernels[k], chosen);
	}
	tap_ok(ok, "row '%s': each kernel's GB/s, '*' on %s", first, chosen);
	at = f + res->nr_kernels;
	tap_ok(!strcmp(tok[at], label(best)), "row '%s': best %s (got %s)", first, best, tok[at]);
	if (pair) {
		snprintf(want, sizeof(want), "%.0f%%", cached * 100);
		tap_ok(!strcmp(tok[at + 1], chosen) && !strcmp(tok[at + 2], want),
		       "row '%s': auto ran %s %s", first, chosen, want);
		at++;
	} else {
		tap_ok(!strcmp(tok[at + 1], label(chosen)), "row '%s': auto ran %s", first, chosen);
	}
	tap_ok(ratio > 0 ? near(strtod(tok[at + 2], NULL), ratio, 2) : !strcmp(tok[at + 2], "-"),
	       "row '%s': auto/best %.2f (got %s)", first, ratio, tok[at + 2]);
	tap_ok(strtoul(tok[at + 3], NULL, 10) == rep, "row '%s': %u runs", first, rep);
}

static void test_human(void)
{
	struct prealloc_calibrate_result *res = calloc(1, sizeof(*res));
	struct prealloc_cpu_info ci;
	struct capture c;
	char buf[512], *text;

	fill(res, &ci);
	capture_begin(&c);
	bench_print_human(res, &ci);
	bench_print_saved(res, path);
	text = capture_end(&c);
	if (!tap_ok(text != NULL, "bench: the tables render")) {
		free(res);
		return;
	}
	is_line(text, 0, "cpu: Test CPU 9000 (AuthenticAMD family 0x19 model 0x11), LLC 96 MiB");
	is_line(text, 1, "GB/s, median of the runs, each clear on memory written 2 times since it");
	is_line(text, 6, "runs: 7-31 per point, until auto/best is known to 1 %");
	is_line(text, 7, "noise: one kernel's samples spread by 14 % (interquartile range over "
			 "median); a busy machine: ratios within that are not differences");
	is_words(line_of(text, 10, buf, sizeof(buf)),
		 "size c=memset movnti avx2_nt auto best auto ran auto/best runs");
	row_text_matches(line_of(text, 11, buf, sizeof(buf)), "1 MiB", res, res->size_gbps[0],
			 "avx2_nt", 0.5, 0.875, 9, "movnti");
	row_text_matches(line_of(text, 12, buf, sizeof(buf)), "8 MiB", res, res->size_gbps[1],
			 "c/avx2_nt", 0.375, 1.0625, 17, "avx2_nt");
	is_line(text, 14, "3 GiB, by threads:");
	is_words(line_of(text, 15, buf, sizeof(buf)),
		 "threads c=memset movnti avx2_nt auto best auto ran auto/best runs");
	row_text_matches(line_of(text, 16, buf, sizeof(buf)), "3", res, res->threads_gbps[0], "c",
			 0.0625, 0.625, 23, "avx2_nt");
	row_text_matches(line_of(text, 17, buf, sizeof(buf)), "12", res, res->threads_gbps[1],
			 "c/movnti", 0.6875, 0.9375, 29, "c");
	is_line(text, 19, "saved to /tmp/prealloc-test/calibration (auto uses it on this CPU model):");
	is_line(text, 20, "  up to 3 MiB     movnti     12.88 GB/s");
	is_line(text, 21, "  larger          c/avx2_nt  24.12 GB/s");
	is_line(text, 22, "auto with it: 1 MiB c (0.75) 8 MiB c/movnti 3x1 GiB movnti (1.12) "
			  "12x256 MiB avx2_nt (0.81)");
	free(text);

	/* --repeat: the fewest and the most are one number. */
	res->repeat_max = res->repeat = 5;
	capture_begin(&c);
	bench_print_human(res, &ci);
	text = capture_end(&c);
	if (text)
		is_line(text, 6, "runs: 5 per point (--repeat)");
	free(text);
	free(res);
}

/* Exit status of a measurement that could not run (docs/prealloc.1.md, bench). */
static void test_exit(void)
{
	struct bench_args a = { .o = { .size = sizeof(a.o), .nr_kernels = 2,
				       .kernels = { "c", "nosuch" } } };
	struct prealloc_calibrate_result *res = calloc(1, sizeof(*res));
	static const struct {
		int bad_kernel, err;
		uint64_t bytes, limit;
		int want;
		const char *why;
	} rows[] = {
		{ 1, -ENOENT, 0, 0, 2, "an unknown kernel" },
		{ 1, -EOPNOTSUPP, 0, 0, 4, "a kernel this CPU cannot run" },
		{ -1, -ENOMEM, 2 * GiB, 1 * GiB, 3, "sizes over half the available memory" },
		{ -1, -ENOMEM, 0, 0, 3, "no memory" },
		{ -1, -ENOENT, 0, 0, 1, "a failure naming no kernel" },
		{ -1, -EINVAL, 0, 0, 1, "anything else" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int got;

		res->bad_kernel = rows[i].bad_kernel;
		res->buffer_bytes = rows[i].bytes;
		res->buffer_limit = rows[i].limit;
		got = calibrate_failed(&a, res, rows[i].err);
		tap_ok(got == rows[i].want, "bench exit: %s: %d (got %d)", rows[i].why, rows[i].want,
		       got);
	}
	free(res);
}

int main(void)
{
	test_json();
	test_human();
	test_exit();
	return tap_done();
}
