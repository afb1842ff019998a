/* SPDX-License-Identifier: MIT */
/*
 * The library on every backing it offers, for real: anonymous 4K and THP,
 * memfd 4K and 2M hugetlb, a tmpfs file, and a range the caller mapped.
 * Each is populated by the per-node engine, then checked from outside the
 * library: every page resident (mincore / st_blocks), on its node
 * (move_pages), zero; the report agrees. Also the job API (progress,
 * eventfd, cancel) and the touch fallback. Root reserves 2M pages for the
 * hugetlb case and restores the pool.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prealloc.h"
#include "tap.h"

#define MiB (UINT64_C(1) << 20)

#define NR_HUGEPAGES "/proc/sys/vm/nr_hugepages"

static long saved_pool = -1;
/* For the signal handler: the saved pool as written, and whether to write it. */
static char saved_pool_str[24];
static size_t saved_pool_len;
static volatile sig_atomic_t pool_raised;

/* The global 2M pool; -1 with errno set when it cannot be read. */
static long pool_get(void)
{
	FILE *f = fopen(NR_HUGEPAGES, "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1) {
			v = -1;
			errno = EIO;
		}
		fclose(f);
	}
	return v;
}

static int pool_set(long v)
{
	FILE *f = fopen("/proc/sys/vm/nr_hugepages", "we");

	if (!f)
		return -errno;
	fprintf(f, "%ld\n", v);
	return fclose(f) ? -errno : 0;
}

static void pool_restore(void)
{
	if (pool_raised && saved_pool >= 0)
		pool_set(saved_pool);
	pool_raised = 0;
}

/* SIGTERM (meson's timeout) or SIGINT while the pool is raised: put it back, async-signal-safe. */
static void pool_restore_on_signal(int sig)
{
	if (pool_raised) {
		int fd = open(NR_HUGEPAGES, O_WRONLY | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t w = write(fd, saved_pool_str, saved_pool_len);

			(void)w;
			close(fd);
		}
	}
	_exit(128 + sig);
}

/* Pages of [p, p+len) in page_size steps found on node, from outside the library. */
static uint64_t pages_on(void *p, uint64_t len, uint64_t step, int node)
{
	uint64_t on = 0;

	for (uint64_t off = 0; off < len; off += step) {
		void *a = (uint8_t *)p + off;
		int status = -1;

		if (move_pages(0, 1, &a, NULL, &status, 0) == 0 && status == node)
			on++;
	}
	return on;
}

static uint64_t resident_bytes(void *p, uint64_t len)
{
	uint64_t n = len / 4096, res = 0;
	unsigned char *vec = malloc(n);

	if (!vec || mincore(p, len, vec) < 0) {
		free(vec);
		return 0;
	}
	for (uint64_t i = 0; i < n; i++)
		res += vec[i] & 1;
	free(vec);
	return res * 4096;
}

/*
 * AnonHugePages (bytes) summed over the mappings of /proc/self/smaps that
 * overlap [p, p+len); -1 when smaps cannot be read.
 */
static long long anon_huge_bytes(const void *p, uint64_t len)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	unsigned long start, end, lo = (unsigned long)p, hi = lo + len;
	long long total = 0, kb;
	bool in = false;
	char line[512];

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' '))
			in = start < hi && end > lo;
		else if (in && sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
			total += kb * 1024;
	}
	fclose(f);
	return total;
}

/* THP mode for anonymous memory: "always", "madvise" or "never" (the bracketed one). */
static const char *thp_mode(char *buf, size_t len)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	char *a, *b;

	if (!f)
		return "absent";
	a = fgets(buf, (int)len, f);
	fclose(f);
	if (!a || !(a = strchr(buf, '[')) || !(b = strchr(a, ']')))
		return "unknown";
	*b = '\0';
	return a + 1;
}

static bool all_zero(const uint8_t *p, uint64_t len)
{
	for (uint64_t i = 0; i < len; i += 8)
		if (*(const uint64_t *)(p + i))
			return false;
	return true;
}

static void run_backing(struct prealloc_ctx *ctx, const char *name,
			struct prealloc_region_opts *ro, unsigned int flags, int node)
{
	struct prealloc_region *r = NULL;
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE,
					.flags = PREALLOC_JOB_VERIFY | flags };
	int ret;

	ro->nr_nodes = 1;
	ro->nodes = &node;
	ret = prealloc_region_new(ctx, ro, &r);
	if (!tap_ok(ret == 0, "%s: region created (%s)", name, strerror(-ret)))
		return;
	uint8_t *p = prealloc_region_addr(r);
	uint64_t len = prealloc_region_length(r), page = prealloc_region_page_size(r);
	tap_ok(resident_bytes(p, len) == 0, "%s: nothing resident before the run", name);
	struct prealloc_node_report nrep = { .size = sizeof(nrep) };
	struct prealloc_job *job;

	ret = prealloc_job_start(r, &jo, &job);
	if (ret == 0) {
		ret = prealloc_job_wait(job);
		prealloc_job_report(job, &rep);
		prealloc_job_node_report(job, 0, &nrep);
		prealloc_job_free(job);
	}
	tap_ok(ret == 0 && rep.bytes_done == len && rep.error == 0, "%s: populated %llu bytes (%s)",
	       name, (unsigned long long)rep.bytes_done, strerror(-ret));
	tap_ok(resident_bytes(p, len) == len, "%s: every page resident afterwards (mincore)", name);
	uint64_t step = page == PREALLOC_PAGE_2M && ro->backing == PREALLOC_BACKING_ANON_THP ? 4096 : page;
	tap_ok(pages_on(p, len, step, node) == len / step, "%s: every page on node %d (move_pages)",
	       name, node);
	tap_ok(all_zero(p, len) && rep.nonzero_offset == UINT64_MAX, "%s: memory reads zero", name);
	tap_ok(nrep.node == node && nrep.pages_on_node == len / step && nrep.pages_off_node == 0 &&
		       nrep.pages_missing == 0,
	       "%s: report agrees: %llu of %llu pages on node %d, %llu off, %llu missing", name,
	       (unsigned long long)nrep.pages_on_node, (unsigned long long)(len / step), node,
	       (unsigned long long)nrep.pages_off_node, (unsigned long long)nrep.pages_missing);
	tap_ok(rep.method == ((flags & PREALLOC_JOB_TOUCH) ? PREALLOC_METHOD_TOUCH
							   : PREALLOC_METHOD_POPULATE_WRITE),
	       "%s: report names the method used (%d)", name, rep.method);
	tap_ok(prealloc_job_node_report(NULL, 0, &nrep) == -EINVAL, "%s: NULL job refused", name);
	if (ro->backing == PREALLOC_BACKING_ANON_THP) {
		long long huge = anon_huge_bytes(p, len);
		char mode[128];
		const char *m = thp_mode(mode, sizeof(mode));

		/* The report measures, never assumes: what smaps says, THP or not. */
		tap_ok(huge >= 0 && nrep.huge_bytes == (uint64_t)huge,
		       "%s: report's huge_bytes %llu is what smaps counts (%lld)", name,
		       (unsigned long long)nrep.huge_bytes, huge);
		if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1)
			tap_ok(huge == 0, "%s: THP disabled for the process, no huge pages (%lld bytes)",
			       name, huge);
		else if (strcmp(m, "always") && strcmp(m, "madvise"))
			tap_skip("%s: huge pages not checked: transparent_hugepage/enabled is [%s]",
				 name, m);
		else	/* most, not all: fragmented memory may refuse a few huge pages */
			tap_ok(huge >= (long long)len / 2,
			       "%s: backed by transparent huge pages: AnonHugePages %lld of %llu bytes",
			       name, huge, (unsigned long long)len);
	}
	prealloc_region_free(r);
}

/*
 * Clearing memory that already exists: a tmpfs file with data, a hole, and
 * more data, mapped afresh (no page tables yet). The region learns each
 * page's node, clears the data, skips the hole, and the whole file reads
 * zero from outside.
 */
static void clear_adopted(struct prealloc_ctx *ctx, int node)
{
	char path[] = "/dev/shm/prealloc-clear-XXXXXX";
	const uint64_t len = 8 * MiB;
	struct prealloc_region *r;
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_node_report nr = { .size = sizeof(nr) };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_CLEAR,
					.flags = PREALLOC_JOB_VERIFY };
	struct prealloc_job *job;
	int fd = mkstemp(path);
	uint8_t buf[4096];

	if (fd >= 0)
		tap_remove_at_exit(path);
	if (!tap_ok(fd >= 0 && ftruncate(fd, (off_t)len) == 0, "clear: tmpfs file made"))
		return;
	memset(buf, 0xa5, sizeof(buf));
	/* Data in the first and last 2 MiB; a 4 MiB hole between. */
	for (uint64_t off = 0; off < len; off += sizeof(buf))
		if (off < 2 * MiB || off >= 6 * MiB)
			if (pwrite(fd, buf, sizeof(buf), (off_t)off) != (ssize_t)sizeof(buf))
				break;
	close(fd);

	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_FILE,
		.flags = PREALLOC_REGION_REUSE | PREALLOC_REGION_ADOPT_PLACEMENT,
		.path = path,
		.length = len,
	};
	int ret = prealloc_region_new(ctx, &ro, &r);
	if (!tap_ok(ret == 0, "clear: region adopts the file (%s)", strerror(-ret))) {
		unlink(path);
		return;
	}
	struct prealloc_extent ext[8];
	int n = prealloc_region_extents(r, ext, 8);
	tap_ok(n == 3 && ext[0].node == node && ext[0].length == 2 * MiB && ext[1].node == -1 &&
		       ext[1].length == 4 * MiB && ext[2].node == node,
	       "clear: extents follow the pages: data on node %d, the hole skipped (%d extents)",
	       node, n);
	ret = prealloc_job_start(r, &jo, &job);
	tap_ok(ret == 0, "clear: job started");
	if (ret == 0) {
		ret = prealloc_job_wait(job);
		prealloc_job_report(job, &rep);
		prealloc_job_node_report(job, 0, &nr);
		tap_ok(ret == 0 && rep.bytes_done == 4 * MiB && rep.method == PREALLOC_METHOD_CLEAR &&
			       rep.clear_kernel[0] && rep.nonzero_offset == UINT64_MAX,
		       "clear: 4 MiB cleared with kernel '%s'", rep.clear_kernel);
		tap_ok(nr.node == node && nr.pages_on_node == 1024 && nr.pages_off_node == 0,
		       "clear: report counts 1024 data pages on node %d", node);
		prealloc_job_free(job);
	}
	prealloc_region_free(r);
	/* From outside: read the file back. */
	fd = open(path, O_RDONLY);
	bool zero = fd >= 0;
	for (uint64_t off = 0; zero && off < len; off += sizeof(buf))
		zero = pread(fd, buf, sizeof(buf), (off_t)off) == (ssize_t)sizeof(buf) &&
		       all_zero(buf, sizeof(buf));
	struct stat st;
	tap_ok(zero && fstat(fd, &st) == 0 && (uint64_t)st.st_blocks * 512 == 4 * MiB,
	       "clear: file reads zero and the hole stayed a hole");
	close(fd);
	unlink(path);
}

static void vmm_sigbus(int sig)
{
	(void)sig;
}

static void job_api(struct prealloc_ctx *ctx)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = 256 * MiB };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE,
					.chunk_size = 2 * MiB, .threads = 1 };
	struct prealloc_region *r;
	struct prealloc_job *job;
	uint64_t done = 0, total = 0;

	if (prealloc_region_new(ctx, &ro, &r) < 0) {
		tap_ok(0, "job api: region");
		return;
	}
	/* An embedding VMM's SIGBUS handler stays in place while a job populates. */
	struct sigaction mine = { .sa_handler = vmm_sigbus }, seen;
	sigaction(SIGBUS, &mine, NULL);
	tap_ok(prealloc_job_start(r, &jo, &job) == 0, "job api: started");
	sigaction(SIGBUS, NULL, &seen);
	tap_ok(seen.sa_handler == vmm_sigbus,
	       "job api: the caller's SIGBUS handler is untouched by a populate job");
	struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };
	tap_ok(poll(&pfd, 1, 60000) == 1, "job api: eventfd turns readable on completion");
	tap_ok(prealloc_job_done(job) == 1, "job api: done");
	tap_ok(prealloc_job_wait(job) == 0, "job api: wait returns 0");
	prealloc_job_progress(job, &done, &total);
	tap_ok(done == total && total == 256 * MiB, "job api: progress reaches the total");
	prealloc_job_free(job);
	prealloc_region_free(r);

	/* Cancel before the workers get far: wait reports ECANCELED, work stops early. */
	ro.length = 1024 * MiB;
	if (prealloc_region_new(ctx, &ro, &r) < 0)
		return;
	tap_ok(prealloc_job_start(r, &jo, &job) == 0, "job api: second job started");
	prealloc_job_cancel(job);
	int ret = prealloc_job_wait(job);
	struct prealloc_report rep = { .size = sizeof(rep) };
	prealloc_job_report(job, &rep);
	tap_ok(ret == -ECANCELED && rep.cancelled && rep.bytes_done < rep.bytes,
	       "job api: cancel stops at a chunk boundary (%llu of %llu done)",
	       (unsigned long long)rep.bytes_done, (unsigned long long)rep.bytes);
	prealloc_job_free(job);
	prealloc_region_free(r);
}

/* Anonymous memory and a memfd of 4K pages, faulted and touched. */
static void anon_backings(struct prealloc_ctx *ctx, int node)
{
	run_backing(ctx, "anon 4K",
		    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
						    .backing = PREALLOC_BACKING_ANON,
						    .length = 64 * MiB },
		    0, node);
	run_backing(ctx, "anon 4K touch fallback",
		    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
						    .backing = PREALLOC_BACKING_ANON,
						    .length = 64 * MiB },
		    PREALLOC_JOB_TOUCH, node);
	run_backing(ctx, "anon THP",
		    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
						    .backing = PREALLOC_BACKING_ANON_THP,
						    .length = 64 * MiB },
		    0, node);
	/*
	 * THP that falls back to 4K pages (THP off for this process): the touch
	 * fallback must still reach every 4K page, not one per 2 MiB.
	 */
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0) {
		run_backing(ctx, "anon THP fallen back to 4K, touch fallback",
			    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
							    .backing = PREALLOC_BACKING_ANON_THP,
							    .length = 64 * MiB },
			    PREALLOC_JOB_TOUCH, node);
		prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	} else {
		tap_ok(0, "prctl(PR_SET_THP_DISABLE): %s", strerror(errno));
	}
	run_backing(ctx, "memfd 4K",
		    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
						    .backing = PREALLOC_BACKING_MEMFD,
						    .page_size = PREALLOC_PAGE_4K,
						    .length = 64 * MiB },
		    0, node);
}

/* A tmpfs file, and the caller's own mappings: a whole one and a range inside one. */
static void file_and_caller_backings(struct prealloc_ctx *ctx, int node)
{
	/* A tmpfs file: /dev/shm exists on Debian; the file is removed after. */
	char path[] = "/dev/shm/prealloc-test-XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0) {
		tap_remove_at_exit(path);
		close(fd);
		unlink(path);
		run_backing(ctx, "tmpfs file",
			    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
							    .backing = PREALLOC_BACKING_FILE,
							    .path = path,
							    .length = 64 * MiB },
			    0, node);
		unlink(path);
	} else {
		tap_ok(0, "tmpfs file: mkstemp in /dev/shm (%s)", strerror(errno));
	}

	/* The embedding case: the caller's own mapping. */
	void *mine = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(mine, 64 * MiB, MADV_NOHUGEPAGE);
	run_backing(ctx, "caller's mapping",
		    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
						    .backing = PREALLOC_BACKING_MAPPED,
						    .addr = mine,
						    .length = 64 * MiB },
		    0, node);
	munmap(mine, 64 * MiB);

	/*
	 * The caller's range inside a larger mapping it bound itself: the
	 * range is not a whole mapping, so placement is asked page by page.
	 */
	uint8_t *big = mmap(NULL, 96 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	madvise(big, 96 * MiB, MADV_NOHUGEPAGE);
	run_backing(ctx, "range inside a larger mapping",
		    &(struct prealloc_region_opts){ .size = sizeof(struct prealloc_region_opts),
						    .backing = PREALLOC_BACKING_MAPPED,
						    .flags = PREALLOC_REGION_NO_BIND,
						    .addr = big + 16 * MiB,
						    .length = 64 * MiB },
		    0, node);
	tap_ok(resident_bytes(big, 16 * MiB) == 0 && resident_bytes(big + 80 * MiB, 16 * MiB) == 0,
	       "range inside a larger mapping: nothing outside the range was touched");
	munmap(big, 96 * MiB);
}

/*
 * memfd with 2M hugetlb pages: needs a pool; root grows it and puts it
 * back right after the case, on SIGTERM/SIGINT, and (backstop) at exit.
 */
static void hugetlb_backing(struct prealloc_ctx *ctx, int node)
{
	if (geteuid() != 0) {
		tap_skip("memfd 2M hugetlb: not root, cannot reserve hugepages");
	} else if ((saved_pool = pool_get()) < 0) {
		if (errno == ENOENT)
			tap_skip("memfd 2M hugetlb: kernel without hugetlb pages (no %s)", NR_HUGEPAGES);
		else
			tap_ok(0, "memfd 2M hugetlb: cannot read %s: %s", NR_HUGEPAGES, strerror(errno));
	} else {
		struct sigaction sa = { .sa_handler = pool_restore_on_signal };
		int n = snprintf(saved_pool_str, sizeof(saved_pool_str), "%ld\n", saved_pool);

		saved_pool_len = n > 0 && (size_t)n < sizeof(saved_pool_str) ? (size_t)n : 0;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGTERM, &sa, NULL);
		sigaction(SIGINT, &sa, NULL);
		atexit(pool_restore);
		pool_raised = 1;
		pool_set(saved_pool + 32);
		if (pool_get() >= saved_pool + 32)
			run_backing(ctx, "memfd 2M hugetlb",
				    &(struct prealloc_region_opts){
					    .size = sizeof(struct prealloc_region_opts),
					    .backing = PREALLOC_BACKING_MEMFD,
					    .page_size = PREALLOC_PAGE_2M,
					    .length = 64 * MiB },
				    0, node);
		else
			tap_ok(0, "memfd 2M hugetlb: could not reserve 32 pages");
		pool_restore();
		tap_ok(pool_get() == saved_pool, "memfd 2M hugetlb: pool restored to %ld (now %ld)",
		       saved_pool, pool_get());
	}
}

int main(void)
{
	struct prealloc_ctx *ctx;
	int nodes[4], node;

	if (prealloc_ctx_new(&ctx) < 0 || prealloc_nodes(ctx, nodes, 4) < 1) {
		printf("Bail out! no context\n");
		return 1;
	}
	node = nodes[0];

	anon_backings(ctx, node);
	file_and_caller_backings(ctx, node);
	hugetlb_backing(ctx, node);
	clear_adopted(ctx, node);
	job_api(ctx);
	prealloc_ctx_free(ctx);
	return tap_done();
}
