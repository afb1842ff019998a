/* SPDX-License-Identifier: MIT */
/*
 * `prealloc bench`'s results rendered (bench.c measures): the tables by size
 * and by thread count, each row marking the kernel automatic selection
 * picks by the built-in rules; the JSON document (docs/json.md, "Bench");
 * the classes --save stored and what auto picks with them. The "c" kernel
 * is glibc's memset: the anchor.
 */
#include <json-c/json.h>
#include <math.h>
#include <string.h>

#include "cli.h"

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

void bench_print_human(const struct prealloc_calibrate_result *res,
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

json_object *bench_results_json(const struct prealloc_calibrate_result *res,
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
void bench_print_saved(const struct prealloc_calibrate_result *res, const char *path)
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
