/* SPDX-License-Identifier: MIT */
/*
 * `prealloc [options] SIZE`: create guest memory as a file on hugetlbfs or
 * tmpfs, bound to the requested nodes and populated in parallel, and keep it
 * for the VMM. The work is the library's prepare flow; this file parses the
 * options, draws progress, renders the outcome and picks the exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

struct create_args {
	struct node_request req;
	uint64_t size;
	bool have_size;
	uint64_t page;		/* PAGE_SIZE_AUTO, PAGE_SIZE_THP or bytes */
	const char *file;
	bool reuse, force;
	unsigned int threads;
	bool verify, json, quiet, touch;
	bool grow_pools;		/* grow node pools to fit */
	bool skip_admission;		/* tests: populate without the capacity check */
	unsigned int grow_timeout_ms;
};

static const char usage_text[] =
	"Usage: prealloc [OPTIONS] SIZE\n"
	"       prealloc [OPTIONS] --node N:SIZE [--node M:SIZE]...\n"
	"Create guest memory, populated in parallel on the given NUMA nodes, and keep\n"
	"it as a file for the VMM.\n"
	"\n"
	"  -n, --node LIST        nodes: N, N-M, N,M (SIZE split evenly) or N:SIZE;\n"
	"                         repeatable; default: every node of the current policy\n"
	"  -p, --page-size SIZE   4k, 2M, 1G, thp or auto (default: auto)\n"
	"  -f, --file PATH        the file to create (default: a new file under the\n"
	"                         hugetlbfs mount of the page size, or /dev/shm)\n"
	"      --reuse            populate PATH in place if it exists with this size\n"
	"      --force            with --reuse: adopt a file another user owns, others may\n"
	"                         read or write, with several links, or that another\n"
	"                         process maps or holds open\n"
	"  -t, --threads N        workers per node (default: every allowed CPU of the node)\n"
	"      --grow-pools       grow a node's hugepage pool when it is short; the\n"
	"                         growth is given back by 'prealloc rm' (docs/admission.md)\n"
	"      --grow-timeout S   seconds to keep compacting a node for --grow-pools\n"
	"                         (default: 5)\n"
	"      --verify           check every page reads zero and sits on its node\n"
	"      --json             print one JSON document (docs/json.md)\n"
	"  -q, --quiet            no progress bar, no report\n"
	"  -h, --help             this text\n"
	"\n"
	"SIZE takes K, M, G, T (or KiB, MiB, GiB, TiB), binary multiples.\n"
	"Other commands: prealloc info | pool | gc | rm FILE | clear FILE | bench |\n"
	"vfio-map | warm take|give|fill|serve|status | hook install|uninstall |\n"
	"--version; each answers --help. See prealloc(1).\n";

/* --grow-timeout: seconds, more than 0, at most an hour. */
static int parse_timeout(const char *arg, unsigned int *ret_ms)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || *end || end == arg || !(v > 0 && v <= 3600)) {
		cli_error("--grow-timeout: invalid time '%s' (expected seconds, more than 0, at "
			  "most 3600)", arg);
		return -EXIT_USAGE;
	}
	*ret_ms = (unsigned int)(v * 1000 + 0.5);
	if (!*ret_ms)
		*ret_ms = 1;
	return 0;
}

/* SIZE, and the node sizes that must add up to it. */
static int parse_operands(int argc, char **argv, struct create_args *a)
{
	if (optind < argc) {
		int r = prealloc_parse_size(argv[optind], &a->size);

		if (r == -ERANGE) {
			cli_error("size '%s' is too large", argv[optind]);
			return -EXIT_USAGE;
		}
		if (r < 0) {
			cli_error("invalid size '%s' (expected a number with K, M, G or T)",
				  argv[optind]);
			return -EXIT_USAGE;
		}
		if (a->size == 0) {
			cli_error("size must be greater than zero");
			return -EXIT_USAGE;
		}
		a->size = size_round_fraction(argv[optind], a->size, a->page);
		a->have_size = true;
		optind++;
	}
	if (cli_extra_arg(NULL, argc, argv, NULL))
		return -EXIT_USAGE;
	if (a->req.sized) {
		uint64_t sum = 0;

		for (unsigned int i = 0; i < a->req.nr; i++) {
			if (a->req.bytes[i] > UINT64_MAX - sum) {
				cli_error("the node sizes add up to more than 16 EiB");
				return -EXIT_USAGE;
			}
			sum += a->req.bytes[i];
		}
		if (a->have_size && sum != a->size) {
			char s1[32], s2[32];

			cli_error("the node sizes add up to %s, not the SIZE given (%s)",
				  prealloc_format_size(sum, s1, sizeof(s1)), prealloc_format_size(a->size, s2, sizeof(s2)));
			return -EXIT_USAGE;
		}
		a->size = sum;
		a->have_size = true;
	}
	if (!a->have_size) {
		cli_error("no size given (e.g. 'prealloc --node 0 1G'; see --help)");
		return -EXIT_USAGE;
	}
	return 0;
}

enum { OPT_REUSE = 256, OPT_VERIFY, OPT_JSON, OPT_TOUCH, OPT_GROW_POOLS, OPT_GROW_TIMEOUT,
       OPT_SKIP_ADMISSION, OPT_FORCE };
/* The options of create, the command without a command word. */
static const struct option create_opts[] = {
	{ "node", required_argument, NULL, 'n' },
	{ "page-size", required_argument, NULL, 'p' },
	{ "file", required_argument, NULL, 'f' },
	{ "reuse", no_argument, NULL, OPT_REUSE },
	{ "force", no_argument, NULL, OPT_FORCE },
	{ "threads", required_argument, NULL, 't' },
	{ "verify", no_argument, NULL, OPT_VERIFY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "quiet", no_argument, NULL, 'q' },
	{ "touch", no_argument, NULL, OPT_TOUCH },	/* testing: the fallback path */
	{ "grow-pools", no_argument, NULL, OPT_GROW_POOLS },
	{ "grow-timeout", required_argument, NULL, OPT_GROW_TIMEOUT },
	/* 0.1's names, hidden from --help (docs/prealloc.1.md) */
	{ "reserve", no_argument, NULL, OPT_GROW_POOLS },
	{ "reserve-timeout", required_argument, NULL, OPT_GROW_TIMEOUT },
	/* testing: let population meet exhaustion (tests/integration) */
	{ "test-skip-admission", no_argument, NULL, OPT_SKIP_ADMISSION },
	{ "help", no_argument, NULL, 'h' },
	{}
};

/* The options that only set a flag: false when c is not one of them. */
static bool create_flag(int c, struct create_args *a)
{
	switch (c) {
	case OPT_REUSE:
		a->reuse = true;
		break;
	case OPT_FORCE:
		a->force = true;
		break;
	case OPT_VERIFY:
		a->verify = true;
		break;
	case OPT_JSON:
		a->json = true;
		break;
	case 'q':
		a->quiet = true;
		break;
	case OPT_TOUCH:
		a->touch = true;
		break;
	case OPT_GROW_POOLS:
		a->grow_pools = true;
		break;
	case OPT_SKIP_ADMISSION:
		a->skip_admission = true;
		break;
	default:
		return false;
	}
	return true;
}

static int parse_args(int argc, char **argv, struct create_args *a)
{
	static const char short_opts[] = "n:p:f:t:qh";
	char err[256];
	int c;

	a->page = PAGE_SIZE_AUTO;
	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, create_opts, NULL)) != -1) {
		if (create_flag(c, a))
			continue;
		switch (c) {
		case 'n':
			if (parse_node_spec(optarg, &a->req, err, sizeof(err)) < 0) {
				cli_error("--node: %s", err);
				return -EXIT_USAGE;
			}
			break;
		case 'p':
			if (parse_page_size(optarg, &a->page, err, sizeof(err)) < 0) {
				cli_error("--page-size: %s", err);
				return -EXIT_USAGE;
			}
			break;
		case 'f':
			a->file = optarg;
			break;
		case 't':
			if (parse_threads(optarg, &a->threads, err, sizeof(err)) < 0) {
				cli_error("--threads: %s", err);
				return -EXIT_USAGE;
			}
			break;
		case OPT_GROW_TIMEOUT:
			if (parse_timeout(optarg, &a->grow_timeout_ms) < 0)
				return -EXIT_USAGE;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			return -option_error(NULL, argv, short_opts, create_opts);
		}
	}
	return parse_operands(argc, argv, a);
}

static void prepare_opts(const struct create_args *a, struct prealloc_prepare_opts *po)
{
	*po = (struct prealloc_prepare_opts){
		.size = sizeof(*po),
		.flags = (a->reuse ? PREALLOC_PREPARE_REUSE : 0) |
			 (a->force ? PREALLOC_PREPARE_FORCE : 0) |
			 (a->grow_pools ? PREALLOC_PREPARE_GROW_POOLS : 0) |
			 (a->verify ? PREALLOC_PREPARE_VERIFY : 0) |
			 (a->touch ? PREALLOC_PREPARE_TOUCH : 0) |
			 (a->skip_admission ? PREALLOC_PREPARE_NO_CHECK : 0),
		.page_size = a->page == PAGE_SIZE_THP ? PREALLOC_PAGE_THP : a->page,
		.length = a->size,
		.nr_nodes = a->req.nr,
		.nodes = a->req.nodes,
		.node_bytes = a->req.sized ? a->req.bytes : NULL,
		.path = a->file,
		.threads = a->threads,
		.grow_timeout_ms = a->grow_timeout_ms,
	};
}

/* A failed run (not a verify verdict, which has its report printed first): why. */
static void populate_error(struct prealloc_job *job, const struct prealloc_prepare_info *info)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	char off[32];
	int r;

	prealloc_job_report(job, &rep);
	r = info->error;
	if (info->step != PREALLOC_STEP_POPULATE || !rep.error) {
		cli_error("%s", info->message);
		return;
	}
	cli_error("populating %s failed on node %d at offset %s: %s%s", info->path, rep.error_node,
		  prealloc_format_size(rep.error_offset, off, sizeof(off)), strerror(-r),
		  r == -EHWPOISON ? " (a poisoned page)"
		  : r == -EFAULT || r == -ENOMEM
			  ? " (the node ran out of memory or hugepages, or a hugetlb cgroup limit was "
			    "reached)"
			  : "");
}

void create_view(const struct prealloc_prepare_info *info, bool verified, bool succeeded,
		 struct run_view *ret_view)
{
	*ret_view = (struct run_view){
		.command = "create",
		.file = info->path,
		.page_label = page_label(info->page_size),
		.verified = verified,
	};
	if (!succeeded)
		return;
	ret_view->qemu = info->qemu_option;
	ret_view->admit = &info->admit;
	ret_view->note = !info->created ? "existing pages kept their contents; run 'prealloc "
					  "clear' to zero them"
			 : info->page_reason[0] ? info->page_reason
						: NULL;
}

/* After the job: the report, or why it failed; returns the exit code. */
static int create_outcome(struct prealloc_job *job, const struct create_args *a, int r, int sig)
{
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct run_view view;

	prealloc_prepare_info(job, &info);
	create_view(&info, a->verify, r == 0, &view);
	if (r == 0) {
		if (!a->quiet || a->json)
			report_print(stdout, job, &view, a->json);
		return EXIT_OK;
	}
	/* --json promises a document for a run that started, failed or not. */
	if (a->json || info.step == PREALLOC_STEP_VERIFY)
		report_print(stdout, job, &view, a->json);
	if (sig) {
		cli_error("interrupted by SIG%s; removed what this run created", sigabbrev_np(sig));
		return 128 + sig;	/* 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP */
	}
	populate_error(job, &info);
	return prepare_exit_status(info.step, info.admit.reason, r);
}

/* The flow did not start: interrupted while admitting, or refused; the exit code. */
static int start_failed(int r, int sfd, const struct prealloc_prepare_info *info)
{
	int sig;

	if (r == -ECANCELED && (sig = signal_pending(sfd))) {
		/* In the lock wait or while a pool grew: given back, nothing else made. */
		cli_error("interrupted by SIG%s: %s", sigabbrev_np(sig),
			  info->message[0] ? info->message : "removed what this run created");
		return 128 + sig;
	}
	cli_error("%s", info->message[0] ? info->message : strerror(-r));
	return prepare_exit_status(info->step, info->admit.reason, r);
}

/* The started job, run to its end with progress drawn; the exit code. */
static int create_run(struct prealloc_job *job, const struct create_args *a, struct cli_wait *w,
		      int sfd)
{
	int sig, r;

	/* A signal during admission cancels at once: the job rolls everything back. */
	sig = signal_pending(sfd);
	if (sig)
		prealloc_job_cancel(job);
	r = job_run(job, w, sfd, !a->quiet);
	sig = sig ? sig : r;
	r = prealloc_job_wait(job);
	return create_outcome(job, a, r, r < 0 ? sig : 0);
}

int cmd_create(int argc, char **argv)
{
	struct create_args a = { 0 };
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct prealloc_prepare_opts po;
	struct prealloc_ctx *ctx;
	struct prealloc_job *job = NULL;
	struct cli_wait w;
	sigset_t old_mask;
	int sfd, ret, r;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? EXIT_OK : -r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	prepare_opts(&a, &po);
	/* The job's end and progress come through the CLI's own ring, where allowed. */
	cli_wait_open(&w);
	po.completion = &w.completion;
	/*
	 * From here on SIGINT/SIGTERM must not kill us before the rollback:
	 * block them (workers inherit the mask) and read them from a signalfd.
	 * Admission may grow pools, so it already runs under this mask.
	 */
	sfd = signals_catch(&old_mask);
	/* The library polls (never reads) it between pool growth steps. */
	if (sfd >= 0) {
		po.flags |= PREALLOC_PREPARE_CANCEL_FD;
		po.cancel_fd = sfd;
	}
	r = prealloc_prepare_start(ctx, &po, &job, &info);
	if (r < 0) {
		ret = start_failed(r, sfd, &info);
		goto out;
	}
	if (a.grow_pools && (info.page_size == PREALLOC_PAGE_4K || info.page_size == PREALLOC_PAGE_THP))
		cli_warn("--grow-pools applies to hugepage pools; %s pages need none",
			 page_label(info.page_size));
	if (info.admit.warm_pages && !a.quiet && !a.json)
		fprintf(stderr,
			"%s: took %llu %s pages from the warm pool (%u files cut, %u removed)\n",
			program_name, (unsigned long long)info.admit.warm_pages,
			page_label(info.page_size), info.admit.warm_cut, info.admit.warm_removed);
	if (info.added && !a.quiet && !a.json)
		fprintf(stderr, "%s: grew the pools by %llu %s hugepages (prealloc rm gives them back)\n",
			program_name, (unsigned long long)info.added, page_label(info.page_size));
	ret = create_run(job, &a, &w, sfd);
	prealloc_job_free(job);
out:
	signals_release(sfd, &old_mask);
	cli_wait_close(&w);
	prealloc_ctx_free(ctx);
	return ret;
}
