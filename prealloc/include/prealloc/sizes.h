/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: page sizes and their names, sizes and node lists as text.
 * Included by <prealloc.h>, the one header a user includes; the
 * conventions are there. docs/abi.md: how it may change.
 */
#ifndef LIBPREALLOC_SIZES_H
#define LIBPREALLOC_SIZES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- page sizes ---------------------------------------------------------- */

#define PREALLOC_PAGE_4K (UINT64_C(4) << 10)
#define PREALLOC_PAGE_2M (UINT64_C(2) << 20)
#define PREALLOC_PAGE_1G (UINT64_C(1) << 30)
#define PREALLOC_PAGE_AUTO UINT64_C(0)	/* 2M when it fits, else 4k: the reason is reported */
#define PREALLOC_PAGE_THP UINT64_C(1)	/* tmpfs with transparent hugepages */

/* "auto", "thp", "4k", "2M", "1G" for those page sizes, "?" for any other. */
const char *prealloc_page_name(uint64_t page_size);

/* ---- sizes and node lists as text ---------------------------------------- */

/*
 * Parses "512M", "1G", "4GiB", "4096"; K/M/G/T are binary (1024) multiples.
 * A decimal fraction with one of them ("1.5G", "0.25T", as QEMU's -m takes)
 * is rounded up to a whole byte (the CLI then rounds it up to the page size).
 * -EINVAL on garbage (a fraction of bytes too), -ERANGE on overflow.
 */
int prealloc_parse_size(const char *s, uint64_t *ret_bytes);
/* bytes as "512 MiB", "1.50 GiB", "4 KiB" (binary units) into buf; returns buf. */
const char *prealloc_format_size(uint64_t bytes, char *buf, size_t len);
/*
 * A set of node (or CPU) numbers as sorted ranges, "0-3,7", into buf (cut
 * to len; "" for none); returns buf. Numbers outside 0..1023 are left out.
 */
const char *prealloc_format_list(const int *v, unsigned int nr, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
