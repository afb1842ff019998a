/* SPDX-License-Identifier: MIT */
/* The command-line tool: the only code in the project that prints. */
#ifndef PREALLOC_CLI_H
#define PREALLOC_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>

#include "prealloc.h"

/* Exit codes: documented in docs/prealloc.1.md; keep the two in step. */
enum {
	EXIT_OK = 0,
	EXIT_FAILURE_RUN = 1,	/* the operation failed while running */
	EXIT_USAGE = 2,		/* bad command line: option, size, node, page size */
	EXIT_NO_MEMORY = 3,	/* not enough memory or hugepages on a node */
	EXIT_ENVIRONMENT = 4,	/* no hugetlbfs, wrong filesystem, file exists, in use */
	EXIT_VERIFY = 5,	/* --verify found non-zero or misplaced pages */
	/* A wrapper's VMM (`prealloc qemu`): as a shell says it. */
	EXIT_CANNOT_EXEC = 126,	/* found, not executable by this user */
	EXIT_NOT_FOUND = 127,	/* not found (in $PATH, or at the path given) */
	/* Interrupted runs exit 128 + the signal: 129 SIGHUP, 130 SIGINT, 143 SIGTERM. */
};

/* Parsed --node options: either a node list (split evenly) or node:size pairs. */
struct node_request {
	unsigned int nr;
	bool sized;
	int nodes[PREALLOC_MAX_NODES];
	uint64_t bytes[PREALLOC_MAX_NODES];
};

/* parse.c: pure parsers, unit-tested and fuzzed. err gets a one-line reason. */
int parse_node_spec(const char *spec, struct node_request *req, char *err, size_t err_len);
int parse_page_size(const char *s, uint64_t *ret, char *err, size_t err_len);
/* Workers per node: 1-65536, decimal digits only. */
int parse_threads(const char *s, unsigned int *ret, char *err, size_t err_len);
/* One node number: decimal digits only, 0 to PREALLOC_MAX_NODES - 1 (-ERANGE past it). */
int parse_node(const char *s, int *ret, char *err, size_t err_len);
/* warm take --expires: at most ten years from now, so that now + it never overflows. */
#define EXPIRES_MAX_SECONDS (10 * 365 * 86400)
/* Seconds: decimal digits only, 1 to max (-ERANGE past it). */
int parse_seconds(const char *s, unsigned int max, unsigned int *ret, char *err, size_t err_len);
/*
 * A SIZE written with a fraction (text "1.3G", bytes as prealloc_parse_size
 * gave them): rounded up to a whole page of page (4k for auto and thp), as
 * docs/prealloc.1.md says; a SIZE without one is bytes as given.
 */
uint64_t size_round_fraction(const char *text, uint64_t bytes, uint64_t page);
/* "4k", "2M", "1G", "thp" or "auto" for a page size as parse_page_size gives it. */
#define page_label prealloc_page_name
/*
 * After getopt: an argument left over (argv[optind]) is named, after
 * "cmd: " and before hint (either may be NULL); true when there was one.
 */

/* Decimal GB/s of bytes in seconds (0 for none). */
double gbps(uint64_t bytes, double seconds);
struct json_object;
/* A JSON number printed to the microsecond ("%.6f"), not as %.17g. */
struct json_object *json_double(double v);

#define MIN_LEN(a, b) ((a) < (b) ? (a) : (b))

/* util.c */
/* A context whose library messages reach stderr; NULL (said why) on failure. */
struct prealloc_ctx *cli_context(void);
/*
 * When main began (the CLI's constructor) and how long cli_context took (the topology, the CPU),
 * monotonic seconds: a report's process phases (docs/json.md), so that
 * what is left of a whole run's time is exec, loading and exit.
 */
extern double cli_main_start, cli_ctx_seconds;
struct option;
/*
 * One line for a bad option from getopt_long (with opterr = 0): unknown, or
 * missing its argument. cmd is the subcommand (NULL for create). Returns 2.
 */
int option_error(const char *cmd, char *const argv[], const char *optstring,
		 const struct option *longopts);
/*
 * Blocks SIGINT, SIGTERM and SIGHUP (threads made later inherit the mask,
 * so only this thread sees them) and returns a signalfd that reads them.
 */
int signals_catch(sigset_t *ret_old);
void signals_release(int sfd, const sigset_t *old);
/* A signal that arrived while blocked, or 0; does not wait. */
int signal_pending(int sfd);
/*
 * Whether execvp(name) would find a program to run: 0; -ENOENT none (name
 * with a '/' as it is, else each directory of $PATH, or the system's
 * default path); -EACCES one found but not executable by this user.
 */
int program_find(const char *name);
/*
 * The CLI's completion path (wait.c): a ring of its own when io_uring is
 * allowed, whose completion the job starts with (opts.completion =
 * &w->completion); else ring_fd -1 and the job's eventfd.
 */
struct cli_wait {
	struct prealloc_completion completion;
	void *ring;	/* struct io_uring *, NULL: none */
};
void cli_wait_open(struct cli_wait *w);
void cli_wait_close(struct cli_wait *w);
/*
 * Waits for job to finish (on the ring, or poll(2) on the eventfd), drawing
 * progress; the first signal cancels it at the next chunk (later ones
 * change nothing). Returns that signal, or 0.
 */
int job_run(struct prealloc_job *job, struct cli_wait *w, int sfd, bool show_progress);
/* First line of a sysfs/proc file without the newline; <0 on error. */
int read_sysfs_line(const char *path, char *buf, size_t len);
extern const char *program_name;
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Why the record store could not be used (err from the library), as " (...)" or "". */
const char *store_hint(int err);
/*
 * After getopt: an argument left over (argv[optind]) is named, after
 * "cmd: " and before hint (either may be NULL); true when there was one.
 */
static inline bool cli_extra_arg(const char *cmd, int argc, char **argv, const char *hint)
{
	if (optind >= argc)
		return false;
	cli_error("%s%sunexpected argument '%s'%s", cmd ? cmd : "", cmd ? ": " : "", argv[optind],
		  hint ? hint : "");
	return true;
}
void cli_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_log(void *userdata, int level, const char *msg);

/* Page size requested on the command line beyond the library's sizes. */
#define PAGE_SIZE_AUTO PREALLOC_PAGE_AUTO
#define PAGE_SIZE_THP PREALLOC_PAGE_THP

/*
 * exit_status.c: the exit status (docs/prealloc.1.md) of a failure, from
 * what the library says of it; err is the negative errno. reason: enum
 * prealloc_admit_reason; step: enum prealloc_step (with admit_reason for
 * its ADMISSION), or enum prealloc_clear_file_step for clear.
 */
int admission_exit_status(int reason, int err);
int prepare_exit_status(int step, int admit_reason, int err);
int clear_exit_status(int step, int err);
int qemu_exit_status(int err);

/*
 * wrap.c: what every wrapper command (`prealloc qemu`) shares: its options,
 * the guest they describe (one shared file backend per host node) and the
 * run through the front-end layer's session. The command's own file says
 * what its VMM is called (words), its usage and its memory options (opts).
 */
#define WRAP_ARGS_MAX 4096
#define WRAP_MAX_NODES 64	/* guest nodes: one backend, one host node each */
struct guest;
struct wrap_cmd {
	const char *name;	/* the command, in messages and the holder: "qemu" */
	const char *vmm_name;	/* its VMM, in messages: "QEMU" */
	const char *shared_on;	/* its option for a shared mapping: "share=on" */
	const char *shared_off;	/* and for a private one: "share=off" */
	int (*usage)(FILE *f, int rc);	/* --help's text on f, then rc */
	/* The VMM's options that map g's backends (wrap_opt each): 0 or the exit status. */
	int (*options)(struct wrap_cmd *w, const struct guest *g);
	struct node_request nodes; /* none given: the first node with memory */
	uint64_t page_size;
	uint64_t bytes;		/* the guest's, over all its nodes */
	const char *dir;	/* NULL: the page size's mount */
	char id[64];
	const char *tenant;
	bool warm, grow_pools, print, dry_run, verbose;
	char **vmm_argv;	/* the VMM and its arguments, NULL-terminated */
	/* What the VMM gets after them (allocated, wrap_opt): option, value, ... */
	char *opts[4 * WRAP_MAX_NODES];
	unsigned int nr_opts;
};
/*
 * The command: options, SIZE, "--" and the VMM's command line; the guest
 * they describe, held by this process; the VMM's options; then --dry-run's
 * command line or the front-end layer's session. The exit status.
 */
int wrap_main(struct wrap_cmd *w, int argc, char **argv);
/* opt, then the value fmt makes, onto the VMM's options; false when out of memory or room. */
bool wrap_opt(struct wrap_cmd *w, const char *opt, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));


/* report.c */
struct run_view {
	const char *command;	/* "create", "clear", ... */
	const char *file;
	const char *page_label;	/* "2M", "4k", "thp" */
	const char *qemu;	/* QEMU option to use the file, or NULL */
	const char *note;	/* one line the user should see, or NULL */
	bool verified;		/* zeroes were checked (--verify) */
	/* create: where admission found the pages (NULL: no admission object). */
	const struct prealloc_admit_result *admit;
	/* clear: the flow's phases (NULL: none shown). */
	const struct prealloc_clear_file_info *clear;
};
void report_print(FILE *f, struct prealloc_job *job, const struct run_view *view, bool json);
/*
 * What report_print renders, from the report and the nodes[nr_nodes] the
 * job gave: the document of docs/json.md (the caller puts it), or the table.
 */
struct json_object;
struct json_object *report_json(const struct prealloc_report *rep,
				const struct prealloc_node_report *nodes, unsigned int nr_nodes,
				const struct run_view *view);
void report_human(FILE *f, const struct prealloc_report *rep,
		  const struct prealloc_node_report *nodes, unsigned int nr_nodes,
		  const struct run_view *view);
/*
 * Draws per-node progress on stderr when it is a terminal and the run is
 * slow: progress_line for each node, redrawn in place (final: the last).
 */
void progress_draw(struct prealloc_job *job, double elapsed, bool final);
/* The next progress_draw starts below what was drawn (a new job's lines). */
void progress_forget(void);
/*
 * A node's progress line: bar, percent, bytes done / total, the rate so
 * far (decimal GB/s), seconds since the start and the time left at that
 * rate ("done" at the end).
 */
void progress_line(char *buf, size_t len, int node, uint64_t done, uint64_t total,
		   double elapsed);

/*
 * create.c: what the create report takes from the prepare flow (the rest
 * is the job's): the file and its page size, and once it succeeded the
 * QEMU option and the note.
 */
void create_view(const struct prealloc_prepare_info *info, bool verified, bool succeeded,
		 struct run_view *ret_view);
/*
 * clear.c: the clear report's one-line note, from the flow's info: holes,
 * swapped-out pages, and why auto chose the kernel (auto_kernel: no
 * --method). note holds NOTE_MAX bytes and starts empty.
 */
#define NOTE_MAX 1024
void clear_note(const struct prealloc_clear_file_info *info, bool auto_kernel, char *note);

/*
 * A command and its subcommands: the tables main.c dispatches through
 * (descending into subs) and `prealloc --list-commands` prints, so that a
 * test walks every command's --help. fn runs the command, or for one with
 * subcommands says that none was named. subs ends with an empty entry.
 */
struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const struct cli_command *subs;
};
/* warm.c: take, give, fill, serve, status. */
extern const struct cli_command warm_commands[];
/* warm_serve.c: its synopsis line, for its --help and warm's. */
extern const char warm_serve_synopsis[];
/* warm_drain.c: the same for warm drain; warm_status.c, for warm status. */
extern const char warm_drain_synopsis[];
extern const char warm_status_synopsis[];
/* What the warm pool is, after its usage. */
#define WARM_ABOUT                                                                   \
	"Files populated on their node and proven zero ahead of time, handed to a\n" \
	"guest in O(1) and cleared again after it (see prealloc(1), docs/warm.md).\n"

/* Subcommands. */
int cmd_create(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_clear(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/* bench_render.c: bench's results as tables, the saved classes, or its JSON document. */
void bench_print_human(const struct prealloc_calibrate_result *res,
		       const struct prealloc_cpu_info *ci);
void bench_print_saved(const struct prealloc_calibrate_result *res, const char *path);
struct json_object *bench_results_json(const struct prealloc_calibrate_result *res,
				       const struct prealloc_cpu_info *ci, const char *path);
int cmd_pool(int argc, char **argv);
/* pool.c: the record store's gc (`pool --gc`, its older name, also shows the pools). */
int cmd_gc(int argc, char **argv);
int cmd_vfio_map(int argc, char **argv);
int cmd_warm(int argc, char **argv);
/* qemu.c: plain QEMU on prepared or warm memory, through the front-end layer. */
int cmd_qemu(int argc, char **argv);
/* warm.c: the exit status of a failed warm take (err: negative errno). */
/* sd_notify(3)'s datagram to $NOTIFY_SOCKET (0 without one), libsystemd not needed. */
int notify_service(const char *state);
/* prealloc warm serve (warm_serve.c). */
int cmd_warm_serve(int argc, char **argv);
/* prealloc warm status (warm_status.c). */
int cmd_warm_status(int argc, char **argv);
/* prealloc warm drain (warm_drain.c): every warm file no guest holds given back. */
int cmd_warm_drain(int argc, char **argv);
int warm_take_exit_status(int err);

#endif
