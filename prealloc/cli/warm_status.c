/* SPDX-License-Identifier: MIT */
/*
 * `prealloc warm status`: the warm pool by mount, node and page size, for
 * people (a line each) or as JSON (docs/json.md); `--format=prometheus`
 * is metrics.c's.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "metrics.h"

const char warm_status_synopsis[] =
	"prealloc warm status [--conf FILE] [--json | --format=prometheus]\n";

static const char *const state_names[] = {
	[PREALLOC_WARM_POPULATING] = "populating", [PREALLOC_WARM_READY] = "ready",
	[PREALLOC_WARM_HANDED] = "handed",	   [PREALLOC_WARM_RETURNING] = "returning",
	[PREALLOC_WARM_DIRTY] = "dirty",	   [PREALLOC_WARM_CLEARING] = "clearing",
	[PREALLOC_WARM_QUARANTINED] = "quarantined",
};

static struct json_object *status_json(const struct prealloc_warm_status *st)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "node", json_object_new_int(st->node));
	json_object_object_add(o, "page_size", json_object_new_uint64(st->page_size));
	json_object_object_add(o, "mount", json_object_new_string(st->mount));
	json_object_object_add(o, "ready_bytes",
			       json_object_new_uint64(st->bytes[PREALLOC_WARM_READY]));
	json_object_object_add(o, "clearing_bytes",
			       json_object_new_uint64(st->bytes[PREALLOC_WARM_CLEARING]));
	json_object_object_add(o, "dirty_bytes",
			       json_object_new_uint64(st->bytes[PREALLOC_WARM_DIRTY]));
	json_object_object_add(o, "handed_bytes",
			       json_object_new_uint64(st->bytes[PREALLOC_WARM_HANDED]));
	json_object_object_add(o, "returning_bytes",
			       json_object_new_uint64(st->bytes[PREALLOC_WARM_RETURNING]));
	json_object_object_add(o, "populating_bytes",
			       json_object_new_uint64(st->bytes[PREALLOC_WARM_POPULATING]));
	json_object_object_add(o, "quarantined_bytes",
			       json_object_new_uint64(st->bytes[PREALLOC_WARM_QUARANTINED]));
	json_object_object_add(o, "target_bytes", json_object_new_uint64(st->target_bytes));
	json_object_object_add(o, "last_clear_gbps", json_object_new_double(st->last_clear_gbps));
	json_object_object_add(o, "unrecorded_pages", json_object_new_uint64(st->unrecorded_pages));
	json_object_object_add(o, "quarantined_held_bytes",
			       json_object_new_uint64(st->quarantined_held_bytes));
	json_object_object_add(o, "quarantines", json_object_new_uint64(st->quarantines));
	json_object_object_add(o, "trimmed_bytes", json_object_new_uint64(st->trimmed_bytes));
	return o;
}

static void status_human(const struct prealloc_warm_status *st)
{
	char t[32], b[32];

	printf("%s node %d %s: target %s", st->mount, st->node, page_label(st->page_size),
	       prealloc_format_size(st->target_bytes, t, sizeof(t)));
	for (int s = PREALLOC_WARM_POPULATING; s <= PREALLOC_WARM_QUARANTINED; s++)
		if (st->files[s])
			printf(", %s %s (%u)", state_names[s], prealloc_format_size(st->bytes[s], b, sizeof(b)),
			       st->files[s]);
	if (st->last_clear_gbps > 0)
		printf(", last clear %.2f GB/s", st->last_clear_gbps);
	if (st->unrecorded_pages)
		printf(", %llu pages in use by no record", (unsigned long long)st->unrecorded_pages);
	status_human_counters(st);
	printf("\n");
}

/* No entry at all: say so, and where the targets would come from. */
static void status_none(const char *conf)
{
	const char *env = getenv("PREALLOC_WARM_CONF");
	struct stat st;

	if (!conf)
		conf = env && *env ? env : "/etc/prealloc/warm.conf";
	if (stat(conf, &st) < 0)
		printf("no warm files, and no targets: %s: %s (docs/warm.md)\n", conf,
		       strerror(errno));
	else
		printf("no warm files, and no targets in %s\n", conf);
}

/* status's command line: 0, -1 after --help (done), or EXIT_USAGE. */
static int status_args(int argc, char **argv, const char **ret_conf, bool *ret_json)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			*ret_json = true;
		} else if (!strcmp(argv[i], "--conf") && i + 1 < argc) {
			*ret_conf = argv[++i];
		} else if (!strcmp(argv[i], "--help")) {
			printf("Usage: %s%s", warm_status_synopsis, WARM_ABOUT);
			return -1;
		} else {
			cli_error("warm status: unknown argument '%s' (--conf FILE, --json)", argv[i]);
			return EXIT_USAGE;
		}
	}
	return status_conf_missing(*ret_conf) ? EXIT_USAGE : 0;
}

int cmd_warm_status(int argc, char **argv)
{
	struct json_object *arr;
	const char *conf = NULL;
	char why[512] = "";
	struct prealloc_ctx *ctx;
	unsigned int shown = 0;
	bool json = false;
	int r;

	if (status_format_given(argc, argv))
		return cmd_warm_status_format(argc, argv);
	r = status_args(argc, argv, &conf, &json);
	if (r)
		return r < 0 ? EXIT_OK : r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_ENVIRONMENT;
	arr = json_object_new_array();
	for (unsigned int i = 0;; i++) {
		struct prealloc_warm_status st = { .size = sizeof(st) };

		r = prealloc_warm_status(ctx, conf, i, &st);
		if (r < 0) {
			snprintf(why, sizeof(why), "%s", st.message);
			break;
		}
		if (json)
			json_object_array_add(arr, status_json(&st));
		else
			status_human(&st);
		shown++;
	}
	prealloc_ctx_free(ctx);
	if (r != -ENOENT) {
		if (why[0])
			cli_error("warm status: %s", why);
		else
			cli_error("warm status: %s%s", strerror(-r), store_hint(r));
		json_object_put(arr);
		return r == -EINVAL ? EXIT_USAGE : EXIT_ENVIRONMENT;
	}
	if (json)
		printf("%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY));
	else if (!shown)
		status_none(conf);
	json_object_put(arr);
	return EXIT_OK;
}
