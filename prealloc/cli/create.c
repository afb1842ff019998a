/* SPDX-License-Identifier: MIT */
/*
 * `prealloc [options] SIZE`: create guest memory as a file on hugetlbfs or
 * tmpfs, bound to the requested nodes and populated in parallel, and keep it
 * for the VMM. Every input is checked before anything is created; a run
 * that fails or is interrupted removes what it created.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#ifndef HUGETLBFS_MAGIC
#define HUGETLBFS_MAGIC 0x958458f6
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

#define SHMEM_THP_PATH "/sys/kernel/mm/transparent_hugepage/shmem_enabled"

struct create_args {
	struct node_request req;
	uint64_t size;
	bool have_size;
	uint64_t page;		/* PAGE_SIZE_AUTO, PAGE_SIZE_THP or bytes */
	const char *file;
	bool reuse;
	unsigned int threads;
	bool verify, json, quiet, touch;
	bool reserve;			/* grow node pools to fit */
	bool skip_admission;		/* tests: populate without the capacity check */
	unsigned int reserve_timeout_ms;
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
	"  -t, --threads N        workers per node (default: every allowed CPU of the node)\n"
	"      --reserve          grow a node's hugepage pool when it is short; the\n"
	"                         growth is given back by 'prealloc rm' (docs/admission.md)\n"
	"      --reserve-timeout S  seconds to keep compacting a node for --reserve\n"
	"                         (default: 5)\n"
	"      --verify           check every page reads zero and sits on its node\n"
	"      --json             print one JSON document (docs/json.md)\n"
	"  -q, --quiet            no progress bar, no report\n"
	"  -h, --help             this text\n"
	"\n"
	"SIZE takes K, M, G, T (or KiB, MiB, GiB, TiB), binary multiples.\n"
	"Other commands: prealloc info | pool | rm FILE | --version. See prealloc(1).\n";

static int parse_args(int argc, char **argv, struct create_args *a)
{
	enum { OPT_REUSE = 256, OPT_VERIFY, OPT_JSON, OPT_TOUCH, OPT_RESERVE, OPT_RESERVE_TIMEOUT,
	       OPT_SKIP_ADMISSION };
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "page-size", required_argument, NULL, 'p' },
		{ "file", required_argument, NULL, 'f' },
		{ "reuse", no_argument, NULL, OPT_REUSE },
		{ "threads", required_argument, NULL, 't' },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "quiet", no_argument, NULL, 'q' },
		{ "touch", no_argument, NULL, OPT_TOUCH },	/* testing: the fallback path */
		{ "reserve", no_argument, NULL, OPT_RESERVE },
		{ "reserve-timeout", required_argument, NULL, OPT_RESERVE_TIMEOUT },
		/* testing: let population meet exhaustion (tests/integration) */
		{ "test-skip-admission", no_argument, NULL, OPT_SKIP_ADMISSION },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "n:p:f:t:qh";
	char err[256];
	int c;

	a->page = PAGE_SIZE_AUTO;
	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
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
		case OPT_REUSE:
			a->reuse = true;
			break;
		case 't':
			if (parse_threads(optarg, &a->threads, err, sizeof(err)) < 0) {
				cli_error("--threads: %s", err);
				return -EXIT_USAGE;
			}
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
		case OPT_RESERVE:
			a->reserve = true;
			break;
		case OPT_RESERVE_TIMEOUT: {
			char *end;
			double v;

			errno = 0;
			v = strtod(optarg, &end);
			if (errno || *end || end == optarg || !(v > 0 && v <= 3600)) {
				cli_error("--reserve-timeout: invalid time '%s' (expected seconds, "
					  "more than 0, at most 3600)", optarg);
				return -EXIT_USAGE;
			}
			a->reserve_timeout_ms = (unsigned int)(v * 1000 + 0.5);
			if (!a->reserve_timeout_ms)
				a->reserve_timeout_ms = 1;
			break;
		}
		case OPT_SKIP_ADMISSION:
			a->skip_admission = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		default:
			return -option_error(NULL, argv, short_opts, opts);
		}
	}
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
		a->have_size = true;
		optind++;
	}
	if (optind < argc) {
		cli_error("unexpected argument '%s'", argv[optind]);
		return -EXIT_USAGE;
	}
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
				  format_size(sum, s1, sizeof(s1)), format_size(a->size, s2, sizeof(s2)));
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

/* Every requested node must be online and have memory. */
static int check_nodes(struct prealloc_ctx *ctx, const struct node_request *req)
{
	int nodes[PREALLOC_MAX_NODES], nr;
	char list[256], path[96];

	nr = prealloc_nodes(ctx, nodes, PREALLOC_MAX_NODES);
	for (unsigned int i = 0; i < req->nr; i++) {
		bool found = false;

		for (int k = 0; k < nr; k++)
			found |= nodes[k] == req->nodes[i];
		if (found)
			continue;
		format_node_ranges(nodes, (unsigned int)nr, list, sizeof(list));
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%d", req->nodes[i]);
		if (access(path, F_OK) == 0)
			cli_error("node %d has no memory (nodes with memory: %s)", req->nodes[i], list);
		else
			cli_error("node %d does not exist or is offline (nodes with memory: %s)",
				  req->nodes[i], list);
		return -EXIT_USAGE;
	}
	return 0;
}

/* Bytes per node of the request, in request order. */
static void node_split(const struct create_args *a, uint64_t page, uint64_t *ret)
{
	uint64_t pages = a->size / page;

	for (unsigned int i = 0; i < a->req.nr; i++)
		ret[i] = a->req.sized ? a->req.bytes[i]
				      : (pages / a->req.nr + (i < pages % a->req.nr ? 1 : 0)) * page;
}

static bool shmem_thp_usable(char *mode, size_t len)
{
	char buf[128], *open_b, *close_b;

	if (read_sysfs_line(SHMEM_THP_PATH, buf, sizeof(buf)) < 0) {
		snprintf(mode, len, "missing");
		return false;
	}
	open_b = strchr(buf, '[');
	close_b = open_b ? strchr(open_b, ']') : NULL;
	if (!open_b || !close_b) {
		snprintf(mode, len, "unknown");
		return false;
	}
	*close_b = '\0';
	if ((size_t)snprintf(mode, len, "%s", open_b + 1) >= len)
		return false;
	return strcmp(mode, "never") && strcmp(mode, "deny");
}

/*
 * auto with a 2M hugetlbfs mounted: 2M pages if the size is a multiple of
 * 2 MiB and, unless --reserve may grow the pools, every node has the free
 * pages. Otherwise 4k, and *ret_note says why (a mounted but empty pool is
 * how Debian boots).
 */
static bool auto_2m_fits(struct prealloc_ctx *ctx, const struct create_args *a,
			 const char **ret_note)
{
	static char note[256];
	uint64_t pages = a->size / PREALLOC_PAGE_2M;

	if (a->size % PREALLOC_PAGE_2M) {
		*ret_note = "page size auto chose 4k: the size is not a multiple of 2 MiB";
		return false;
	}
	if (a->reserve)
		return true;
	for (unsigned int i = 0; i < a->req.nr; i++) {
		struct prealloc_node_info info = { .size = sizeof(info) };
		uint64_t want = a->req.sized ? (a->req.bytes[i] + PREALLOC_PAGE_2M - 1) / PREALLOC_PAGE_2M
					     : pages / a->req.nr + (i < pages % a->req.nr ? 1 : 0);

		if (prealloc_node_info(ctx, a->req.nodes[i], &info) < 0 || info.hp2m_free >= want)
			continue;
		snprintf(note, sizeof(note),
			 "page size auto chose 4k: node %d has %llu free 2M hugepages, %llu needed "
			 "(--reserve grows the pool; --page-size 2M insists)",
			 a->req.nodes[i], (unsigned long long)info.hp2m_free,
			 (unsigned long long)want);
		*ret_note = note;
		return false;
	}
	return true;
}

/*
 * Where the memory lives: a directory on hugetlbfs (page size from the
 * mount) or tmpfs (4k/thp). Fills *page with the resolved size.
 */
static int resolve_location(struct prealloc_ctx *ctx, struct create_args *a, char *dir,
			    size_t dir_len, const char **ret_note)
{
	struct statfs sfs;
	char path[PATH_MAX], mode[32];

	if (a->file) {
		struct stat st;

		if (lstat(a->file, &st) == 0) {
			if (S_ISLNK(st.st_mode)) {
				cli_error("%s is a symbolic link; give the real path", a->file);
				return -EXIT_ENVIRONMENT;
			}
			if (!a->reuse) {
				cli_error("%s already exists; pass --reuse to populate it in place, or "
					  "choose another path", a->file);
				return -EXIT_ENVIRONMENT;
			}
			if (!S_ISREG(st.st_mode)) {
				cli_error("%s is not a regular file", a->file);
				return -EXIT_ENVIRONMENT;
			}
		}
		if ((size_t)snprintf(path, sizeof(path), "%s", a->file) >= sizeof(path)) {
			cli_error("--file: path too long");
			return -EXIT_USAGE;
		}
		snprintf(dir, dir_len, "%s", dirname(path));
		if (statfs(dir, &sfs) < 0) {
			cli_error("cannot use directory %s: %s", dir, strerror(errno));
			return -EXIT_ENVIRONMENT;
		}
		if ((unsigned long)sfs.f_type == HUGETLBFS_MAGIC) {
			uint64_t fs_page = (uint64_t)sfs.f_bsize;

			if (a->page != PAGE_SIZE_AUTO && a->page != fs_page) {
				cli_error("%s is on hugetlbfs with %s pages, but --page-size %s was "
					  "given", dir, page_label(fs_page), page_label(a->page));
				return -EXIT_ENVIRONMENT;
			}
			a->page = fs_page;
			return 0;
		}
		if ((unsigned long)sfs.f_type == TMPFS_MAGIC) {
			if (a->page == PREALLOC_PAGE_2M || a->page == PREALLOC_PAGE_1G) {
				cli_error("%s is on tmpfs, which has no %s hugetlb pages; put the file "
					  "on a hugetlbfs mount with pagesize=%s", dir,
					  page_label(a->page), page_label(a->page));
				return -EXIT_ENVIRONMENT;
			}
			if (a->page == PAGE_SIZE_AUTO)
				a->page = PREALLOC_PAGE_4K;
		} else {
			cli_error("%s is not on hugetlbfs or tmpfs: guest memory files must live "
				  "in memory", dir);
			return -EXIT_ENVIRONMENT;
		}
	} else if (a->page == PAGE_SIZE_AUTO) {
		const char *mnt = prealloc_hugetlbfs_mount(ctx, PREALLOC_PAGE_2M);

		if (mnt && auto_2m_fits(ctx, a, ret_note)) {
			snprintf(dir, dir_len, "%s", mnt);
			a->page = PREALLOC_PAGE_2M;
			return 0;
		}
		snprintf(dir, dir_len, "/dev/shm");
		a->page = PREALLOC_PAGE_4K;
		if (!mnt)
			*ret_note = "page size auto chose 4k: no hugetlbfs is mounted for 2M pages "
				    "(mount -t hugetlbfs -o pagesize=2M none /dev/hugepages)";
	} else if (a->page == PREALLOC_PAGE_2M || a->page == PREALLOC_PAGE_1G) {
		const char *mnt = prealloc_hugetlbfs_mount(ctx, a->page);

		if (!mnt) {
			cli_error("no hugetlbfs is mounted for %s pages; mount one (mount -t "
				  "hugetlbfs -o pagesize=%s none /dev/hugepages%s) or pass --file",
				  page_label(a->page), page_label(a->page),
				  a->page == PREALLOC_PAGE_1G ? "-1G" : "");
			return -EXIT_ENVIRONMENT;
		}
		snprintf(dir, dir_len, "%s", mnt);
		return 0;
	} else {
		snprintf(dir, dir_len, "/dev/shm");
		if (statfs(dir, &sfs) < 0 || (unsigned long)sfs.f_type != TMPFS_MAGIC) {
			cli_error("/dev/shm is not a tmpfs mount; pass --file on a tmpfs or "
				  "hugetlbfs mount");
			return -EXIT_ENVIRONMENT;
		}
	}
	if (a->page == PAGE_SIZE_THP && !shmem_thp_usable(mode, sizeof(mode))) {
		cli_error("thp on a tmpfs file needs shmem THP, which is '%s' (%s); use "
			  "--page-size 2M on hugetlbfs, or 4k", mode, SHMEM_THP_PATH);
		return -EXIT_ENVIRONMENT;
	}
	return 0;
}

#define BOOT_1G_ADVICE                                                                         \
	"runtime allocation of 1G pages often fails because memory is fragmented: reserve "      \
	"them at boot with 'hugepagesz=1G hugepages=N' on the kernel command line"

/* Explains a failed admission (docs/admission.md); returns the exit code. */
static int admission_error(int err, const struct prealloc_admit_result *res, uint64_t page,
			   bool reserve)
{
	const char *lbl = page_label(page);
	bool gig = page == PREALLOC_PAGE_1G;
	char need[32], have[32];

	switch (res->reason) {
	case PREALLOC_ADMIT_POOL:
		if (err == -EOPNOTSUPP) {
			cli_error("node %d has no %s hugepage pool on this kernel", res->node, lbl);
			return EXIT_ENVIRONMENT;
		}
		cli_error("node %d has %llu free %s hugepages (%llu free in its pool of %llu, %llu "
			  "reserved by other runs), %llu needed; pass --reserve to grow the node's "
			  "pool, use a smaller size or another node%s%s",
			  res->node, (unsigned long long)res->available, lbl,
			  (unsigned long long)res->pool_free, (unsigned long long)res->pool_total,
			  (unsigned long long)res->reserved_others, (unsigned long long)res->needed,
			  gig ? "; " : "", gig ? BOOT_1G_ADVICE : "");
		return EXIT_NO_MEMORY;
	case PREALLOC_ADMIT_GLOBAL:
		cli_error("only %llu %s hugepages are free system-wide once other programs' "
			  "reservations are counted, %llu needed; pass --reserve, use a smaller size%s%s",
			  (unsigned long long)res->available, lbl, (unsigned long long)res->needed,
			  gig ? "; " : "", gig ? BOOT_1G_ADVICE : "");
		return EXIT_NO_MEMORY;
	case PREALLOC_ADMIT_CGROUP:
		cli_error("the hugetlb cgroup limit %s leaves room for %llu %s hugepages, %llu needed; "
			  "raise the limit or use a smaller size",
			  res->cgroup, (unsigned long long)res->available, lbl,
			  (unsigned long long)res->needed);
		return EXIT_NO_MEMORY;
	case PREALLOC_ADMIT_MEMORY:
		cli_error("node %d has %s free, %s needed; use a smaller size, another node, or "
			  "hugepages (--page-size 2M --reserve)",
			  res->node, format_size(res->available, have, sizeof(have)),
			  format_size(res->needed, need, sizeof(need)));
		return EXIT_NO_MEMORY;
	case PREALLOC_ADMIT_GROW:
		cli_error("cannot grow node %d's %s hugepage pool: asked the kernel for %llu pages "
			  "(%llu needed free, %llu were), it allocated only %llu in %.1f s even after "
			  "compacting the node, and the pool was put back as it was; free memory on "
			  "the node, use a smaller size or another node%s%s",
			  res->node, lbl, (unsigned long long)res->grow_requested,
			  (unsigned long long)res->needed, (unsigned long long)res->available,
			  (unsigned long long)res->grow_got, res->grow_seconds, gig ? "; " : "",
			  gig ? BOOT_1G_ADVICE : "");
		return EXIT_NO_MEMORY;
	case PREALLOC_ADMIT_LOCK:
		cli_error("timed out waiting for the hugepage pool lock (another prealloc run "
			  "holds it)");
		return EXIT_ENVIRONMENT;
	case PREALLOC_ADMIT_ACCESS:
		cli_error("cannot %s: %s%s", reserve ? "grow the hugepage pool or write the ledger"
						    : "write the ledger",
			  strerror(-err), err == -EACCES || err == -EPERM ? " (run as root)" : "");
		return EXIT_ENVIRONMENT;
	default:
		cli_error("admission failed: %s", strerror(-err));
		return EXIT_FAILURE_RUN;
	}
}

/*
 * Admission before anything is created: each node's free pages (or memory)
 * must cover its share, growing the pool with --reserve. need_bytes are the
 * bytes still to fault per node (a reused file's resident pages excluded).
 */
static int admit_request(struct prealloc_ctx *ctx, const struct create_args *a, uint64_t page,
			 const uint64_t *need_bytes, struct prealloc_reservation **ret_resv)
{
	struct prealloc_admit_result res = { .size = sizeof(res) };
	struct prealloc_admit_opts ao = {
		.size = sizeof(ao),
		.flags = (a->reserve ? PREALLOC_ADMIT_RESERVE : 0) |
			 (a->skip_admission ? PREALLOC_ADMIT_NO_CHECK : 0),
		.page_size = page,
		.nr_nodes = a->req.nr,
		.nodes = a->req.nodes,
		.node_bytes = need_bytes,
		.reserve_timeout_ms = a->reserve_timeout_ms,
		.owner = a->file,
	};
	int r;

	if (a->reserve && page == PREALLOC_PAGE_4K)
		cli_warn("--reserve applies to hugepage pools; %s pages need none",
			 page_label(a->page));
	r = prealloc_admit(ctx, &ao, ret_resv, &res);
	if (r < 0)
		return -admission_error(r, &res, page, a->reserve);
	if (res.added && !a->quiet && !a->json)
		fprintf(stderr, "%s: reserved %llu %s hugepages more (prealloc rm gives them back)\n",
			program_name, (unsigned long long)res.added, page_label(page));
	return 0;
}

static void random_suffix(char *buf, size_t len)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char raw[16];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		unsigned long seed = (unsigned long)getpid() ^ (unsigned long)time(NULL);

		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(seed >> (i % 8 * 8)) + (unsigned char)i * 37;
	}
	for (size_t i = 0; i + 1 < len && i < sizeof(raw); i++)
		buf[i] = alphabet[raw[i] % (sizeof(alphabet) - 1)];
	buf[MIN_LEN(len - 1, sizeof(raw))] = '\0';
}

/* "512M", "1G", or bytes when no binary suffix is exact. */
static void size_token(uint64_t bytes, char *buf, size_t len)
{
	static const char suffix[] = "KMGT";
	int s = -1;

	while (s < 3 && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		s++;
	}
	if (s < 0)
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)bytes, suffix[s]);
}

static void qemu_option(const char *file, uint64_t size, const struct node_request *req,
			char *buf, size_t len)
{
	char sz[32], ranges[256], *save = NULL, *tok;
	size_t off;

	size_token(size, sz, sizeof(sz));
	off = (size_t)snprintf(buf, len,
			       "-object memory-backend-file,id=mem0,mem-path=%s,size=%s,share=on,"
			       "prealloc=off",
			       file, sz);
	format_node_ranges(req->nodes, req->nr, ranges, sizeof(ranges));
	/* QEMU takes one host-nodes= per range. */
	for (tok = strtok_r(ranges, ",", &save); tok && off < len; tok = strtok_r(NULL, ",", &save))
		off += (size_t)snprintf(buf + off, len - off, ",host-nodes=%s", tok);
	if (off < len)
		snprintf(buf + off, len - off, ",policy=bind");
}

static int exit_for_region_error(int err, const char *path, uint64_t page)
{
	switch (err) {
	case -EMEDIUMTYPE:
		cli_error("%s is not on a filesystem that holds %s pages", path, page_label(page));
		return EXIT_ENVIRONMENT;
	case -EEXIST:
		cli_error("%s exists with a different size; --reuse needs the exact size", path);
		return EXIT_ENVIRONMENT;
	case -ENODEV:
		cli_error("a requested node is offline or has no memory");
		return EXIT_USAGE;
	case -ENOSPC:
	case -ENOMEM:
		cli_error("cannot create %s: %s", path, strerror(-err));
		return EXIT_NO_MEMORY;
	case -EACCES:
	case -EPERM:
	case -ENOENT:
	case -EROFS:
		cli_error("cannot create %s: %s", path, strerror(-err));
		return EXIT_ENVIRONMENT;
	default:
		cli_error("cannot set up %s: %s", path, strerror(-err));
		return EXIT_FAILURE_RUN;
	}
}

/*
 * Bytes per node still to fault: a reused file's resident pages (st_blocks)
 * are credited to the nodes in proportion, since where they sit is unknown.
 */
static void need_split(const uint64_t *node_bytes, unsigned int nr, uint64_t total,
		       uint64_t resident, uint64_t page, uint64_t *ret)
{
	for (unsigned int i = 0; i < nr; i++) {
		uint64_t credit = total ? (uint64_t)((double)resident * (double)node_bytes[i] /
						     (double)total)
					: 0;

		credit = credit / page * page;
		ret[i] = node_bytes[i] > credit ? node_bytes[i] - credit : 0;
	}
}

int cmd_create(int argc, char **argv)
{
	struct create_args a = { 0 };
	struct prealloc_ctx *ctx = NULL;
	struct prealloc_region *region = NULL;
	struct prealloc_job *job = NULL;
	struct prealloc_reservation *resv = NULL;
	struct prealloc_report rep = { .size = sizeof(rep) };
	uint64_t node_bytes[PREALLOC_MAX_NODES], need_bytes[PREALLOC_MAX_NODES];
	uint64_t resident_before = 0, admit_page;
	char dir[PATH_MAX], path[PATH_MAX], ranges[256], sz[32], qemu[PATH_MAX + 512];
	const char *note = NULL;
	sigset_t old_mask;
	int sfd = -1, sig = 0, ret, r;
	bool created = false, existed = false, printed = false;
	struct stat st;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? EXIT_OK : -r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	if (a.req.nr == 0) {
		/* No --node: the nodes of the memory policy (numactl), else all, split evenly. */
		int nr = prealloc_default_nodes(ctx, a.req.nodes, PREALLOC_MAX_NODES);

		a.req.nr = (unsigned int)MIN_LEN((size_t)nr, (size_t)PREALLOC_MAX_NODES);
	}
	ret = check_nodes(ctx, &a.req);
	if (ret < 0)
		goto out;
	ret = resolve_location(ctx, &a, dir, sizeof(dir), &note);
	if (ret < 0)
		goto out;

	uint64_t unit = a.page == PAGE_SIZE_THP ? PREALLOC_PAGE_2M : a.page;

	if (a.size % unit) {
		cli_error("size %s is not a multiple of the %s page size", format_size(a.size, sz, sizeof(sz)),
			  page_label(a.page));
		ret = -EXIT_USAGE;
		goto out;
	}
	for (unsigned int i = 0; i < a.req.nr && a.req.sized; i++) {
		if (a.req.bytes[i] % unit) {
			cli_error("node %d's size %s is not a multiple of the %s page size",
				  a.req.nodes[i], format_size(a.req.bytes[i], sz, sizeof(sz)),
				  page_label(a.page));
			ret = -EXIT_USAGE;
			goto out;
		}
	}
	if (a.size / unit < a.req.nr) {
		cli_error("size %s is fewer than one %s page per node", format_size(a.size, sz, sizeof(sz)),
			  page_label(a.page));
		ret = -EXIT_USAGE;
		goto out;
	}
	node_split(&a, unit, node_bytes);
	admit_page = a.page == PAGE_SIZE_THP ? PREALLOC_PAGE_4K : a.page;
	if (a.file && a.reuse && stat(a.file, &st) == 0) {
		existed = true;
		resident_before = (uint64_t)st.st_blocks * 512;
	}
	need_split(node_bytes, a.req.nr, a.size, resident_before, admit_page, need_bytes);

	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_FILE,
		.flags = (a.reuse ? PREALLOC_REGION_REUSE : 0) |
			 (a.page == PAGE_SIZE_THP ? PREALLOC_REGION_THP : 0),
		.length = a.size,
		.nr_nodes = a.req.nr,
		.nodes = a.req.nodes,
		.node_bytes = node_bytes,
	};
	format_node_ranges(a.req.nodes, a.req.nr, ranges, sizeof(ranges));
	size_token(a.size, sz, sizeof(sz));
	/*
	 * From here on SIGINT/SIGTERM must not kill us before the rollback:
	 * block them (workers inherit the mask) and read them from a signalfd.
	 * Admission may grow pools, so it already runs under this mask.
	 */
	sfd = signals_catch(&old_mask);

	ret = admit_request(ctx, &a, admit_page, need_bytes, &resv);
	if (ret < 0)
		goto out_signals;
	sig = signal_pending(sfd);
	if (sig)
		goto interrupted;

	for (int attempt = 0;; attempt++) {
		if (a.file) {
			snprintf(path, sizeof(path), "%s", a.file);
		} else {
			char suffix[8];

			random_suffix(suffix, sizeof(suffix));
			if ((size_t)snprintf(path, sizeof(path), "%s/prealloc-node%s-%s-%s", dir, ranges,
					     sz, suffix) >= sizeof(path)) {
				cli_error("the path under %s is too long", dir);
				ret = -EXIT_USAGE;
				goto rollback;
			}
		}
		ro.path = path;
		r = prealloc_region_new(ctx, &ro, &region);
		if (r == -EEXIST && !a.file && attempt < 8)
			continue;
		break;
	}
	if (r < 0) {
		ret = -exit_for_region_error(r, path, a.page);
		goto rollback;
	}
	created = prealloc_region_created_file(region);
	r = prealloc_reservation_set_owner(resv, path);
	if (r < 0) {
		cli_error("cannot record %s in the pool ledger: %s", path, strerror(-r));
		ret = -EXIT_ENVIRONMENT;
		goto rollback;
	}

	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_POPULATE,
		.flags = (a.verify ? PREALLOC_JOB_VERIFY : 0) | (a.touch ? PREALLOC_JOB_TOUCH : 0),
		.threads = a.threads,
	};
	r = prealloc_job_start(region, &jo, &job);
	if (r < 0) {
		cli_error("cannot start workers: %s", strerror(-r));
		ret = -EXIT_FAILURE_RUN;
		goto rollback;
	}
	sig = job_run(job, sfd, !a.quiet);
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	if (sig)
		goto interrupted;
	if (r < 0) {
		char off[32];
		bool exhausted = r == -EFAULT || r == -ENOMEM || r == -EHWPOISON;

		cli_error("populating %s failed on node %d at offset %s: %s%s", path, rep.error_node,
			  format_size(rep.error_offset, off, sizeof(off)), strerror(-r),
			  r == -EHWPOISON ? " (a poisoned page)"
			  : exhausted	  ? " (the node ran out of memory or hugepages, or a hugetlb "
					    "cgroup limit was reached)"
					  : "");
		ret = exhausted && r != -EHWPOISON ? -EXIT_NO_MEMORY : -EXIT_FAILURE_RUN;
		goto rollback;
	}
	qemu_option(path, a.size, &a.req, qemu, sizeof(qemu));
	struct run_view view = {
		.command = "create",
		.verified = a.verify,
		.file = path,
		.page_label = page_label(a.page),
		.qemu = qemu,
		.note = a.reuse && !created ? "existing pages kept their contents; run 'prealloc "
					      "clear' to zero them"
					    : note,
	};
	if (a.verify) {
		bool bad = rep.nonzero_offset != UINT64_MAX;

		for (unsigned int i = 0; i < rep.nr_nodes; i++) {
			struct prealloc_node_report n = { .size = sizeof(n) };

			prealloc_job_node_report(job, i, &n);
			bad |= n.pages_off_node || n.pages_missing;
		}
		if (bad) {
			report_print(stdout, job, &view, a.json);
			printed = true;
			cli_error("verification failed: %s", rep.nonzero_offset != UINT64_MAX
								   ? "memory is not zero"
								   : "pages are missing or on the wrong node");
			ret = -EXIT_VERIFY;
			goto rollback;
		}
	}
	/* Last chance for an interruption to roll back: after this, the file is kept. */
	sig = signal_pending(sfd);
	if (sig)
		goto interrupted;
	if (created) {
		r = registry_add(path, a.size, unit, ranges);
		if (r < 0) {
			cli_error("cannot record %s in %s: %s", path, registry_dir(), strerror(-r));
			ret = -EXIT_ENVIRONMENT;
			goto rollback;
		}
	}
	/* The pages are faulted: the ledger keeps only the growth, owned by the file. */
	r = prealloc_reservation_commit(resv);
	if (r < 0) {
		cli_warn("cannot update the pool ledger: %s; 'prealloc pool --gc' settles it",
			 strerror(-r));
		/* Keep the growth with the kept file: no rollback of the reservation. */
		prealloc_reservation_abandon(resv);
		resv = NULL;
	}
	if (!a.quiet || a.json)
		report_print(stdout, job, &view, a.json);
	ret = 0;
	prealloc_job_free(job);
	prealloc_region_free(region);
	prealloc_reservation_free(resv);
	goto out_signals;

interrupted:
	cli_error("interrupted by SIG%s; removing what this run created", sigabbrev_np(sig));
	ret = -(128 + sig);	/* 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP */
rollback:
	/* --json promises a document for a run that started, failed or not. */
	if (a.json && job && !printed) {
		struct run_view failed = { .command = "create", .file = path,
					   .page_label = page_label(a.page), .verified = a.verify };

		report_print(stdout, job, &failed, true);
	}
	/* Stop the workers, free the pages (file first), then give back the pool growth. */
	prealloc_job_free(job);
	if (created) {
		prealloc_region_discard(region);
	} else if (region) {
		/*
		 * A reused file: punch what this run populated. Only an empty
		 * file is known to hold nothing else; otherwise keep it whole.
		 */
		if (existed && resident_before == 0 &&
		    fallocate(prealloc_region_fd(region), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
			      (off_t)a.size) < 0)
			cli_warn("cannot punch %s back to empty: %s", path, strerror(errno));
		else if (existed && resident_before)
			cli_warn("%s held pages before this run and keeps what it has now", path);
		prealloc_region_free(region);
	}
	if (resv) {
		uint64_t returned = 0;

		r = prealloc_reservation_rollback(resv, &returned);
		if (r < 0)
			cli_warn("cannot give back the pool growth: %s; 'prealloc pool --gc' retries",
				 strerror(-r));
		prealloc_reservation_free(resv);
	}
out_signals:
	signals_release(sfd, &old_mask);
out:
	prealloc_ctx_free(ctx);
	return -ret;
}
