/* SPDX-License-Identifier: MIT */
/*
 * The create and clear reports as the CLI renders them (report.c, with
 * create_view and clear_note): the library's structs filled with a distinct
 * value in every field (no two numbers equal, no two strings equal),
 * rendered by the CLI's own code, the JSON parsed back and every key held
 * to the field it comes from (docs/json.md); the human table's columns the
 * same. A field swapped with its neighbour, or rendered from another, fails.
 */
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "clock.h"
#include "json-check.h"
#include "tap.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)

/* ---- the structs, every field its own value ------------------------------ */

static void cpus_set(struct prealloc_node_report *n, const int *cpus, unsigned int nr)
{
	for (unsigned int i = 0; i < nr; i++)
		n->cpus_seen[cpus[i] / 64] |= UINT64_C(1) << (cpus[i] % 64);
}

/* A populate that failed after its workers ran, on two nodes. */
static void fill_create(struct prealloc_report *rep, struct prealloc_node_report n[2])
{
	static const int cpus0[] = { 1, 4, 5, 6 }, cpus1[] = { 8, 10 };

	*rep = (struct prealloc_report){
		.size = sizeof(*rep),
		.op = PREALLOC_OP_POPULATE,
		.method = PREALLOC_METHOD_POPULATE_WRITE,
		.clear_kernel = "not-rendered",
		.bytes = 7 * GiB,
		.bytes_done = 5 * GiB,
		.page_size = PREALLOC_PAGE_2M,
		.seconds = 2.5,
		.verify_seconds = 0.375,
		.nr_nodes = 2,
		.threads = 11,
		.error = -ENOSPC,
		.error_node = 3,
		.error_offset = 123456789,
		.nonzero_offset = 987654321,
		.cancelled = 1,
		.notify = PREALLOC_NOTIFY_URING_PRIVATE_RING,
		.notify_error = -EPERM,
		.clear_cached_bytes = 4242,
	};
	n[0] = (struct prealloc_node_report){
		.size = sizeof(n[0]),
		.node = 2,
		.threads = 13,
		.bytes = 3 * GiB,
		.bytes_done = 2 * GiB,
		.seconds = 1.25,
		.pages_on_node = 17,
		.pages_off_node = 19,
		.pages_missing = 23,
		.cpu_samples_off = 29,
		.huge_bytes = 1 * GiB,
	};
	n[1] = (struct prealloc_node_report){
		.size = sizeof(n[1]),
		.node = 6,
		.threads = 31,
		.bytes = 4 * GiB,
		.bytes_done = 768 * MiB,
		.seconds = 0.625,
		.pages_on_node = 37,
		.pages_off_node = 41,
		.pages_missing = 43,
		.cpu_samples_off = 47,
		.huge_bytes = 640 * MiB,
	};
	cpus_set(&n[0], cpus0, 4);
	cpus_set(&n[1], cpus1, 2);
}

/* A clear that succeeded, by a probe's pair, on one node. */
static void fill_clear(struct prealloc_report *rep, struct prealloc_node_report n[1])
{
	static const int cpus[] = { 3, 7 };

	*rep = (struct prealloc_report){
		.size = sizeof(*rep),
		.op = PREALLOC_OP_CLEAR,
		.method = PREALLOC_METHOD_CLEAR,
		.clear_kernel = "c/avx2_nt",
		.bytes = 6 * GiB,
		.bytes_done = 4 * GiB,
		.page_size = PREALLOC_PAGE_1G,
		.seconds = 0.8,
		.verify_seconds = 0.125,
		.nr_nodes = 1,
		.threads = 9,
		.nonzero_offset = UINT64_MAX,
		.notify = PREALLOC_NOTIFY_URING_REGISTERED,
		.clear_cached_bytes = 96 * MiB,
	};
	n[0] = (struct prealloc_node_report){
		.size = sizeof(n[0]),
		.node = 5,
		.threads = 14,
		.bytes = 10 * GiB,
		.bytes_done = 8 * GiB,
		.seconds = 2.0,
		.pages_on_node = 53,
		.pages_off_node = 59,
		.pages_missing = 61,
		.cpu_samples_off = 67,
		.huge_bytes = 2 * GiB,
	};
	cpus_set(&n[0], cpus, 2);
}

/* ---- JSON: parsed back, each key against its source ---------------------- */

/* The document as the CLI prints it, parsed again as a reader would. */
static json_object *render_parsed(const struct prealloc_report *rep,
				  const struct prealloc_node_report *nodes, unsigned int nr,
				  const struct run_view *view)
{
	json_object *o = report_json(rep, nodes, nr, view), *back;

	back = json_tokener_parse(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return back;
}

static double rate(uint64_t bytes, double seconds)
{
	return bytes / seconds / 1e9;
}

static void node_json_matches(json_object *j, const struct prealloc_node_report *n,
			      const int *cpus, unsigned int nr_cpus)
{
	static const char *const keys[] = { "node", "bytes", "bytes_done", "threads", "seconds",
		"gb_per_s", "pages_on_node", "pages_off_node", "pages_missing", "huge_bytes",
		"cpus", "cpu_samples_off", NULL };
	json_object *arr = json_object_object_get(j, "cpus");
	char what[32];
	bool same;

	snprintf(what, sizeof(what), "node %d", n->node);
	has_keys(j, what, keys);
	is_int(j, what, "node", n->node);
	is_u64(j, what, "bytes", n->bytes);
	is_u64(j, what, "bytes_done", n->bytes_done);
	is_int(j, what, "threads", (int)n->threads);
	is_double(j, what, "seconds", n->seconds, 1e-6);
	is_double(j, what, "gb_per_s", round(rate(n->bytes_done, n->seconds) * 1e6) / 1e6, 1e-6);
	is_u64(j, what, "pages_on_node", n->pages_on_node);
	is_u64(j, what, "pages_off_node", n->pages_off_node);
	is_u64(j, what, "pages_missing", n->pages_missing);
	is_u64(j, what, "huge_bytes", n->huge_bytes);
	is_u64(j, what, "cpu_samples_off", n->cpu_samples_off);
	same = arr && json_object_is_type(arr, json_type_array) &&
	       json_object_array_length(arr) == nr_cpus;
	for (unsigned int i = 0; same && i < nr_cpus; i++)
		same = json_object_get_int(json_object_array_get_idx(arr, i)) == cpus[i];
	tap_ok(same, "%s: cpus are the CPUs seen, ascending", what);
}

static const char *const report_keys[] = { "command", "bytes", "bytes_done", "seconds",
	"gb_per_s", "page_size", "page_label", "file", "method", "threads", "verify_seconds",
	"verified", "cancelled", "notify", "error", "ctx_seconds", "main_seconds", "nodes", NULL };

static void test_create_json(void)
{
	static const int cpus0[] = { 1, 4, 5, 6 }, cpus1[] = { 8, 10 };
	static const char *const keys[] = { "command", "bytes", "bytes_done", "seconds",
		"gb_per_s", "page_size", "page_label", "file", "method", "threads",
		"verify_seconds", "verified", "first_nonzero_offset", "cancelled", "notify",
		"notify_error", "error", "ctx_seconds", "main_seconds", "admission", "qemu", "note",
		"nodes", NULL };
	static const char *const error_keys[] = { "errno", "message", "node", "offset", NULL };
	static const char *const admit_keys[] = { "warm_pages", "warm_files_cut",
		"warm_files_removed", "grown_pages", NULL };
	/* Each count its own value: two swapped would show. */
	static const struct prealloc_admit_result admit = {
		.size = sizeof(admit), .warm_pages = 1536, .warm_cut = 1, .warm_removed = 3,
		.added = 512,
	};
	struct prealloc_node_report n[2];
	struct prealloc_report rep;
	struct run_view view = {
		.admit = &admit,
		.command = "create",
		.file = "/dev/hugepages/guest-file",
		.page_label = "2M",
		.qemu = "-object memory-backend-file,id=ram-node2",
		.note = "a note for the user",
		.verified = false,
	};
	json_object *o, *e, *nodes;
	const char *w = "create";

	fill_create(&rep, n);
	o = render_parsed(&rep, n, 2, &view);
	if (!tap_ok(o != NULL, "create: the document parses"))
		return;
	has_keys(o, w, keys);
	is_string(o, w, "command", "create");
	is_u64(o, w, "bytes", rep.bytes);
	is_u64(o, w, "bytes_done", rep.bytes_done);
	is_double(o, w, "seconds", rep.seconds, 1e-6);
	is_double(o, w, "gb_per_s", round(rate(rep.bytes_done, rep.seconds) * 1e6) / 1e6, 1e-6);
	is_u64(o, w, "page_size", rep.page_size);
	is_string(o, w, "page_label", view.page_label);
	is_string(o, w, "file", view.file);
	is_string(o, w, "method", "madv_populate_write");
	is_int(o, w, "threads", (int)rep.threads);
	is_double(o, w, "verify_seconds", rep.verify_seconds, 1e-6);
	/* cancelled true, verified false: neither can be rendered from the other. */
	is_bool(o, w, "verified", false);
	is_u64(o, w, "first_nonzero_offset", rep.nonzero_offset);
	is_bool(o, w, "cancelled", true);
	is_string(o, w, "notify", "io_uring-private-ring");
	is_string(o, w, "notify_error", strerror(EPERM));
	is_string(o, w, "qemu", view.qemu);
	is_string(o, w, "note", view.note);
	e = json_object_object_get(o, "admission");
	has_keys(e, "create admission", admit_keys);
	is_u64(e, "create admission", "warm_pages", 1536);
	is_int(e, "create admission", "warm_files_cut", 1);
	is_int(e, "create admission", "warm_files_removed", 3);
	is_u64(e, "create admission", "grown_pages", 512);
	e = json_object_object_get(o, "error");
	has_keys(e, "create error", error_keys);
	is_int(e, "create error", "errno", ENOSPC);
	is_string(e, "create error", "message", strerror(ENOSPC));
	is_int(e, "create error", "node", rep.error_node);
	is_u64(e, "create error", "offset", rep.error_offset);
	nodes = json_object_object_get(o, "nodes");
	if (tap_ok(nodes && json_object_array_length(nodes) == 2, "create: two nodes, in order")) {
		node_json_matches(json_object_array_get_idx(nodes, 0), &n[0], cpus0, 4);
		node_json_matches(json_object_array_get_idx(nodes, 1), &n[1], cpus1, 2);
	}
	json_object_put(o);
}

static void test_clear_json(void)
{
	static const int cpus[] = { 3, 7 };
	static const char *const keys[] = { "command", "bytes", "bytes_done", "seconds",
		"gb_per_s", "page_size", "page_label", "file", "method", "clear_kernel",
		"clear_cached_bytes", "threads", "verify_seconds", "verified", "cancelled",
		"notify", "error", "ctx_seconds", "main_seconds", "check_seconds", "map_seconds",
		"clear_seconds", "note", "nodes", NULL };
	/* The flow's phases: each its own, none the job's seconds or verify_seconds. */
	struct prealloc_clear_file_info phases = { .size = sizeof(phases),
						   .check_seconds = 0.0625,
						   .map_seconds = 0.4375,
						   .clear_seconds = 1.1875 };
	struct prealloc_node_report n[1];
	struct prealloc_report rep;
	struct run_view view = {
		.command = "clear",
		.file = "/dev/hugepages-1G/vm",
		.page_label = "1G",
		.note = "holes skipped",
		.verified = true,
		.clear = &phases,
	};
	json_object *o, *nodes;
	const char *w = "clear";

	fill_clear(&rep, n);
	cli_ctx_seconds = 0.015625;
	o = render_parsed(&rep, n, 1, &view);
	if (!tap_ok(o != NULL, "clear: the document parses"))
		return;
	has_keys(o, w, keys);
	is_string(o, w, "command", "clear");
	is_u64(o, w, "bytes", rep.bytes);
	is_u64(o, w, "bytes_done", rep.bytes_done);
	is_double(o, w, "seconds", rep.seconds, 1e-6);
	is_double(o, w, "gb_per_s", round(rate(rep.bytes_done, rep.seconds) * 1e6) / 1e6, 1e-6);
	is_u64(o, w, "page_size", rep.page_size);
	is_string(o, w, "page_label", "1G");
	is_string(o, w, "file", view.file);
	is_string(o, w, "method", "clear");
	is_string(o, w, "clear_kernel", rep.clear_kernel);
	is_u64(o, w, "clear_cached_bytes", rep.clear_cached_bytes);
	is_int(o, w, "threads", (int)rep.threads);
	is_double(o, w, "verify_seconds", rep.verify_seconds, 1e-6);
	/* Now verified true, cancelled false. */
	is_bool(o, w, "verified", true);
	is_bool(o, w, "cancelled", false);
	is_string(o, w, "notify", "io_uring-registered");
	is_null(o, w, "error");
	/* The process's phases: the context's as cli_context timed it, main's since its start. */
	is_double(o, w, "ctx_seconds", cli_ctx_seconds, 1e-6);
	tap_ok(json_object_get_double(json_object_object_get(o, "main_seconds")) > 0 &&
		       json_object_get_double(json_object_object_get(o, "main_seconds")) <
			       now_seconds() - cli_main_start + 1e-6,
	       "clear: main_seconds is the time since the CLI began (%f)",
	       json_object_get_double(json_object_object_get(o, "main_seconds")));
	is_double(o, w, "check_seconds", phases.check_seconds, 1e-6);
	is_double(o, w, "map_seconds", phases.map_seconds, 1e-6);
	is_double(o, w, "clear_seconds", phases.clear_seconds, 1e-6);
	is_absent(o, w, "first_nonzero_offset");
	is_absent(o, w, "notify_error");
	is_absent(o, w, "qemu");
	is_string(o, w, "note", view.note);
	nodes = json_object_object_get(o, "nodes");
	if (tap_ok(nodes && json_object_array_length(nodes) == 1, "clear: one node"))
		node_json_matches(json_object_array_get_idx(nodes, 0), &n[0], cpus, 2);
	json_object_put(o);
}

/* The least a report has: no note, no qemu, the eventfd path, no nodes. */
static void test_minimal_json(void)
{
	struct prealloc_report rep = { .size = sizeof(rep), .nonzero_offset = UINT64_MAX,
				       .method = PREALLOC_METHOD_TOUCH,
				       .notify = PREALLOC_NOTIFY_EVENTFD };
	struct run_view view = { .command = "create", .file = "/dev/shm/f", .page_label = "4k" };
	json_object *o = render_parsed(&rep, NULL, 0, &view);

	if (!tap_ok(o != NULL, "minimal: the document parses"))
		return;
	has_keys(o, "minimal", report_keys);
	is_string(o, "minimal", "method", "touch");
	is_string(o, "minimal", "notify", "eventfd");
	tap_ok(json_object_array_length(json_object_object_get(o, "nodes")) == 0,
	       "minimal: nodes is empty");
	json_object_put(o);
}

/* ---- the human table ----------------------------------------------------- */

/* Renders the table into a string; the caller frees it. */
static char *render_human(const struct prealloc_report *rep,
			  const struct prealloc_node_report *nodes, unsigned int nr,
			  const struct run_view *view)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	report_human(f, rep, nodes, nr, view);
	fclose(f);
	return text;
}

static bool near(double got, double want, double digits)
{
	return fabs(got - want) <= 0.5 * pow(10, -digits) + 1e-9;
}

/* The summary line: size done, verb, page label, seconds, GB/s, threads, then extra. */
static void summary_matches(const char *line, const struct prealloc_report *rep,
			    const char *verb, const char *label, const char *extra)
{
	char num[32], unit[16], v[32], lab[16], size[32], tail[160] = "";
	double s, g;
	unsigned int t;
	int n = sscanf(line, "%31s %15s %31s in %15s pages in %lf s (%lf GB/s, %u threads)%159[^\n]",
		       num, unit, v, lab, &s, &g, &t, tail);
	char both[48];

	snprintf(both, sizeof(both), "%s %s", num, unit);
	tap_ok(n >= 7 && !strcmp(both, prealloc_format_size(rep->bytes_done, size, sizeof(size))),
	       "summary: the size done (%s) [%s]", size, line);
	tap_ok(n >= 7 && !strcmp(v, verb) && !strcmp(lab, label), "summary: %s in %s pages", verb,
	       label);
	tap_ok(n >= 7 && near(s, rep->seconds, 3), "summary: seconds %.3f", rep->seconds);
	tap_ok(n >= 7 && near(g, rate(rep->bytes_done, rep->seconds), 2), "summary: GB/s %.2f",
	       rate(rep->bytes_done, rep->seconds));
	tap_ok(n >= 7 && t == rep->threads, "summary: %u threads", rep->threads);
	tap_ok(!strcmp(tail, extra), "summary: ends '%s' (got '%s')", extra, tail);
}

/* A node's row: node, size, threads, seconds, GB/s, on, off, missing, cpus. */
static void row_matches(const char *line, const struct prealloc_node_report *n, const char *cpus)
{
	char num[32], unit[16], size[32], both[48], got_cpus[128] = "";
	unsigned long long on, off, missing;
	unsigned int t;
	double s, g;
	int node;
	int r = sscanf(line, "%d %31s %15s %u %lf %lf %llu %llu %llu %127s", &node, num, unit, &t,
		       &s, &g, &on, &off, &missing, got_cpus);

	snprintf(both, sizeof(both), "%s %s", num, unit);
	if (!tap_ok(r == 10, "row of node %d parses [%s]", n->node, line))
		return;
	tap_ok(node == n->node, "row %d: node", n->node);
	tap_ok(!strcmp(both, prealloc_format_size(n->bytes, size, sizeof(size))), "row %d: size %s",
	       n->node, size);
	tap_ok(t == n->threads, "row %d: threads %u", n->node, n->threads);
	tap_ok(near(s, n->seconds, 3), "row %d: seconds %.3f", n->node, n->seconds);
	tap_ok(near(g, rate(n->bytes_done, n->seconds), 2), "row %d: GB/s %.2f", n->node,
	       rate(n->bytes_done, n->seconds));
	tap_ok(on == n->pages_on_node, "row %d: on node %llu", n->node,
	       (unsigned long long)n->pages_on_node);
	tap_ok(off == n->pages_off_node, "row %d: off node %llu", n->node,
	       (unsigned long long)n->pages_off_node);
	tap_ok(missing == n->pages_missing, "row %d: missing %llu", n->node,
	       (unsigned long long)n->pages_missing);
	tap_ok(!strcmp(got_cpus, cpus), "row %d: cpus %s (got %s)", n->node, cpus, got_cpus);
}

static void test_create_human(void)
{
	struct prealloc_node_report n[2];
	struct prealloc_report rep;
	struct run_view view = {
		.command = "create",
		.file = "/dev/hugepages/guest-file",
		.page_label = "2M",
		.qemu = "-object memory-backend-file,id=ram-node2",
		.note = "a note for the user",
	};
	char buf[512], *text;

	fill_create(&rep, n);
	text = render_human(&rep, n, 2, &view);
	if (!tap_ok(text != NULL, "create: the table renders"))
		return;
	summary_matches(line_of(text, 0, buf, sizeof(buf)), &rep, "populated", "2M",
			" with madv_populate_write");
	row_matches(line_of(text, 2, buf, sizeof(buf)), &n[0], "1,4-6");
	row_matches(line_of(text, 3, buf, sizeof(buf)), &n[1], "8,10");
	/* Not verified, a non-zero byte found: the placement line says so. */
	is_line(text, 4, "  placement checked in 0.375 s: memory is NOT zero");
	is_line(text, 5, "file: /dev/hugepages/guest-file");
	is_line(text, 6, "qemu: -object memory-backend-file,id=ram-node2");
	is_line(text, 7, "note: a note for the user");
	free(text);

	/* Verified and clean; thp: the huge pages each node's memory got. */
	rep.nonzero_offset = UINT64_MAX;
	view.verified = true;
	view.page_label = "thp";
	view.qemu = view.note = NULL;
	text = render_human(&rep, n, 2, &view);
	if (!tap_ok(text != NULL, "create thp: the table renders"))
		return;
	summary_matches(line_of(text, 0, buf, sizeof(buf)), &rep, "populated", "thp",
			" with madv_populate_write");
	is_line(text, 4, "  node 2: huge pages map 1 GiB of 3 GiB (33%)");
	is_line(text, 5, "  node 6: huge pages map 640 MiB of 4 GiB (16%)");
	is_line(text, 6, "  placement checked in 0.375 s (zeroes read back as it populated)");
	is_line(text, 7, "file: /dev/hugepages/guest-file");
	is_line(text, 8, "");
	free(text);
}

static void test_clear_human(void)
{
	struct prealloc_node_report n[1];
	struct prealloc_report rep;
	struct run_view view = {
		.command = "clear",
		.file = "/dev/hugepages-1G/vm",
		.page_label = "1G",
		.note = "holes skipped",
		.verified = true,
	};
	char buf[512], *text;

	fill_clear(&rep, n);
	text = render_human(&rep, n, 1, &view);
	if (!tap_ok(text != NULL, "clear: the table renders"))
		return;
	/* A probe's pair says what the cached stores cleared: clear_cached_bytes, not the total. */
	summary_matches(line_of(text, 0, buf, sizeof(buf)), &rep, "cleared", "1G",
			" with c/avx2_nt, probed: 96 MiB by cached stores");
	row_matches(line_of(text, 2, buf, sizeof(buf)), &n[0], "3,7");
	is_line(text, 3, "  placement and zeroes checked in 0.125 s");
	is_line(text, 4, "file: /dev/hugepages-1G/vm");
	is_line(text, 5, "note: holes skipped");
	free(text);

	snprintf(rep.clear_kernel, sizeof(rep.clear_kernel), "movnti");
	rep.verify_seconds = 0;
	text = render_human(&rep, n, 1, &view);
	if (!tap_ok(text != NULL, "clear one kernel: the table renders"))
		return;
	summary_matches(line_of(text, 0, buf, sizeof(buf)), &rep, "cleared", "1G",
			" with the movnti kernel");
	is_line(text, 3, "file: /dev/hugepages-1G/vm");
	free(text);
}

/* ---- what the commands take from their flows ----------------------------- */

static void test_create_view(void)
{
	struct prealloc_prepare_info info = {
		.size = sizeof(info),
		.step = PREALLOC_STEP_NONE,
		.path = "/dev/hugepages-1G/the-file",
		.page_size = PREALLOC_PAGE_1G,
		.page_reason = "why auto chose this size",
		.created = 1,
		.added = 7,
		.message = "a message that is not the note",
		.qemu_option = "-object memory-backend-file,mem-path=/dev/hugepages-1G/the-file",
	};
	struct prealloc_report rep = { .size = sizeof(rep), .nonzero_offset = UINT64_MAX };
	struct run_view view;
	json_object *o;

	create_view(&info, true, true, &view);
	o = render_parsed(&rep, NULL, 0, &view);
	if (!tap_ok(o != NULL, "create view: the document parses"))
		return;
	is_string(o, "create view", "command", "create");
	is_string(o, "create view", "file", info.path);
	is_string(o, "create view", "page_label", "1G");
	is_string(o, "create view", "qemu", info.qemu_option);
	is_string(o, "create view", "note", info.page_reason);
	is_bool(o, "create view", "verified", true);
	tap_ok(view.admit == &info.admit, "create view: the admission is the run's");
	json_object_put(o);

	/* Adopted (--reuse): the note says the contents stayed, whatever auto said. */
	info.created = 0;
	info.page_size = PREALLOC_PAGE_THP;
	create_view(&info, false, true, &view);
	tap_ok(view.note && strstr(view.note, "existing pages kept their contents"),
	       "create view: an adopted file's note");
	tap_ok(!strcmp(view.page_label, "thp") && !view.verified, "create view: thp, not verified");

	/* Created, auto had nothing to say: no note. */
	info.created = 1;
	info.page_reason[0] = '\0';
	create_view(&info, false, true, &view);
	tap_ok(view.note == NULL, "create view: no note when there is none");

	/* Failed: the file and its page size, but no QEMU option and no note. */
	snprintf(info.page_reason, sizeof(info.page_reason), "a reason");
	info.step = PREALLOC_STEP_POPULATE;
	info.page_size = PREALLOC_PAGE_2M;
	create_view(&info, true, false, &view);
	tap_ok(!view.qemu && !view.note && !strcmp(view.file, info.path) &&
		       !strcmp(view.page_label, "2M") && view.verified,
	       "create view: a failed run shows no qemu and no note");
}

static void test_clear_note(void)
{
	struct prealloc_clear_file_info info = {
		.size = sizeof(info),
		.page_size = PREALLOC_PAGE_2M,
		.length = 64 * GiB,
		.tail_bytes = 12345,
		.unbacked_bytes = 3 * PREALLOC_PAGE_2M,
		.hole_bytes = 5 * PREALLOC_PAGE_2M,
		.swapped_bytes = 7 * MiB + 512 * 1024,
		.nonzero_offset = UINT64_MAX,
		.kernel = "avx2_nt",
		.kernel_why = "above the cached limit",
	};
	char note[NOTE_MAX] = "";

	clear_note(&info, true, note);
	tap_ok(!strcmp(note, "3 unallocated pages (holes) got pages the kernel zeroed; "
			     "10 MiB in 5 pages was not resident (holes, which read as zero) and "
			     "was skipped; 7.50 MiB swapped out was read back in and cleared; "
			     "auto chose avx2_nt: above the cached limit"),
	       "clear note: holes, unbacked, swapped and the kernel, each its own [%s]", note);
	note[0] = '\0';
	clear_note(&info, false, note);
	tap_ok(!strstr(note, "auto chose"), "clear note: a named --method has no 'auto chose'");
	info.unbacked_bytes = info.hole_bytes = info.swapped_bytes = 0;
	note[0] = '\0';
	clear_note(&info, false, note);
	tap_ok(note[0] == '\0', "clear note: nothing to say, no note");
}

int main(void)
{
	test_create_json();
	test_clear_json();
	test_minimal_json();
	test_create_human();
	test_clear_human();
	test_create_view();
	test_clear_note();
	return tap_done();
}
