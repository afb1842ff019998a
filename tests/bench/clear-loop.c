/* SPDX-License-Identifier: MIT */
/*
 * The plain loop `prealloc clear` is held to (tests/bench/clear-vs-loop.sh):
 * open the file, map it shared, THREADS threads each pinned to one CPU and
 * each clearing its contiguous share with KERNEL (the library's own
 * kernels, prealloc_clear_range), joined; timed from open() to the last
 * store, page faults included. Prints `seconds S gbps G`.
 *
 *   clear-loop FILE THREADS KERNEL
 */

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <prealloc.h>

struct share {
	pthread_t tid;
	uint8_t *addr;
	size_t len;
	int cpu;
	const char *kernel;
	int err;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *clear_share(void *arg)
{
	struct share *s = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	s->err = prealloc_clear_range(s->addr, s->len, s->kernel);
	return NULL;
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct share *sh;
	unsigned int threads;
	struct stat st;
	double t0, t1;
	uint8_t *map;
	size_t per;
	int fd;

	if (argc != 4 || (threads = (unsigned int)atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: clear-loop FILE THREADS KERNEL\n");
		return 2;
	}
	sh = calloc(threads, sizeof(*sh));
	t0 = now();
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (!sh || fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	/* Shares in 2 MiB units, so that no two threads write one huge page. */
	per = ((size_t)st.st_size / threads + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
	for (unsigned int i = 0; i < threads; i++) {
		size_t off = per * i < (size_t)st.st_size ? per * i : (size_t)st.st_size;

		sh[i] = (struct share){ .addr = map + off, .cpu = (int)(i % (unsigned long)ncpu),
					.len = off + per <= (size_t)st.st_size ? per
						: (size_t)st.st_size - off,
					.kernel = argv[3] };
		if (pthread_create(&sh[i].tid, NULL, clear_share, &sh[i]) != 0) {
			perror("pthread_create");
			return 1;
		}
	}
	for (unsigned int i = 0; i < threads; i++) {
		pthread_join(sh[i].tid, NULL);
		if (sh[i].err) {
			fprintf(stderr, "clear-loop: kernel %s: error %d\n", argv[3], sh[i].err);
			return 1;
		}
	}
	t1 = now();
	printf("seconds %.6f gbps %.2f\n", t1 - t0, (double)st.st_size / (t1 - t0) / 1e9);
	munmap(map, (size_t)st.st_size);
	close(fd);
	free(sh);
	return 0;
}
