/* SPDX-License-Identifier: MIT */
/*
 * `prealloc qemu [OPTIONS] SIZE -- QEMU [ARGS...]`: plain QEMU's front end.
 * The guest's memory, one file-backed backend on one host node, goes
 * through the front-end layer (frontend/guest.h) that the libvirt hook
 * uses too: claimed, then linked from a warm file (--warm) or pre-faulted
 * at DIR/ID; QEMU runs with it (-object memory-backend-file,... -machine
 * memory-backend=ID), and when QEMU exits (or fails, or this command is
 * signalled: the signal goes on to QEMU) it is given back.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guest.h"
#include "cli.h"

#define HUGETLBFS_MAGIC 0x958458f6
#define TMPFS_MAGIC 0x01021994
#define QEMU_ARGS_MAX 4096
/* What QEMU takes in an object id (its first a letter). */
#define ID_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._"

struct qemu_cmd {
	int node;		/* -1: the first node with memory */
	uint64_t page_size;
	uint64_t bytes;
	const char *dir;	/* NULL: the page size's mount */
	char id[64];
	const char *tenant;
	bool warm, reserve, print, dry_run, verbose;
	char **qemu;		/* QEMU and its arguments, NULL-terminated */
	char object[8192];	/* the -object argument */
	char machine[128];	/* the -machine argument */
};

static const struct guest_words qemu_words = {
	.noun = "guest",
	.dir = "--dir",
	.reserve_off = "give --reserve to grow the pool, or shrink the guest",
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
		"Usage: prealloc qemu [--node N] [--page-size 4k|2M|1G] [--dir DIR] [--id ID]\n"
		"                     [--warm] [--tenant NAME] [--reserve] [--print] [--dry-run]\n"
		"                     [--verbose] SIZE -- QEMU [ARGS...]\n"
		"Prepare SIZE of guest memory on host node N (pre-faulted, or a warm file of the\n"
		"pool with --warm), run QEMU with it and give it back when QEMU exits. QEMU gets\n"
		"  -object memory-backend-file,id=ID,mem-path=DIR/ID,size=BYTES,share=on,\n"
		"          prealloc=off,host-nodes=N,policy=bind -machine memory-backend=ID\n"
		"after ARGS (without -m, or with -m SIZE). SIGINT, SIGTERM and SIGHUP go on to\n"
		"QEMU; the exit status is QEMU's (128 + the signal that ended it).\n"
		"  --node N         host node (default: the first with memory)\n"
		"  --page-size P    4k, 2M or 1G (default 2M)\n"
		"  --dir DIR        where the file goes, on hugetlbfs or tmpfs (default: the\n"
		"                   page size's hugetlbfs mount, /dev/shm for 4k)\n"
		"  --id ID          the backend's id and file name (default prealloc-PID)\n"
		"  --warm           start on a READY warm file of the node when there is one\n"
		"  --tenant NAME    the warm pool's tenant (docs/warm.md)\n"
		"  --reserve        grow the node's hugepage pool where it is short\n"
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
		if (parse_node(arg, &q->node, err, sizeof(err)) < 0) {
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
	q->reserve |= c == 'r';
	q->print |= c == 'P';
	q->dry_run |= c == 'D';
	q->verbose |= c == 'v';
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
		{ "reserve", no_argument, NULL, 'r' },
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
	return 0;
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

/* The guest: one file backend, shared, bound to its node; held while this process lives. */
static int qemu_guest(struct prealloc_ctx *ctx, struct qemu_cmd *q, struct guest *g)
{
	struct guest_backend *be = &g->demand.backends[0];
	int nodes[PREALLOC_MAX_NODES], n = prealloc_nodes(ctx, nodes, PREALLOC_MAX_NODES);
	struct timespec ts;

	if (n <= 0) {
		cli_error("qemu: no node with memory: %s", strerror(n < 0 ? -n : ENODEV));
		return EXIT_ENVIRONMENT;
	}
	if (q->node < 0)
		q->node = nodes[0];
	clock_gettime(CLOCK_REALTIME, &ts);
	*g = (struct guest){ .ctx = ctx, .words = &qemu_words, .log = qemu_vlog,
			     .reserve = q->reserve, .prefault = true, .warm = q->warm,
			     .cancel_fd = -1, .deadline_s = 60 };
	snprintf(g->name, sizeof(g->name), "qemu-%d", (int)getpid());
	/* Alive while /proc/PID is: a gc after a SIGKILL gives the memory back. */
	snprintf(g->holder, sizeof(g->holder), "qemu:%d.%lld", (int)getpid(), (long long)ts.tv_sec);
	snprintf(g->check, sizeof(g->check), "/proc/%d", (int)getpid());
	snprintf(g->tenant, sizeof(g->tenant), "%s", q->tenant ? q->tenant : "");
	/* A run a person started is not cut off: the bounds are the prepare's own. */
	g->deadline = now_seconds() + 86400;
	snprintf(be->alias, sizeof(be->alias), "%s", q->id);
	be->bytes = q->bytes;
	be->page_size = q->page_size;
	be->file = be->shared = true;
	be->policy = GUEST_POLICY_BIND;
	be->nr_nodes = 1;
	be->nodes[0] = q->node;
	be->node_bytes[0] = q->bytes;
	g->demand.nr_backends = 1;
	guest_needs(&g->demand);
	return memory_dir(ctx, q, g);
}

/* QEMU's options for the backend: the -object and -machine arguments. */
static void qemu_options(struct qemu_cmd *q, const struct guest *g)
{
	const struct guest_backend *be = &g->demand.backends[0];

	snprintf(q->object, sizeof(q->object),
		 "memory-backend-file,id=%s,mem-path=%s/%s,size=%llu,share=on,prealloc=off,"
		 "host-nodes=%d,policy=bind", be->alias, g->mount, be->alias,
		 (unsigned long long)be->bytes, be->nodes[0]);
	snprintf(q->machine, sizeof(q->machine), "memory-backend=%s", be->alias);
}

/* One word of a command line as a shell reads it back: quoted unless plain. */
static void print_word(FILE *f, const char *w)
{
	if (w[0] && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			      "-_./=,:+@%") == strlen(w)) {
		fputs(w, f);
		return;
	}
	fputc('\'', f);
	for (; *w; w++)
		fputs(*w == '\'' ? "'\\''" : (char[2]){ *w, 0 }, f);
	fputc('\'', f);
}

/* argv for QEMU: its own, then the backend's options; NULL-terminated in ret (QEMU_ARGS_MAX). */
static int qemu_argv(struct qemu_cmd *q, char **ret)
{
	unsigned int n = 0;

	for (char **a = q->qemu; *a; a++) {
		if (n + 5 >= QEMU_ARGS_MAX) {
			cli_error("qemu: more than %d arguments", QEMU_ARGS_MAX - 5);
			return EXIT_USAGE;
		}
		ret[n++] = *a;
	}
	ret[n++] = "-object";
	ret[n++] = q->object;
	ret[n++] = "-machine";
	ret[n++] = q->machine;
	ret[n] = NULL;
	return 0;
}

/* The command line on one line of standard output, as a shell would take it back. */
static void qemu_print(char **argv)
{
	for (unsigned int i = 0; argv[i]; i++) {
		if (i)
			putchar(' ');
		print_word(stdout, argv[i]);
	}
	putchar('\n');
	fflush(stdout);
}

/* A signal that came (SIGINT, SIGTERM, SIGHUP), read from sfd; 0 none. */
static int signal_came(int sfd)
{
	struct pollfd pfd = { .fd = sfd, .events = POLLIN };
	struct signalfd_siginfo si;

	while (poll(&pfd, 1, 0) > 0 && read(sfd, &si, sizeof(si)) == sizeof(si))
		if (si.ssi_signo != SIGCHLD)
			return (int)si.ssi_signo;
	return 0;
}

/*
 * The memory claimed, then linked warm or pre-faulted at DIR/ID (the
 * front-end layer's calls, as the hook's prepare and start begin); on a
 * failure or a signal, all of it given back. 0, or the exit status.
 */
static int qemu_prepare(struct guest *g, int sfd)
{
	int dir_fd = -1, sig, r = guest_claim(g);

	if (r == 0) {
		dir_fd = open(g->mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir_fd < 0) {
			r = -errno;
			snprintf(g->msg, sizeof(g->msg), "--dir %s: %s", g->mount, strerror(-r));
		}
	}
	if (r == 0)
		r = guest_start(g, dir_fd, g->mount);
	if (dir_fd >= 0)
		close(dir_fd);
	sig = signal_came(sfd);
	if (r == 0 && !sig)
		return 0;
	guest_release(g, &(uint64_t){ 0 });
	if (sig)
		return 128 + sig;
	cli_error("qemu: %s", g->msg[0] ? g->msg : strerror(-r));
	return qemu_exit_status(r);
}

/*
 * Runs QEMU, forwarding SIGINT, SIGTERM and SIGHUP to it: its exit status,
 * 128 + the signal that ended it, or 128 + the signal forwarded when QEMU
 * shut down cleanly on it.
 */
static int qemu_run(char **argv, int sfd, const sigset_t *old)
{
	struct signalfd_siginfo si;
	pid_t parent = getpid(), pid;
	int status = 0, forwarded = 0;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		cli_error("qemu: fork: %s", strerror(errno));
		return EXIT_FAILURE_RUN;
	}
	if (pid == 0) {
		/* QEMU goes when this command goes, even by SIGKILL: no mapping outlives it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGIO, SIG_DFL);
		sigprocmask(SIG_SETMASK, old, NULL);
		execvp(argv[0], argv);
		fprintf(stderr, "%s qemu: cannot run %s: %s\n", program_name, argv[0],
			strerror(errno));
		_exit(127);
	}
	for (;;) {
		ssize_t n = read(sfd, &si, sizeof(si));

		if (n < 0 && errno == EINTR)
			continue;
		if (n != sizeof(si)) {
			waitpid(pid, &status, 0);
			break;
		}
		if (si.ssi_signo != SIGCHLD) {
			forwarded = (int)si.ssi_signo;
			kill(pid, forwarded);
		} else if (waitpid(pid, &status, WNOHANG) == pid) {
			break;
		}
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status) == 0 && forwarded ? 128 + forwarded : WEXITSTATUS(status);
}

/* Prepared, run, given back; rc is QEMU's unless the release fails after a clean exit. */
static int qemu_session(struct qemu_cmd *q, struct guest *g, char **args)
{
	uint64_t returned = 0;
	sigset_t mask, old;
	int sfd, rc, r;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		cli_error("qemu: signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return EXIT_FAILURE_RUN;
	}
	g->cancel_fd = sfd;
	rc = qemu_prepare(g, sfd);
	if (rc == 0) {
		if (q->print)
			qemu_print(args);
		rc = qemu_run(args, sfd, &old);
		r = guest_release(g, &returned);
		if (r < 0)
			cli_error("qemu: giving back %s: %s ('prealloc pool --gc' finishes it)",
				  g->name, strerror(-r));
		else
			guest_log(g, 6, "%s: gave back %llu hugepages", g->name,
				  (unsigned long long)returned);
		rc = rc == 0 && r < 0 ? EXIT_FAILURE_RUN : rc;
	}
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int cmd_qemu(int argc, char **argv)
{
	struct qemu_cmd q = { .node = -1, .page_size = PREALLOC_PAGE_2M };
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
	if (rc == 0) {
		qemu_options(&q, g);
		rc = qemu_argv(&q, args);
	}
	if (rc == 0 && q.dry_run)
		qemu_print(args);
	else if (rc == 0)
		rc = qemu_session(&q, g, args);
	free(g);
	prealloc_ctx_free(ctx);
	return rc;
}
