/* SPDX-License-Identifier: MIT */
/*
 * Planner properties over many shapes: extents cover the region exactly
 * once in order, chunks cover each extent exactly once, every chunk is page
 * aligned and within its extent, and the queue is balanced.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "tap.h"

static bool check_chunks(const struct prealloc_extent *ext, unsigned int nr, uint64_t page,
			 uint64_t chunk, const char **why)
{
	size_t n = chunks_cut(ext, nr, page, chunk, NULL);
	struct chunk *c = calloc(n ? n : 1, sizeof(*c));
	unsigned int e = 0;
	uint64_t expect = nr ? ext[0].offset : 0;
	bool ok = true;

	*why = "";
	if (chunks_cut(ext, nr, page, chunk, c) != n) {
		*why = "count differs between passes";
		ok = false;
	}
	for (size_t i = 0; ok && i < n; i++) {
		if (c[i].extent != e) {
			if (expect != ext[e].offset + ext[e].length) {
				*why = "extent not fully covered";
				ok = false;
				break;
			}
			e = c[i].extent;
			expect = ext[e].offset;
		}
		if (c[i].offset != expect) {
			*why = "gap or overlap";
			ok = false;
		} else if (c[i].offset % page || c[i].length % page || !c[i].length) {
			*why = "not page aligned";
			ok = false;
		} else if (c[i].length > MAX(chunk / page * page, page)) {
			*why = "chunk larger than asked";
			ok = false;
		} else if (c[i].offset + c[i].length > ext[e].offset + ext[e].length) {
			*why = "chunk crosses its extent";
			ok = false;
		}
		expect = c[i].offset + c[i].length;
	}
	if (ok && nr && (e != nr - 1 || expect != ext[nr - 1].offset + ext[nr - 1].length)) {
		*why = "last extent not covered";
		ok = false;
	}
	free(c);
	return ok;
}

int main(void)
{
	static const uint64_t pages[] = { PREALLOC_PAGE_4K, PREALLOC_PAGE_2M, PREALLOC_PAGE_1G };
	static const unsigned int node_counts[] = { 1, 2, 3, 4, 7, 16 };
	unsigned int bad_extents = 0, bad_chunks = 0, cases = 0;
	const char *why = "";
	struct prealloc_extent ext[16];
	uint64_t seed = 12345;

	for (size_t p = 0; p < 3; p++) {
		for (size_t k = 0; k < sizeof(node_counts) / sizeof(node_counts[0]); k++) {
			unsigned int nr = node_counts[k];
			int nodes[16];

			for (unsigned int i = 0; i < nr; i++)
				nodes[i] = (int)(i * 2);
			for (int t = 0; t < 200; t++) {
				uint64_t npages, len, sum = 0;
				unsigned int threads;
				bool ok;

				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				npages = nr + (seed >> 33) % (pages[p] == PREALLOC_PAGE_4K ? 4000000 : 3000);
				len = npages * pages[p];
				threads = 1 + (unsigned int)((seed >> 20) % 64);
				cases++;
				if (extents_split(len, pages[p], nodes, NULL, nr, ext) < 0) {
					bad_extents++;
					continue;
				}
				/* Even split: exact cover, page sizes differ by at most one page. */
				uint64_t lo = UINT64_MAX, hi = 0;
				ok = true;
				for (unsigned int i = 0; i < nr; i++) {
					ok &= ext[i].offset == sum && ext[i].node == nodes[i] &&
					      ext[i].length % pages[p] == 0;
					sum += ext[i].length;
					lo = MIN(lo, ext[i].length);
					hi = MAX(hi, ext[i].length);
				}
				ok &= sum == len && hi - lo <= pages[p];
				if (!ok)
					bad_extents++;
				uint64_t chunk = chunk_size_for(ext[0].length, pages[p], threads);
				if (chunk % pages[p] || chunk == 0 || chunk > (UINT64_C(1) << 30) + pages[p] ||
				    !check_chunks(ext, nr, pages[p], chunk, &why))
					bad_chunks++;
			}
		}
	}
	tap_ok(bad_extents == 0, "even extents cover %u random regions exactly (%u bad)", cases,
	       bad_extents);
	tap_ok(bad_chunks == 0, "chunks cover every extent once, aligned (%u bad) %s", bad_chunks,
	       why);

	/* Explicit sizes: honoured in order; must add up and be page multiples. */
	const uint64_t M = UINT64_C(1) << 20, G = M << 10;
	int two[] = { 0, 1 };
	tap_ok(extents_split(3 * G, 2 * M, two, (uint64_t[]){ G, 2 * G }, 2, ext) == 0 &&
		       ext[0].length == G && ext[1].offset == G && ext[1].length == 2 * G,
	       "explicit sizes honoured in order");
	tap_ok(extents_split(3 * G, 2 * M, two, (uint64_t[]){ G, G }, 2, ext) == -EINVAL,
	       "explicit sizes that do not add up are refused");
	tap_ok(extents_split(3 * G, 2 * M, two, (uint64_t[]){ G + 4096, 2 * G - 4096 }, 2, ext) ==
		       -EINVAL,
	       "explicit sizes off the page grid are refused");
	tap_ok(extents_split(3 * G, 2 * M, two, (uint64_t[]){ 0, 3 * G }, 2, ext) == -EINVAL,
	       "a zero-size node is refused");
	tap_ok(extents_split(2 * M, 2 * M, two, NULL, 2, ext) == -EINVAL,
	       "fewer pages than nodes is refused");
	tap_ok(extents_split(3 * M, 2 * M, two, NULL, 1, ext) == -EINVAL,
	       "a length off the page grid is refused");

	/* Chunk size: ~1 GiB for big regions, smaller for small, >= one page. */
	tap_ok(chunk_size_for(1024 * G, 2 * M, 16) == G, "1 TiB over 16 threads: 1 GiB chunks");
	tap_ok(chunk_size_for(64 * M, 4096, 2) == 8 * M, "64 MiB over 2 threads: 8 MiB chunks");
	tap_ok(chunk_size_for(4 * G, 1 * G, 8) == G, "1G pages: never below one page");
	/* 4 KiB / (1 thread * 4 chunks) = 1 KiB, raised to the 2 MiB floor (CHUNK_MIN):
	 * a chunk may be longer than the extent; chunks_cut() clips it to the end. */
	tap_ok(chunk_size_for(4096, 4096, 1) == 2 * M, "tiny region: the 2 MiB minimum chunk (%llu)",
	       (unsigned long long)chunk_size_for(4096, 4096, 1));

	/* Balance: with 4 chunks per thread no worker waits on a lone big chunk. */
	uint64_t len = 16 * G;
	unsigned int threads = 16;
	uint64_t chunk = chunk_size_for(len, 2 * M, threads);
	size_t n = chunks_cut(&(struct prealloc_extent){ 0, 0, len }, 1, 2 * M, chunk, NULL);
	tap_ok(n >= (size_t)threads * 4 - 1, "16 GiB over 16 threads gives >= 4 chunks each (%zu)", n);
	return tap_done();
}
