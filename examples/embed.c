/* SPDX-License-Identifier: MIT */
/*
 * How a VMM embeds libprealloc: guest memory as a hugetlbfs file, through
 * the library's flows alone.
 *
 *   1. prepare: admitted (the node's pool grown if short), populated on its
 *      node by that node's CPUs while the VMM's event loop keeps running
 *      (it polls the job's eventfd), verified, recorded;
 *   2. the guest runs and dirties its memory (here: we write a pattern);
 *   3. clear: re-zeroed in place for the next guest, verified;
 *   4. release: the file goes and the pool growth is given back.
 *
 *   examples/embed [DIR [MiB]]   DIR: a 2M hugetlbfs mount (default: the
 *                                library's), MiB: default 64
 * Exit 0 on success, 77 when no 2M hugetlbfs is mounted, 1 on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <prealloc.h>

/* Step 1: prepare as a job, waited for from the VMM's own loop. */
static int prepare(struct prealloc_ctx *ctx, const char *dir, uint64_t len, char *path,
		   size_t path_len)
{
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct prealloc_prepare_opts po = {
		.size = sizeof(po),
		.flags = PREALLOC_PREPARE_GROW_POOLS | PREALLOC_PREPARE_VERIFY,
		.page_size = PREALLOC_PAGE_2M,
		.length = len,		/* no nodes given: those of the current policy */
		.dir = dir,
	};
	struct prealloc_job *job;
	int r;

	r = prealloc_prepare_start(ctx, &po, &job, &info);
	if (r < 0) {
		fprintf(stderr, "prepare: %s\n", info.message[0] ? info.message : strerror(-r));
		return r;
	}
	struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };
	while (poll(&pfd, 1, 100) == 0) {
		uint64_t done, total;

		prealloc_job_progress(job, &done, &total);
		printf("prepare: %llu of %llu MiB\n", (unsigned long long)(done >> 20),
		       (unsigned long long)(total >> 20));
	}
	/* Done means settled: committed (file at its path, recorded) or rolled back. */
	r = prealloc_job_wait(job);
	prealloc_prepare_info(job, &info);
	prealloc_job_free(job);
	if (r < 0) {
		fprintf(stderr, "prepare: %s\n", info.message);
		return r;
	}
	printf("prepared %s (%llu hugepages added to the pool)\n", info.path,
	       (unsigned long long)info.added);
	snprintf(path, path_len, "%s", info.path);
	return 0;
}

/* Step 2: a guest's worth of dirt in every page. */
static int dirty(const char *path, uint64_t len)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	uint8_t *p;

	if (fd < 0)
		return -1;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -1;
	for (uint64_t off = 0; off < len; off += 4096)
		p[off] = 0xa5;
	munmap(p, len);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : NULL;
	uint64_t len = (argc > 2 ? strtoull(argv[2], NULL, 10) : 64) << 20;
	struct prealloc_clear_file_opts co = { .size = sizeof(co), .flags = PREALLOC_CLEAR_VERIFY };
	struct prealloc_clear_file_info ci = { .size = sizeof(ci) };
	struct prealloc_release_info ri = { .size = sizeof(ri) };
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_ctx *ctx;
	char path[4096] = "";
	int r;

	r = prealloc_ctx_new(&ctx);
	if (r < 0) {
		fprintf(stderr, "prealloc_ctx_new: %s\n", strerror(-r));
		return 1;
	}
	if (!dir && !(dir = prealloc_hugetlbfs_mount(ctx, PREALLOC_PAGE_2M))) {
		fprintf(stderr, "no 2M hugetlbfs is mounted: nothing to embed\n");
		prealloc_ctx_free(ctx);
		return 77;
	}
	r = prepare(ctx, dir, len, path, sizeof(path));
	if (r == 0 && dirty(path, len) < 0)
		r = -1;
	/* Step 3: the next guest gets zeroes, each node's pages cleared by its own CPUs. */
	if (r == 0) {
		r = prealloc_clear_file(ctx, path, &co, &ci, &rep);
		printf("clear: %s, %.1f GB/s with %s: %s\n", path,
		       rep.seconds > 0 ? (double)rep.bytes_done / rep.seconds / 1e9 : 0.0,
		       rep.clear_kernel, r < 0 ? strerror(-r) : "zero");
	}
	/* Step 4: the file and its pool growth go back. */
	if (path[0]) {
		int rr = prealloc_release(ctx, path, &ri);

		printf("release: %s, %llu hugepages given back: %s\n", path,
		       (unsigned long long)ri.returned, rr < 0 ? strerror(-rr) : "ok");
		if (r == 0)
			r = rr;
	}
	prealloc_ctx_free(ctx);
	return r < 0 ? 1 : 0;
}
