/* SPDX-License-Identifier: MIT */
/* Size, node-list, node, seconds and page-size parsers: good input, garbage and overflow. */
#include <errno.h>
#include <string.h>

#include "cli.h"
#include "tap.h"

static void size_case(const char *s, int want_ret, uint64_t want)
{
	uint64_t v = 0xdeadbeef;
	int r = prealloc_parse_size(s, &v);

	if (want_ret == 0)
		tap_ok(r == 0 && v == want, "size '%s' = %llu (got %d, %llu)", s,
		       (unsigned long long)want, r, (unsigned long long)v);
	else
		tap_ok(r == want_ret && v == 0xdeadbeef, "size '%s' rejected with %d (got %d)", s,
		       want_ret, r);
}

static void node_case(const char *spec, int want_ret, unsigned int nr, const int *nodes,
		      const uint64_t *bytes)
{
	struct node_request req;
	char err[256] = "";
	int r;
	bool same = true;

	memset(&req, 0, sizeof(req));
	r = parse_node_spec(spec, &req, err, sizeof(err));
	if (want_ret) {
		tap_ok(r == want_ret && err[0], "node spec '%s' rejected (%d): %s", spec, r, err);
		return;
	}
	same = r == 0 && req.nr == nr;
	for (unsigned int i = 0; same && i < nr; i++)
		same = req.nodes[i] == nodes[i] && req.bytes[i] == (bytes ? bytes[i] : 0);
	tap_ok(same, "node spec '%s' parses (%d, %s)", spec, r, err);
}

/* Sizes: suffixes, case, bounds, and what is refused. */
static void test_sizes(void)
{
	const uint64_t K = 1024, M = K * K, G = M * K, T = G * K;

	size_case("0", 0, 0);
	size_case("4096", 0, 4096);
	size_case("512M", 0, 512 * M);
	size_case("512m", 0, 512 * M);
	size_case("1G", 0, G);
	size_case("4GiB", 0, 4 * G);
	size_case("4gib", 0, 4 * G);
	size_case("2KB", 0, 2 * K);
	size_case("3T", 0, 3 * T);
	size_case("7TiB", 0, 7 * T);
	size_case("100B", 0, 100);
	size_case("18446744073709551615", 0, UINT64_MAX);
	size_case("18446744073709551616", -ERANGE, 0);
	size_case("99999999999999999999999", -ERANGE, 0);
	size_case("16777216T", -ERANGE, 0);
	size_case("16777215T", 0, 16777215 * T);
	size_case("", -EINVAL, 0);
	size_case("G", -EINVAL, 0);
	size_case("-1G", -EINVAL, 0);
	size_case("+1G", -EINVAL, 0);
	size_case(" 1G", -EINVAL, 0);
	size_case("1G ", -EINVAL, 0);
	/* A decimal fraction with a binary unit (QEMU's -m 1.5G), rounded up to a whole byte. */
	size_case("1.5G", 0, 3 * G / 2);
	size_case("0.25T", 0, T / 4);
	size_case("1.5GiB", 0, 3 * G / 2);
	size_case("2.5k", 0, 2560);
	size_case("0.001K", 0, 2);
	size_case("1.000000000000000000001G", 0, G + 1);
	size_case("16777215.5T", 0, 16777215 * T + T / 2);
	size_case("16777215.99999999999999999999T", -ERANGE, 0);
	size_case("16777216.0T", -ERANGE, 0);
	size_case("1.5", -EINVAL, 0);
	size_case("1.5B", -EINVAL, 0);
	size_case("1.G", -EINVAL, 0);
	size_case(".5G", -EINVAL, 0);
	size_case("1.5.5G", -EINVAL, 0);
	size_case("1,5G", -EINVAL, 0);
	size_case("1X", -EINVAL, 0);
	size_case("1GG", -EINVAL, 0);
	size_case("1GiBx", -EINVAL, 0);
	size_case("1iB", -EINVAL, 0);
	size_case("0x10", -EINVAL, 0);
	size_case("1BB", -EINVAL, 0);
}

/* Node specs: lists, ranges, sizes per node, and what is refused. */
static void test_node_specs(void)
{
	const uint64_t M = UINT64_C(1) << 20, G = UINT64_C(1) << 30;

	node_case("0", 0, 1, (int[]){ 0 }, NULL);
	node_case("0,1", 0, 2, (int[]){ 0, 1 }, NULL);
	node_case("0-3", 0, 4, (int[]){ 0, 1, 2, 3 }, NULL);
	node_case("5,0-1", 0, 3, (int[]){ 5, 0, 1 }, NULL);
	node_case("0:64G", 0, 1, (int[]){ 0 }, (uint64_t[]){ 64 * G });
	node_case("0:64G,1:2M", 0, 2, (int[]){ 0, 1 }, (uint64_t[]){ 64 * G, 2 * M });
	node_case("1023", 0, 1, (int[]){ 1023 }, NULL);
	node_case("1024", -ERANGE, 0, NULL, NULL);
	node_case("99999999999999999999", -ERANGE, 0, NULL, NULL);
	node_case("4294967296", -ERANGE, 0, NULL, NULL);	/* 2^32: not node 0 */
	node_case("", -EINVAL, 0, NULL, NULL);
	node_case(",", -EINVAL, 0, NULL, NULL);
	node_case("0,", -EINVAL, 0, NULL, NULL);
	node_case("a", -EINVAL, 0, NULL, NULL);
	node_case("-1", -EINVAL, 0, NULL, NULL);
	node_case("3-1", -EINVAL, 0, NULL, NULL);
	node_case("0,0", -EINVAL, 0, NULL, NULL);
	node_case("0-1,1", -EINVAL, 0, NULL, NULL);
	node_case("0:", -EINVAL, 0, NULL, NULL);
	node_case("0:0", -EINVAL, 0, NULL, NULL);
	node_case("0:1Q", -EINVAL, 0, NULL, NULL);
	node_case("0:99999999999T", -ERANGE, 0, NULL, NULL);
	node_case("0-1:4G", -EINVAL, 0, NULL, NULL);
	node_case("0:4G,1", -EINVAL, 0, NULL, NULL);
	node_case("0,1:4G", -EINVAL, 0, NULL, NULL);
	node_case("0 ", -EINVAL, 0, NULL, NULL);
}

/* Repeated --node options accumulate into one request. */
static void test_node_accumulate(void)
{
	const uint64_t G = UINT64_C(1) << 30;
	struct node_request req;
	char err[128];

	memset(&req, 0, sizeof(req));
	tap_ok(parse_node_spec("0:1G", &req, err, sizeof(err)) == 0 &&
		       parse_node_spec("1:3G", &req, err, sizeof(err)) == 0 && req.nr == 2 &&
		       req.sized && req.bytes[1] == 3 * G,
	       "--node 0:1G --node 1:3G accumulate");
	tap_ok(parse_node_spec("1", &req, err, sizeof(err)) < 0,
	       "--node 1 after sized nodes is refused: %s", err);
	tap_ok(parse_node_spec("0:1G", &req, err, sizeof(err)) < 0,
	       "a node repeated across options is refused: %s", err);
}

/* Page sizes by name and by bytes. */
static void test_page_sizes(void)
{
	static const struct {
		const char *s;
		uint64_t want;
		bool ok;
	} pages[] = {
		{ "4k", PREALLOC_PAGE_4K, true }, { "4K", PREALLOC_PAGE_4K, true },
		{ "2M", PREALLOC_PAGE_2M, true }, { "2m", PREALLOC_PAGE_2M, true },
		{ "1G", PREALLOC_PAGE_1G, true }, { "2MiB", PREALLOC_PAGE_2M, true },
		{ "thp", PAGE_SIZE_THP, true },	  { "auto", PAGE_SIZE_AUTO, true },
		{ "8k", 0, false },		  { "", 0, false },
		{ "huge", 0, false },		  { "2097152", PREALLOC_PAGE_2M, true },
	};
	for (size_t i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		uint64_t v = 12345;
		char err[128] = "";
		int r = parse_page_size(pages[i].s, &v, err, sizeof(err));

		tap_ok(pages[i].ok ? r == 0 && v == pages[i].want : r < 0 && err[0],
		       "page size '%s' %s", pages[i].s, pages[i].ok ? "accepted" : "rejected");
	}
}

/* Thread counts: 1 to 65536, whole numbers only. */
static void test_threads(void)
{
	static const struct {
		const char *s;
		unsigned int want;
	} threads[] = {
		{ "1", 1 }, { "16", 16 }, { "65536", 65536 }, { "0", 0 }, { "65537", 0 },
		{ "-3", 0 }, { "+3", 0 }, { "3x", 0 }, { "", 0 }, { " 3", 0 },
		{ "99999999999999999999999", 0 },
	};
	for (size_t i = 0; i < sizeof(threads) / sizeof(threads[0]); i++) {
		unsigned int v = 777;
		char err[128] = "";
		int r = parse_threads(threads[i].s, &v, err, sizeof(err));

		tap_ok(threads[i].want ? r == 0 && v == threads[i].want : r < 0 && v == 777 && err[0],
		       "thread count '%s' %s", threads[i].s, threads[i].want ? "accepted" : "rejected");
	}
}

/* One node (warm take --node): in range, or refused with the value named. */
static void test_one_node(void)
{
	static const struct {
		const char *s;
		int want;	/* the node, or the error */
	} nodes[] = {
		{ "0", 0 }, { "7", 7 }, { "1023", 1023 }, { "0001", 1 }, { "1024", -ERANGE },
		{ "4294967296", -ERANGE }, { "4294967297", -ERANGE },
		{ "18446744073709551616", -ERANGE }, { "-1", -EINVAL }, { "", -EINVAL },
		{ "0x1", -EINVAL }, { "1,2", -EINVAL }, { "0-1", -EINVAL }, { " 1", -EINVAL },
		{ "1 ", -EINVAL }, { "+1", -EINVAL },
	};
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		char err[128] = "";
		int v = 777, r = parse_node(nodes[i].s, &v, err, sizeof(err));

		if (nodes[i].want >= 0)
			tap_ok(r == 0 && v == nodes[i].want, "node '%s' is %d (r %d, v %d)", nodes[i].s,
			       nodes[i].want, r, v);
		else
			tap_ok(r == nodes[i].want && v == 777 && strstr(err, nodes[i].s) &&
				       strstr(err, "0 to 1023"),
			       "node '%s' refused (%d), naming it: %s", nodes[i].s, r, err);
	}
}

/* Seconds (warm take --expires): 1 to the bound, no overflow on the way. */
static void test_seconds(void)
{
	static const struct {
		const char *s;
		unsigned int max, want;	/* want 0: refused */
	} secs[] = {
		{ "1", EXPIRES_MAX_SECONDS, 1 },
		{ "315360000", EXPIRES_MAX_SECONDS, 315360000 },
		{ "315360001", EXPIRES_MAX_SECONDS, 0 },
		{ "9223372036854775807", EXPIRES_MAX_SECONDS, 0 },
		{ "99999999999999999999999", EXPIRES_MAX_SECONDS, 0 },
		{ "4294967295", UINT32_MAX, UINT32_MAX },
		{ "4294967296", UINT32_MAX, 0 },
		{ "0", EXPIRES_MAX_SECONDS, 0 }, { "-1", EXPIRES_MAX_SECONDS, 0 },
		{ "", EXPIRES_MAX_SECONDS, 0 }, { "1s", EXPIRES_MAX_SECONDS, 0 },
		{ "+5", EXPIRES_MAX_SECONDS, 0 }, { "1e3", EXPIRES_MAX_SECONDS, 0 },
	};
	tap_ok(EXPIRES_MAX_SECONDS == 315360000, "--expires at most ten years of 365 days");
	for (size_t i = 0; i < sizeof(secs) / sizeof(secs[0]); i++) {
		unsigned int v = 777;
		char err[128] = "";
		int r = parse_seconds(secs[i].s, secs[i].max, &v, err, sizeof(err));

		tap_ok(secs[i].want ? r == 0 && v == secs[i].want
				    : r < 0 && v == 777 && strstr(err, secs[i].s),
		       "seconds '%s' (at most %u) %s (r %d: %s)", secs[i].s, secs[i].max,
		       secs[i].want ? "taken" : "refused", r, err);
	}
}

/* Page labels and the library's node lists and sizes as text. */
static void test_labels(void)
{
	tap_ok(!strcmp(page_label(PREALLOC_PAGE_2M), "2M") && !strcmp(page_label(PAGE_SIZE_THP), "thp") &&
		       !strcmp(page_label(PREALLOC_PAGE_4K), "4k") &&
		       !strcmp(page_label(PREALLOC_PAGE_1G), "1G") &&
		       !strcmp(page_label(PAGE_SIZE_AUTO), "auto"),
	       "page labels round-trip the parser's values");

	char buf[64];
	tap_ok(!strcmp(prealloc_format_list((int[]){ 3, 0, 1, 2, 7 }, 5, buf, sizeof(buf)), "0-3,7"),
	       "node ranges render as 0-3,7 (%s)", buf);
	tap_ok(!strcmp(prealloc_format_size(512 << 20, buf, sizeof(buf)), "512 MiB"), "512 MiB renders (%s)",
	       buf);
}

int main(void)
{
	test_sizes();
	test_node_specs();
	test_node_accumulate();
	test_page_sizes();
	test_threads();
	test_one_node();
	test_seconds();
	test_labels();
	return tap_done();
}
