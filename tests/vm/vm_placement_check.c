/* SPDX-License-Identifier: MIT */
/*
 * vm_placement_check: where the pages of a prepared file live, asked of the
 * kernel independently of prealloc (mmap the file, move_pages per page).
 *
 *   vm_placement_check [--fill BYTE] [--zero] FILE SPEC
 *
 * SPEC names the node expected for each part of the file, in file order:
 *   "1"            every page on node 1
 *   "0,1"          split evenly in pages, the first nodes take the remainder
 *   "0:32M,1:96M"  exact extents, one after the other
 * --fill writes BYTE to every byte first (to give `clear` work to do);
 * --zero checks that every byte reads as zero.
 * Prints one line per extent and per node seen; exits 0 when every page is
 * where SPEC says (and zero with --zero), 1 otherwise.
 *
 *   vm_placement_check --anon NODE MiB
 *
 * populates anonymous 4K memory on NODE through the library (whose check
 * phase reads each worker's page frames from pagemap, as root) and exits
 * 0 when its report and move_pages both put every page on NODE.
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "prealloc.h"

#define HUGETLBFS_MAGIC_NR 0x958458f6
#define MAX_EXTENTS 64
#define MAX_NODE_SEEN 64
#define QUERY_BATCH 1024

struct extent {
	int node;
	uint64_t bytes;
};

static int parse_spec(char *spec, uint64_t length, uint64_t page, struct extent *ext,
		      unsigned int *ret_nr)
{
	unsigned int nr = 0, sized = 0;
	char *save = NULL;

	for (char *tok = strtok_r(spec, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');

		if (nr == MAX_EXTENTS)
			return -E2BIG;
		if (colon) {
			*colon = '\0';
			if (prealloc_parse_size(colon + 1, &ext[nr].bytes) < 0)
				return -EINVAL;
			sized++;
		}
		ext[nr].node = atoi(tok);
		nr++;
	}
	if (!nr || (sized && sized != nr))
		return -EINVAL;
	if (!sized) {
		/* Even split in page units; the first nodes take the remainder. */
		uint64_t pages = length / page;

		for (unsigned int i = 0; i < nr; i++)
			ext[i].bytes = (pages / nr + (i < pages % nr)) * page;
	}
	*ret_nr = nr;
	return 0;
}

static uint64_t page_size_of(int fd)
{
	struct statfs sfs;

	if (fstatfs(fd, &sfs) == 0 && (unsigned long)sfs.f_type == HUGETLBFS_MAGIC_NR)
		return (uint64_t)sfs.f_bsize;
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

/* --anon: the library's own count against move_pages', for anonymous 4K memory on node. */
static int anon_check(int node, uint64_t mib)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = mib << 20, .nr_nodes = 1, .nodes = &node };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_node_report nr = { .size = sizeof(nr) };
	struct prealloc_region *region = NULL;
	struct prealloc_job *job = NULL;
	struct prealloc_ctx *ctx = NULL;
	uint64_t pages = (mib << 20) / 4096, on = 0;
	int r = prealloc_ctx_new(&ctx);

	if (r == 0)
		r = prealloc_region_new(ctx, &ro, &region);
	if (r == 0)
		r = prealloc_job_start(region, &jo, &job);
	if (r == 0)
		r = prealloc_job_wait(job);
	if (r == 0)
		r = prealloc_job_node_report(job, 0, &nr);
	for (uint64_t i = 0; r == 0 && i < pages; i++) {
		void *p = (uint8_t *)prealloc_region_addr(region) + i * 4096;
		int st = -1;

		if (move_pages(0, 1, &p, NULL, &st, 0) == 0 && st == node)
			on++;
	}
	printf("anon node=%d pages=%llu report on=%llu off=%llu missing=%llu move_pages on=%llu "
	       "result=%s\n", node, (unsigned long long)pages,
	       (unsigned long long)nr.pages_on_node, (unsigned long long)nr.pages_off_node,
	       (unsigned long long)nr.pages_missing, (unsigned long long)on,
	       r ? strerror(-r) : "ok");
	prealloc_job_free(job);
	prealloc_region_free(region);
	prealloc_ctx_free(ctx);
	return r == 0 && nr.node == node && nr.pages_on_node == pages && on == pages ? 0 : 1;
}

/*
 * Where each page of one extent (at offset in map) is, by move_pages,
 * counted into seen[] by node and printed: 1 all on its node, 0 not, -1
 * the query failed.
 */
static int extent_check(uint8_t *map, uint64_t offset, uint64_t page, const struct extent *x,
			uint64_t *seen)
{
	uint64_t npages = x->bytes / page, on = 0, off = 0, missing = 0;
	void *addrs[QUERY_BATCH];
	int status[QUERY_BATCH];

	for (uint64_t done = 0; done < npages;) {
		uint64_t left = npages - done;
		unsigned int n = left < QUERY_BATCH ? (unsigned int)left : QUERY_BATCH;

		for (unsigned int i = 0; i < n; i++)
			addrs[i] = map + offset + (done + i) * page;
		if (move_pages(0, n, addrs, NULL, status, 0) < 0) {
			fprintf(stderr, "move_pages: %s\n", strerror(errno));
			return -1;
		}
		for (unsigned int i = 0; i < n; i++) {
			int s = status[i];

			seen[s >= 0 && s < MAX_NODE_SEEN ? s : MAX_NODE_SEEN]++;
			if (s == x->node)
				on++;
			else if (s >= 0)
				off++;
			else
				missing++;
		}
		done += n;
	}
	printf("extent offset=%llu node=%d pages=%llu on=%llu off=%llu missing=%llu\n",
	       (unsigned long long)offset, x->node, (unsigned long long)npages,
	       (unsigned long long)on, (unsigned long long)off, (unsigned long long)missing);
	return on == npages;
}

int main(int argc, char **argv)
{
	struct extent ext[MAX_EXTENTS];
	uint64_t seen[MAX_NODE_SEEN + 1] = {0}; /* last slot: other/unknown */
	unsigned int nr_ext = 0;
	bool check_zero = false, fill = false, ok = true;
	int fill_byte = 0, argi = 1, fd;
	uint64_t page, length, total = 0, offset = 0;
	struct stat st;
	uint8_t *map;

	if (argc == 4 && !strcmp(argv[1], "--anon"))
		return anon_check(atoi(argv[2]), strtoull(argv[3], NULL, 10));
	for (; argi < argc && argv[argi][0] == '-'; argi++) {
		if (!strcmp(argv[argi], "--zero")) {
			check_zero = true;
		} else if (!strcmp(argv[argi], "--fill") && argi + 1 < argc) {
			fill = true;
			fill_byte = (int)strtol(argv[++argi], NULL, 0);
		} else {
			break;
		}
	}
	if (argc - argi != 2) {
		fprintf(stderr, "usage: %s [--fill BYTE] [--zero] FILE SPEC\n", argv[0]);
		return 1;
	}
	fd = open(argv[argi], fill ? O_RDWR : O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "%s: %s\n", argv[argi], strerror(errno));
		return 1;
	}
	length = (uint64_t)st.st_size;
	page = page_size_of(fd);
	if (!length || length % page) {
		fprintf(stderr, "%s: size %llu is not a positive multiple of page %llu\n",
			argv[argi], (unsigned long long)length, (unsigned long long)page);
		return 1;
	}
	if (parse_spec(argv[argi + 1], length, page, ext, &nr_ext) < 0) {
		fprintf(stderr, "bad SPEC '%s'\n", argv[argi + 1]);
		return 1;
	}
	for (unsigned int i = 0; i < nr_ext; i++)
		total += ext[i].bytes;
	if (total != length) {
		fprintf(stderr, "SPEC covers %llu bytes, file has %llu\n",
			(unsigned long long)total, (unsigned long long)length);
		return 1;
	}
	/*
	 * Reading a hole would allocate a page here, on this process's node,
	 * and hide a missing page: demand the file be fully allocated first.
	 */
	if ((uint64_t)st.st_blocks * 512 < length) {
		printf("missing pages=%llu (file not fully allocated)\n",
		       (unsigned long long)((length - (uint64_t)st.st_blocks * 512) / page));
		return 1;
	}
	map = mmap(NULL, length, fill ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "mmap: %s\n", strerror(errno));
		return 1;
	}
	if (fill)
		memset(map, fill_byte, length);
	/* Map every page into this process so move_pages can see it. */
	for (uint64_t off = 0; off < length; off += page)
		(void)*(volatile uint8_t *)(map + off);

	for (unsigned int e = 0; e < nr_ext; e++) {
		int r = extent_check(map, offset, page, &ext[e], seen);

		if (r < 0)
			return 1;
		if (!r)
			ok = false;
		offset += ext[e].bytes;
	}
	for (int n = 0; n <= MAX_NODE_SEEN; n++) {
		if (!seen[n])
			continue;
		if (n < MAX_NODE_SEEN)
			printf("node=%d pages=%llu\n", n, (unsigned long long)seen[n]);
		else
			printf("node=? pages=%llu\n", (unsigned long long)seen[n]);
	}
	if (check_zero) {
		for (uint64_t i = 0; i < length; i++) {
			if (map[i]) {
				printf("nonzero offset=%llu\n", (unsigned long long)i);
				ok = false;
				break;
			}
		}
	}
	printf("page_size=%llu result=%s\n", (unsigned long long)page, ok ? "ok" : "MISPLACED");
	munmap(map, length);
	close(fd);
	return ok ? 0 : 1;
}
