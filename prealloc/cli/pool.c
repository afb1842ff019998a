/* SPDX-License-Identifier: MIT */
/*
 * `prealloc pool [--json]`: each node's hugepage pools (total, free,
 * promised to prealloc runs still populating, added by prealloc) and the
 * store's shares by tag. `prealloc gc`, the store's gc, gives back growth
 * whose owner no longer exists; `pool --gc` (its older name) does the same
 * before it shows the pools.
 */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <string.h>

#include "cli.h"

static const uint64_t pool_sizes[] = { PREALLOC_PAGE_2M, PREALLOC_PAGE_1G };

static const char *size_label(uint64_t page_size)
{
	return page_size == PREALLOC_PAGE_1G ? "1G" : "2M";
}

static const char *state_label(int state)
{
	switch (state) {
	case PREALLOC_STORE_IN_FLIGHT:
		return "in-flight";
	case PREALLOC_STORE_HELD:
		return "held";
	default:
		return "orphan";
	}
}

static json_object *owners_json(struct prealloc_ctx *ctx, int node, uint64_t page_size)
{
	json_object *arr = json_object_new_array();

	for (unsigned int k = 0;; k++) {
		struct prealloc_store_entry e = { .size = sizeof(e) };
		json_object *o;

		if (prealloc_store_entry(ctx, k, &e) < 0)
			break;
		if (e.node != node || e.page_size != page_size)
			continue;
		o = json_object_new_object();
		/* "owner": the key before "tag" (docs/json.md), kept. */
		json_object_object_add(o, "owner", json_object_new_string(e.tag));
		json_object_object_add(o, "tag", json_object_new_string(e.tag));
		json_object_object_add(o, "state", json_object_new_string(state_label(e.state)));
		json_object_object_add(o, "pages", json_object_new_int64((int64_t)e.pages));
		json_object_object_add(o, "added", json_object_new_int64((int64_t)e.added));
		json_object_object_add(o, "outstanding", json_object_new_int64((int64_t)e.outstanding));
		if (e.state == PREALLOC_STORE_IN_FLIGHT)
			json_object_object_add(o, "pid", json_object_new_int(e.pid));
		json_object_array_add(arr, o);
	}
	return arr;
}

static void owners_text(struct prealloc_ctx *ctx, int node, uint64_t page_size)
{
	for (unsigned int k = 0;; k++) {
		struct prealloc_store_entry e = { .size = sizeof(e) };

		if (prealloc_store_entry(ctx, k, &e) < 0)
			break;
		if (e.node != node || e.page_size != page_size)
			continue;
		printf("    %s: %s, %llu pages, added %llu", e.tag, state_label(e.state),
		       (unsigned long long)e.pages, (unsigned long long)e.added);
		if (e.state == PREALLOC_STORE_IN_FLIGHT)
			printf(", %llu to fault, pid %d", (unsigned long long)e.outstanding, e.pid);
		printf("\n");
	}
}

static const char *record_state(const struct prealloc_record_info *r)
{
	switch (r->state) {
	case PREALLOC_RECORD_PREPARING:
		return r->alive ? "preparing" : "preparing (run died)";
	case PREALLOC_RECORD_READY:
		return "ready";
	case PREALLOC_RECORD_RELEASING:
		return "releasing";
	default:
		return "orphan";
	}
}

static const char *record_what(const struct prealloc_record_info *r)
{
	if (r->path[0])
		return r->path;
	return r->owner == PREALLOC_OWNER_HOLDER ? r->holder : "-";
}

/* Every record of the store: the files prealloc made or adopted, and holders' claims. */
static int records_show(struct prealloc_ctx *ctx, json_object *root)
{
	json_object *arr = root ? json_object_new_array() : NULL;
	int r = 0;

	if (!root)
		printf("records in %s:\n", prealloc_ctx_state_dir(ctx));
	for (unsigned int k = 0;; k++) {
		struct prealloc_record_info rec = { .size = sizeof(rec) };
		json_object *o;

		r = prealloc_record(ctx, k, &rec);
		if (r < 0)
			break;
		if (!root) {
			printf("  %s: %s%s, %llu hugepages added", record_what(&rec), record_state(&rec),
			       rec.has_file && !rec.created ? ", adopted" : "",
			       (unsigned long long)rec.added);
			if (rec.owner == PREALLOC_OWNER_RUN)
				printf(", pid %d", rec.pid);
			if (rec.owner == PREALLOC_OWNER_HOLDER)
				printf(", held by %s%s", rec.holder, rec.alive ? "" : " (gone)");
			printf("\n");
			continue;
		}
		o = json_object_new_object();
		json_object_object_add(o, "path", json_object_new_string(rec.path));
		json_object_object_add(o, "state", json_object_new_string(record_state(&rec)));
		json_object_object_add(o, "created", json_object_new_boolean(rec.created));
		json_object_object_add(o, "size", json_object_new_int64((int64_t)rec.file_size));
		json_object_object_add(o, "added", json_object_new_int64((int64_t)rec.added));
		json_object_object_add(o, "outstanding",
				       json_object_new_int64((int64_t)rec.outstanding));
		if (rec.owner == PREALLOC_OWNER_RUN)
			json_object_object_add(o, "pid", json_object_new_int(rec.pid));
		if (rec.owner == PREALLOC_OWNER_HOLDER)
			json_object_object_add(o, "holder", json_object_new_string(rec.holder));
		json_object_object_add(o, "alive", json_object_new_boolean(rec.alive));
		json_object_array_add(arr, o);
	}
	if (root)
		json_object_object_add(root, "records", arr);
	if (r == -ENOENT)
		return 0;
	cli_error("pool: cannot read the record store in %s: %s%s", prealloc_ctx_state_dir(ctx),
		  strerror(-r), store_hint(r));
	return r;
}

/* One node's pools: a table row each with its owners, or (arr) an object each; -exit code. */
static int node_pools_show(struct prealloc_ctx *ctx, int node, json_object *arr)
{
	for (size_t s = 0; s < sizeof(pool_sizes) / sizeof(pool_sizes[0]); s++) {
		struct prealloc_pool_status st = { .size = sizeof(st) };
		json_object *o;
		int r = prealloc_pool_status(ctx, node, pool_sizes[s], &st);

		if (r == -EPERM || r == -EBADMSG || r == -EACCES) {
			/* The store, not the pool: nothing it says is shown. */
			cli_error("pool: cannot read the record store in %s: %s%s",
				  prealloc_ctx_state_dir(ctx), strerror(-r), store_hint(r));
			return -EXIT_ENVIRONMENT;
		}
		if (r < 0)
			continue;	/* no pool of this size here */
		if (!arr) {
			printf("%-5d %-4s %8llu %8llu %8llu %9llu %8llu %7u\n", st.node,
			       size_label(st.page_size), (unsigned long long)st.total,
			       (unsigned long long)st.free, (unsigned long long)st.surplus,
			       (unsigned long long)st.promised, (unsigned long long)st.added,
			       st.owners);
			owners_text(ctx, st.node, st.page_size);
			continue;
		}
		o = json_object_new_object();
		json_object_object_add(o, "node", json_object_new_int(st.node));
		json_object_object_add(o, "page_size", json_object_new_int64((int64_t)st.page_size));
		json_object_object_add(o, "total", json_object_new_int64((int64_t)st.total));
		json_object_object_add(o, "free", json_object_new_int64((int64_t)st.free));
		json_object_object_add(o, "surplus", json_object_new_int64((int64_t)st.surplus));
		/* "reserved": the key before "promised" (docs/json.md), kept. */
		json_object_object_add(o, "reserved", json_object_new_int64((int64_t)st.promised));
		json_object_object_add(o, "promised", json_object_new_int64((int64_t)st.promised));
		json_object_object_add(o, "added", json_object_new_int64((int64_t)st.added));
		json_object_object_add(o, "owners", owners_json(ctx, st.node, st.page_size));
		json_object_array_add(arr, o);
	}
	return 0;
}

static int pool_show(struct prealloc_ctx *ctx, bool json)
{
	int nodes[PREALLOC_MAX_NODES], nr;
	json_object *root = NULL, *arr = NULL;

	nr = prealloc_nodes(ctx, nodes, PREALLOC_MAX_NODES);
	if (nr < 0) {
		cli_error("pool: cannot list nodes: %s", strerror(-nr));
		return EXIT_FAILURE_RUN;
	}
	if (json) {
		root = json_object_new_object();
		arr = json_object_new_array();
		json_object_object_add(root, "pools", arr);
	} else {
		printf("%-5s %-4s %8s %8s %8s %9s %8s %7s\n", "node", "size", "total", "free", "surplus",
		       "promised", "added", "owners");
	}
	for (int i = 0; i < nr && i < PREALLOC_MAX_NODES; i++)
		if (node_pools_show(ctx, nodes[i], arr) < 0) {
			json_object_put(root);
			return EXIT_ENVIRONMENT;
		}
	if (records_show(ctx, root) < 0) {
		json_object_put(root);
		return EXIT_ENVIRONMENT;
	}
	if (json) {
		puts(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							   JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(root);
	}
	return EXIT_OK;
}

/* The store's gc: its line to out, or an error; 0 or the exit code. */
static int store_gc_run(struct prealloc_ctx *ctx, const char *cmd, FILE *out)
{
	uint64_t returned = 0;
	unsigned int entries = 0;
	int r = prealloc_store_gc(ctx, &returned, &entries);

	if (r < 0) {
		cli_error("%s failed: %s%s", cmd, strerror(-r), store_hint(r));
		return r == -EACCES || r == -EPERM || r == -ETIMEDOUT ? EXIT_ENVIRONMENT
								       : EXIT_FAILURE_RUN;
	}
	fprintf(out, "gave back %llu hugepages; settled %u records\n",
		(unsigned long long)returned, entries);
	return EXIT_OK;
}

int cmd_gc(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, {} };
	static const char short_opts[] = "h";
	struct prealloc_ctx *ctx;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		if (c != 'h')
			return option_error("gc", argv, short_opts, opts);
		printf("Usage: prealloc gc\n"
		       "The record store's gc: settles records whose owner is gone: files of\n"
		       "runs that died before they were ready are removed, growth nobody holds\n"
		       "is given back. 'prealloc pool --gc' is the same, then shows the pools.\n");
		return EXIT_OK;
	}
	if (cli_extra_arg("gc", argc, argv, NULL))
		return EXIT_USAGE;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	ret = store_gc_run(ctx, "gc", stdout);
	prealloc_ctx_free(ctx);
	return ret;
}

int cmd_pool(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_GC };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "gc", no_argument, NULL, OPT_GC },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "h";
	struct prealloc_ctx *ctx = NULL;
	bool json = false, gc = false;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
			json = true;
			break;
		case OPT_GC:
			gc = true;
			break;
		case 'h':
			printf("Usage: prealloc pool [--json] [--gc]\n"
			       "Show each node's hugepage pools: total, free, surplus, promised to\n"
			       "prealloc runs still populating, added by prealloc, each share's\n"
			       "tag, and every record of the store. --gc first runs the store's gc\n"
			       "(prealloc gc): records whose owner is gone are settled, files of\n"
			       "runs that died before they were ready are removed, growth nobody\n"
			       "holds is given back.\n");
			return EXIT_OK;
		default:
			return option_error("pool", argv, short_opts, opts);
		}
	}
	if (cli_extra_arg("pool", argc, argv, NULL))
		return EXIT_USAGE;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	/* Keep stdout one JSON document with --json. */
	ret = gc ? store_gc_run(ctx, "pool: --gc", json ? stderr : stdout) : EXIT_OK;
	if (ret == EXIT_OK)
		ret = pool_show(ctx, json);
	prealloc_ctx_free(ctx);
	return ret;
}
