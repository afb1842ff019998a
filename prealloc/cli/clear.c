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
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cli.h"

#define NOTE_MAX 1024

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
	"                       lists as usable (avx2_nt, clzero, movnti, rep_stosb, c, ...)\n"
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
	if (optind < argc) {
		cli_error("clear: unexpected argument '%s' (one file at a time)", argv[optind]);
		return -EXIT_USAGE;
	}
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
}

/* An unknown name is a usage error; a known one this CPU lacks is the environment's. */
static int check_method(struct prealloc_ctx *ctx, const char *method)
{
	char probe[64], list[256];
	int r;

	if (!method)
		return 0;
	/* Clearing a scratch buffer tells unknown (-ENOENT) from unusable (-EOPNOTSUPP). */
	r = prealloc_clear_range(probe, sizeof(probe), method);
	if (r == 0)
		return 0;
	kernel_list(ctx, list, sizeof(list));
	if (r == -ENOENT) {
		cli_error("--method: unknown clear kernel '%s' (usable here: %s)", method, list);
		return -EXIT_USAGE;
	}
	cli_error("--method: the %s kernel cannot run on this CPU%s (usable here: %s)", method,
		  r == -EOPNOTSUPP ? " or was not built" : "", list);
	return -EXIT_ENVIRONMENT;
}

/*
 * The first process other than us that maps the file (dev, ino), from
 * /proc/PID/maps: "start-end perms offset maj:min inode path". Returns its
 * pid, 0 when none, and counts processes whose maps could not be read.
 */
static pid_t find_mapper(dev_t dev, ino_t ino, char *comm, size_t comm_len,
			 unsigned int *ret_unreadable)
{
	pid_t self = getpid(), found = 0;
	struct dirent *de;
	DIR *proc;

	*ret_unreadable = 0;
	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while (!found && (de = readdir(proc))) {
		char path[64], line[512];
		unsigned long long inode;
		unsigned int maj, mnr;
		pid_t pid;
		FILE *f;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = (pid_t)strtol(de->d_name, NULL, 10);
		if (pid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
		f = fopen(path, "re");
		if (!f) {
			if (errno != ENOENT)	/* ENOENT: the process just exited */
				(*ret_unreadable)++;
			continue;
		}
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%*s %*s %*s %x:%x %llu", &maj, &mnr, &inode) != 3)
				continue;
			if (inode == (unsigned long long)ino && makedev(maj, mnr) == dev) {
				found = pid;
				break;
			}
			/* A long path leaves the rest of the line for the next fgets. */
			while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
				;
		}
		fclose(f);
	}
	closedir(proc);
	if (found) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)found);
		if (read_sysfs_line(path, comm, comm_len) < 0)
			snprintf(comm, comm_len, "?");
	}
	return found;
}

/*
 * Everything that must hold before the file is opened: what it is, where it
 * lives, who else maps it. Fills *st and *fs_type.
 */
static int check_file(const struct clear_args *a, struct stat *st, unsigned long *fs_type,
		      uint64_t *page)
{
	struct statfs sfs;
	unsigned int unreadable;
	char comm[64];
	pid_t pid;

	if (lstat(a->file, st) < 0) {
		cli_error("cannot use %s: %s", a->file, strerror(errno));
		return errno == ENOENT || errno == ENOTDIR ? -EXIT_USAGE : -EXIT_ENVIRONMENT;
	}
	if (S_ISLNK(st->st_mode)) {
		cli_error("%s is a symbolic link; clear refuses links, give the real path", a->file);
		return -EXIT_ENVIRONMENT;
	}
	if (!S_ISREG(st->st_mode)) {
		cli_error("%s is not a regular file", a->file);
		return -EXIT_ENVIRONMENT;
	}
	if (statfs(a->file, &sfs) < 0) {
		cli_error("cannot use %s: %s", a->file, strerror(errno));
		return -EXIT_ENVIRONMENT;
	}
	*fs_type = (unsigned long)sfs.f_type;
	*page = *fs_type == HUGETLBFS_MAGIC ? (uint64_t)sfs.f_bsize : PREALLOC_PAGE_4K;
	if (*fs_type != HUGETLBFS_MAGIC && *fs_type != TMPFS_MAGIC) {
		if (!a->force) {
			cli_error("%s is not on hugetlbfs or tmpfs, so it is not guest memory that "
				  "prealloc prepared; pass --force to zero it anyway", a->file);
			return -EXIT_ENVIRONMENT;
		}
		cli_warn("%s is not on hugetlbfs or tmpfs; zeroing it because of --force", a->file);
	}
	pid = find_mapper(st->st_dev, st->st_ino, comm, sizeof(comm), &unreadable);
	if (pid < 0) {
		cli_error("cannot read /proc to check who maps %s: %s", a->file, strerror(-pid));
		return -EXIT_ENVIRONMENT;
	}
	if (pid > 0) {
		if (!a->force) {
			cli_error("%s is mapped by pid %d (%s), probably a running guest; stop it "
				  "first, or pass --force to zero the memory under it", a->file,
				  (int)pid, comm);
			return -EXIT_ENVIRONMENT;
		}
		cli_warn("%s is mapped by pid %d (%s); zeroing it because of --force", a->file,
			 (int)pid, comm);
	} else if (unreadable && geteuid() != 0) {
		cli_warn("could not check %u processes for mappings of %s (permission denied)",
			 unreadable, a->file);
	}
	return 0;
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

/*
 * Non-resident ranges (node -1 extents) are holes that read as zero, except
 * on tmpfs where a page may be swapped out: SEEK_DATA on fd (tmpfs only;
 * hugetlbfs has no swap and calls every offset data) finds those, and they
 * are cleared here, faulting them back in. Returns bytes cleared or <0.
 */
static int64_t clear_swapped(struct prealloc_region *region, int fd, const char *kernel,
			     uint64_t *ret_hole_bytes, bool verify, bool *ret_nonzero)
{
	uint8_t *base = prealloc_region_addr(region);
	struct prealloc_extent *ext;
	int64_t cleared = 0;
	int n;

	*ret_hole_bytes = 0;
	*ret_nonzero = false;
	n = prealloc_region_extents(region, NULL, 0);
	if (n <= 0)
		return n;
	ext = calloc((size_t)n, sizeof(*ext));
	if (!ext)
		return -ENOMEM;
	prealloc_region_extents(region, ext, (unsigned int)n);
	for (int i = 0; i < n; i++) {
		uint64_t off = ext[i].offset, end = ext[i].offset + ext[i].length;

		if (ext[i].node >= 0)
			continue;
		*ret_hole_bytes += ext[i].length;
		while (fd >= 0 && off < end) {
			off_t d = lseek(fd, (off_t)off, SEEK_DATA), h;
			uint64_t stop;

			if (d < 0 || (uint64_t)d >= end)
				break;
			h = lseek(fd, d, SEEK_HOLE);
			stop = h < 0 || (uint64_t)h > end ? end : (uint64_t)h;
			prealloc_clear_range(base + d, stop - (uint64_t)d, kernel);
			if (verify)
				for (uint64_t k = (uint64_t)d; k < stop; k++)
					*ret_nonzero |= base[k] != 0;
			cleared += (int64_t)(stop - (uint64_t)d);
			off = stop;
		}
	}
	free(ext);
	return cleared;
}

/*
 * For our own mapping of a tmpfs file that ends in a partial page (the
 * library's FILE backing takes whole pages only): makes the pages in memory
 * present in the mapping, so the move_pages query behind ADOPT_PLACEMENT
 * sees them. mincore() names them; holes and swapped-out pages stay out
 * (clear_swapped() handles the latter). hugetlbfs files are whole pages; if
 * one came here, all of it is mapped, holes from mmap's reservation.
 */
static int make_present(uint8_t *addr, uint64_t length, uint64_t page, bool tmpfs)
{
	enum { BATCH = 1 << 18 };	/* mincore entries per call: 1 GiB of 4k pages */
	unsigned char *vec;
	int r = 0;

	/* Holes get pages reserved by mmap, zeroed by the kernel: no SIGBUS. */
	if (!tmpfs)
		return madvise(addr, length, MADV_POPULATE_READ) < 0 ? -errno : 0;
	vec = malloc(BATCH);
	if (!vec)
		return -ENOMEM;
	for (uint64_t off = 0; off < length && !r;) {
		uint64_t len = MIN_LEN(length - off, (uint64_t)BATCH * page), run = 0;

		if (mincore(addr + off, len, vec) < 0) {
			r = -errno;
			break;
		}
		for (uint64_t i = 0; i <= len / page && !r; i++) {
			if (i < len / page && (vec[i] & 1)) {
				run++;
				continue;
			}
			if (run && madvise(addr + off + (i - run) * page, run * page,
					   MADV_POPULATE_READ) < 0 && errno != ENOMEM)
				r = -errno;
			run = 0;
		}
		off += len;
	}
	free(vec);
	return r;
}

/* Opens the file checked as st; -ESTALE when another file took its place. */
static int open_checked(const char *file, const struct stat *st)
{
	struct stat fst;
	int fd;

	fd = open(file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &fst) < 0 || fst.st_dev != st->st_dev || fst.st_ino != st->st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * The file as a region: on hugetlbfs and tmpfs with extents where each page
 * already is (holes apart), through the library's FILE backing when the
 * file is whole pages, else through our own mapping of fd; elsewhere
 * (--force) as one range that is cleared whole.
 */
static int map_file(struct prealloc_ctx *ctx, const char *file, const struct stat *st, int fd,
		    unsigned long fs_type, uint64_t page, uint64_t length, void **ret_map,
		    struct prealloc_region **ret_region)
{
	bool in_memory = fs_type == HUGETLBFS_MAGIC || fs_type == TMPFS_MAGIC;
	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_MAPPED,
		.flags = in_memory ? PREALLOC_REGION_ADOPT_PLACEMENT : PREALLOC_REGION_NO_BIND,
		.page_size = page,
		.length = length,
	};
	struct stat fst;
	int r;

	*ret_map = NULL;
	if (in_memory && length == (uint64_t)st->st_size) {
		struct prealloc_region_opts fo = {
			.size = sizeof(fo),
			.backing = PREALLOC_BACKING_FILE,
			.flags = PREALLOC_REGION_REUSE | PREALLOC_REGION_ADOPT_PLACEMENT,
			.length = length,
			.path = file,
		};

		r = prealloc_region_new(ctx, &fo, ret_region);
		if (r < 0)
			return r;
		/* It must still be the file checked, and not one made just now. */
		if (prealloc_region_created_file(*ret_region) ||
		    fstat(prealloc_region_fd(*ret_region), &fst) < 0 || fst.st_dev != st->st_dev ||
		    fst.st_ino != st->st_ino) {
			prealloc_region_discard(*ret_region);
			*ret_region = NULL;
			return -ESTALE;
		}
		return 0;
	}
	ro.addr = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ro.addr == MAP_FAILED)
		return -errno;
	r = in_memory ? make_present(ro.addr, length, page, fs_type == TMPFS_MAGIC) : 0;
	if (r == 0)
		r = prealloc_region_new(ctx, &ro, ret_region);
	if (r < 0) {
		munmap(ro.addr, length);
		return r;
	}
	*ret_map = ro.addr;
	return 0;
}

int cmd_clear(int argc, char **argv)
{
	struct clear_args a = { 0 };
	struct prealloc_ctx *ctx = NULL;
	struct prealloc_region *region = NULL;
	struct prealloc_job *job = NULL;
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct stat st;
	unsigned long fs_type = 0;
	char note[NOTE_MAX] = "", sz[32];
	uint64_t length, page, tail = 0, hole_bytes = 0;
	int64_t swapped = 0;
	bool in_memory, swapped_nonzero = false;
	void *own_map = NULL;
	int own_fd = -1, sfd = -1, sig, ret, r;
	sigset_t old_mask;

	r = parse_args(argc, argv, &a);
	if (r)
		return r > 0 ? EXIT_OK : -r;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	ret = check_method(ctx, a.method);
	if (ret < 0)
		goto out;
	ret = check_file(&a, &st, &fs_type, &page);
	if (ret < 0)
		goto out;
	in_memory = fs_type == HUGETLBFS_MAGIC || fs_type == TMPFS_MAGIC;
	/* hugetlbfs sizes are whole pages; elsewhere a partial last page gets write(2). */
	length = (uint64_t)st.st_size;
	tail = length % page;
	length -= tail;
	if (length == 0 && tail == 0) {
		if (!a.quiet)
			printf("%s is empty: nothing to clear\n", a.file);
		ret = 0;
		goto out;
	}

	sfd = signals_catch(&old_mask);

	/* The file opened must be the file checked: nothing swapped in between. */
	r = own_fd = open_checked(a.file, &st);
	if (r >= 0 && length)
		r = map_file(ctx, a.file, &st, own_fd, fs_type, page, length, &own_map, &region);
	if (r < 0) {
		if (r == -ESTALE)
			cli_error("%s changed while it was being opened; nothing was cleared", a.file);
		else if (r == -ENOMEM && fs_type == HUGETLBFS_MAGIC)
			cli_error("cannot map %s: too few free hugepages to back its holes", a.file);
		else
			cli_error("cannot map %s: %s", a.file, strerror(-r));
		ret = r == -ENOMEM ? -EXIT_NO_MEMORY
		      : r == -EACCES || r == -EPERM || r == -ELOOP || r == -ESTALE || r == -ENOENT
			      ? -EXIT_ENVIRONMENT
			      : -EXIT_FAILURE_RUN;
		goto out_region;
	}
	if (fs_type == HUGETLBFS_MAGIC && (uint64_t)st.st_blocks * 512 < length)
		note_add(note, "%llu unallocated pages (holes) got pages the kernel zeroed",
			 (unsigned long long)((length - (uint64_t)st.st_blocks * 512) / page));

	struct prealloc_job_opts jo = {
		.size = sizeof(jo),
		.op = PREALLOC_OP_CLEAR,
		.flags = a.verify ? PREALLOC_JOB_VERIFY : 0,
		.threads = a.threads,
		.clear_kernel = a.method,
	};
	if (!region) {
		/* Only a partial page on tmpfs or disk: no job to run. */
		static const char zeroes[PREALLOC_PAGE_4K];

		if (pwrite(own_fd, zeroes, tail, 0) != (ssize_t)tail) {
			cli_error("cannot zero %s: %s", a.file, strerror(errno));
			ret = -EXIT_FAILURE_RUN;
			goto out_region;
		}
		if (!a.quiet)
			printf("%s cleared (%llu bytes, written with write(2))\n", a.file,
			       (unsigned long long)tail);
		ret = 0;
		goto out_region;
	}
	r = prealloc_job_start(region, &jo, &job);
	if (r < 0) {
		cli_error("cannot start workers: %s", strerror(-r));
		ret = r == -EOPNOTSUPP ? -EXIT_ENVIRONMENT : -EXIT_FAILURE_RUN;
		goto out_region;
	}
	sig = job_run(job, sfd, !a.quiet && !a.json);
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	if (sig) {
		cli_error("interrupted by SIG%s: %s is partly cleared; run 'prealloc clear' again to "
			  "finish", sigabbrev_np(sig), a.file);
		ret = -(128 + sig);	/* 130 SIGINT, 143 SIGTERM, 129 SIGHUP */
		goto out_job;
	}
	if (r < 0) {
		char off[32];

		cli_error("clearing %s failed on node %d at offset %s: %s", a.file, rep.error_node,
			  format_size(rep.error_offset, off, sizeof(off)), strerror(-r));
		ret = -EXIT_FAILURE_RUN;
		goto out_job;
	}
	if (in_memory) {
		swapped = clear_swapped(region, fs_type == TMPFS_MAGIC ? own_fd : -1, rep.clear_kernel,
					&hole_bytes, a.verify, &swapped_nonzero);
	}
	if (swapped < 0) {
		cli_error("cannot clear the swapped-out pages of %s: %s", a.file,
			  strerror((int)-swapped));
		ret = -EXIT_FAILURE_RUN;
		goto out_job;
	}
	if (tail) {
		static const char zeroes[PREALLOC_PAGE_4K];

		if (pwrite(own_fd, zeroes, tail, (off_t)length) != (ssize_t)tail) {
			cli_error("cannot zero the last %llu bytes of %s: %s",
				  (unsigned long long)tail, a.file, strerror(errno));
			ret = -EXIT_FAILURE_RUN;
			goto out_job;
		}
	}
	if (!in_memory && (msync(own_map, length, MS_SYNC) < 0 || fsync(own_fd) < 0)) {
		cli_error("cannot write %s back to its disk: %s", a.file, strerror(errno));
		ret = -EXIT_FAILURE_RUN;
		goto out_job;
	}

	if (hole_bytes > (uint64_t)swapped)
		note_add(note, "%s in %llu pages was not resident (holes, which read as zero) "
			       "and was skipped",
			 format_size(hole_bytes - (uint64_t)swapped, sz, sizeof(sz)),
			 (unsigned long long)((hole_bytes - (uint64_t)swapped) /
					      prealloc_region_page_size(region)));
	if (swapped > 0)
		note_add(note, "%s swapped out was read back in and cleared",
			 format_size((uint64_t)swapped, sz, sizeof(sz)));
	if (!a.method) {
		const char *name;
		char why[160];
		unsigned int t = rep.threads ? rep.threads : 1;

		/* Why auto chose it, when the one-node view agrees with the job's choice. */
		if (rep.nr_nodes <= 1 &&
		    prealloc_clear_choose(ctx, (rep.bytes + t - 1) / t, t, &name, why,
					  sizeof(why)) == 0 &&
		    !strcmp(name, rep.clear_kernel))
			note_add(note, "auto chose %s: %s", name, why);
	}

	struct run_view view = {
		.command = "clear",
		.file = a.file,
		.page_label = page_label(prealloc_region_page_size(region)),
		.note = note[0] ? note : NULL,
		.verified = a.verify,
	};
	if (a.verify && (rep.nonzero_offset != UINT64_MAX || swapped_nonzero)) {
		report_print(stdout, job, &view, a.json);
		cli_error("verification failed: %s is not zero after clearing", a.file);
		ret = -EXIT_VERIFY;
		goto out_job;
	}
	if (!a.quiet || a.json)
		report_print(stdout, job, &view, a.json);
	ret = 0;
out_job:
	prealloc_job_free(job);
out_region:
	prealloc_region_free(region);
	if (own_map)
		munmap(own_map, length);
	if (own_fd >= 0)
		close(own_fd);
	signals_release(sfd, &old_mask);
out:
	prealloc_ctx_free(ctx);
	return -ret;
}
