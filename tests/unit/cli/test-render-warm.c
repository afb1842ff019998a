/* SPDX-License-Identifier: MIT */
/*
 * What `prealloc warm take|give|fill|serve|status` print (docs/json.md,
 * docs/warm.md) as warm.c and warm_serve.c render them, from a library
 * that answers with a distinct value in every field: the prealloc_warm_*
 * calls they make are defined here, so each key, count and rate can be
 * held to the field it comes from. A field rendered from its neighbour
 * (ready_bytes from the dirty bytes, renewed from returned, the renewal's
 * rate from the clears' bytes, a metric's sample from its neighbour's)
 * fails. The files keep their rendering static, so they are included here
 * whole, metrics.c (warm status --format=prometheus) with them.
 */
#include "cli/warm.c"
#include "cli/warm_status.c"
#include "cli/warm_serve.c"
#include "cli/warm_drain.c"
#include "cli/metrics.c"

#include "json-check.h"

#define GiB (UINT64_C(1) << 30)
#define MiB (UINT64_C(1) << 20)

/* ---- the library and the CLI's helpers, as warm.c sees them -------------- */

const char *program_name = "prealloc";

/* What each call answers: set by the checks before they run a command. */
static struct prealloc_warm_take_info take_answer;
static struct prealloc_warm_give_info give_answer;
static struct prealloc_warm_fill_info fill_answer;
/* The size of the warm.conf the last fill was given (-1: none, or not a regular file). */
static long long fill_conf_bytes;
static struct prealloc_warm_serve_info serve_answer;

/* Two pools: every state's bytes and files their own; the second with states empty. */
static const struct prealloc_warm_status fake_status[] = {
	{ .node = 3, .page_size = PREALLOC_PAGE_2M, .mount = "/dev/hugepages",
	  .target_bytes = 40 * GiB,
	  .bytes = { [PREALLOC_WARM_POPULATING] = 1 * GiB, [PREALLOC_WARM_READY] = 24 * GiB,
		     [PREALLOC_WARM_HANDED] = 6 * GiB, [PREALLOC_WARM_RETURNING] = 2 * GiB,
		     [PREALLOC_WARM_DIRTY] = 5 * GiB, [PREALLOC_WARM_CLEARING] = 3 * GiB,
		     [PREALLOC_WARM_QUARANTINED] = 512 * MiB },
	  .files = { [PREALLOC_WARM_POPULATING] = 1, [PREALLOC_WARM_READY] = 12,
		     [PREALLOC_WARM_HANDED] = 4, [PREALLOC_WARM_RETURNING] = 2,
		     [PREALLOC_WARM_DIRTY] = 5, [PREALLOC_WARM_CLEARING] = 3,
		     [PREALLOC_WARM_QUARANTINED] = 7 },
	  .last_clear_gbps = 9.25, .unrecorded_pages = 37,
	  /* The counters: takes by result (miss, full, cut, partial, cold), each its own. */
	  .takes = { 19, 23, 29, 31, 41 }, .take_refusals = 43, .renewals = 47,
	  .pressure_files = 53, .pressure_bytes = 640 * MiB, .last_fill_gbps = 4.5,
	  .quarantines = 59, .quarantined_held_bytes = 96 * MiB, .trimmed_bytes = 112 * MiB,
	  /* Gives, files made, in-place clears; the histogram's buckets, each its own. */
	  .gives = 61, .created = 67, .inplace_clears = 71,
	  .take_buckets = { 2, 3, 5, 7, 11, 13, 17, 19, 23, 29 }, .take_seconds_sum = 12.375,
	  .last_pass = 1700000003, .unmet_bytes = 8 * GiB },
	{ .node = 1, .page_size = PREALLOC_PAGE_1G, .mount = "/dev/hugepages-1G",
	  .target_bytes = 16 * GiB,
	  .bytes = { [PREALLOC_WARM_READY] = 8 * GiB, [PREALLOC_WARM_DIRTY] = 4 * GiB },
	  .files = { [PREALLOC_WARM_READY] = 8, [PREALLOC_WARM_DIRTY] = 2 } },
};

int prealloc_warm_take(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *opts,
		       struct prealloc_warm_take_info *ret_info)
{
	(void)ctx, (void)opts;
	*ret_info = take_answer;
	return 0;
}

int prealloc_warm_give_with(struct prealloc_ctx *ctx, const struct prealloc_warm_give_opts *opts,
			    struct prealloc_warm_give_info *ret_info)
{
	(void)ctx, (void)opts;
	*ret_info = give_answer;
	return 0;
}

int prealloc_warm_fill(struct prealloc_ctx *ctx, const struct prealloc_warm_fill_opts *opts,
		       struct prealloc_warm_fill_info *ret_info)
{
	struct stat st;

	(void)ctx;
	/* drain's warm.conf: one that exists (so that no target is wanted) and is empty. */
	fill_conf_bytes = opts->conf_path && !stat(opts->conf_path, &st) && S_ISREG(st.st_mode)
				  ? st.st_size
				  : -1;
	*ret_info = fill_answer;
	return 0;
}

/* How many of fake_status the library reports (0: a host with no target and no file). */
static unsigned int fake_entries = sizeof(fake_status) / sizeof(fake_status[0]);

int prealloc_warm_status(struct prealloc_ctx *ctx, const char *conf_path, unsigned int index,
			 struct prealloc_warm_status *ret_status)
{
	(void)ctx, (void)conf_path;
	if (index >= fake_entries)
		return -ENOENT;
	*ret_status = fake_status[index];
	ret_status->size = sizeof(*ret_status);
	return 0;
}

/* The serve's pass hook, run once by the fake run as a pass would (--metrics FILE). */
static struct prealloc_warm_serve_opts serve_opts;

int prealloc_warm_serve_new(struct prealloc_ctx *ctx, const struct prealloc_warm_serve_opts *opts,
			    struct prealloc_warm_serve **ret_serve,
			    struct prealloc_warm_serve_info *ret_info)
{
	static char fake;

	(void)ctx, (void)ret_info;
	serve_opts = *opts;
	*ret_serve = (struct prealloc_warm_serve *)&fake;
	return 0;
}

int prealloc_warm_serve_run(struct prealloc_warm_serve *serve,
			    struct prealloc_warm_serve_info *ret_info)
{
	(void)serve;
	if (serve_opts.pass_done)
		serve_opts.pass_done(serve_opts.userdata);
	*ret_info = serve_answer;
	return 0;
}

/* fill's progress: drawn only on a terminal, which a test's stderr is not. */
void progress_draw(struct prealloc_job *job, double elapsed, bool final)
{
	(void)job, (void)elapsed, (void)final;
}

void progress_forget(void)
{
}

int prealloc_job_node_count(struct prealloc_job *job, int *ret_nodes, unsigned int max)
{
	(void)job, (void)ret_nodes, (void)max;
	return 0;
}

int prealloc_job_node_progress(struct prealloc_job *job, int node, uint64_t *ret_done,
			       uint64_t *ret_total)
{
	(void)job, (void)node, (void)ret_done, (void)ret_total;
	return 0;
}

void prealloc_warm_serve_free(struct prealloc_warm_serve *serve)
{
	(void)serve;
}

void prealloc_ctx_set_log(struct prealloc_ctx *ctx,
			  void (*fn)(void *userdata, int level, const char *msg), void *userdata)
{
	(void)ctx, (void)fn, (void)userdata;
}

void prealloc_ctx_free(struct prealloc_ctx *ctx)
{
	(void)ctx;
}

/* Any pointer will do: every call that takes it is defined above. */
struct prealloc_ctx *cli_context(void)
{
	static char fake;

	return (struct prealloc_ctx *)&fake;
}

void cli_error(const char *fmt, ...)
{
	(void)fmt;
}

/* Warnings as the CLI's: on standard error, where a check captures them. */
void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "prealloc: warning: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

const char *store_hint(int err)
{
	(void)err;
	return "";
}

int option_error(const char *cmd, char *const argv[], const char *optstring,
		 const struct option *longopts)
{
	(void)cmd, (void)argv, (void)optstring, (void)longopts;
	return EXIT_USAGE;
}

/* ---- running a command, its output in a string --------------------------- */

/* cmd run on argv (NULL-terminated); what it wrote on fd (free it); its exit status. */
static char *run_cmd(int (*cmd)(int, char **), char **argv, int fd, int *ret_status)
{
	struct capture c;
	int argc = 0;

	while (argv[argc])
		argc++;
	capture_begin_fd(&c, fd);
	*ret_status = cmd(argc, argv);
	return capture_end(&c);
}

static json_object *run_json(int (*cmd)(int, char **), char **argv, const char *what)
{
	int status;
	char *text = run_cmd(cmd, argv, STDOUT_FILENO, &status);
	json_object *o = text && text[0] ? json_tokener_parse(text) : NULL;

	tap_ok(status == EXIT_OK, "%s: exit 0 (got %d)", what, status);
	tap_ok(o != NULL, "%s: the document parses", what);
	free(text);
	return o;
}

/* ---- status -------------------------------------------------------------- */

static void status_matches(json_object *j, const struct prealloc_warm_status *st)
{
	static const char *const keys[] = { "node", "page_size", "mount", "ready_bytes",
		"clearing_bytes", "dirty_bytes", "handed_bytes", "returning_bytes",
		"populating_bytes", "quarantined_bytes", "target_bytes", "last_clear_gbps",
		"unrecorded_pages", "quarantined_held_bytes", "quarantines", "trimmed_bytes",
		NULL };
	char what[64];

	snprintf(what, sizeof(what), "status %.32s node %d", st->mount, st->node);
	has_keys(j, what, keys);
	is_int(j, what, "node", st->node);
	is_u64(j, what, "page_size", st->page_size);
	is_string(j, what, "mount", st->mount);
	is_u64(j, what, "ready_bytes", st->bytes[PREALLOC_WARM_READY]);
	is_u64(j, what, "clearing_bytes", st->bytes[PREALLOC_WARM_CLEARING]);
	is_u64(j, what, "dirty_bytes", st->bytes[PREALLOC_WARM_DIRTY]);
	is_u64(j, what, "handed_bytes", st->bytes[PREALLOC_WARM_HANDED]);
	is_u64(j, what, "returning_bytes", st->bytes[PREALLOC_WARM_RETURNING]);
	is_u64(j, what, "populating_bytes", st->bytes[PREALLOC_WARM_POPULATING]);
	is_u64(j, what, "quarantined_bytes", st->bytes[PREALLOC_WARM_QUARANTINED]);
	is_u64(j, what, "target_bytes", st->target_bytes);
	is_u64(j, what, "unrecorded_pages", st->unrecorded_pages);
	is_u64(j, what, "quarantined_held_bytes", st->quarantined_held_bytes);
	is_u64(j, what, "quarantines", st->quarantines);
	is_u64(j, what, "trimmed_bytes", st->trimmed_bytes);
	/* json-c writes a double of no fraction as "0.0": it reads back a double. */
	is_double(j, what, "last_clear_gbps", st->last_clear_gbps, 1e-9);
}

static void test_status(void)
{
	char *argv[] = { "status", "--json", NULL }, *human[] = { "status", NULL };
	json_object *o = run_json(cmd_warm_status, argv, "warm status --json");
	char *text;
	int status;

	if (o && tap_ok(json_object_is_type(o, json_type_array) &&
				json_object_array_length(o) == 2,
			"warm status: one object a pool, in order")) {
		status_matches(json_object_array_get_idx(o, 0), &fake_status[0]);
		status_matches(json_object_array_get_idx(o, 1), &fake_status[1]);
	}
	json_object_put(o);

	/* The table: each state's bytes and file count its own, in the states' order. */
	text = run_cmd(cmd_warm_status, human, STDOUT_FILENO, &status);
	tap_ok(status == EXIT_OK, "warm status: exit 0 (got %d)", status);
	if (!tap_ok(text != NULL, "warm status: the table renders"))
		return;
	is_line(text, 0, "/dev/hugepages node 3 2M: target 40 GiB, populating 1 GiB (1), "
			 "ready 24 GiB (12), handed 6 GiB (4), returning 2 GiB (2), dirty 5 GiB (5), "
			 "clearing 3 GiB (3), quarantined 512 MiB (7), last clear 9.25 GB/s, "
			 "37 pages in use by no record, quarantined files hold 96 MiB, "
			 "53 given back under pressure (640 MiB), 47 renewed, 19 takes missed, "
			 "43 refused, 59 quarantined, 112 MiB cut past records, "
			 "cannot be met: 8 GiB short (the node's share)");
	is_line(text, 1, "/dev/hugepages-1G node 1 1G: target 16 GiB, ready 8 GiB (8), "
			 "dirty 4 GiB (2)");
	is_line(text, 2, "");
	free(text);
}

/* No target and no file: one line that says so; --conf naming no file: exit 2. */
static void test_status_empty(void)
{
	char *human[] = { "status", NULL }, *missing[] = { "status", "--conf", "/nonexistent", NULL };
	char *prom[] = { "status", "--format=prometheus", "--conf", "/nonexistent", NULL };
	char buf[512], *text;
	int status;

	fake_entries = 0;
	setenv("PREALLOC_WARM_CONF", "/nonexistent/warm.conf", 1);
	text = run_cmd(cmd_warm_status, human, STDOUT_FILENO, &status);
	tap_ok(status == EXIT_OK && text &&
		       !strcmp(line_of(text, 0, buf, sizeof(buf)),
			       "no warm files, and no targets: /nonexistent/warm.conf: No such file or "
			       "directory (docs/warm.md)"),
	       "warm status, no warm.conf and no file: says so (exit %d, '%s')", status,
	       text ? buf : "nothing");
	free(text);
	unsetenv("PREALLOC_WARM_CONF");
	fake_entries = sizeof(fake_status) / sizeof(fake_status[0]);
	text = run_cmd(cmd_warm_status, missing, STDOUT_FILENO, &status);
	tap_ok(status == EXIT_USAGE && text && !text[0],
	       "warm status --conf /nonexistent: exit 2 (got %d), no table", status);
	free(text);
	text = run_cmd(cmd_warm_status, prom, STDOUT_FILENO, &status);
	tap_ok(status == EXIT_USAGE && text && !text[0],
	       "warm status --format=prometheus --conf /nonexistent: exit 2 (got %d), no metrics",
	       status);
	free(text);
}

/* The metrics file's temporary name is PATH.XXXXXX (mkostemp's), as docs/operations.md says. */
static void test_metrics_tmp_name(void)
{
	char why[512] = "", *end;
	int r = metrics_write(cli_context(), NULL, "/nonexistent-dir/m.prom", why, sizeof(why));

	end = strstr(why, ": ");
	tap_ok(r == -ENOENT && !strncmp(why, "/nonexistent-dir/m.prom.", 24) && end &&
		       end - why == 24 + 6 && !strcmp(end, ": No such file or directory"),
	       "metrics_write's temporary file is PATH and six characters (got %d, '%s')", r, why);
}

/* ---- status --format=prometheus ------------------------------------------ */

/* The lines of text that begin with prefix: exactly one, and it is want. */
static void is_sample(const char *text, const char *prefix, const char *want)
{
	char buf[512], got[512] = "";
	unsigned int n = 0;

	for (unsigned int i = 0; line_of(text, i, buf, sizeof(buf))[0]; i++)
		if (!strncmp(buf, prefix, strlen(prefix)) && buf[strlen(prefix)] == ' ' && !n++)
			snprintf(got, sizeof(got), "%s", buf);
	tap_ok(n == 1 && !strcmp(got, want), "metric '%s' (got '%s', %u of them)", want, got, n);
}

/* Entry e's sample of name (key="val" added, if key) is value. */
static void sample_is(const char *text, const struct prealloc_warm_status *e, const char *name,
		      const char *key, const char *val, const char *value)
{
	char prefix[256], want[320];

	snprintf(prefix, sizeof(prefix), "%s{node=\"%d\",page_size=\"%llu\",mount=\"%.64s\"%s%s%s%s%s}",
		 name, e->node, (unsigned long long)e->page_size, e->mount, key ? "," : "",
		 key ? key : "", key ? "=\"" : "", key ? val : "", key ? "\"" : "");
	snprintf(want, sizeof(want), "%s %s", prefix, value);
	is_sample(text, prefix, want);
}

static void sample_u64(const char *text, const struct prealloc_warm_status *e, const char *name,
		       const char *key, const char *val, uint64_t value)
{
	char v[32];

	snprintf(v, sizeof(v), "%llu", (unsigned long long)value);
	sample_is(text, e, name, key, val, v);
}

/* The flow counters, the pass's gauges and the take histogram (cumulative) of entry e. */
static void metrics_flow_match(const char *text, const struct prealloc_warm_status *e)
{
	static const char *const le[] = { "0.001", "0.005", "0.01", "0.05", "0.1", "0.5", "1",
					  "5", "30", "+Inf" };
	uint64_t sum = 0;
	char v[64];

	sample_u64(text, e, "prealloc_warm_gives_total", NULL, NULL, e->gives);
	sample_u64(text, e, "prealloc_warm_files_made_total", NULL, NULL, e->created);
	sample_u64(text, e, "prealloc_warm_inplace_clears_total", NULL, NULL, e->inplace_clears);
	sample_u64(text, e, "prealloc_warm_last_pass_timestamp_seconds", NULL, NULL,
		   (uint64_t)e->last_pass);
	sample_u64(text, e, "prealloc_warm_target_unmet_bytes", NULL, NULL, e->unmet_bytes);
	for (unsigned int b = 0; b < PREALLOC_WARM_TAKE_BUCKETS; b++) {
		sum += e->take_buckets[b];
		sample_u64(text, e, "prealloc_warm_take_duration_seconds_bucket", "le", le[b], sum);
	}
	sample_u64(text, e, "prealloc_warm_take_duration_seconds_count", NULL, NULL, sum);
	snprintf(v, sizeof(v), "%.17g", e->take_seconds_sum);
	sample_is(text, e, "prealloc_warm_take_duration_seconds_sum", NULL, NULL, v);
}

static void test_metrics(void)
{
	/* The order of enum prealloc_warm_state, and of takes[]: the test's own names. */
	static const char *const states[] = { "populating", "ready", "handed", "returning",
		"dirty", "clearing", "quarantined" };
	static const int state_of[] = { PREALLOC_WARM_POPULATING, PREALLOC_WARM_READY,
		PREALLOC_WARM_HANDED, PREALLOC_WARM_RETURNING, PREALLOC_WARM_DIRTY,
		PREALLOC_WARM_CLEARING, PREALLOC_WARM_QUARANTINED };
	static const char *const results[] = { "miss", "full", "cut", "partial", "cold" };
	char *argv[] = { "status", "--format=prometheus", NULL };
	int status;
	char *text = run_cmd(cmd_warm_status, argv, STDOUT_FILENO, &status);

	tap_ok(status == EXIT_OK, "warm status --format=prometheus: exit 0 (got %d)", status);
	if (!tap_ok(text != NULL, "warm status --format=prometheus: renders"))
		return;
	for (unsigned int i = 0; i < 2; i++) {
		const struct prealloc_warm_status *e = &fake_status[i];
		char v[64];

		for (unsigned int s = 0; s < 7; s++) {
			sample_u64(text, e, "prealloc_warm_bytes", "state", states[s],
				   e->bytes[state_of[s]]);
			sample_u64(text, e, "prealloc_warm_files", "state", states[s],
				   e->files[state_of[s]]);
		}
		for (unsigned int h = 0; h < 5; h++)
			sample_u64(text, e, "prealloc_warm_takes_total", "result", results[h],
				   e->takes[h]);
		sample_u64(text, e, "prealloc_warm_target_bytes", NULL, NULL, e->target_bytes);
		snprintf(v, sizeof(v), "%.17g", e->last_clear_gbps * 1e9);
		sample_is(text, e, "prealloc_warm_last_clear_bytes_per_second", NULL, NULL, v);
		snprintf(v, sizeof(v), "%.17g", e->last_fill_gbps * 1e9);
		sample_is(text, e, "prealloc_warm_last_fill_bytes_per_second", NULL, NULL, v);
		sample_u64(text, e, "prealloc_warm_unrecorded_bytes", NULL, NULL,
			   e->unrecorded_pages * e->page_size);
		sample_u64(text, e, "prealloc_warm_take_refusals_total", NULL, NULL,
			   e->take_refusals);
		sample_u64(text, e, "prealloc_warm_renewals_total", NULL, NULL, e->renewals);
		sample_u64(text, e, "prealloc_warm_pressure_shrinks_total", NULL, NULL,
			   e->pressure_files);
		sample_u64(text, e, "prealloc_warm_pressure_shrunk_bytes_total", NULL, NULL,
			   e->pressure_bytes);
		sample_u64(text, e, "prealloc_warm_quarantined_held_bytes", NULL, NULL,
			   e->quarantined_held_bytes);
		sample_u64(text, e, "prealloc_warm_quarantines_total", NULL, NULL, e->quarantines);
		sample_u64(text, e, "prealloc_warm_trimmed_bytes_total", NULL, NULL,
			   e->trimmed_bytes);
		metrics_flow_match(text, e);
	}
	free(text);
}

/* ---- take ---------------------------------------------------------------- */

static void take_answer_set(int hit, uint64_t file_bytes, const char *path)
{
	take_answer = (struct prealloc_warm_take_info){
		.size = sizeof(take_answer), .hit = hit, .fd = -1, .id = 77,
		.file_bytes = file_bytes, .seconds = 0.125,
	};
	snprintf(take_answer.path, sizeof(take_answer.path), "%s", path);
}

static void test_take_json(void)
{
	static const char *const keys[] = { "path", "id", "id_str", "hit", "bytes", "file_bytes",
		"seconds", "shared_uid_files", "shared_uid_with", NULL };
	static const struct {
		int hit;
		uint64_t file_bytes;
		const char *name;
	} rows[] = {
		{ PREALLOC_WARM_HIT, 3 * GiB, "full" },
		{ PREALLOC_WARM_HIT_CUT, 5 * GiB, "cut" },
		{ PREALLOC_WARM_HIT_GROWN, 2 * GiB, "partial" },
		{ PREALLOC_WARM_COLD, 1 * GiB, "cold" },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *argv[] = { "take", "--node", "3", "--page-size", "2M", "3G",
				 "--to", "/dev/hugepages/vm-a", "--json", NULL };
		char what[48];
		json_object *o;

		snprintf(what, sizeof(what), "take %s --json", rows[i].name);
		take_answer_set(rows[i].hit, rows[i].file_bytes, "/dev/hugepages/vm-a");
		/* An id past 2^53, which a double (jq, JavaScript) rounds: its text too. */
		take_answer.id = UINT64_C(16051414354294001446);
		o = run_json(cmd_warm_take, argv, what);
		if (!o)
			continue;
		has_keys(o, what, keys);
		is_string(o, what, "path", "/dev/hugepages/vm-a");
		is_u64(o, what, "id", UINT64_C(16051414354294001446));
		is_string(o, what, "id_str", "16051414354294001446");
		is_string(o, what, "hit", rows[i].name);
		/* bytes: what was asked; file_bytes: the file's size before a cut. */
		is_u64(o, what, "bytes", 3 * GiB);
		is_u64(o, what, "file_bytes", rows[i].file_bytes);
		is_double(o, what, "seconds", 0.125, 1e-9);
		is_u64(o, what, "shared_uid_files", 0);
		is_string(o, what, "shared_uid_with", "");
		json_object_put(o);
	}
}

/* What a take with argv writes on standard error (its standard output dropped: TAP's). */
static char *take_stderr(char **argv, int *ret_status)
{
	struct capture out;
	char *text;

	capture_begin(&out);
	text = run_cmd(cmd_warm_take, argv, STDERR_FILENO, ret_status);
	free(capture_end(&out));
	return text;
}

/* take --owner 64055:64055, then last (NULL: nothing): a fresh argv, as getopt permutes it. */
#define TAKE_OWNER_ARGV(last) \
	((char *[]){ "take", "--node", "3", "--page-size", "2M", "3G", "--owner", "64055:64055", \
		     "--to", "/dev/hugepages/vm-a", last, NULL })

/*
 * A take whose --owner owns other holders' files: the count and the first
 * holder in --json, and one warning on standard error (with or without
 * --json); none when the count is 0.
 */
static void test_take_shared(void)
{
	const char *want = "prealloc: warning: warm take: uid 64055 also owns 2 warm file(s) of "
			   "other holders (vm-b, ...), which its processes may open by path";
	char buf[512], *text;
	json_object *o;
	int status;

	take_answer_set(PREALLOC_WARM_HIT, 3 * GiB, "/dev/hugepages/vm-a");
	take_answer.shared_uid_files = 2;
	snprintf(take_answer.shared_uid_with, sizeof(take_answer.shared_uid_with), "vm-b");
	o = run_json(cmd_warm_take, TAKE_OWNER_ARGV("--json"), "take --owner, shared uid, --json");
	if (o) {
		is_u64(o, "take, shared uid", "shared_uid_files", 2);
		is_string(o, "take, shared uid", "shared_uid_with", "vm-b");
		json_object_put(o);
	}
	for (int json = 1; json >= 0; json--) {
		text = take_stderr(json ? TAKE_OWNER_ARGV("--json") : TAKE_OWNER_ARGV(NULL),
				   &status);
		tap_ok(status == EXIT_OK && text &&
			       !strncmp(line_of(text, 0, buf, sizeof(buf)), want, strlen(want)),
		       "take --owner%s, 2 files of its uid elsewhere: stderr '%s...' (got '%s')",
		       json ? " --json" : "", want, text ? buf : "nothing");
		free(text);
	}
	take_answer.shared_uid_files = 0;
	text = take_stderr(TAKE_OWNER_ARGV(NULL), &status);
	tap_ok(status == EXIT_OK && text && !text[0],
	       "take --owner, no file of its uid elsewhere: exit 0 (got %d), nothing on stderr "
	       "(got '%s')", status, text ? text : "nothing");
	free(text);
}

static void take_line(int hit, uint64_t file_bytes, const char *path, char **argv,
		      const char *want)
{
	char buf[512], *text;
	int status;

	take_answer_set(hit, file_bytes, path);
	text = run_cmd(cmd_warm_take, argv, STDOUT_FILENO, &status);
	tap_ok(status == EXIT_OK, "take: exit 0 (got %d)", status);
	tap_ok(text && !strcmp(line_of(text, 0, buf, sizeof(buf)), want),
	       "take: '%s' (got '%s')", want, text ? buf : "nothing");
	free(text);
}

static void test_take_human(void)
{
	char *to[] = { "take", "--node", "3", "--page-size", "2M", "3G",
		       "--to", "/dev/hugepages/vm-a", NULL };
	char *reserve[] = { "take", "--reserve", "--holder", "h", "--node", "3",
			    "--page-size", "2M", "3G", NULL };

	take_line(PREALLOC_WARM_HIT, 3 * GiB, "/dev/hugepages/vm-a", to,
		  "/dev/hugepages/vm-a: warm file taken (3 GiB, a full hit) in 0.125 s");
	/* The size asked first, then the file's size before the cut: never the other way. */
	take_line(PREALLOC_WARM_HIT_CUT, 5 * GiB, "/dev/hugepages/vm-a", to,
		  "/dev/hugepages/vm-a: warm file taken (3 GiB, cut from 5 GiB) in 0.125 s");
	take_line(PREALLOC_WARM_HIT_GROWN, 2 * GiB, "/dev/hugepages/vm-a", to,
		  "/dev/hugepages/vm-a: warm file taken (3 GiB, a partial hit, grown from 2 GiB) "
		  "in 0.125 s");
	take_line(PREALLOC_WARM_COLD, 1 * GiB, "/dev/hugepages/vm-a", to,
		  "/dev/hugepages/vm-a: warm file taken (3 GiB, populated cold) in 0.125 s");
	take_line(PREALLOC_WARM_HIT, 3 * GiB, "", reserve,
		  "warm file reserved (3 GiB, a full hit) in 0.125 s");
}

/* ---- give, fill, serve: their one line ----------------------------------- */

static void one_line(int (*cmd)(int, char **), char **argv, int fd, const char *want)
{
	char buf[512], *text;
	struct capture out;
	int status;

	/* stderr read: what goes to stdout meanwhile is not TAP's to see. */
	if (fd == STDERR_FILENO)
		capture_begin_fd(&out, STDOUT_FILENO);
	text = run_cmd(cmd, argv, fd, &status);
	if (fd == STDERR_FILENO)
		free(capture_end(&out));
	tap_ok(status == EXIT_OK, "%s: exit 0 (got %d)", argv[0], status);
	tap_ok(text && !strcmp(line_of(text, 0, buf, sizeof(buf)), want), "%s: '%s' (got '%s')",
	       argv[0], want, text ? buf : "nothing");
	free(text);
}

static void test_give(void)
{
	char *argv[] = { "give", "/dev/hugepages/vm-a", NULL };

	give_answer = (struct prealloc_warm_give_info){ .size = sizeof(give_answer), .files = 5,
							.returning = 3, .quarantined = 2 };
	one_line(cmd_warm_give, argv, STDOUT_FILENO,
		 "5 warm files given back (3 still in use, 2 quarantined)");
	give_answer = (struct prealloc_warm_give_info){ .size = sizeof(give_answer), .files = 1,
							.quarantined = 1 };
	one_line(cmd_warm_give, argv, STDOUT_FILENO,
		 "1 warm file given back (0 still in use, 1 quarantined)");
}

static void test_fill(void)
{
	char *argv[] = { "fill", NULL };

	/* Each count its own; the renewals at 3.00 GB/s, the clears at 2.50 (swapped: 5, 1.5). */
	fill_answer = (struct prealloc_warm_fill_info){
		.size = sizeof(fill_answer), .returned = 2, .renewed = 3, .cleared = 5,
		.created = 7, .dropped = 11, .renewed_bytes = 6000000000,
		.renew_seconds = 2.0, .cleared_bytes = 10000000000, .clear_seconds = 4.0,
		.dropped_bytes = 13 * GiB,
	};
	one_line(cmd_warm_fill, argv, STDOUT_FILENO,
		 "warm fill: 2 returned, 3 renewed (3.00 GB/s), 5 cleared (2.50 GB/s), "
		 "7 created, 11 removed");
	one_line(cmd_warm_fill, argv, STDERR_FILENO, "");
	/* A target its node cannot hold: said on stderr, the summary as it was. */
	fill_answer.unmet = 2;
	snprintf(fill_answer.unmet_message, sizeof(fill_answer.unmet_message), "node0.1G cannot be met");
	one_line(cmd_warm_fill, argv, STDERR_FILENO,
		 "prealloc: warning: warm fill: node0.1G cannot be met (and other targets: "
		 "'prealloc warm status')");
	fill_answer.unmet = 0;
}

static void test_drain(void)
{
	char *argv[] = { "drain", NULL };

	/* dropped and its bytes, not renewed or returned (their neighbours). */
	fill_answer = (struct prealloc_warm_fill_info){
		.size = sizeof(fill_answer), .returned = 2, .renewed = 3, .cleared = 5,
		.created = 7, .dropped = 11, .renewed_bytes = 6 * GiB,
		.dropped_bytes = 13 * GiB,
	};
	one_line(cmd_warm_drain, argv, STDOUT_FILENO, "warm drain: 11 warm files given back (13 GiB)");
	tap_ok(fill_conf_bytes == 0, "drain: one fill pass over an empty warm.conf that exists "
				     "(no target: every file no guest holds goes)");
	fill_answer.dropped = 1;
	fill_answer.dropped_bytes = 64 * MiB;
	one_line(cmd_warm_drain, argv, STDOUT_FILENO, "warm drain: 1 warm file given back (64 MiB)");
}

static void test_serve(void)
{
	char *argv[] = { "serve", NULL };

	unsetenv("NOTIFY_SOCKET");
	serve_answer = (struct prealloc_warm_serve_info){
		.size = sizeof(serve_answer), .passes = 13, .returned = 2, .cleared = 5,
		.created = 7, .dropped = 11, .cleared_bytes = 19 * GiB,
		.dropped_bytes = 3 * GiB, .pressure_events = 17,
		.pressure_dropped_bytes = 1 * GiB, .renewed = 23, .renewed_bytes = 29 * GiB,
	};
	one_line(cmd_warm_serve, argv, STDERR_FILENO,
		 "prealloc: warm serve: stopped after 13 passes: 5 cleared, 7 made, 11 given back "
		 "(3072 MiB, 1024 MiB of it under 17 pressure events)");
}

/* --metrics m.prom: written in the working directory serve started in. */
static void serve_metrics_relative(char **relative)
{
	char dir[] = "/tmp/render-warm-XXXXXX", cwd[4096], path[64];
	struct stat st;
	int status;

	if (!tap_ok(mkdtemp(dir) && getcwd(cwd, sizeof(cwd)) && chdir(dir) == 0,
		    "a directory to serve in"))
		return;
	free(run_cmd(cmd_warm_serve, relative, STDOUT_FILENO, &status));
	snprintf(path, sizeof(path), "%s/m.prom", dir);
	tap_ok(status == EXIT_OK && stat(path, &st) == 0 && st.st_size > 0,
	       "serve --metrics RELATIVE: exit 0 (got %d), the file written there", status);
	unlink(path);
	(void)!chdir(cwd);
	rmdir(dir);
}

/* serve's command line: --help says its synopsis and exits 0, a bad argument 2. */
static void test_serve_args(void)
{
	char *help[] = { "serve", "--help", NULL }, *bad[] = { "serve", "--bogus", NULL };
	char *relative[] = { "serve", "--metrics", "m.prom", NULL };
	int status;
	char *text = run_cmd(cmd_warm_serve, help, STDOUT_FILENO, &status);

	tap_ok(status == EXIT_OK && text && !strncmp(text, "Usage: prealloc warm serve ", 27),
	       "serve --help: its usage, exit 0 (got %d)", status);
	free(text);
	free(run_cmd(cmd_warm_serve, bad, STDOUT_FILENO, &status));
	tap_ok(status == EXIT_USAGE, "serve --bogus: exit 2 (got %d)", status);
	serve_metrics_relative(relative);
}

int main(void)
{
	test_status();
	test_status_empty();
	test_metrics();
	test_metrics_tmp_name();
	test_take_json();
	test_take_human();
	test_take_shared();
	test_give();
	test_fill();
	test_drain();
	test_serve();
	test_serve_args();
	return tap_done();
}
