/* SPDX-License-Identifier: MIT */
/*
 * What every wrapper command shares (`prealloc qemu`; docs/design.md,
 * "Front ends"): the options that describe a guest's memory (--node,
 * --page-size, --dir, --id, --warm, --tenant, --grow-pools, --print,
 * --dry-run, --verbose), SIZE and the VMM's command line after "--"; the
 * guest they describe for the front-end layer (one shared file backend per
 * host node, bound there, held by this process); the VMM's options added
 * after its own; and the run, through the layer's session. A wrapper's own
 * file says what its VMM is called, its usage and its memory options.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guest.h"
#include "cli.h"

/* What a VMM takes in an object id (its first a letter). */
#define ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"

static const char *log_name = "";
static bool verbose;
/* What a wrapper's messages call its things: its options are this file's, its VMM its own. */
static struct guest_words words = {
	.noun = "guest",
	.dir = "--dir",
	.grow_off = "give --grow-pools to grow the pool, or shrink the guest",
	.warm_off = "warm is off (--warm)",
};

/*
 * The front-end layer's messages: errors as the CLI's (cli_error), warnings
 * always, the rest with --verbose.
 */
static void wrap_vlog(int level, const char *fmt, va_list ap)
{
	char msg[4096];

	if (level <= 3) {
		vsnprintf(msg, sizeof(msg), fmt, ap);
		cli_error("%s: %s", log_name, msg);
		return;
	}
	if (level > 4 && !verbose)
		return;
	fprintf(stderr, "%s %s: ", program_name, log_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static int parse_opt(struct wrap_cmd *w, int c, const char *arg)
{
	char err[256];

	switch (c) {
	case 'n':
		if (parse_node_spec(arg, &w->nodes, err, sizeof(err)) < 0) {
			cli_error("%s: --node %s: %s", w->name, arg, err);
			return EXIT_USAGE;
		}
		return 0;
	case 'p':
		if (parse_page_size(arg, &w->page_size, err, sizeof(err)) < 0 ||
		    (w->page_size != PREALLOC_PAGE_4K && w->page_size != PREALLOC_PAGE_2M &&
		     w->page_size != PREALLOC_PAGE_1G)) {
			cli_error("%s: --page-size %s: 4k, 2M or 1G", w->name, arg);
			return EXIT_USAGE;
		}
		return 0;
	case 'd':
		if (arg[0] != '/') {
			cli_error("%s: --dir %s: an absolute path", w->name, arg);
			return EXIT_USAGE;
		}
		w->dir = arg;
		return 0;
	case 'i':
		if (!arg[0] || strlen(arg) >= sizeof(w->id) || strspn(arg, ID_CHARS) != strlen(arg) ||
		    !((arg[0] | 0x20) >= 'a' && (arg[0] | 0x20) <= 'z')) {
			cli_error("%s: --id %s: a letter, then letters, digits, '-', '.' or '_' "
				  "(at most %zu)", w->name, arg, sizeof(w->id) - 1);
			return EXIT_USAGE;
		}
		snprintf(w->id, sizeof(w->id), "%s", arg);
		return 0;
	case 't':
		w->tenant = arg;
		return 0;
	}
	w->warm |= c == 'w';
	w->grow_pools |= c == 'r';
	w->print |= c == 'P';
	w->dry_run |= c == 'D';
	w->verbose |= c == 'v';
	return 0;
}

/*
 * Each node's share of SIZE: what --node N:SIZE gave (adding up to SIZE), or
 * SIZE split evenly; each a whole number of pages. 0 or EXIT_USAGE.
 */
static int split_size(struct wrap_cmd *w)
{
	struct node_request *nr = &w->nodes;
	uint64_t sum = 0;

	if (nr->nr > WRAP_MAX_NODES) {
		cli_error("%s: --node: %u nodes, at most %d", w->name, nr->nr, WRAP_MAX_NODES);
		return EXIT_USAGE;
	}
	for (unsigned int i = 0; i < nr->nr && nr->sized; i++) {
		if (nr->bytes[i] % w->page_size) {
			cli_error("%s: --node %d's size is not a whole number of %s pages", w->name,
				  nr->nodes[i], prealloc_page_name(w->page_size));
			return EXIT_USAGE;
		}
		sum += nr->bytes[i];
	}
	if (nr->sized && sum != w->bytes) {
		cli_error("%s: the nodes' sizes add up to %llu bytes, SIZE is %llu", w->name,
			  (unsigned long long)sum, (unsigned long long)w->bytes);
		return EXIT_USAGE;
	}
	if (!nr->sized && nr->nr > 1 && w->bytes % (nr->nr * w->page_size)) {
		cli_error("%s: SIZE does not split into %u equal parts of whole %s pages", w->name,
			  nr->nr, prealloc_page_name(w->page_size));
		return EXIT_USAGE;
	}
	for (unsigned int i = 0; i < nr->nr && !nr->sized; i++)
		nr->bytes[i] = w->bytes / nr->nr;
	return 0;
}

static int wrap_parse(struct wrap_cmd *w, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "page-size", required_argument, NULL, 'p' },
		{ "dir", required_argument, NULL, 'd' },
		{ "id", required_argument, NULL, 'i' },
		{ "tenant", required_argument, NULL, 't' },
		{ "warm", no_argument, NULL, 'w' },
		{ "grow-pools", no_argument, NULL, 'r' },
		{ "reserve", no_argument, NULL, 'r' },	/* 0.1's name, hidden */
		{ "print", no_argument, NULL, 'P' },
		{ "dry-run", no_argument, NULL, 'D' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "+h";
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		if (c == 'h')
			return w->usage(stdout, -1);	/* done: exit 0 */
		if (c == '?' || c == ':')
			return option_error(w->name, argv, short_opts, opts);
		r = parse_opt(w, c, optarg);
		if (r)
			return r;
	}
	if (optind >= argc || !strcmp(argv[optind], "--")) {
		cli_error("%s: no SIZE given", w->name);
		return EXIT_USAGE;
	}
	r = prealloc_parse_size(argv[optind], &w->bytes);
	if (r == 0)
		w->bytes = size_round_fraction(argv[optind], w->bytes, w->page_size);
	if (r < 0 || !w->bytes || w->bytes % w->page_size) {
		cli_error("%s: %s is not a size of whole %s pages", w->name, argv[optind],
			  prealloc_page_name(w->page_size));
		return EXIT_USAGE;
	}
	if (++optind >= argc || strcmp(argv[optind], "--") || optind + 1 >= argc) {
		cli_error("%s: no %s command line after SIZE -- ", w->name, w->vmm_name);
		return EXIT_USAGE;
	}
	w->vmm_argv = argv + optind + 1;
	return split_size(w);
}

/* --dir, else the page size's mount; its filesystem's page size must be the one asked for. */
static int memory_dir(struct prealloc_ctx *ctx, struct wrap_cmd *w, struct guest *g)
{
	const char *dir = w->dir;
	uint64_t page = 0;
	int rc;

	if (!dir && w->page_size == PREALLOC_PAGE_4K)
		dir = "/dev/shm";
	else if (!dir)
		dir = prealloc_hugetlbfs_mount(ctx, w->page_size);
	if (!dir) {
		cli_error("%s: no hugetlbfs mount of %s pages (mount one, or give --dir)", w->name,
			  prealloc_page_name(w->page_size));
		return EXIT_ENVIRONMENT;
	}
	rc = guest_dir_page(dir, &page);
	if (rc < 0) {
		cli_error("%s: --dir %s: %s", w->name, dir, strerror(-rc));
		return EXIT_ENVIRONMENT;
	}
	if (page != w->page_size) {
		cli_error("%s: --dir %s is not on hugetlbfs of %s pages%s", w->name, dir,
			  prealloc_page_name(w->page_size),
			  w->page_size == PREALLOC_PAGE_4K ? " or tmpfs" : "");
		return EXIT_ENVIRONMENT;
	}
	snprintf(g->mount, sizeof(g->mount), "%s", dir);
	g->mount_page = page;
	return 0;
}

/*
 * Backend i: a shared file bound to the i-th node, named ID, or ID-nodeN
 * when the guest has several nodes. 0 or EXIT_USAGE (a name too long).
 */
static int wrap_backend(const struct wrap_cmd *w, unsigned int i, struct guest_backend *be)
{
	int node = w->nodes.nodes[i];
	int n = w->nodes.nr > 1 ? snprintf(be->alias, sizeof(be->alias), "%s-node%d", w->id, node)
				: snprintf(be->alias, sizeof(be->alias), "%s", w->id);

	if (n < 0 || (size_t)n >= sizeof(be->alias)) {
		cli_error("%s: --id %s-node%d: longer than %zu characters", w->name, w->id, node,
			  sizeof(be->alias) - 1);
		return EXIT_USAGE;
	}
	be->bytes = w->nodes.bytes[i];
	be->page_size = w->page_size;
	be->file = be->shared = true;
	be->policy = GUEST_POLICY_BIND;
	be->nr_nodes = 1;
	be->nodes[0] = node;
	be->node_bytes[0] = be->bytes;
	return 0;
}

/* The nodes asked for, each with memory (none asked: the first with memory). */
static int wrap_nodes(struct prealloc_ctx *ctx, struct wrap_cmd *w)
{
	int nodes[PREALLOC_MAX_NODES], n = prealloc_nodes(ctx, nodes, PREALLOC_MAX_NODES);

	if (n <= 0) {
		cli_error("%s: no node with memory: %s", w->name, strerror(n < 0 ? -n : ENODEV));
		return EXIT_ENVIRONMENT;
	}
	if (!w->nodes.nr) {
		w->nodes.nr = 1;
		w->nodes.nodes[0] = nodes[0];
		w->nodes.bytes[0] = w->bytes;
	}
	for (unsigned int i = 0; i < w->nodes.nr; i++) {
		int k = 0, node = w->nodes.nodes[i];
		char list[256], path[64];

		while (k < n && nodes[k] != node)
			k++;
		if (k < n)
			continue;
		/* The main command's words and status (prepare's request check): one answer. */
		prealloc_format_list(nodes, (unsigned int)MIN_LEN(n, PREALLOC_MAX_NODES), list,
				     sizeof(list));
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", node);
		cli_error(access(path, F_OK) == 0
				  ? "%s: node %d has no memory (nodes with memory: %s)"
				  : "%s: node %d does not exist or is offline (nodes with memory: %s)",
			  w->name, node, list);
		return EXIT_USAGE;
	}
	return 0;
}

/* The guest w describes, held by this process; 0 or the exit status. */
static int wrap_guest(struct prealloc_ctx *ctx, struct wrap_cmd *w, struct guest *g)
{
	int rc = wrap_nodes(ctx, w);

	if (rc)
		return rc;
	log_name = w->name;
	verbose = w->verbose;
	words.vmm = w->vmm_name;
	words.shared_how = w->shared_on;
	words.private_why = w->shared_off;
	words.private_opt = w->shared_off;
	*g = (struct guest){ .ctx = ctx, .words = &words, .log = wrap_vlog,
			     .grow_pools = w->grow_pools, .prefault = true, .warm = w->warm,
			     .cancel_fd = -1, .deadline_s = 60 };
	snprintf(g->name, sizeof(g->name), "%s-%d", w->name, (int)getpid());
	/*
	 * This process, by pid and start time: a gc after a SIGKILL gives the
	 * memory back, though another process has the pid by then.
	 */
	rc = prealloc_holder_process(ctx, w->name, 0, g->holder, sizeof(g->holder), g->check,
				     sizeof(g->check));
	if (rc < 0) {
		cli_error("%s: this process as the memory's holder: %s", w->name, strerror(-rc));
		return EXIT_ENVIRONMENT;
	}
	snprintf(g->tenant, sizeof(g->tenant), "%s", w->tenant ? w->tenant : "");
	/* A run a person started is not cut off: the bounds are the prepare's own. */
	g->deadline = now_seconds() + 86400;
	for (unsigned int i = 0; i < w->nodes.nr; i++) {
		rc = wrap_backend(w, i, &g->demand.backends[i]);
		if (rc)
			return rc;
	}
	g->demand.nr_backends = w->nodes.nr;
	guest_needs(&g->demand);
	return memory_dir(ctx, w, g);
}

bool wrap_opt(struct wrap_cmd *w, const char *opt, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (w->nr_opts + 2 > sizeof(w->opts) / sizeof(w->opts[0]))
		return false;
	w->opts[w->nr_opts] = strdup(opt);
	if (!w->opts[w->nr_opts])
		return false;
	w->nr_opts++;
	va_start(ap, fmt);
	n = vasprintf(&w->opts[w->nr_opts], fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	w->nr_opts++;
	return true;
}

/* argv for the VMM: its own, then the backends' options; NULL-terminated in ret (WRAP_ARGS_MAX). */
static int wrap_argv(struct wrap_cmd *w, char **ret)
{
	unsigned int n = 0;

	for (char **a = w->vmm_argv; *a; a++) {
		if (n + w->nr_opts + 1 >= WRAP_ARGS_MAX) {
			cli_error("%s: more than %u arguments", w->name, WRAP_ARGS_MAX - w->nr_opts - 1);
			return EXIT_USAGE;
		}
		ret[n++] = *a;
	}
	for (unsigned int i = 0; i < w->nr_opts; i++)
		ret[n++] = w->opts[i];
	ret[n] = NULL;
	return 0;
}

/* --dry-run's command line, or the session: the exit status. */
static int wrap_run(struct wrap_cmd *w, struct guest *g)
{
	static char *args[WRAP_ARGS_MAX];
	int rc = wrap_argv(w, args);

	if (rc == 0 && w->dry_run)
		guest_print_argv(stdout, args);
	else if (rc == 0)
		rc = guest_session(g, args, &(struct guest_wrapper){ .print = w->print,
			.run_failure = EXIT_FAILURE_RUN, .exit_status = qemu_exit_status });
	return rc;
}

int wrap_main(struct wrap_cmd *w, int argc, char **argv)
{
	struct prealloc_ctx *ctx = NULL;
	struct guest *g = NULL;
	int rc;

	snprintf(w->id, sizeof(w->id), "prealloc-%d", (int)getpid());
	rc = wrap_parse(w, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	rc = w->dry_run ? 0 : program_find(w->vmm_argv[0]);
	if (rc < 0) {
		/* Before any memory is touched: the VMM could never have run on it. */
		cli_error("%s: cannot run %s: %s", w->name, w->vmm_argv[0],
			  rc == -ENOENT && !strchr(w->vmm_argv[0], '/') ? "not found in $PATH"
									: strerror(-rc));
		return rc == -ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
	}
	ctx = cli_context();
	g = calloc(1, sizeof(*g));
	rc = ctx && g ? wrap_guest(ctx, w, g) : EXIT_FAILURE_RUN;
	if (rc == 0)
		rc = w->options(w, g);
	if (rc == 0)
		rc = wrap_run(w, g);
	while (w->nr_opts)
		free(w->opts[--w->nr_opts]);
	free(g);
	prealloc_ctx_free(ctx);
	return rc;
}
