/* SPDX-License-Identifier: MIT */
/*
 * `prealloc clear FILE`: re-zero a prepared guest memory file in place.
 * Each resident page is cleared by workers on the node it already sits on,
 * with the store kernel chosen for this CPU (or forced by --method).
 *
 * The file must be the one the user meant: not a symbolic link, a regular
 * file, on hugetlbfs or tmpfs (or --force), and mapped by no other process
 * (a running guest) unless --force. Clearing is idempotent, so an
 * interrupted run leaves a partly cleared file that a second run finishes.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
/* The kernels' names, from their tables (prealloc/arch/kernel_names.py). */
#include "clear_kernel_names.h"

struct clear_args {
	const char *file;
	const char *method;	/* NULL: auto */
	unsigned int threads;
	bool verify, force, json, quiet;
};

static const char usage_text[] =
	"Usage: prealloc clear [OPTIONS] FILE\n"
	"Re-zero a prepared guest memory file in place: each resident page is cleared\n"
	"by workers on the node it sits on, with the fastest store kernel for this CPU.\n"
	"\n"
	"  -t, --threads N      workers per node (default: every allowed CPU of the node)\n"
	"  -m, --method NAME    clear kernel: auto (default) or one that 'prealloc info'\n"
	CLEAR_KERNELS_METHOD_HELP
	"      --verify         read every byte back and check it is zero\n"
	"      --force          clear a file on another filesystem, or one that another\n"
	"                       process has mapped (a running guest: it will see zeroes)\n"
	"      --json           print one JSON document (docs/json.md)\n"
	"  -q, --quiet          no progress bar, no report\n"
	"  -h, --help           this text\n";

static int parse_args(int argc, char **argv, struct clear_args *a)
{
	enum { OPT_VERIFY = 256, OPT_FORCE, OPT_JSON };
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "method", required_argument, NULL, 'm' },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "t:m:qh";
	char err[128];
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_threads(optarg, &a->threads, err, sizeof(err)) < 0) {
				cli_error("--threads: %s", err);
				return -EXIT_USAGE;
			}
			break;
		case 'm':
			a->method = strcmp(optarg, "auto") ? optarg : NULL;
			break;
		case OPT_VERIFY:
			a->verify = true;
			break;
		case OPT_FORCE:
			a->force = true;
			break;
		case OPT_JSON:
			a->json = true;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			return -option_error("clear", argv, short_opts, opts);
		}
	}
	if (optind >= argc) {
		cli_error("clear: no file given (e.g. 'prealloc clear /dev/hugepages/guest')");
		return -EXIT_USAGE;
	}
	a->file = argv[optind++];
	if (cli_extra_arg("clear", argc, argv, " (one file at a time)"))
		return -EXIT_USAGE;
	return 0;
}

/* "auto" then the kernels usable here, for messages. */
static void kernel_list(struct prealloc_ctx *ctx, char *buf, size_t len)
{
	const char *names[16];
	int n = prealloc_clear_kernels(ctx, names, 16);
	size_t off;

	off = (size_t)snprintf(buf, len, "auto");
	for (int i = 0; i < n && i < 16 && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, ", %s", names[i]);
	if (off < len)
		snprintf(buf + off, len - off, "; or c/NT, an NT kernel of these, to probe");
}

/* Message for a flow that stopped before clearing anything; returns the exit code. */
static int check_failed(struct prealloc_ctx *ctx, const struct clear_args *a,
			const struct prealloc_clear_file_info *info, int r)
{
	char list[256];

	switch (info->error_step) {
	case PREALLOC_CLEAR_STEP_KERNEL:
		kernel_list(ctx, list, sizeof(list));
		if (r == -ENOENT)
			cli_error("--method: unknown clear kernel '%s' (usable here: %s)", a->method,
				  list);
		else
			cli_error("--method: the %s kernel cannot run on this CPU%s (usable here: %s)",
				  a->method, r == -EOPNOTSUPP ? " or was not built" : "", list);
		break;
	case PREALLOC_CLEAR_STEP_LOOKUP:
		cli_error("cannot use %s: %s", a->file, strerror(-r));
		break;
	case PREALLOC_CLEAR_STEP_SYMLINK:
		cli_error("%s is a symbolic link; clear refuses links, give the real path", a->file);
		break;
	case PREALLOC_CLEAR_STEP_TYPE:
		cli_error("%s is not a regular file", a->file);
		break;
	case PREALLOC_CLEAR_STEP_FILESYSTEM:
		cli_error("%s is not on hugetlbfs or tmpfs, so it is not guest memory that "
			  "prealloc prepared; pass --force to zero it anyway", a->file);
		break;
	case PREALLOC_CLEAR_STEP_MAPPERS:
		if (r == -EBUSY)
			cli_error("%s is mapped or held open by pid %d (%s), probably a running "
				  "guest; stop it first, or pass --force to zero the memory under "
				  "it", a->file,
				  (int)info->mapper_pid, info->mapper_comm);
		else
			cli_error("cannot read /proc to check who maps %s: %s", a->file, strerror(-r));
		break;
	case PREALLOC_CLEAR_STEP_OPEN:
	case PREALLOC_CLEAR_STEP_MAP:
		if (r == -ESTALE)
			cli_error("%s changed while it was being opened; nothing was cleared", a->file);
		else if (r == -ENOMEM && info->fs_magic == HUGETLBFS_MAGIC)
			cli_error("cannot map %s: too few free hugepages to back its holes", a->file);
		else
			cli_error("cannot map %s: %s", a->file, strerror(-r));
		break;
	case PREALLOC_CLEAR_STEP_START:
		cli_error("cannot start workers: %s", strerror(-r));
		break;
	default:
		cli_error("cannot zero %s: %s", a->file, strerror(-r));
	}
	return clear_exit_status(info->error_step, r);
}

/* What the checks let through with --force, said before the work starts. */
static void warn_forced(const struct clear_args *a, const struct prealloc_clear_file_info *info)
{
	if (info->fs_magic != HUGETLBFS_MAGIC && info->fs_magic != TMPFS_MAGIC)
		cli_warn("%s is not on hugetlbfs or tmpfs; zeroing it because of --force", a->file);
	if (info->mapper_pid > 0)
		cli_warn("%s is mapped or held open by pid %d (%s); zeroing it because of --force", a->file,
			 (int)info->mapper_pid, info->mapper_comm);
	else if (info->unreadable && geteuid() != 0)
		cli_warn("could not check %u processes for mappings of %s (permission denied)",
			 info->unreadable, a->file);
}

/*
 * The file shrank while it was cleared (-ENXIO: the library's fstat saw it).
 * Its size now is read again here, by path, only for the message.
 */
static void say_shrank(const struct clear_args *a, const struct prealloc_clear_file_info *info)
{
	struct stat st;

	if (stat(a->file, &st) == 0 && (uint64_t)st.st_size < info->length)
		cli_error("%s shrank from %llu to %llu bytes while it was cleared (another process "
			  "truncated it); run 'prealloc clear' again to clear what is left",
			  a->file, (unsigned long long)info->length, (unsigned long long)st.st_size);
	else
		cli_error("%s shrank below its %llu bytes while it was cleared (another process "
			  "truncated it); run 'prealloc clear' again to clear what is left",
			  a->file, (unsigned long long)info->length);
}

/* Message for a flow that failed after the workers started; returns the exit code. */
static int run_failed(const struct clear_args *a, const struct prealloc_clear_file_info *info,
		      const struct prealloc_report *rep, int r)
{
	char off[32];

	/* The verdict: a byte not zero after clearing (pages, swapped-out ones or the tail). */
	if (r == -EBADMSG) {
		cli_error("verification failed: %s is not zero after clearing", a->file);
		return clear_exit_status(info->error_step, r);
	}
	if (r == -ENXIO && (info->error_step == PREALLOC_CLEAR_STEP_CLEAR ||
			    info->error_step == PREALLOC_CLEAR_STEP_TAIL)) {
		say_shrank(a, info);
		return clear_exit_status(info->error_step, r);
	}
	switch (info->error_step) {
	case PREALLOC_CLEAR_STEP_CLEAR:
		/* -EFAULT: a SIGBUS the library caught (a page gone, or not to be had). */
		cli_error("clearing %s failed on node %d at offset %s: %s", a->file, rep->error_node,
			  prealloc_format_size(rep->error_offset, off, sizeof(off)),
			  r == -EFAULT ? "the page faulted (SIGBUS)" : strerror(-r));
		break;
	case PREALLOC_CLEAR_STEP_SWAPPED:
		cli_error("cannot clear the swapped-out pages of %s: %s", a->file, strerror(-r));
		break;
	case PREALLOC_CLEAR_STEP_TAIL:
		cli_error("cannot zero the last %llu bytes of %s: %s",
			  (unsigned long long)info->tail_bytes, a->file, strerror(-r));
		break;
	case PREALLOC_CLEAR_STEP_SYNC:
		cli_error("cannot write %s back to its disk: %s", a->file, strerror(-r));
		break;
	default:
		cli_error("cannot zero %s: %s", a->file, strerror(-r));
	}
	return clear_exit_status(info->error_step, r);
}

static void note_add(char *note, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note_add(char *note, const char *fmt, ...)
{
	size_t off = strlen(note);
	va_list ap;

	if (off && off + 2 < NOTE_MAX) {
		memcpy(note + off, "; ", 3);
		off += 2;
	}
	va_start(ap, fmt);
	if (off < NOTE_MAX)
		vsnprintf(note + off, NOTE_MAX - off, fmt, ap);
	va_end(ap);
}

void clear_note(const struct prealloc_clear_file_info *info, bool auto_kernel, char *note)
{
	char sz[32];

	if (info->unbacked_bytes)
		note_add(note, "%llu unallocated pages (holes) got pages the kernel zeroed",
			 (unsigned long long)(info->unbacked_bytes / info->page_size));
	if (info->hole_bytes)
		note_add(note, "%s in %llu pages was not resident (holes, which read as zero) "
			       "and was skipped",
			 prealloc_format_size(info->hole_bytes, sz, sizeof(sz)),
			 (unsigned long long)(info->hole_bytes / info->page_size));
	if (info->swapped_bytes)
		note_add(note, "%s swapped out was read back in and cleared",
			 prealloc_format_size(info->swapped_bytes, sz, sizeof(sz)));
	if (auto_kernel && info->kernel_why[0])
		note_add(note, "auto chose %s: %s", info->kernel, info->kernel_why);
}

/* Runs the job with progress and signals; renders the outcome. */
static int run_job(struct prealloc_job *job, struct cli_wait *w, const struct clear_args *a,
		   int sfd)
{
	struct prealloc_clear_file_info info = { .size = sizeof(info) };
	struct prealloc_report rep = { .size = sizeof(rep) };
	char note[NOTE_MAX] = "";
	int sig, r, ret;

	sig = job_run(job, w, sfd, !a->quiet && !a->json);
	/* A signal that came once the job had finished changes nothing: it is done. */
	if (prealloc_job_wait(job) == 0)
		sig = 0;
	prealloc_job_report(job, &rep);
	if (sig) {
		cli_error("interrupted by SIG%s: %s is partly cleared; run 'prealloc clear' again to "
			  "finish", sigabbrev_np(sig), a->file);
		return 128 + sig;	/* 130 SIGINT, 143 SIGTERM, 129 SIGHUP */
	}
	r = prealloc_clear_file_info(job, &info);
	clear_note(&info, !a->method, note);

	struct run_view view = {
		.command = "clear",
		.file = a->file,
		.page_label = page_label(rep.page_size),
		.note = note[0] ? note : NULL,
		.verified = a->verify,
		.clear = &info,
	};
	if (r == -EBADMSG || (r == 0 && (!a->quiet || a->json)))
		report_print(stdout, job, &view, a->json);
	ret = r < 0 ? run_failed(a, &info, &rep, r) : EXIT_OK;
	return ret;
}

int cmd_clear(int argc, char **argv)
{
	struct clear_args a = { 0 };
	struct prealloc_clear_file_info info = { .size = sizeof(info) };
	struct prealloc_ctx *ctx;
	struct prealloc_job *job = NULL;
	int sfd, ret, r;
	struct cli_wait w;
	sigset_t old_mask;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? EXIT_OK : -r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	cli_wait_open(&w);
	struct prealloc_clear_file_opts o = {
		.size = sizeof(o),
		.flags = (a.verify ? PREALLOC_CLEAR_VERIFY : 0) | (a.force ? PREALLOC_CLEAR_FORCE : 0),
		.threads = a.threads,
		.kernel = a.method,
		.completion = &w.completion,
	};
	sfd = signals_catch(&old_mask);
	r = prealloc_clear_file_start(ctx, a.file, &o, &job, &info);
	if (r < 0 && info.error_step < PREALLOC_CLEAR_STEP_CLEAR) {
		ret = check_failed(ctx, &a, &info, r);
	} else if (r < 0) {
		struct prealloc_report none = { .size = sizeof(none) };

		ret = run_failed(&a, &info, &none, r);
	} else {
		warn_forced(&a, &info);
		if (job) {
			ret = run_job(job, &w, &a, sfd);
		} else {
			if (!a.quiet && info.length)
				printf("%s cleared (%llu bytes, written with write(2))\n", a.file,
				       (unsigned long long)info.tail_bytes);
			else if (!a.quiet)
				printf("%s is empty: nothing to clear\n", a.file);
			ret = EXIT_OK;
		}
	}
	prealloc_job_free(job);
	signals_release(sfd, &old_mask);
	cli_wait_close(&w);
	prealloc_ctx_free(ctx);
	return ret;
}
