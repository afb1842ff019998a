/* SPDX-License-Identifier: MIT */
/*
 * `prealloc warm take|give|fill|serve|status|drain`: the warm pool (docs/warm.md)
 * over the library's prealloc_warm_* calls (status: warm_status.c, serve:
 * warm_serve.c, drain: warm_drain.c).
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"
#include "metrics.h"

/* Each subcommand's synopses, after "Usage: " or its indent (take's three forms). */
static const struct {
	const char *sub, *lines;
} warm_synopses[] = {
	{ "take", "prealloc warm take --node N --page-size 4k|2M|1G SIZE --to PATH\n"
		  "                          [--owner UID:GID] [--holder NAME] [--mount DIR]\n"
		  "                          [--fallback] [--tenant NAME] [--json]\n" },
	{ "take", "prealloc warm take --reserve --holder NAME [--holder-check PATH]\n"
		  "                          [--expires SECONDS] --node N --page-size P SIZE\n" },
	{ "take", "prealloc warm take --reserved --holder NAME --node N --page-size P SIZE\n"
		  "                          --to PATH [--owner UID:GID]\n" },
	{ "give", "prealloc warm give PATH | --holder NAME [--tenant NAME]\n" },
	{ "fill", "prealloc warm fill [--conf FILE] [--threads N] [--rate GB/s] [--idle] [--json]\n" },
	{ "serve", warm_serve_synopsis },
	{ "status", warm_status_synopsis },
	{ "drain", warm_drain_synopsis },
};

/* The synopses of sub (NULL: every subcommand's), then what the warm pool is. */
static void warm_usage(FILE *f, const char *sub)
{
	const char *lead = "Usage: ";

	for (size_t i = 0; i < sizeof(warm_synopses) / sizeof(warm_synopses[0]); i++) {
		if (sub && strcmp(sub, warm_synopses[i].sub))
			continue;
		fprintf(f, "%s%s", lead, warm_synopses[i].lines);
		lead = "       ";
	}
	fprintf(f, "%s", WARM_ABOUT);
}

/* The exit status of a failed take (docs/prealloc.1.md). */
int warm_take_exit_status(int err)
{
	switch (err) {
	case -ENOENT:
		return EXIT_NO_MEMORY;	/* no READY file: nothing was touched */
	case -ENOMEM:
		return EXIT_NO_MEMORY;	/* a partial hit's growth had no pages */
	case -EINVAL:
		return EXIT_USAGE;
	case -EXDEV:
	case -EEXIST:
	case -ENODEV:
	case -ELOOP:
	case -ENOTDIR:
	case -EACCES:
	case -EPERM:
	case -ETIMEDOUT:
	case -EBADMSG:
		return EXIT_ENVIRONMENT;
	default:
		return EXIT_FAILURE_RUN;
	}
}

static int parse_owner(const char *s, unsigned int *uid, unsigned int *gid)
{
	char *end;
	unsigned long u = strtoul(s, &end, 10), g;

	if (end == s || *end != ':')
		return -EINVAL;
	s = end + 1;
	g = strtoul(s, &end, 10);
	if (end == s || *end || u > 0xfffffffeUL || g > 0xfffffffeUL)
		return -EINVAL;
	*uid = (unsigned int)u;
	*gid = (unsigned int)g;
	return 0;
}

static void take_print(const struct prealloc_warm_take_info *info, uint64_t length, bool json)
{
	static const char *const hits[] = { "", "a full hit", "cut from ", "a partial hit, grown from ",
					    "populated cold" };
	char a[32], b[32];

	if (json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "path", json_object_new_string(info->path));
		json_object_object_add(o, "id", json_object_new_uint64(info->id));
		/* A double holds 53 bits: jq and JavaScript round a larger id, never its text. */
		snprintf(a, sizeof(a), "%llu", (unsigned long long)info->id);
		json_object_object_add(o, "id_str", json_object_new_string(a));
		json_object_object_add(o, "hit", json_object_new_string(
			info->hit == PREALLOC_WARM_HIT ? "full" :
			info->hit == PREALLOC_WARM_HIT_CUT ? "cut" :
			info->hit == PREALLOC_WARM_HIT_GROWN ? "partial" : "cold"));
		json_object_object_add(o, "bytes", json_object_new_uint64(length));
		json_object_object_add(o, "file_bytes", json_object_new_uint64(info->file_bytes));
		json_object_object_add(o, "seconds", json_object_new_double(info->seconds));
		json_object_object_add(o, "shared_uid_files",
				       json_object_new_uint64(info->shared_uid_files));
		json_object_object_add(o, "shared_uid_with",
				       json_object_new_string(info->shared_uid_with));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
		json_object_put(o);
		return;
	}
	printf("%s%swarm file %s (%s, %s%s) in %.3f s\n", info->path, info->path[0] ? ": " : "",
	       info->path[0] ? "taken" : "reserved",
	       prealloc_format_size(length, a, sizeof(a)), hits[info->hit > 0 && info->hit <= 4 ? info->hit : 0],
	       info->file_bytes != length && info->hit != PREALLOC_WARM_COLD
		       ? prealloc_format_size(info->file_bytes, b, sizeof(b))
		       : "",
	       info->seconds);
}

/*
 * --expires SECONDS: that long from now, as seconds since the epoch; 0 or
 * EXIT_USAGE. Bounded (EXPIRES_MAX_SECONDS), so the sum cannot overflow
 * into a negative time that the record store refuses to write.
 */
static int parse_expires(const char *arg, int64_t *ret)
{
	unsigned int secs;

	if (parse_seconds(arg, EXPIRES_MAX_SECONDS, &secs, NULL, 0) == 0) {
		*ret = (int64_t)time(NULL) + secs;
		return 0;
	}
	cli_error("warm take: bad --expires '%s' (seconds from now, 1 to %d: ten years)", arg,
		  EXPIRES_MAX_SECONDS);
	return EXIT_USAGE;
}

/* One of take's options into o: 0, -1 for --help (done), or the exit status of a bad one. */
static int take_option(int c, struct prealloc_warm_take_opts *o, bool *json)
{
	char err[128];

	switch (c) {
	case 'n':
		if (parse_node(optarg, &o->node, err, sizeof(err)) == 0)
			return 0;
		cli_error("warm take: bad --node: %s", err);
		return EXIT_USAGE;
	case 'p':
		if (parse_page_size(optarg, &o->page_size, err, sizeof(err)) == 0 &&
		    o->page_size != PAGE_SIZE_AUTO && o->page_size != PAGE_SIZE_THP)
			return 0;
		cli_error("warm take: bad page size '%s' (4k, 2M or 1G)", optarg);
		return EXIT_USAGE;
	case 't':
		o->path = optarg;
		return 0;
	case 'o':
		o->flags |= PREALLOC_WARM_TAKE_CHOWN;
		if (parse_owner(optarg, &o->uid, &o->gid) == 0)
			return 0;
		cli_error("warm take: bad owner '%s' (UID:GID, numbers)", optarg);
		return EXIT_USAGE;
	case 'H':
		o->holder = optarg;
		return 0;
	case 'm':
		o->mount = optarg;
		return 0;
	case 'f':
		o->flags |= PREALLOC_WARM_TAKE_FALLBACK;
		return 0;
	case 'j':
		*json = true;
		return 0;
	case 'R':
		o->flags |= PREALLOC_WARM_TAKE_RESERVE;
		return 0;
	case 'D':
		o->flags |= PREALLOC_WARM_TAKE_RESERVED;
		return 0;
	case 'C':
		o->holder_check = optarg;
		return 0;
	case 'E':
		return parse_expires(optarg, &o->holder_expires);
	case 'T':
		o->tenant = optarg;
		return 0;
	default:
		warm_usage(stdout, "take");	/* 'h' */
		return -1;
	}
}

/* Take's command line into o; 0, -1 after --help, or the exit status of a bad one. */
static int take_args(int argc, char **argv, struct prealloc_warm_take_opts *o, bool *json)
{
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },  { "page-size", required_argument, NULL, 'p' },
		{ "to", required_argument, NULL, 't' },	   { "owner", required_argument, NULL, 'o' },
		{ "holder", required_argument, NULL, 'H' }, { "mount", required_argument, NULL, 'm' },
		{ "fallback", no_argument, NULL, 'f' },	   { "json", no_argument, NULL, 'j' },
		{ "reserve", no_argument, NULL, 'R' },	   { "reserved", no_argument, NULL, 'D' },
		{ "holder-check", required_argument, NULL, 'C' },
		{ "expires", required_argument, NULL, 'E' },
		{ "tenant", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },	   {}
	};
	bool reserve;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "n:p:t:o:H:m:fjh", opts, NULL)) != -1) {
		if (c == '?' || c == ':')
			return option_error("warm take", argv, "n:p:t:o:H:m:fjh", opts);
		r = take_option(c, o, json);
		if (r)
			return r;
	}
	reserve = o->flags & PREALLOC_WARM_TAKE_RESERVE;
	if (optind != argc - 1 || !reserve != !!o->path || !o->page_size || o->node < 0 ||
	    prealloc_parse_size(argv[optind], &o->length) < 0) {
		cli_error("warm take: give --node N --page-size 4k|2M|1G SIZE and --to PATH "
			  "(or --reserve --holder NAME, without --to)");
		return EXIT_USAGE;
	}
	o->length = size_round_fraction(argv[optind], o->length, o->page_size);
	return 0;
}

static int cmd_warm_take(int argc, char **argv)
{
	struct prealloc_warm_take_opts o = { .size = sizeof(o), .node = -1 };
	struct prealloc_warm_take_info info = { .size = sizeof(info) };
	struct prealloc_ctx *ctx;
	bool json = false;
	int r = take_args(argc, argv, &o, &json);

	if (r)
		return r < 0 ? EXIT_OK : r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_ENVIRONMENT;
	r = prealloc_warm_take(ctx, &o, &info);
	prealloc_ctx_free(ctx);
	if (r < 0) {
		cli_error("warm take: %s", info.message[0] ? info.message : strerror(-r));
		return warm_take_exit_status(r);
	}
	close(info.fd);
	/* Mode 0600 keeps other uids out, not this one: prealloc cannot part them. */
	if (info.shared_uid_files)
		cli_warn("warm take: uid %u also owns %u warm file(s) of other holders (%s%s), which "
			 "its processes may open by path, as theirs may open this one: holders are "
			 "kept apart only by distinct uids or MAC confinement (sVirt; docs/warm.md, "
			 "threat model)", o.uid, info.shared_uid_files, info.shared_uid_with,
			 info.shared_uid_files > 1 ? ", ..." : "");
	take_print(&info, o.length, json);
	return EXIT_OK;
}

static int cmd_warm_give(int argc, char **argv)
{
	struct prealloc_warm_give_info info = { .size = sizeof(info) };
	struct prealloc_warm_give_opts o = { .size = sizeof(o) };
	struct prealloc_ctx *ctx;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help")) {
			warm_usage(stdout, "give");
			return EXIT_OK;
		}
		if (!strcmp(argv[i], "--holder") && i + 1 < argc && !o.holder)
			o.holder = argv[++i];
		else if (!strcmp(argv[i], "--tenant") && i + 1 < argc && !o.tenant)
			o.tenant = argv[++i];
		else if (argv[i][0] == '/' && !o.path)
			o.path = argv[i];
		else
			o.holder = o.path = NULL, i = argc;	/* refused below */
	}
	if (!o.path == !o.holder) {
		cli_error("warm give: give the PATH of a take (absolute), or --holder NAME "
			  "(and --tenant NAME)");
		return EXIT_USAGE;
	}
	ctx = cli_context();
	if (!ctx)
		return EXIT_ENVIRONMENT;
	r = prealloc_warm_give_with(ctx, &o, &info);
	prealloc_ctx_free(ctx);
	if (r < 0) {
		cli_error("warm give: %s", info.message[0] ? info.message : strerror(-r));
		return r == -ENOENT || r == -ESTALE || r == -EBADMSG ? EXIT_ENVIRONMENT
								    : EXIT_FAILURE_RUN;
	}
	printf("%u warm file%s given back (%u still in use, %u quarantined)\n", info.files,
	       info.files == 1 ? "" : "s", info.returning, info.quarantined);
	return EXIT_OK;
}

/* fill's progress on a terminal: the job of the file under way, since when, how far. */
struct fill_progress {
	struct prealloc_job *job;
	double start;
	uint64_t done;
};

/* Each file's job drawn as a prepare's is, once it has run a second; a new one below. */
static void fill_progress(void *userdata, struct prealloc_job *job)
{
	struct fill_progress *fp = userdata;
	int nodes[1];
	uint64_t done = 0, total = 0;

	if (prealloc_job_node_count(job, nodes, 1) > 0)
		prealloc_job_node_progress(job, nodes[0], &done, &total);
	/* Another file: its own start (an address may be reused, bytes never go back). */
	if (job != fp->job || done < fp->done) {
		progress_forget();
		*fp = (struct fill_progress){ .job = job, .start = now_seconds() };
	}
	fp->done = done;
	if (now_seconds() - fp->start > 1.0)
		progress_draw(job, now_seconds() - fp->start, false);
}

/* fill --json: what it did, each kind of file with its bytes, and where the new files' time went. */
static void fill_json(const struct prealloc_warm_fill_info *info, double seconds)
{
	struct json_object *o = json_object_new_object(), *ph = json_object_new_object();
	const struct {
		const char *name;
		unsigned int files;
		uint64_t bytes;
	} kinds[] = {
		{ "returned", info->returned, 0 },
		{ "renewed", info->renewed, info->renewed_bytes },
		{ "cleared", info->cleared, info->cleared_bytes },
		{ "created", info->created, info->created_bytes },
		{ "removed", info->dropped, info->dropped_bytes },
		{ "unmet", info->unmet, info->unmet_bytes },
	};
	const struct {
		const char *name;
		double seconds;
	} phases[] = {
		{ "admit", info->admit_seconds },	{ "populate", info->populate_seconds },
		{ "verify", info->verify_seconds },	{ "commit", info->commit_seconds },
		{ "retire", info->retire_seconds },	{ "renew", info->renew_seconds },
		{ "clear", info->clear_seconds },
	};
	char key[40];

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		json_object_object_add(o, kinds[i].name, json_object_new_uint64(kinds[i].files));
		if (i == 0)
			continue;	/* a returned file's bytes are a later step's */
		snprintf(key, sizeof(key), "%s_bytes", kinds[i].name);
		json_object_object_add(o, key, json_object_new_uint64(kinds[i].bytes));
	}
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++)
		json_object_object_add(ph, phases[i].name, json_object_new_double(phases[i].seconds));
	json_object_object_add(o, "seconds", json_object_new_double(seconds));
	json_object_object_add(o, "phases", ph);
	json_object_object_add(o, "message", json_object_new_string(info->message));
	json_object_object_add(o, "unmet_message", json_object_new_string(info->unmet_message));
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
	json_object_put(o);
}

/*
 * What a fill did (r, info; seconds, the pass's whole time), the targets it
 * cannot meet, its failure; the exit status.
 */
static int fill_report(int r, const struct prealloc_warm_fill_info *info, bool json,
		       double seconds)
{
	if (r != -EINVAL && json)
		fill_json(info, seconds);
	else if (r != -EINVAL)	/* a refused conf did nothing to report */
		printf("warm fill: %u returned, %u renewed (%.2f GB/s), %u cleared (%.2f GB/s), "
		       "%u created, %u removed\n",
		       info->returned, info->renewed,
		       info->renew_seconds > 0
			       ? (double)info->renewed_bytes / info->renew_seconds / 1e9 : 0.0,
		       info->cleared,
		       info->clear_seconds > 0
			       ? (double)info->cleared_bytes / info->clear_seconds / 1e9 : 0.0,
		       info->created, info->dropped);
	fflush(stdout);	/* the summary, then why */
	if (info->unmet)
		cli_warn("warm fill: %s%s", info->unmet_message,
			 info->unmet > 1 ? " (and other targets: 'prealloc warm status')" : "");
	if (r < 0 || info->message[0])
		cli_error("warm fill: %s", info->message[0] ? info->message : strerror(-r));
	return r == -EINVAL ? EXIT_USAGE : r == -ENOMEM || r == -ENOSPC ? EXIT_NO_MEMORY
				       : r < 0				  ? EXIT_ENVIRONMENT
									  : EXIT_OK;
}

static int cmd_warm_fill(int argc, char **argv)
{
	struct prealloc_warm_fill_opts o = { .size = sizeof(o) };
	struct prealloc_warm_fill_info info = { .size = sizeof(info) };
	struct fill_progress fp = { 0 };
	struct prealloc_ctx *ctx;
	bool json = false;
	char err[128];
	double t0;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--conf") && i + 1 < argc) {
			o.conf_path = argv[++i];
		} else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
			if (parse_threads(argv[++i], &o.threads, err, sizeof(err)) < 0) {
				cli_error("warm fill: %s", err);
				return EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--rate") && i + 1 < argc) {
			char *end;
			double gbps = strtod(argv[++i], &end);

			if (*end || !(gbps > 0 && gbps <= 10000)) {
				cli_error("warm fill: bad --rate '%s' (GB/s per node, above 0)",
					  argv[i]);
				return EXIT_USAGE;
			}
			o.clear_rate = (uint64_t)(gbps * 1e9);
		} else if (!strcmp(argv[i], "--idle")) {
			o.flags |= PREALLOC_WARM_FILL_IDLE;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--help")) {
			warm_usage(stdout, "fill");
			return EXIT_OK;
		} else {
			cli_error("warm fill: unknown argument '%s' (--conf FILE, --threads N, "
				  "--rate GB/s, --idle, --json)",
				  argv[i]);
			return EXIT_USAGE;
		}
	}
	ctx = cli_context();
	if (!ctx)
		return EXIT_ENVIRONMENT;
	if (isatty(STDERR_FILENO)) {
		o.progress = fill_progress;
		o.userdata = &fp;
	}
	t0 = now_seconds();
	r = prealloc_warm_fill(ctx, &o, &info);
	t0 = now_seconds() - t0;
	prealloc_ctx_free(ctx);
	progress_forget();
	return fill_report(r, &info, json, t0);
}

const struct cli_command warm_commands[] = {
	{ "take", cmd_warm_take, NULL },
	{ "give", cmd_warm_give, NULL },
	{ "fill", cmd_warm_fill, NULL },
	{ "serve", cmd_warm_serve, NULL },
	{ "status", cmd_warm_status, NULL },
	{ "drain", cmd_warm_drain, NULL },
	{},
};

/* prealloc warm, no subcommand named (main.c dispatches warm_commands): the usage. */
int cmd_warm(int argc, char **argv)
{
	bool help = argc == 2 && !strcmp(argv[1], "--help");

	warm_usage(help ? stdout : stderr, NULL);
	return help ? EXIT_OK : EXIT_USAGE;
}
