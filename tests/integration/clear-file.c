/* SPDX-License-Identifier: MIT */
/*
 * prealloc_clear_file through the library alone, on /dev/shm (tmpfs): a
 * file with a pattern is cleared and verified; one ending in a partial page
 * is cleared to its last byte; a symbolic link is refused with -ELOOP; a
 * file a child process maps is refused with -EBUSY naming the child, left
 * intact, and cleared with FORCE; an unknown kernel and a missing file fail
 * at their steps. Pages pushed out to swap (a memory cgroup reclaimed;
 * skipped without swap) are cleared by the job's workers. A clear with VERIFY while a child
 * keeps writing a non-zero byte through its mapping fails with -EBADMSG at
 * the verify step. A file its owner truncates while the clear is stopped
 * (PREALLOC_TEST_PAUSE, in a child) before the workers start, or before
 * VERIFY reads back, fails with -ENXIO and no SIGBUS; so does its partial
 * last page cut away. Jobs over a caller's mapping of a truncated file fail
 * with -EFAULT, and the caller's own SIGBUS handler neither runs nor goes.
 * Skips (1..0 # SKIP) without /dev/shm.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prealloc.h"
#include "tap.h"

#define LEN (UINT64_C(8) << 20)

static char path[200], link_path[256];

/* A file of len bytes, every one of them byte. */
static int make_file(uint64_t len, int byte)
{
	char buf[65536];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	memset(buf, byte, sizeof(buf));
	for (uint64_t off = 0; off < len; off += sizeof(buf)) {
		size_t n = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf);

		if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
			close(fd);
			return -EIO;
		}
	}
	close(fd);
	return 0;
}

/* Bytes of the file that are not want. */
static uint64_t count_not(int want)
{
	unsigned char buf[65536];
	uint64_t bad = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return UINT64_MAX;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			bad += buf[i] != want;
	close(fd);
	return bad;
}

static int clear(struct prealloc_ctx *ctx, unsigned int flags,
		 struct prealloc_clear_file_info *info, struct prealloc_report *rep)
{
	struct prealloc_clear_file_opts o = { .size = sizeof(o), .flags = flags };

	memset(info, 0, sizeof(*info));
	info->size = sizeof(*info);
	return prealloc_clear_file(ctx, path, &o, info, rep);
}

/* A child maps the file and waits to be killed; returns its pid. */
static pid_t hold(void)
{
	int pipefd[2];
	pid_t pid;
	char c;

	if (pipe(pipefd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		void *p = fd < 0 ? MAP_FAILED
				 : mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		c = p == MAP_FAILED ? 'n' : 'y';
		if (write(pipefd[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &c, 1) != 1 || c != 'y')
		pid = -1;
	close(pipefd[0]);
	return pid;
}

/* A child maps the file and writes a non-zero byte into it until it is killed. */
static pid_t scribble(void)
{
	int pipefd[2];
	pid_t pid;
	char c;

	if (pipe(pipefd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		volatile uint8_t *p = fd < 0 ? MAP_FAILED
					     : mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

		c = p == MAP_FAILED ? 'n' : 'y';
		if (write(pipefd[1], &c, 1) != 1 || c != 'y')
			_exit(1);
		for (;;)
			p[0] = p[LEN / 2] = 0x5a;
	}
	close(pipefd[1]);
	if (pid < 0 || read(pipefd[0], &c, 1) != 1 || c != 'y')
		pid = -1;
	close(pipefd[0]);
	return pid;
}

/*
 * VERIFY races a writer: the clear either wins (0) or sees the byte and
 * fails at the verify step. Tries for at most 20 s until it fails.
 */
static void verify_fails(struct prealloc_ctx *ctx)
{
	struct prealloc_clear_file_info info;
	struct timespec t0, t;
	unsigned int tries = 0, odd = 0;
	pid_t child;
	int r;

	make_file(LEN, 0xab);
	child = scribble();
	if (child < 0) {
		tap_ok(0, "a child that writes into the file");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		r = clear(ctx, PREALLOC_CLEAR_VERIFY | PREALLOC_CLEAR_FORCE, &info, NULL);
		tries++;
		odd += r != 0 && r != -EBADMSG;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (r != -EBADMSG && t.tv_sec - t0.tv_sec < 20);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	tap_ok(r == -EBADMSG && info.error_step == PREALLOC_CLEAR_STEP_VERIFY && !odd &&
		       (info.nonzero_offset == 0 || info.nonzero_offset == LEN / 2),
	       "a writer racing VERIFY: -EBADMSG at the verify step, non-zero at %llu "
	       "(%d after %u tries, %u other results)",
	       (unsigned long long)info.nonzero_offset, r, tries, odd);
}

/* Bytes of the file not in memory (neither page cache nor swap cache). */
static uint64_t not_resident(void)
{
	static unsigned char vec[LEN / 4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t out = 0;
	void *p;

	if (fd < 0)
		return 0;
	p = mmap(NULL, LEN, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return 0;
	if (mincore(p, LEN, vec) == 0)
		for (size_t i = 0; i < sizeof(vec); i++)
			out += vec[i] & 1 ? 0 : 4096;
	munmap(p, LEN);
	return out;
}

static int write_str(const char *dir, const char *file, const char *s)
{
	char p[256];
	int fd, ok;

	snprintf(p, sizeof(p), "%s/%s", dir, file);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok ? 0 : -1;
}

/*
 * Pushes the file's first half out to swap: a child in a memory cgroup of
 * its own writes it (the pages are charged there), then the cgroup is
 * reclaimed whole (v1 memory.force_empty, v2 memory.reclaim), which writes
 * shmem pages to swap and drops them from the swap cache. MADV_PAGEOUT
 * alone leaves them in the swap cache, where they count as resident.
 * Returns the bytes not resident after; sets why when it cannot.
 */
static uint64_t page_out(const char **why)
{
	static const struct { const char *root, *file, *value; } cg[] = {
		{ "/sys/fs/cgroup/memory", "memory.force_empty", "0" },	/* v1 */
		{ "/sys/fs/cgroup", "memory.reclaim", "1G" },		/* v2 */
	};
	char dir[256], pid[32];
	uint64_t out = 0;

	*why = "no cgroup to reclaim the pages from (root, memory controller)";
	for (size_t i = 0; i < sizeof(cg) / sizeof(cg[0]) && !out; i++) {
		pid_t child;
		int st;

		snprintf(dir, sizeof(dir), "%s/prealloc-clear-file.%d", cg[i].root, (int)getpid());
		if (mkdir(dir, 0700) < 0)
			continue;
		tap_remove_at_exit(dir);
		child = fork();
		if (child == 0) {
			snprintf(pid, sizeof(pid), "%d", (int)getpid());
			_exit(write_str(dir, "cgroup.procs", pid) < 0 || make_file(LEN / 2, 0xab) < 0);
		}
		if (child > 0 && waitpid(child, &st, 0) == child && WIFEXITED(st) &&
		    !WEXITSTATUS(st)) {
			int fd = open(path, O_WRONLY | O_CLOEXEC);	/* the second half, ours */
			char buf[4096];

			memset(buf, 0xab, sizeof(buf));
			for (uint64_t off = LEN / 2; fd >= 0 && off < LEN; off += sizeof(buf))
				if (pwrite(fd, buf, sizeof(buf), (off_t)off) != (ssize_t)sizeof(buf))
					break;
			if (fd >= 0)
				close(fd);
			if (write_str(dir, cg[i].file, cg[i].value) == 0 || errno == EAGAIN)
				out = not_resident();
			*why = "reclaim left every page in memory (no swap here?)";
		}
		rmdir(dir);
	}
	return out;
}

/* Swapped-out pages are the job's: its workers clear them, the report counts them. */
static void swapped_cleared(struct prealloc_ctx *ctx)
{
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_clear_file_info info;
	const char *why;
	uint64_t out;
	int r;


	out = page_out(&why);
	if (!out) {
		tap_skip("no page of the file could be swapped out: %s", why);
		return;
	}
	r = clear(ctx, PREALLOC_CLEAR_VERIFY, &info, &rep);
	tap_ok(r == 0 && info.swapped_bytes >= out && info.swapped_bytes <= LEN &&
		       info.hole_bytes == 0 && rep.bytes_done == LEN && count_not(0) == 0,
	       "%llu of %llu bytes swapped out: %llu cleared as swapped, %llu by the workers in "
	       "all, all zero (%d)",
	       (unsigned long long)out, (unsigned long long)LEN,
	       (unsigned long long)info.swapped_bytes, (unsigned long long)rep.bytes_done, r);
}

/*
 * The file (len bytes) is truncated to cut bytes while a child's clear
 * stops itself at point (SIGSTOP stops a whole process, so not this one):
 * the child lives, the flow fails with -ENXIO at step, the file stays cut.
 */
static void shrunk(uint64_t len, uint64_t cut, const char *point, unsigned int flags, int step,
		   const char *what)
{
	struct {
		int r, step;
	} res = { 1, -1 };
	int pipefd[2], st = 0;
	struct stat sb;
	pid_t child;

	make_file(len, 0xab);
	if (pipe(pipefd) < 0) {
		tap_ok(0, "%s: pipe", what);
		return;
	}
	child = fork();
	if (child == 0) {
		struct prealloc_clear_file_info info = { .size = sizeof(info) };
		struct prealloc_ctx *cctx;

		close(pipefd[0]);
		setenv("PREALLOC_TEST_PAUSE", point, 1);
		res.r = prealloc_ctx_new(&cctx);
		if (res.r == 0)
			res.r = clear(cctx, flags, &info, NULL);
		res.step = info.error_step;
		_exit(write(pipefd[1], &res, sizeof(res)) != sizeof(res));
	}
	close(pipefd[1]);
	if (child < 0 || waitpid(child, &st, WUNTRACED) != child || !WIFSTOPPED(st)) {
		tap_ok(0, "%s: the clear stopped at %s (wait status %#x)", what, point, st);
		close(pipefd[0]);
		return;
	}
	if (truncate(path, (off_t)cut) < 0)
		tap_ok(0, "%s: truncate: %s", what, strerror(errno));
	kill(child, SIGCONT);
	if (read(pipefd[0], &res, sizeof(res)) != sizeof(res))
		res.r = 1;
	close(pipefd[0]);
	waitpid(child, &st, 0);
	tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && res.r == -ENXIO && res.step == step &&
		       stat(path, &sb) == 0 && (uint64_t)sb.st_size == cut,
	       "%s: -ENXIO at step %d, no SIGBUS, the file stays at %llu bytes (%d at step %d, "
	       "child %s %d)", what, step, (unsigned long long)cut, res.r, res.step,
	       WIFSIGNALED(st) ? "killed by signal" : "exit",
	       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/* The caller's own handler: reached, it would return into the same fault for ever. */
static void vmm_sigbus(int sig)
{
	static const char msg[] = "not ok - the caller's SIGBUS handler ran: "
				  "a job let a SIGBUS through\n";

	(void)sig;
	unlink(path);
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

/*
 * Jobs over a caller's mapping (a VMM's guest memory) of a file whose
 * owner cut it in half after the region was made: a clear and a verify
 * fail with -EFAULT (the verify at the first page gone) instead of killing
 * the caller, whose own SIGBUS handler is not called and is back after.
 */
static void mapped_shrunk(struct prealloc_ctx *ctx)
{
	static const int ops[] = { PREALLOC_OP_CLEAR, PREALLOC_OP_VERIFY };
	struct sigaction mine = { .sa_handler = vmm_sigbus }, cur;
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MAPPED,
					   .flags = PREALLOC_REGION_NO_BIND, .length = LEN };
	struct prealloc_region *region = NULL;
	int fd, r;

	make_file(LEN, 0xab);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ro.addr = fd < 0 ? MAP_FAILED : mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ro.addr == MAP_FAILED || prealloc_region_new(ctx, &ro, &region) < 0 ||
	    ftruncate(fd, LEN / 2) < 0) {
		tap_ok(0, "a caller's mapping of the file, cut in half");
		goto out;
	}
	sigaction(SIGBUS, &mine, NULL);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		struct prealloc_job_opts jo = { .size = sizeof(jo), .op = ops[i], .threads = 1,
						.flags = PREALLOC_JOB_NO_PLACEMENT };
		struct prealloc_report rep = { .size = sizeof(rep) };
		struct prealloc_job *job;

		r = prealloc_job_start(region, &jo, &job);
		if (r == 0) {
			r = prealloc_job_wait(job);
			prealloc_job_report(job, &rep);
			prealloc_job_free(job);
		}
		tap_ok(r == -EFAULT && rep.error_offset >= LEN / 2 && rep.error_offset < LEN &&
			       (ops[i] != PREALLOC_OP_VERIFY || rep.error_offset == LEN / 2),
		       "a %s job over a caller's mapping of a file cut to %llu bytes: -EFAULT "
		       "at offset %llu (%d)", ops[i] == PREALLOC_OP_CLEAR ? "clear" : "verify",
		       (unsigned long long)(LEN / 2), (unsigned long long)rep.error_offset, r);
	}
	sigaction(SIGBUS, NULL, &cur);
	tap_ok(!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == vmm_sigbus,
	       "the caller's SIGBUS handler was not called, and is back after the jobs");
	signal(SIGBUS, SIG_DFL);
out:
	prealloc_region_free(region);
	if (ro.addr && ro.addr != MAP_FAILED)
		munmap(ro.addr, LEN);
	if (fd >= 0)
		close(fd);
}

int main(void)
{
	struct prealloc_clear_file_info info;
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_ctx *ctx;
	pid_t child;
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);	/* each line out before a fork or an _exit */
	if (access("/dev/shm", W_OK) < 0) {
		return tap_skip_all("/dev/shm is not writable");
	}
	snprintf(path, sizeof(path), "/dev/shm/prealloc-clear-file.%d", (int)getpid());
	snprintf(link_path, sizeof(link_path), "%s.link", path);
	tap_remove_at_exit(path);
	tap_remove_at_exit(link_path);
	if (prealloc_ctx_new(&ctx) < 0) {
		tap_ok(0, "context");
		return tap_done();
	}

	make_file(LEN, 0xab);
	r = clear(ctx, PREALLOC_CLEAR_VERIFY, &info, &rep);
	tap_ok(r == 0 && info.error_step == 0 && info.length == LEN && info.kernel[0] &&
		       rep.bytes_done == LEN && info.nonzero_offset == UINT64_MAX,
	       "pattern file cleared and verified (%d, kernel %s: %s)", r, info.kernel,
	       info.kernel_why);
	tap_ok(count_not(0) == 0, "every byte reads zero afterwards");

	make_file(LEN + 100, 0xab);
	r = clear(ctx, PREALLOC_CLEAR_VERIFY, &info, NULL);
	tap_ok(r == 0 && info.tail_bytes == 100 && count_not(0) == 0,
	       "a partial last page: %llu bytes written, all zero (%d)",
	       (unsigned long long)info.tail_bytes, r);
	make_file(100, 0xab);
	r = clear(ctx, 0, &info, NULL);
	tap_ok(r == 0 && info.tail_bytes == 100 && !info.kernel[0] && count_not(0) == 0,
	       "a file of one partial page: cleared with write(2) alone (%d)", r);

	make_file(LEN, 0xab);
	unlink(link_path);
	if (symlink(path, link_path) == 0) {
		struct prealloc_clear_file_opts o = { .size = sizeof(o), .flags = PREALLOC_CLEAR_FORCE };

		info = (struct prealloc_clear_file_info){ .size = sizeof(info) };
		r = prealloc_clear_file(ctx, link_path, &o, &info, NULL);
		tap_ok(r == -ELOOP && info.error_step == PREALLOC_CLEAR_STEP_SYMLINK &&
			       count_not(0xab) == 0,
		       "a symbolic link is refused with -ELOOP even with FORCE (%d)", r);
		unlink(link_path);
	} else {
		tap_ok(0, "symlink: %s", strerror(errno));
	}

	child = hold();
	if (child > 0) {
		r = clear(ctx, 0, &info, NULL);
		tap_ok(r == -EBUSY && info.error_step == PREALLOC_CLEAR_STEP_MAPPERS &&
			       info.mapper_pid == child && count_not(0xab) == 0,
		       "a file the child %d maps: -EBUSY naming pid %d (%s), untouched (%d)",
		       (int)child, (int)info.mapper_pid, info.mapper_comm, r);
		r = clear(ctx, PREALLOC_CLEAR_FORCE, &info, NULL);
		tap_ok(r == 0 && info.mapper_pid == child && count_not(0) == 0,
		       "... and cleared with FORCE, the mapper still named (%d)", r);
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	} else {
		tap_ok(0, "a child that maps the file");
	}

	r = clear(ctx, 0, &info, NULL);
	tap_ok(r == 0, "the same file again once the child is gone (%d)", r);
	swapped_cleared(ctx);
	verify_fails(ctx);
	shrunk(LEN, LEN / 2, "clear-mapped", 0, PREALLOC_CLEAR_STEP_CLEAR,
	       "cut in half before the workers start");
	shrunk(LEN, LEN / 2, "before-check", PREALLOC_CLEAR_VERIFY, PREALLOC_CLEAR_STEP_CLEAR,
	       "cut in half before VERIFY reads back");
	shrunk(LEN + 100, LEN, "clear-mapped", 0, PREALLOC_CLEAR_STEP_TAIL,
	       "its partial last page cut away");
	mapped_shrunk(ctx);
	make_file(LEN, 0xab);
	info = (struct prealloc_clear_file_info){ .size = sizeof(info) };
	{
		struct prealloc_clear_file_opts o = { .size = sizeof(o), .kernel = "warp_drive" };

		r = prealloc_clear_file(ctx, path, &o, &info, NULL);
		tap_ok(r == -ENOENT && info.error_step == PREALLOC_CLEAR_STEP_KERNEL,
		       "an unknown kernel: -ENOENT at the kernel step (%d)", r);
	}
	unlink(path);
	r = clear(ctx, 0, &info, NULL);
	tap_ok(r == -ENOENT && info.error_step == PREALLOC_CLEAR_STEP_LOOKUP,
	       "a missing file: -ENOENT at the lookup step (%d)", r);
	prealloc_ctx_free(ctx);
	return tap_done();
}
