/* SPDX-License-Identifier: MIT */
/*
 * Rendering a job's report: a table for people, one JSON document for
 * programs (schema in docs/json.md), and a per-node progress bar.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"

static const char *method_name(int method)
{
	switch (method) {
	case PREALLOC_METHOD_POPULATE_WRITE:
		return "madv_populate_write";
	case PREALLOC_METHOD_TOUCH:
		return "touch";
	case PREALLOC_METHOD_CLEAR:
		return "clear";
	default:
		return "none";
	}
}

static const char *op_verb(int op)
{
	switch (op) {
	case PREALLOC_OP_POPULATE:
		return "populated";
	case PREALLOC_OP_CLEAR:
		return "cleared";
	default:
		return "verified";
	}
}

/* "io_uring-registered", "io_uring-private-ring", "eventfd": the report's notify. */
static const char *notify_name(int notify)
{
	switch (notify) {
	case PREALLOC_NOTIFY_URING_REGISTERED:
		return "io_uring-registered";
	case PREALLOC_NOTIFY_URING_PRIVATE_RING:
		return "io_uring-private-ring";
	default:
		return "eventfd";
	}
}


static json_object *node_json(const struct prealloc_node_report *n)
{
	json_object *o = json_object_new_object(), *cpus = json_object_new_array();

	json_object_object_add(o, "node", json_object_new_int(n->node));
	json_object_object_add(o, "bytes", json_object_new_uint64(n->bytes));
	json_object_object_add(o, "bytes_done", json_object_new_uint64(n->bytes_done));
	json_object_object_add(o, "threads", json_object_new_int((int)n->threads));
	json_object_object_add(o, "seconds", json_double(n->seconds));
	json_object_object_add(o, "gb_per_s", json_double(gbps(n->bytes_done, n->seconds)));
	json_object_object_add(o, "pages_on_node", json_object_new_uint64(n->pages_on_node));
	json_object_object_add(o, "pages_off_node", json_object_new_uint64(n->pages_off_node));
	json_object_object_add(o, "pages_missing", json_object_new_uint64(n->pages_missing));
	json_object_object_add(o, "huge_bytes", json_object_new_uint64(n->huge_bytes));
	for (int c = 0; c < PREALLOC_MAX_CPUS; c++)
		if (n->cpus_seen[c / 64] & (UINT64_C(1) << (c % 64)))
			json_object_array_add(cpus, json_object_new_int(c));
	json_object_object_add(o, "cpus", cpus);
	json_object_object_add(o, "cpu_samples_off", json_object_new_uint64(n->cpu_samples_off));
	return o;
}

/* What the view adds: the process's phases, the clear's, the create's admission. */
static void report_json_view(json_object *o, const struct run_view *view)
{
	/*
	 * The process: the context (topology, CPU) and main's whole time up to
	 * this report; a run's time outside main is exec, loading and exit.
	 */
	json_object_object_add(o, "ctx_seconds", json_double(cli_ctx_seconds));
	json_object_object_add(o, "main_seconds", json_double(now_seconds() - cli_main_start));
	if (view->clear) {
		/* Where the time went (docs/json.md): checks, mapping, the job. */
		json_object_object_add(o, "check_seconds", json_double(view->clear->check_seconds));
		json_object_object_add(o, "map_seconds", json_double(view->clear->map_seconds));
		json_object_object_add(o, "clear_seconds", json_double(view->clear->clear_seconds));
	}
	if (view->admit) {
		json_object *a = json_object_new_object();

		/* Which way the pages came: free, taken from warm files, grown; docs/json.md. */
		json_object_object_add(a, "warm_pages", json_object_new_uint64(view->admit->warm_pages));
		json_object_object_add(a, "warm_files_cut",
				       json_object_new_int((int)view->admit->warm_cut));
		json_object_object_add(a, "warm_files_removed",
				       json_object_new_int((int)view->admit->warm_removed));
		json_object_object_add(a, "grown_pages", json_object_new_uint64(view->admit->added));
		json_object_object_add(o, "admission", a);
	}
}

json_object *report_json(const struct prealloc_report *rep,
			 const struct prealloc_node_report *nodes, unsigned int nr_nodes,
			 const struct run_view *view)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();

	json_object_object_add(o, "command", json_object_new_string(view->command));
	json_object_object_add(o, "bytes", json_object_new_uint64(rep->bytes));
	json_object_object_add(o, "bytes_done", json_object_new_uint64(rep->bytes_done));
	json_object_object_add(o, "seconds", json_double(rep->seconds));
	json_object_object_add(o, "gb_per_s", json_double(gbps(rep->bytes_done, rep->seconds)));
	json_object_object_add(o, "page_size", json_object_new_uint64(rep->page_size));
	json_object_object_add(o, "page_label", json_object_new_string(view->page_label));
	json_object_object_add(o, "file", view->file ? json_object_new_string(view->file) : NULL);
	json_object_object_add(o, "method", json_object_new_string(method_name(rep->method)));
	if (rep->method == PREALLOC_METHOD_CLEAR) {
		json_object_object_add(o, "clear_kernel", json_object_new_string(rep->clear_kernel));
		json_object_object_add(o, "clear_cached_bytes",
				       json_object_new_uint64(rep->clear_cached_bytes));
	}
	json_object_object_add(o, "threads", json_object_new_int((int)rep->threads));
	json_object_object_add(o, "verify_seconds", json_double(rep->verify_seconds));
	json_object_object_add(o, "verified", json_object_new_boolean(view->verified));
	if (rep->nonzero_offset != UINT64_MAX)
		json_object_object_add(o, "first_nonzero_offset",
				       json_object_new_uint64(rep->nonzero_offset));
	json_object_object_add(o, "cancelled", json_object_new_boolean(rep->cancelled));
	json_object_object_add(o, "notify", json_object_new_string(notify_name(rep->notify)));
	if (rep->notify_error)
		json_object_object_add(o, "notify_error",
				       json_object_new_string(strerror(-rep->notify_error)));
	if (rep->error) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "errno", json_object_new_int(-rep->error));
		json_object_object_add(e, "message", json_object_new_string(strerror(-rep->error)));
		json_object_object_add(e, "node", json_object_new_int(rep->error_node));
		json_object_object_add(e, "offset", json_object_new_uint64(rep->error_offset));
		json_object_object_add(o, "error", e);
	} else {
		json_object_object_add(o, "error", NULL);
	}
	report_json_view(o, view);
	if (view->qemu)
		json_object_object_add(o, "qemu", json_object_new_string(view->qemu));
	if (view->note)
		json_object_object_add(o, "note", json_object_new_string(view->note));
	for (unsigned int i = 0; i < nr_nodes; i++)
		json_object_array_add(arr, node_json(&nodes[i]));
	json_object_object_add(o, "nodes", arr);
	return o;
}

void report_human(FILE *f, const struct prealloc_report *rep,
		  const struct prealloc_node_report *nodes, unsigned int nr_nodes,
		  const struct run_view *view)
{
	char size[32], cached[32], extra[96] = "";

	/* A probe's pair ("c/avx2_nt") says how the pieces went. */
	if (rep->method == PREALLOC_METHOD_CLEAR && strchr(rep->clear_kernel, '/'))
		snprintf(extra, sizeof(extra), " with %s, probed: %s by cached stores",
			 rep->clear_kernel, prealloc_format_size(rep->clear_cached_bytes, cached, sizeof(cached)));
	else if (rep->method == PREALLOC_METHOD_CLEAR)
		snprintf(extra, sizeof(extra), " with the %s kernel", rep->clear_kernel);
	else if (rep->method != PREALLOC_METHOD_NONE)
		snprintf(extra, sizeof(extra), " with %s", method_name(rep->method));
	fprintf(f, "%s %s in %s pages in %.3f s (%.2f GB/s, %u threads)%s\n",
		prealloc_format_size(rep->bytes_done, size, sizeof(size)), op_verb(rep->op),
		view->page_label, rep->seconds, gbps(rep->bytes_done, rep->seconds), rep->threads,
		extra);
	fprintf(f, "  %-5s %12s %8s %9s %8s %10s %10s %10s  %s\n", "node", "size", "threads",
		"seconds", "GB/s", "on node", "off node", "missing", "cpus");
	for (unsigned int i = 0; i < nr_nodes; i++) {
		const struct prealloc_node_report *n = &nodes[i];
		char cpus[128] = "";
		int list[PREALLOC_MAX_CPUS], nr = 0;

		for (int c = 0; c < PREALLOC_MAX_CPUS; c++)
			if (n->cpus_seen[c / 64] & (UINT64_C(1) << (c % 64)))
				list[nr++] = c;
		/* CPU numbers share the range syntax with node numbers. */
		prealloc_format_list(list, (unsigned int)nr, cpus, sizeof(cpus));
		fprintf(f, "  %-5d %12s %8u %9.3f %8.2f %10llu %10llu %10llu  %s\n", n->node,
			prealloc_format_size(n->bytes, size, sizeof(size)), n->threads, n->seconds,
			gbps(n->bytes_done, n->seconds), (unsigned long long)n->pages_on_node,
			(unsigned long long)n->pages_off_node, (unsigned long long)n->pages_missing,
			cpus);
	}
	/* thp is a wish the kernel may not grant: say how much huge pages really map. */
	for (unsigned int i = 0; !strcmp(view->page_label, "thp") && i < nr_nodes; i++) {
		const struct prealloc_node_report *n = &nodes[i];

		fprintf(f, "  node %d: huge pages map %s of %s (%.0f%%)\n", n->node,
			prealloc_format_size(n->huge_bytes, size, sizeof(size)),
			prealloc_format_size(n->bytes, extra, sizeof(extra)),
			n->bytes ? 100.0 * (double)n->huge_bytes / (double)n->bytes : 0.0);
	}
	/* A populate reads its zeroes back as it goes; after it, placement alone is left. */
	if (rep->verify_seconds > 0)
		fprintf(f, "  placement%s checked in %.3f s%s%s\n",
			view->verified && rep->op != PREALLOC_OP_POPULATE ? " and zeroes" : "",
			rep->verify_seconds,
			view->verified && rep->op == PREALLOC_OP_POPULATE
				? " (zeroes read back as it populated)" : "",
			rep->nonzero_offset == UINT64_MAX ? "" : ": memory is NOT zero");
	if (view->file)
		fprintf(f, "file: %s\n", view->file);
	if (view->qemu)
		fprintf(f, "qemu: %s\n", view->qemu);
	if (view->note)
		fprintf(f, "note: %s\n", view->note);
}

void report_print(FILE *f, struct prealloc_job *job, const struct run_view *view, bool json)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_node_report *nodes;
	unsigned int nr = 0;

	if (prealloc_job_report(job, &rep) < 0)
		return;
	nodes = calloc(rep.nr_nodes ? rep.nr_nodes : 1, sizeof(*nodes));
	if (!nodes)
		return;
	/* A node the job cannot report is left out, in both forms. */
	for (unsigned int i = 0; i < rep.nr_nodes; i++) {
		nodes[nr] = (struct prealloc_node_report){ .size = sizeof(nodes[nr]) };
		if (prealloc_job_node_report(job, i, &nodes[nr]) == 0)
			nr++;
	}
	if (json) {
		json_object *o = report_json(&rep, nodes, nr, view);

		fprintf(f, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
									     JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else {
		report_human(f, &rep, nodes, nr, view);
	}
	free(nodes);
	fflush(f);
}

void progress_line(char *buf, size_t len, int node, uint64_t done, uint64_t total,
		   double elapsed)
{
	double rate = elapsed > 0 ? (double)done / elapsed : 0;
	double pct = total ? 100.0 * (double)done / (double)total : 100.0;
	int fill = total ? (int)(40.0 * (double)done / (double)total) : 40;
	char bar[41], d[32], t[32], left[32];

	fill = fill < 0 ? 0 : fill > 40 ? 40 : fill;
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, '.', (size_t)(40 - fill));
	bar[40] = '\0';
	if (done >= total)
		snprintf(left, sizeof(left), "done");
	else if (rate > 0)
		snprintf(left, sizeof(left), "%.0f s left", (double)(total - done) / rate + 0.5);
	else
		snprintf(left, sizeof(left), "? s left");
	snprintf(buf, len, "node %-3d [%s] %5.1f%% %s / %s %6.2f GB/s %6.1f s, %s", node, bar, pct,
		 prealloc_format_size(done, d, sizeof(d)), prealloc_format_size(total, t, sizeof(t)),
		 rate / 1e9, elapsed, left);
}

static unsigned int lines_drawn;

void progress_forget(void)
{
	lines_drawn = 0;
}

void progress_draw(struct prealloc_job *job, double elapsed, bool final)
{
	int nodes[64];
	char line[256];
	int nr;

	if (!isatty(STDERR_FILENO))
		return;
	nr = prealloc_job_node_count(job, nodes, 64);
	if (nr <= 0)
		return;
	if (lines_drawn)
		fprintf(stderr, "\033[%uA", lines_drawn);
	lines_drawn = 0;
	for (int i = 0; i < nr && i < 64; i++) {
		uint64_t done = 0, total = 1;

		prealloc_job_node_progress(job, nodes[i], &done, &total);
		progress_line(line, sizeof(line), nodes[i], done, total, elapsed);
		fprintf(stderr, "\r%s\033[K\n", line);
		lines_drawn++;
	}
	if (final)
		lines_drawn = 0;
	fflush(stderr);
}
