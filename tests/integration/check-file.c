/* SPDX-License-Identifier: MIT */
/*
 * check-file FILE NODE PAGE_SIZE: a second process maps a file that
 * `prealloc` made and proves it is ready: every page already allocated to
 * the file (st_blocks, before any mapping), touching every page allocates
 * nothing (no new hugepage from the pool, st_blocks unchanged, no major
 * fault, at most one minor fault per page to map it), every page on NODE
 * (move_pages), every byte zero.
 * Exit 0 ready, 1 not ready, 2 usage or setup error.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static long hugepages_free(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "HugePages_Free: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	uint64_t page, npages, resident = 0, on = 0, nonzero = 0;
	long free_before, free_after;
	struct rusage ru0, ru1;
	struct stat st, st2;
	uint8_t *p;
	int fd, node;

	if (argc != 4) {
		fprintf(stderr, "usage: check-file FILE NODE PAGE_SIZE\n");
		return 2;
	}
	node = atoi(argv[2]);
	page = strtoull(argv[3], NULL, 10);
	fd = open(argv[1], O_RDWR | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !page || st.st_size % page) {
		fprintf(stderr, "check-file: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	npages = st.st_size / page;
	free_before = hugepages_free();
	getrusage(RUSAGE_SELF, &ru0);
	p = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("check-file: mmap");
		return 2;
	}
	/* Blocks the file holds before this process touched anything. */
	resident = (uint64_t)st.st_blocks * 512;
	/* A write to every page: must not allocate anything new. */
	for (uint64_t i = 0; i < npages; i++)
		p[i * page] = 0;
	getrusage(RUSAGE_SELF, &ru1);
	free_after = hugepages_free();
	fstat(fd, &st2);
	for (uint64_t i = 0; i < npages; i++) {
		void *addr = p + i * page;
		int status = -1;

		if (move_pages(0, 1, &addr, NULL, &status, 0) == 0 && status == node)
			on++;
	}
	for (uint64_t off = 0; off < (uint64_t)st.st_size; off += 64) {
		const uint64_t *q = (const uint64_t *)(p + off);

		if (q[0] | q[1] | q[2] | q[3] | q[4] | q[5] | q[6] | q[7])
			nonzero++;
	}
	long minflt = ru1.ru_minflt - ru0.ru_minflt;

	printf("pages=%llu allocated_before=%llu/%llu on_node=%llu nonzero_lines=%llu "
	       "hugepages_free_before=%ld after=%ld blocks_after=%llu major_faults=%ld "
	       "minor_faults=%ld\n",
	       (unsigned long long)npages, (unsigned long long)resident,
	       (unsigned long long)st.st_size, (unsigned long long)on, (unsigned long long)nonzero,
	       free_before, free_after, (unsigned long long)st2.st_blocks * 512,
	       ru1.ru_majflt - ru0.ru_majflt, minflt);
	munmap(p, st.st_size);
	close(fd);
	/* Minor faults: one per page mapped, plus a few for this program itself. */
	return resident == (uint64_t)st.st_size && st2.st_blocks == st.st_blocks &&
			       on == npages && !nonzero && free_before == free_after &&
			       ru1.ru_majflt == ru0.ru_majflt && (uint64_t)minflt <= npages + 64
		       ? 0
		       : 1;
}
