/* SPDX-License-Identifier: MIT */
/*
 * Where pages are, and whether memory reads as zero. Two ways to learn
 * placement: /proc/self/numa_maps, where the kernel counts a whole mapping's
 * pages per node in one walk, and move_pages, asked page by page (batched),
 * for ranges that do not line up with whole mappings.
 */
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu.h"
#include "memory.h"

#define QUERY_BATCH 1024

int placement_query(uint8_t *addr, uint64_t len, uint64_t page_size, int node,
		    uint64_t *ret_on, uint64_t *ret_off, uint64_t *ret_missing)
{
	void *pages[QUERY_BATCH];
	int status[QUERY_BATCH];
	uint64_t on = 0, off = 0, missing = 0;
	uint64_t npages = len / page_size;

	for (uint64_t done = 0; done < npages;) {
		unsigned int n = (unsigned int)MIN(npages - done, QUERY_BATCH);

		for (unsigned int i = 0; i < n; i++)
			pages[i] = addr + (done + i) * page_size;
		/* nodes == NULL: only report where each page is. */
		if (move_pages(0, n, pages, NULL, status, 0) < 0)
			return -errno;
		for (unsigned int i = 0; i < n; i++) {
			if (status[i] == node)
				on++;
			else if (status[i] >= 0)
				off++;
			else
				missing++;
		}
		done += n;
	}
	*ret_on += on;
	*ret_off += off;
	*ret_missing += missing;
	return 0;
}

zero_scan_fn zero_scan_pick(uint64_t features)
{
	for (unsigned int i = 0; i < zero_scans_count; i++)
		if (zero_scans[i].fn && (zero_scans[i].requires & features) == zero_scans[i].requires)
			return zero_scans[i].fn;
	return zero_scan_c;
}

uint64_t zero_check(const uint8_t *addr, uint64_t len)
{
	/* The fastest scan the CPU allows passes the zeroes; the bytes left, one by one. */
	uint64_t i = zero_scan_pick(cpu_get()->features)(addr, len);

	for (; i < len; i++)
		if (addr[i])
			return i;
	return len;
}

struct vma_span {
	uint64_t start, end;
};

/* The whole text of a /proc file. */
static char *slurp(const char *path)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	FILE *f = fopen(path, "re");

	if (!buf || !f) {
		free(buf);
		if (f)
			fclose(f);
		return NULL;
	}
	for (;;) {
		size_t n = fread(buf + len, 1, cap - len - 1, f);

		len += n;
		if (len < cap - 1)
			break;
		char *bigger = realloc(buf, cap * 2);

		if (!bigger) {
			free(buf);
			fclose(f);
			return NULL;
		}
		buf = bigger;
		cap *= 2;
	}
	fclose(f);
	buf[len] = '\0';
	return buf;
}

/* Mappings in [lo, hi) from /proc/self/maps; they must tile it exactly. */
static int spans_in(uint64_t lo, uint64_t hi, struct vma_span **ret, size_t *ret_n)
{
	char *maps = slurp("/proc/self/maps"), *line, *save = NULL;
	struct vma_span *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t expect = lo;
	int r = 0;

	if (!maps)
		return -ENOTSUP;
	for (line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, e;

		if (sscanf(line, "%llx-%llx", &s, &e) != 2 || e <= lo || s >= hi)
			continue;
		if (s != expect) {	/* straddles the start, or a gap */
			r = -ENOTSUP;
			break;
		}
		if (n == cap) {
			struct vma_span *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = (struct vma_span){ s, e };
		expect = e;
	}
	free(maps);
	if (!r && expect != hi)
		r = -ENOTSUP;	/* straddles the end, or ends short */
	if (r) {
		free(v);
		return r;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int placement_scan(uint8_t *addr, uint64_t len, placement_fn fn, void *arg)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len;
	uint64_t *counts = NULL;
	struct vma_span *v = NULL;
	char *nm = NULL, *line, *save = NULL;
	size_t n = 0, seen = 0;
	int r;

	r = spans_in(lo, hi, &v, &n);
	if (r < 0)
		return r;
	counts = calloc(PREALLOC_MAX_NODES, sizeof(*counts));
	nm = slurp("/proc/self/numa_maps");
	if (!counts || !nm) {
		r = -ENOTSUP;
		goto out;
	}
	for (line = strtok_r(nm, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long start, kb = 4;
		char *tok, *tsave = NULL;
		size_t i;

		if (sscanf(line, "%llx", &start) != 1 || start < lo || start >= hi)
			continue;
		for (i = 0; i < n && v[i].start != start; i++)
			;
		if (i == n) {	/* the mappings changed between the two reads */
			r = -EAGAIN;
			goto out;
		}
		memset(counts, 0, PREALLOC_MAX_NODES * sizeof(*counts));
		for (tok = strtok_r(line, " ", &tsave); tok; tok = strtok_r(NULL, " ", &tsave)) {
			unsigned long long node, pages;
			char tail;

			if (sscanf(tok, "N%llu=%llu%c", &node, &pages, &tail) == 2 &&
			    node < PREALLOC_MAX_NODES)
				counts[node] = pages;
			else
				sscanf(tok, "kernelpagesize_kB=%llu", &kb);
		}
		r = fn(arg, v[i].start, v[i].end, (uint64_t)kb << 10, counts);
		if (r < 0)
			goto out;
		seen++;
	}
	r = seen == n ? 0 : -EAGAIN;
out:
	free(nm);
	free(counts);
	free(v);
	return r;
}

/* The smaps fields that count huge-page-mapped bytes, in kB. */
static const char *const huge_fields[] = { "AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:" };

/* Adds a smaps line's huge kB. */
static void huge_line(const char *line, uint64_t *huge)
{
	unsigned long long kb;

	for (size_t f = 0; f < ARRAY_SIZE(huge_fields); f++) {
		size_t n = strlen(huge_fields[f]);

		if (!strncmp(line, huge_fields[f], n) && sscanf(line + n, "%llu", &kb) == 1)
			*huge += (uint64_t)kb << 10;
	}
}

int huge_scan(uint8_t *addr, uint64_t len, huge_fn fn, void *arg)
{
	uint64_t lo = (uintptr_t)addr, hi = lo + len, start = 0, end = 0, huge = 0;
	char *sm = slurp("/proc/self/smaps"), *line, *save = NULL;
	bool in = false;
	int r = 0;

	if (!sm)
		return -ENOTSUP;
	for (line = strtok_r(sm, "\n", &save); line && r == 0; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long s, e;
		char c;

		/* A mapping's header: "start-end perms ..."; no field name parses so. */
		if (sscanf(line, "%llx-%llx %c", &s, &e, &c) == 3) {
			in = e > lo && s < hi;
			start = MAX(s, lo);
			end = MIN(e, hi);
			huge = 0;
			continue;
		}
		if (!in)
			continue;
		huge_line(line, &huge);
		/* VmFlags is a mapping's last field. */
		if (!strncmp(line, "VmFlags:", 8))
			r = fn(arg, start, end, huge);
	}
	free(sm);
	return r;
}
