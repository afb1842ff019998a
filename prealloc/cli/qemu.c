/* SPDX-License-Identifier: MIT */
/*
 * `prealloc qemu [OPTIONS] SIZE -- QEMU [ARGS...]`: plain QEMU's front end.
 * The guest's memory, one file-backed backend per host node, goes through
 * the front-end layer (frontend/guest.h) that the libvirt hook uses too:
 * claimed, then linked from a warm file (--warm) or pre-faulted at DIR/ID
 * (DIR/ID-nodeN for each of several nodes); QEMU runs with it (-object
 * memory-backend-file,... and -machine memory-backend=ID, or one -numa
 * node per backend), and when QEMU exits (or fails, or this command is
 * signalled: the signal goes on to QEMU) it is given back.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "guest.h"
#include "cli.h"

#define HUGETLBFS_MAGIC 0x958458f6
#define TMPFS_MAGIC 0x01021994
#define QEMU_ARGS_MAX 4096
#define QEMU_MAX_NODES 64	/* guest nodes: one backend, one host node each */
/* What QEMU takes in an object id (its first a letter). */
#define ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"

struct qemu_cmd {
	struct node_request nodes; /* none given: the first node with memory */
	uint64_t page_size;
	uint64_t bytes;		/* the guest's, over all its nodes */
	const char *dir;	/* NULL: the page size's mount */
	char id[64];
	const char *tenant;
	bool warm, grow_pools, print, dry_run, verbose;
	char **qemu;		/* QEMU and its arguments, NULL-terminated */
	/* What QEMU gets after them (allocated): per backend -object and its value,
	 * then -machine or -numa and its value. */
	char *opts[4 * QEMU_MAX_NODES];
	unsigned int nr_opts;
};

static const struct guest_words qemu_words = {
	.noun = "guest",
	.dir = "--dir",
	.grow_off = "give --grow-pools to grow the pool, or shrink the guest",
	.warm_off = "warm is off (--warm)",
};

static bool verbose;

/* The front-end layer's messages: warnings and errors always, the rest with --verbose. */
static void qemu_vlog(int level, const char *fmt, va_list ap)
{
	if (level > 4 && !verbose)
		return;
	fprintf(stderr, "%s qemu: ", program_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static int usage(FILE *f, int rc)
{
	fprintf(f,
		"Usage: prealloc qemu [--node LIST] [--page-size 4k|2M|1G] [--dir DIR] [--id ID]\n"
		"                     [--warm] [--tenant NAME] [--grow-pools] [--print]\n"
		"                     [--dry-run] [--verbose] SIZE -- QEMU [ARGS...]\n"
		"Prepare SIZE of guest memory on host node N (pre-faulted, or a warm file of the\n"
		"pool with --warm), run QEMU with it and give it back when QEMU exits. QEMU gets\n"
		"  -object memory-backend-file,id=ID,mem-path=DIR/ID,size=BYTES,share=on,\n"
		"          prealloc=off,host-nodes=N,policy=bind -machine memory-backend=ID\n"
		"after ARGS (without -m, or with -m SIZE). SIGINT, SIGTERM and SIGHUP go on to\n"
		"QEMU; the exit status is QEMU's (128 + the signal that ended it).\n"
		"With several nodes, guest node I gets the I-th node listed: one such object\n"
		"each, id ID-nodeN, and -numa node,nodeid=I,memdev=ID-nodeN (give no -numa).\n"
		"  --node LIST      host nodes: N, N,M, N-M; N:SIZE,... to size each (adding\n"
		"                   up to SIZE), else SIZE split evenly (default: the first\n"
		"                   node with memory)\n"
		"  --page-size P    4k, 2M or 1G (default 2M)\n"
		"  --dir DIR        where the file goes, on hugetlbfs or tmpfs (default: the\n"
		"                   page size's hugetlbfs mount, /dev/shm for 4k)\n"
		"  --id ID          the backend's id and file name (default prealloc-PID)\n"
		"  --warm           start on a READY warm file of the node when there is one\n"
		"  --tenant NAME    the warm pool's tenant (docs/warm.md)\n"
		"  --grow-pools     grow the node's hugepage pool where it is short\n"
		"  --print          print the QEMU command line before running it\n"
		"  --dry-run        print it and do nothing else\n"
		"  --verbose        say what was prepared and given back\n");
	return rc;
}

static int parse_opt(struct qemu_cmd *q, int c, const char *arg)
{
	char err[256];

	switch (c) {
	case 'n':
		if (parse_node_spec(arg, &q->nodes, err, sizeof(err)) < 0) {
			cli_error("qemu: --node %s: %s", arg, err);
			return EXIT_USAGE;
		}
		return 0;
	case 'p':
		if (parse_page_size(arg, &q->page_size, err, sizeof(err)) < 0 ||
		    (q->page_size != PREALLOC_PAGE_4K && q->page_size != PREALLOC_PAGE_2M &&
		     q->page_size != PREALLOC_PAGE_1G)) {
			cli_error("qemu: --page-size %s: 4k, 2M or 1G", arg);
			return EXIT_USAGE;
		}
		return 0;
	case 'd':
		if (arg[0] != '/') {
			cli_error("qemu: --dir %s: an absolute path", arg);
			return EXIT_USAGE;
		}
		q->dir = arg;
		return 0;
	case 'i':
		if (!arg[0] || strlen(arg) >= sizeof(q->id) || strspn(arg, ID_CHARS) != strlen(arg) ||
		    !((arg[0] | 0x20) >= 'a' && (arg[0] | 0x20) <= 'z')) {
			cli_error("qemu: --id %s: a letter, then letters, digits, '-', '.' or '_' "
				  "(at most %zu)", arg, sizeof(q->id) - 1);
			return EXIT_USAGE;
		}
		snprintf(q->id, sizeof(q->id), "%s", arg);
		return 0;
	case 't':
		q->tenant = arg;
		return 0;
	}
	q->warm |= c == 'w';
	q->grow_pools |= c == 'r';
	q->print |= c == 'P';
	q->dry_run |= c == 'D';
	q->verbose |= c == 'v';
	return 0;
}

/*
 * Each node's share of SIZE: what --node N:SIZE gave (adding up to SIZE), or
 * SIZE split evenly; each a whole number of pages. 0 or EXIT_USAGE.
 */
static int split_size(struct qemu_cmd *q)
{
	struct node_request *nr = &q->nodes;
	uint64_t sum = 0;

	if (nr->nr > QEMU_MAX_NODES) {
		cli_error("qemu: --node: %u nodes, at most %d", nr->nr, QEMU_MAX_NODES);
		return EXIT_USAGE;
	}
	for (unsigned int i = 0; i < nr->nr && nr->sized; i++) {
		if (nr->bytes[i] % q->page_size) {
			cli_error("qemu: --node %d's size is not a whole number of %s pages",
				  nr->nodes[i], prealloc_page_name(q->page_size));
			return EXIT_USAGE;
		}
		sum += nr->bytes[i];
	}
	if (nr->sized && sum != q->bytes) {
		cli_error("qemu: the nodes' sizes add up to %llu bytes, SIZE is %llu",
			  (unsigned long long)sum, (unsigned long long)q->bytes);
		return EXIT_USAGE;
	}
	if (!nr->sized && nr->nr > 1 && q->bytes % (nr->nr * q->page_size)) {
		cli_error("qemu: SIZE does not split into %u equal parts of whole %s pages",
			  nr->nr, prealloc_page_name(q->page_size));
		return EXIT_USAGE;
	}
	for (unsigned int i = 0; i < nr->nr && !nr->sized; i++)
		nr->bytes[i] = q->bytes / nr->nr;
	return 0;
}

static int parse_args(struct qemu_cmd *q, int argc, char **argv)
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
			return usage(stdout, -1);	/* done: exit 0 */
		if (c == '?' || c == ':')
			return option_error("qemu", argv, short_opts, opts);
		r = parse_opt(q, c, optarg);
		if (r)
			return r;
	}
	if (optind >= argc || !strcmp(argv[optind], "--")) {
		cli_error("qemu: no SIZE given");
		return EXIT_USAGE;
	}
	if (prealloc_parse_size(argv[optind], &q->bytes) < 0 || !q->bytes ||
	    q->bytes % q->page_size) {
		cli_error("qemu: %s is not a size of whole %s pages", argv[optind],
			  prealloc_page_name(q->page_size));
		return EXIT_USAGE;
	}
	if (++optind >= argc || strcmp(argv[optind], "--") || optind + 1 >= argc) {
		cli_error("qemu: no QEMU command line after SIZE -- ");
		return EXIT_USAGE;
	}
	q->qemu = argv + optind + 1;
	return split_size(q);
}

/* --dir, else the page size's mount; its filesystem's page size must be the one asked for. */
static int memory_dir(struct prealloc_ctx *ctx, struct qemu_cmd *q, struct guest *g)
{
	const char *dir = q->dir;
	struct statfs fs;
	uint64_t page = 0;

	if (!dir && q->page_size == PREALLOC_PAGE_4K)
		dir = "/dev/shm";
	else if (!dir)
		dir = prealloc_hugetlbfs_mount(ctx, q->page_size);
	if (!dir) {
		cli_error("qemu: no hugetlbfs mount of %s pages (mount one, or give --dir)",
			  prealloc_page_name(q->page_size));
		return EXIT_ENVIRONMENT;
	}
	if (statfs(dir, &fs) < 0) {
		cli_error("qemu: --dir %s: %s", dir, strerror(errno));
		return EXIT_ENVIRONMENT;
	}
	if ((unsigned long)fs.f_type == HUGETLBFS_MAGIC)
		page = (uint64_t)fs.f_bsize;
	else if ((unsigned long)fs.f_type == TMPFS_MAGIC)
		page = PREALLOC_PAGE_4K;
	if (page != q->page_size) {
		cli_error("qemu: --dir %s is not on hugetlbfs of %s pages%s", dir,
			  prealloc_page_name(q->page_size),
			  q->page_size == PREALLOC_PAGE_4K ? " or tmpfs" : "");
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
static int qemu_backend(const struct qemu_cmd *q, unsigned int i, struct guest_backend *be)
{
	int node = q->nodes.nodes[i];
	int n = q->nodes.nr > 1 ? snprintf(be->alias, sizeof(be->alias), "%s-node%d", q->id, node)
				: snprintf(be->alias, sizeof(be->alias), "%s", q->id);

	if (n < 0 || (size_t)n >= sizeof(be->alias)) {
		cli_error("qemu: --id %s-node%d: longer than %zu characters", q->id, node,
			  sizeof(be->alias) - 1);
		return EXIT_USAGE;
	}
	be->bytes = q->nodes.bytes[i];
	be->page_size = q->page_size;
	be->file = be->shared = true;
	be->policy = GUEST_POLICY_BIND;
	be->nr_nodes = 1;
	be->nodes[0] = node;
	be->node_bytes[0] = be->bytes;
	return 0;
}

/* The guest: a file backend per node, shared, bound there; held while this process lives. */
static int qemu_guest(struct prealloc_ctx *ctx, struct qemu_cmd *q, struct guest *g)
{
	int nodes[PREALLOC_MAX_NODES], n = prealloc_nodes(ctx, nodes, PREALLOC_MAX_NODES), rc;

	if (n <= 0) {
		cli_error("qemu: no node with memory: %s", strerror(n < 0 ? -n : ENODEV));
		return EXIT_ENVIRONMENT;
	}
	if (!q->nodes.nr) {
		q->nodes.nr = 1;
		q->nodes.nodes[0] = nodes[0];
		q->nodes.bytes[0] = q->bytes;
	}
	for (unsigned int i = 0; i < q->nodes.nr; i++) {
		int k = 0;

		while (k < n && nodes[k] != q->nodes.nodes[i])
			k++;
		if (k == n) {
			cli_error("qemu: --node: node %d has no memory", q->nodes.nodes[i]);
			return EXIT_ENVIRONMENT;
		}
	}
	*g = (struct guest){ .ctx = ctx, .words = &qemu_words, .log = qemu_vlog,
			     .grow_pools = q->grow_pools, .prefault = true, .warm = q->warm,
			     .cancel_fd = -1, .deadline_s = 60 };
	snprintf(g->name, sizeof(g->name), "qemu-%d", (int)getpid());
	/*
	 * This process, by pid and start time: a gc after a SIGKILL gives the
	 * memory back, though another process has the pid by then.
	 */
	rc = prealloc_holder_process(ctx, "qemu", 0, g->holder, sizeof(g->holder), g->check,
				     sizeof(g->check));
	if (rc < 0) {
		cli_error("qemu: this process as the memory's holder: %s", strerror(-rc));
		return EXIT_ENVIRONMENT;
	}
	snprintf(g->tenant, sizeof(g->tenant), "%s", q->tenant ? q->tenant : "");
	/* A run a person started is not cut off: the bounds are the prepare's own. */
	g->deadline = now_seconds() + 86400;
	for (unsigned int i = 0; i < q->nodes.nr; i++) {
		rc = qemu_backend(q, i, &g->demand.backends[i]);
		if (rc)
			return rc;
	}
	g->demand.nr_backends = q->nodes.nr;
	guest_needs(&g->demand);
	return memory_dir(ctx, q, g);
}

/* opt, then the value fmt makes, onto QEMU's options; false when out of memory or room. */
static bool qemu_opt(struct qemu_cmd *q, const char *opt, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (q->nr_opts + 2 > sizeof(q->opts) / sizeof(q->opts[0]))
		return false;
	q->opts[q->nr_opts] = strdup(opt);
	if (!q->opts[q->nr_opts])
		return false;
	q->nr_opts++;
	va_start(ap, fmt);
	n = vasprintf(&q->opts[q->nr_opts], fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	q->nr_opts++;
	return true;
}

/*
 * QEMU's options for the backends: an -object each, then -machine
 * memory-backend=ID for one, or a -numa node each for several (guest node
 * i on backend i). 0, or EXIT_FAILURE_RUN out of memory.
 */
static int qemu_options(struct qemu_cmd *q, const struct guest *g)
{
	unsigned int nr = g->demand.nr_backends;
	bool ok = true;

	for (unsigned int i = 0; i < nr && ok; i++) {
		const struct guest_backend *be = &g->demand.backends[i];

		ok = qemu_opt(q, "-object", "memory-backend-file,id=%s,mem-path=%s/%s,size=%llu,"
			      "share=on,prealloc=off,host-nodes=%d,policy=bind", be->alias,
			      g->mount, be->alias, (unsigned long long)be->bytes, be->nodes[0]);
	}
	for (unsigned int i = 0; i < nr && ok; i++)
		ok = nr == 1 ? qemu_opt(q, "-machine", "memory-backend=%s", g->demand.backends[0].alias)
			     : qemu_opt(q, "-numa", "node,nodeid=%u,memdev=%s", i,
					g->demand.backends[i].alias);
	if (!ok)
		cli_error("qemu: %s", strerror(ENOMEM));
	return ok ? 0 : EXIT_FAILURE_RUN;
}

/* argv for QEMU: its own, then the backend's options; NULL-terminated in ret (QEMU_ARGS_MAX). */
static int qemu_argv(struct qemu_cmd *q, char **ret)
{
	unsigned int n = 0;

	for (char **a = q->qemu; *a; a++) {
		if (n + q->nr_opts + 1 >= QEMU_ARGS_MAX) {
			cli_error("qemu: more than %u arguments", QEMU_ARGS_MAX - q->nr_opts - 1);
			return EXIT_USAGE;
		}
		ret[n++] = *a;
	}
	for (unsigned int i = 0; i < q->nr_opts; i++)
		ret[n++] = q->opts[i];
	ret[n] = NULL;
	return 0;
}

int cmd_qemu(int argc, char **argv)
{
	static struct qemu_cmd q = { .page_size = PREALLOC_PAGE_2M };
	static char *args[QEMU_ARGS_MAX];
	struct prealloc_ctx *ctx = NULL;
	struct guest *g = NULL;
	int rc;

	snprintf(q.id, sizeof(q.id), "prealloc-%d", (int)getpid());
	rc = parse_args(&q, argc, argv);
	if (rc)
		return rc < 0 ? EXIT_OK : rc;
	verbose = q.verbose;
	ctx = cli_context();
	g = calloc(1, sizeof(*g));
	rc = ctx && g ? qemu_guest(ctx, &q, g) : EXIT_FAILURE_RUN;
	if (rc == 0)
		rc = qemu_options(&q, g);
	if (rc == 0)
		rc = qemu_argv(&q, args);
	if (rc == 0 && q.dry_run)
		qemu_print(args);
	else if (rc == 0)
		rc = qemu_session(g, args, q.print);
	while (q.nr_opts)
		free(q.opts[--q.nr_opts]);
	free(g);
	prealloc_ctx_free(ctx);
	return rc;
}
