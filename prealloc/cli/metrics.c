/* SPDX-License-Identifier: MIT */
/*
 * The warm pool as Prometheus metrics (docs/operations.md): `prealloc warm
 * status --format=prometheus` prints them, `prealloc warm serve --metrics
 * FILE` rewrites FILE with them after each pass (node_exporter's textfile
 * collector reads it). Text exposition format 0.0.4: one HELP and TYPE per
 * family, its samples together; base units (bytes, bytes per second);
 * counters end in _total. Every sample has the labels node, page_size
 * (bytes) and mount; the state gauges have state, the takes result.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "metrics.h"

static const char *const metric_states[] = {
	[PREALLOC_WARM_POPULATING] = "populating", [PREALLOC_WARM_READY] = "ready",
	[PREALLOC_WARM_HANDED] = "handed",	   [PREALLOC_WARM_RETURNING] = "returning",
	[PREALLOC_WARM_DIRTY] = "dirty",	   [PREALLOC_WARM_CLEARING] = "clearing",
	[PREALLOC_WARM_QUARANTINED] = "quarantined",
};

/* takes[] by index: 0 a miss, then enum prealloc_warm_hit. */
static const char *const take_results[] = { "miss", "full", "cut", "partial", "cold" };

/* Every entry of prealloc_warm_status, in its order; -errno with why on failure. */
static int status_all(struct prealloc_ctx *ctx, const char *conf,
		      struct prealloc_warm_status **ret, unsigned int *ret_nr, char *why, size_t len)
{
	struct prealloc_warm_status *e = NULL;
	unsigned int nr = 0;
	int r;

	for (;;) {
		struct prealloc_warm_status *ne = realloc(e, (nr + 1) * sizeof(*e));

		if (!ne) {
			free(e);
			return -ENOMEM;
		}
		e = ne;
		e[nr] = (struct prealloc_warm_status){ .size = sizeof(*e) };
		r = prealloc_warm_status(ctx, conf, nr, &e[nr]);
		if (r < 0)
			break;
		nr++;
	}
	if (r != -ENOENT) {
		snprintf(why, len, "%s", e[nr].message[0] ? e[nr].message : strerror(-r));
		free(e);
		return r;
	}
	*ret = e;
	*ret_nr = nr;
	return 0;
}

/* A label value as the exposition format wants it: \\, \" and \n escaped. */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* One sample's name and labels: NAME{node="0",page_size="2097152",mount="..."[,KEY="VAL"]}. */
static void put_sample(FILE *f, const char *name, const struct prealloc_warm_status *e,
		       const char *key, const char *val)
{
	fprintf(f, "%s{node=\"%d\",page_size=\"%llu\",mount=\"", name, e->node,
		(unsigned long long)e->page_size);
	put_label(f, e->mount);
	fputc('"', f);
	if (key)
		fprintf(f, ",%s=\"%s\"", key, val);
	fputc('}', f);
}

static void put_family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The state gauges: bytes and files of each entry in every state (0 included). */
static void put_states(FILE *f, const struct prealloc_warm_status *e, unsigned int nr)
{
	put_family(f, "prealloc_warm_bytes", "gauge", "Bytes of warm files by state.");
	for (unsigned int i = 0; i < nr; i++)
		for (int s = PREALLOC_WARM_POPULATING; s <= PREALLOC_WARM_QUARANTINED; s++) {
			put_sample(f, "prealloc_warm_bytes", &e[i], "state", metric_states[s]);
			fprintf(f, " %llu\n", (unsigned long long)e[i].bytes[s]);
		}
	put_family(f, "prealloc_warm_files", "gauge", "Warm files by state.");
	for (unsigned int i = 0; i < nr; i++)
		for (int s = PREALLOC_WARM_POPULATING; s <= PREALLOC_WARM_QUARANTINED; s++) {
			put_sample(f, "prealloc_warm_files", &e[i], "state", metric_states[s]);
			fprintf(f, " %u\n", e[i].files[s]);
		}
}

/* The takes counter: one sample per result of each entry. */
static void put_takes(FILE *f, const struct prealloc_warm_status *e, unsigned int nr)
{
	put_family(f, "prealloc_warm_takes_total", "counter",
		   "Takes by result: full, cut, partial (grown), cold (fallback), miss (no file).");
	for (unsigned int i = 0; i < nr; i++)
		for (int h = 0; h <= PREALLOC_WARM_COLD; h++) {
			put_sample(f, "prealloc_warm_takes_total", &e[i], "result", take_results[h]);
			fprintf(f, " %llu\n", (unsigned long long)e[i].takes[h]);
		}
}

/*
 * The take-duration histogram: cumulative buckets (le, the bounds of
 * PREALLOC_WARM_TAKE_BOUNDS, then +Inf), _sum and _count of each entry.
 */
static void put_take_histogram(FILE *f, const struct prealloc_warm_status *e, unsigned int nr)
{
	static const double bounds[] = { PREALLOC_WARM_TAKE_BOUNDS };
	const char *name = "prealloc_warm_take_duration_seconds";
	char le[32];

	put_family(f, name, "histogram",
		   "Takes handed over (full, cut, partial, cold) by their seconds, lock to link.");
	for (unsigned int i = 0; i < nr; i++) {
		uint64_t sum = 0;

		for (unsigned int b = 0; b < PREALLOC_WARM_TAKE_BUCKETS; b++) {
			sum += e[i].take_buckets[b];
			if (b < PREALLOC_WARM_TAKE_BUCKETS - 1)
				snprintf(le, sizeof(le), "%g", bounds[b]);
			else
				snprintf(le, sizeof(le), "+Inf");
			put_sample(f, "prealloc_warm_take_duration_seconds_bucket", &e[i], "le", le);
			fprintf(f, " %llu\n", (unsigned long long)sum);
		}
		put_sample(f, "prealloc_warm_take_duration_seconds_sum", &e[i], NULL, NULL);
		fprintf(f, " %.17g\n", e[i].take_seconds_sum);
		put_sample(f, "prealloc_warm_take_duration_seconds_count", &e[i], NULL, NULL);
		fprintf(f, " %llu\n", (unsigned long long)sum);
	}
}

/* One value per entry: field read by get. */
static void put_each(FILE *f, const char *name, const char *type, const char *help,
		     const struct prealloc_warm_status *e, unsigned int nr,
		     double (*get)(const struct prealloc_warm_status *))
{
	put_family(f, name, type, help);
	for (unsigned int i = 0; i < nr; i++) {
		put_sample(f, name, &e[i], NULL, NULL);
		fprintf(f, " %.17g\n", get(&e[i]));
	}
}

static double get_target(const struct prealloc_warm_status *e) { return (double)e->target_bytes; }
static double get_clear(const struct prealloc_warm_status *e) { return e->last_clear_gbps * 1e9; }
static double get_fill(const struct prealloc_warm_status *e) { return e->last_fill_gbps * 1e9; }
static double get_unrec(const struct prealloc_warm_status *e)
{
	return (double)e->unrecorded_pages * (double)e->page_size;
}
static double get_refused(const struct prealloc_warm_status *e) { return (double)e->take_refusals; }
static double get_renewals(const struct prealloc_warm_status *e) { return (double)e->renewals; }
static double get_pfiles(const struct prealloc_warm_status *e) { return (double)e->pressure_files; }
static double get_pbytes(const struct prealloc_warm_status *e) { return (double)e->pressure_bytes; }
static double get_held(const struct prealloc_warm_status *e)
{
	return (double)e->quarantined_held_bytes;
}
static double get_quarantines(const struct prealloc_warm_status *e)
{
	return (double)e->quarantines;
}
static double get_trimmed(const struct prealloc_warm_status *e) { return (double)e->trimmed_bytes; }
static double get_gives(const struct prealloc_warm_status *e) { return (double)e->gives; }
static double get_created(const struct prealloc_warm_status *e) { return (double)e->created; }
static double get_clears(const struct prealloc_warm_status *e) { return (double)e->inplace_clears; }
static double get_pass(const struct prealloc_warm_status *e) { return (double)e->last_pass; }
static double get_unmet(const struct prealloc_warm_status *e) { return (double)e->unmet_bytes; }

/* The counters of each file's way through the pool, and the pass's gauges. */
static void metrics_put_flow(FILE *f, const struct prealloc_warm_status *e, unsigned int nr)
{
	put_each(f, "prealloc_warm_gives_total", "counter",
		 "Warm files given back by their holders.", e, nr, get_gives);
	put_each(f, "prealloc_warm_files_made_total", "counter",
		 "New warm files made, populated and verified (targets, renewals, cold takes).",
		 e, nr, get_created);
	put_each(f, "prealloc_warm_inplace_clears_total", "counter",
		 "Given-back files cleared in place for their tenant.", e, nr, get_clears);
	put_take_histogram(f, e, nr);
	put_each(f, "prealloc_warm_last_pass_timestamp_seconds", "gauge",
		 "When a pass last ended without failure for the target; 0 none yet.", e, nr,
		 get_pass);
	put_each(f, "prealloc_warm_target_unmet_bytes", "gauge",
		 "Bytes of the target its node's share cannot hold in whole files.", e, nr,
		 get_unmet);
}

/* The whole exposition of entries e[0..nr) to f. */
static void metrics_put(FILE *f, const struct prealloc_warm_status *e, unsigned int nr)
{
	put_family(f, "prealloc_build_info", "gauge", "The prealloc build that wrote these metrics.");
	fprintf(f, "prealloc_build_info{version=\"%s\"} 1\n", PREALLOC_VERSION);
	put_states(f, e, nr);
	put_each(f, "prealloc_warm_target_bytes", "gauge", "Bytes warm.conf asks to keep warm.",
		 e, nr, get_target);
	put_each(f, "prealloc_warm_last_clear_bytes_per_second", "gauge",
		 "The last clear's or renewal's rate; 0 none yet.", e, nr, get_clear);
	put_each(f, "prealloc_warm_last_fill_bytes_per_second", "gauge",
		 "The last new file's populate and verify rate; 0 none yet.", e, nr, get_fill);
	put_each(f, "prealloc_warm_unrecorded_bytes", "gauge",
		 "Hugetlb memory in use that no record accounts for.", e, nr, get_unrec);
	put_takes(f, e, nr);
	put_each(f, "prealloc_warm_take_refusals_total", "counter",
		 "Takes refused with a file there (no pages to grow it, ...).", e, nr, get_refused);
	put_each(f, "prealloc_warm_renewals_total", "counter",
		 "Given-back files renewed: a new file made in their place.", e, nr, get_renewals);
	put_each(f, "prealloc_warm_pressure_shrinks_total", "counter",
		 "Warm files given back under memory pressure.", e, nr, get_pfiles);
	put_each(f, "prealloc_warm_pressure_shrunk_bytes_total", "counter",
		 "Bytes of warm files given back under memory pressure.", e, nr, get_pbytes);
	put_each(f, "prealloc_warm_quarantined_held_bytes", "gauge",
		 "Memory quarantined files hold now (a holder's link keeps them).", e, nr,
		 get_held);
	put_each(f, "prealloc_warm_quarantines_total", "counter",
		 "Warm files quarantined: never handed out again.", e, nr, get_quarantines);
	put_each(f, "prealloc_warm_trimmed_bytes_total", "counter",
		 "Bytes holders added past their files' records, cut when given back.", e, nr,
		 get_trimmed);
	metrics_put_flow(f, e, nr);
}

int metrics_render(struct prealloc_ctx *ctx, const char *conf, FILE *f, char *why, size_t len)
{
	struct prealloc_warm_status *e = NULL;
	unsigned int nr = 0;
	int r = status_all(ctx, conf, &e, &nr, why, len);

	if (r < 0)
		return r;
	metrics_put(f, e, nr);
	free(e);
	return 0;
}

int metrics_write(struct prealloc_ctx *ctx, const char *conf, const char *path, char *why,
		  size_t len)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	/*
	 * A name of its own, made with O_EXCL (mkostemp): the directory may be
	 * one others can write, and a name they could guess (a pid) would let
	 * them plant a link this root daemon then writes through.
	 */
	fd = mkostemp(tmp, O_CLOEXEC);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		r = -errno;
		snprintf(why, len, "%s: %s", tmp, strerror(-r));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		return r;
	}
	r = metrics_render(ctx, conf, f, why, len);
	/* Readable by the collector's user; whole, then renamed over the old one. */
	if (fchmod(fileno(f), 0644) < 0 && r == 0)
		r = -errno;
	if ((fflush(f) || fsync(fileno(f)) < 0) && r == 0)
		r = -errno;
	if (fclose(f) && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0) {
		if (!why[0])
			snprintf(why, len, "%s: %s", path, strerror(-r));
		unlink(tmp);
	}
	return r;
}

bool status_format_given(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "--format", 8))
			return true;
	return false;
}

/* `prealloc warm status [--conf FILE] --format=prometheus` (warm.c sends it here). */
bool status_conf_missing(const char *conf)
{
	struct stat st;

	if (!conf || stat(conf, &st) == 0)
		return false;
	cli_error("warm status: --conf %s: %s", conf, strerror(errno));
	return true;
}

int cmd_warm_status_format(int argc, char **argv)
{
	const char *conf = NULL, *format = NULL;
	struct prealloc_ctx *ctx;
	char why[512] = "";
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--format=", 9))
			format = argv[i] + 9;
		else if (!strcmp(argv[i], "--format") && i + 1 < argc)
			format = argv[++i];
		else if (!strcmp(argv[i], "--conf") && i + 1 < argc)
			conf = argv[++i];
		else
			format = "", i = argc;	/* refused below */
	}
	if (!format || strcmp(format, "prometheus")) {
		cli_error("warm status: give --format=prometheus (and --conf FILE), or --json, or "
			  "neither for the table");
		return EXIT_USAGE;
	}
	if (status_conf_missing(conf))
		return EXIT_USAGE;
	ctx = cli_context();
	if (!ctx)
		return EXIT_ENVIRONMENT;
	r = metrics_render(ctx, conf, stdout, why, sizeof(why));
	prealloc_ctx_free(ctx);
	if (r < 0) {
		cli_error("warm status: %s%s", why, store_hint(r));
		return r == -EINVAL ? EXIT_USAGE : EXIT_ENVIRONMENT;
	}
	return EXIT_OK;
}

/* The table's counters: serve's pressure cuts, renewals, takes that missed, quarantines. */
void status_human_counters(const struct prealloc_warm_status *st)
{
	char b[32];

	if (st->quarantined_held_bytes)
		printf(", quarantined files hold %s",
		       prealloc_format_size(st->quarantined_held_bytes, b, sizeof(b)));
	if (st->pressure_files)
		printf(", %llu given back under pressure (%s)",
		       (unsigned long long)st->pressure_files,
		       prealloc_format_size(st->pressure_bytes, b, sizeof(b)));
	if (st->renewals)
		printf(", %llu renewed", (unsigned long long)st->renewals);
	if (st->takes[0] || st->take_refusals)
		printf(", %llu takes missed, %llu refused", (unsigned long long)st->takes[0],
		       (unsigned long long)st->take_refusals);
	if (st->quarantines)
		printf(", %llu quarantined", (unsigned long long)st->quarantines);
	if (st->trimmed_bytes)
		printf(", %s cut past records",
		       prealloc_format_size(st->trimmed_bytes, b, sizeof(b)));
	if (st->unmet_bytes)
		printf(", cannot be met: %s short (the node's share)",
		       prealloc_format_size(st->unmet_bytes, b, sizeof(b)));
}
