/* SPDX-License-Identifier: MIT */
/*
 * The clear kernels ranked for large clears on this machine (clear/rank.c,
 * clear/auto.c): the file's text round trip and what it refuses; a file of
 * this CPU and microcode decides over the probe limit and is named in the
 * reason, one of another microcode is measured again, nothing decides
 * between the limits, and PREALLOC_CALIBRATION=none means the built-in
 * rules alone. The crossover kept in the same file: its lines round trip,
 * and at and below the cached limit it sends a footprint past it to the
 * probe and keeps memset within it, named in the reason. The measurement
 * itself runs once for real, and puts the fastest first. The ranking is
 * consulted with the whole job's footprint (size x threads), at the probe
 * limit exactly, a page over and a page under (issue 42).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "clear.h"
#include "other-kernel.h"
#include "tap.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* A ranking of this CPU (microcode as given) naming first, then second. */
static void rank_of_this_cpu(struct clear_rank *r, const char *microcode, const char *first,
			     const char *second)
{
	const struct cpu_id *cpu = cpu_get();

	memset(r, 0, sizeof(*r));
	snprintf(r->vendor, sizeof(r->vendor), "%s", cpu->vendor);
	snprintf(r->model_name, sizeof(r->model_name), "%s", cpu->model_name);
	r->family = cpu->family;
	r->model = cpu->model;
	snprintf(r->microcode, sizeof(r->microcode), "%s", microcode);
	r->nr = 2;
	snprintf(r->k[0].kernel, sizeof(r->k[0].kernel), "%s", first);
	r->k[0].gbps = 30.5;
	snprintf(r->k[1].kernel, sizeof(r->k[1].kernel), "%s", second);
	r->k[1].gbps = 12.25;
	r->buffer_bytes = 128 * MiB;
	r->rounds = 6;
	r->seconds = 0.1;
}

static void test_format(void)
{
	struct clear_rank r, back;
	char text[2048], mc[24];

	cpu_microcode(mc, sizeof(mc));
	rank_of_this_cpu(&r, mc, "c", other_kernel());
	tap_ok(clear_rank_format(&r, NULL, text, sizeof(text)) > 0 &&
		       clear_rank_parse(text, &back, NULL) == 0 && !strcmp(back.k[0].kernel, "c") &&
		       back.k[1].gbps == 12.25 && back.nr == 2 && back.buffer_bytes == 128 * MiB &&
		       clear_rank_matches(&back, cpu_get()),
	       "format, parse: the same ranking back, of this CPU");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\n", &back, NULL) == 0,
	       "the smallest file taken");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel warp_drive 9.0\n", &back, NULL) ==
		       -EINVAL,
	       "an unknown kernel is refused");
	tap_ok(clear_rank_parse("vendor X\nkernel c 9.0\n", &back, NULL) == -EINVAL,
	       "no version: refused");
	tap_ok(clear_rank_parse("version 1\nvendor X\nkernel c 9.0\n", &back, NULL) == -EINVAL,
	       "version 1 (no crossover): refused, so measured again");
	tap_ok(clear_rank_parse("version 2\nvendor X\nkernel c 9.0\n", &back, NULL) == -EINVAL,
	       "version 2 (no crossover above the cached limit): refused, so measured again");
	tap_ok(clear_rank_parse("version 3\nvendor X\n", &back, NULL) == -EINVAL,
	       "no kernel: refused");
	rank_of_this_cpu(&r, "0xdeadbeef", "c", other_kernel());
	tap_ok(strcmp(mc, "0xdeadbeef") && !clear_rank_matches(&r, cpu_get()),
	       "another microcode (this CPU: %s): not this machine's", mc);
}

/* A crossover of this CPU's probe: NT over memset ratio[i] at the cached limit >> i. */
static struct clear_crossover crossover_here(unsigned int nr, const double *ratio)
{
	const struct cpu_id *cpu = cpu_get();
	struct clear_choice pair = clear_select(cpu, clear_probe_limit(cpu->llc_bytes), 1, NULL,
						NULL, 0);
	struct clear_crossover x = { .nr = nr, .seconds = 0.025 };

	snprintf(x.nt, sizeof(x.nt), "%s", pair.nt ? pair.nt->name : "c");
	for (unsigned int i = 0; i < nr; i++)
		x.at[i] = (struct clear_cross_point){
			.bytes = clear_cached_limit(cpu->llc_bytes) >> i, .rounds = 5,
			.cached_gbps = 12.5, .nt_gbps = 12.5 * ratio[i], .nt_over_cached = ratio[i] };
	return x;
}

/* x with its points at sizes[i] (0 ends), NT over memset ratio[i] at each. */
static struct clear_crossover cross_points(const uint64_t *sizes, const double *ratio)
{
	struct clear_crossover x = { .nr = 0 };

	for (; x.nr < CLEAR_CROSS_SIZES && sizes[x.nr]; x.nr++)
		x.at[x.nr] = (struct clear_cross_point){ .bytes = sizes[x.nr], .rounds = 5,
							 .nt_over_cached = ratio[x.nr] };
	return x;
}

/* x's points above the cached limit: up[i] at sizes[i] (0 ends), NT over memset ratio[i]. */
static void cross_up(struct clear_crossover *x, const uint64_t *sizes, const double *ratio)
{
	for (x->nr_up = 0; x->nr_up < CLEAR_CROSS_UP_SIZES && sizes[x->nr_up]; x->nr_up++)
		x->up[x->nr_up] = (struct clear_cross_point){ .bytes = sizes[x->nr_up],
							      .rounds = 5,
							      .nt_over_cached = ratio[x->nr_up] };
}

/* Upward: from twice the cached limit by doubling while memset holds, to the probe limit. */
static void test_cross_next_up(void)
{
	static const double held[] = { 0.5, 0.5, 0.5, 0.5 };
	static const struct {
		const char *what;
		double at0;		/* the cached limit's ratio; 0: not measured */
		uint64_t limit, probe, sizes[5];
		double ratio_last, elapsed;
		uint64_t want;
	} t[] = {
		{ "memset held at the limit: twice it next", 0.5, 8 * MiB, 64 * MiB, { 0 }, 0, 0,
		  16 * MiB },
		{ "NT led at the limit: nothing above", 1.4, 8 * MiB, 64 * MiB, { 0 }, 0, 0, 0 },
		{ "NT led by exactly the lead at the limit: nothing above", CLEAR_CROSS_LEAD,
		  8 * MiB, 64 * MiB, { 0 }, 0, 0, 0 },
		{ "the limit not measured: nothing above", 0, 8 * MiB, 64 * MiB, { 0 }, 0, 0, 0 },
		{ "memset held at 16 MiB: 32 next", 0.5, 8 * MiB, 64 * MiB, { 16 * MiB, 0 }, 0.45,
		  0.01, 32 * MiB },
		{ "memset held at 32 MiB: the probe limit, 64, next", 0.5, 8 * MiB, 64 * MiB,
		  { 16 * MiB, 32 * MiB, 0 }, 0.8, 0.01, 64 * MiB },
		{ "NT led at 16 MiB: stop", 0.5, 8 * MiB, 64 * MiB, { 16 * MiB, 0 }, 1.2, 0.01, 0 },
		{ "NT led at 16 MiB by exactly the lead: stop", 0.5, 8 * MiB, 64 * MiB,
		  { 16 * MiB, 0 }, CLEAR_CROSS_LEAD, 0.01, 0 },
		{ "memset held at the probe limit: nothing past it", 0.5, 8 * MiB, 64 * MiB,
		  { 16 * MiB, 32 * MiB, 64 * MiB, 0 }, 0.9, 0.01, 0 },
		{ "memset held, but the budget is spent: stop", 0.5, 8 * MiB, 64 * MiB,
		  { 16 * MiB, 0 }, 0.5, CLEAR_CROSS_UP_BUDGET_S + 0.001, 0 },
		{ "memset held at the budget exactly: twice it next", 0.5, 8 * MiB, 64 * MiB,
		  { 16 * MiB, 0 }, 0.5, CLEAR_CROSS_UP_BUDGET_S, 32 * MiB },
		{ "every size it keeps (4): stop though the probe limit is above", 0.5, 4 * MiB,
		  128 * MiB, { 8 * MiB, 16 * MiB, 32 * MiB, 64 * MiB, 0 }, 0.5, 0.01, 0 },
		{ "twice the limit past the probe limit: nothing", 0.5, 8 * MiB, 12 * MiB, { 0 }, 0,
		  0, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		static const uint64_t none[] = { 0 };
		double ratio[CLEAR_CROSS_UP_SIZES];
		uint64_t down[] = { t[i].limit, 0 };
		struct clear_crossover x = cross_points(t[i].at0 > 0 ? down : none, &t[i].at0);
		uint64_t got;

		memcpy(ratio, held, sizeof(ratio));
		cross_up(&x, t[i].sizes, ratio);
		if (x.nr_up)
			x.up[x.nr_up - 1].nt_over_cached = t[i].ratio_last;
		got = clear_cross_next_up(&x, t[i].limit, t[i].probe, t[i].elapsed);
		tap_ok(got == t[i].want, "upward stop rule: %s (%llu KiB, got %llu KiB)", t[i].what,
		       (unsigned long long)(t[i].want >> 10), (unsigned long long)(got >> 10));
	}
}

/* The stop rule: from the cached limit down by halves while NT leads, within its bounds. */
static void test_cross_next(void)
{
	static const double led[] = { 1.4, 1.4, 1.4, 1.4 };
	static const struct {
		const char *what;
		uint64_t limit, buf, sizes[5];
		double ratio_last, elapsed;
		uint64_t want;
	} t[] = {
		{ "the first size: the cached limit", 8 * MiB, 16 * MiB, { 0 }, 0, 0, 8 * MiB },
		{ "the first size: the buffer, when smaller", 8 * MiB, 4 * MiB, { 0 }, 0, 0, 4 * MiB },
		{ "the first size: none under the probe's minimum", MiB, 16 * MiB, { 0 }, 0, 0, 0 },
		{ "the first size: the probe's minimum itself", 2 * MiB, 16 * MiB, { 0 }, 0, 0,
		  2 * MiB },
		{ "NT led at 8 MiB: half of it next", 8 * MiB, 16 * MiB, { 8 * MiB, 0 }, 1.4, 0.01,
		  4 * MiB },
		{ "NT led by exactly the lead: half of it next", 8 * MiB, 16 * MiB, { 8 * MiB, 0 },
		  CLEAR_CROSS_LEAD, 0.01, 4 * MiB },
		{ "NT led at 8 and 4 MiB: the probe's minimum, 2 MiB, next", 8 * MiB, 16 * MiB,
		  { 8 * MiB, 4 * MiB, 0 }, 1.4, 0.01, 2 * MiB },
		{ "NT led at the probe's minimum: nothing under it", 8 * MiB, 16 * MiB,
		  { 8 * MiB, 4 * MiB, 2 * MiB, 0 }, 1.4, 0.01, 0 },
		{ "memset held (NT a hair under the lead): stop", 8 * MiB, 16 * MiB, { 8 * MiB, 0 },
		  CLEAR_CROSS_LEAD - 0.001, 0.01, 0 },
		{ "NT led, but the budget is spent: stop", 8 * MiB, 16 * MiB, { 8 * MiB, 0 }, 1.4,
		  CLEAR_CROSS_BUDGET_S + 0.001, 0 },
		{ "NT led at the budget exactly: half of it next", 8 * MiB, 16 * MiB, { 8 * MiB, 0 },
		  1.4, CLEAR_CROSS_BUDGET_S, 4 * MiB },
		{ "NT led at every size it keeps (4): stop though 2 MiB is left", 32 * MiB, 64 * MiB,
		  { 32 * MiB, 16 * MiB, 8 * MiB, 4 * MiB, 0 }, 1.4, 0.01, 0 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		double ratio[CLEAR_CROSS_SIZES];
		struct clear_crossover x;
		uint64_t got;

		memcpy(ratio, led, sizeof(ratio));
		x = cross_points(t[i].sizes, ratio);
		if (x.nr)
			x.at[x.nr - 1].nt_over_cached = t[i].ratio_last;
		got = clear_cross_next(&x, t[i].limit, t[i].buf, t[i].elapsed);
		tap_ok(got == t[i].want, "crossover stop rule: %s (%llu KiB, got %llu KiB)", t[i].what,
		       (unsigned long long)(t[i].want >> 10), (unsigned long long)(got >> 10));
	}
}

/*
 * A measured crossover holds to the stop rule: from the cached limit down
 * by halves, each size at least CLEAR_PROBE_MIN and timed over at least 5
 * rounds (rank.c's CROSS_MIN_ROUNDS), NT leading at every size but the
 * last, and the last the rule's (memset held, the minimum reached, every
 * size kept, or the budget spent). The file keeps ratios to 3 places.
 */
static void check_cross_rule(const struct clear_crossover *x, uint64_t limit)
{
	bool ok = true;
	char why[256] = "";

	for (unsigned int i = 0; ok && i < x->nr; i++) {
		const struct clear_cross_point *a = &x->at[i];

		if (a->bytes != (i ? x->at[i - 1].bytes / 2 : limit) || a->bytes < CLEAR_PROBE_MIN)
			snprintf(why, sizeof(why), "size %u is %llu KiB", i,
				 (unsigned long long)(a->bytes >> 10));
		else if (a->rounds < 5)
			snprintf(why, sizeof(why), "size %u: %u rounds", i, a->rounds);
		else if (i + 1 < x->nr && a->nt_over_cached < CLEAR_CROSS_LEAD - 0.0005)
			snprintf(why, sizeof(why), "went on past %llu KiB, where memset held (%.3f)",
				 (unsigned long long)(a->bytes >> 10), a->nt_over_cached);
		else if (i + 1 == x->nr && a->nt_over_cached >= CLEAR_CROSS_LEAD + 0.0005 &&
			 a->bytes / 2 >= CLEAR_PROBE_MIN && x->nr < CLEAR_CROSS_SIZES &&
			 x->seconds < CLEAR_CROSS_BUDGET_S - 0.0005)
			snprintf(why, sizeof(why), "stopped at %llu KiB, where NT led (%.3f), %.3f s in",
				 (unsigned long long)(a->bytes >> 10), a->nt_over_cached, x->seconds);
		ok = !why[0];
	}
	/* Upward: only from a limit where memset held, doubling while it holds, to the probe limit. */
	for (unsigned int i = 0; ok && i < x->nr_up; i++) {
		const struct clear_cross_point *a = &x->up[i];

		if (!x->nr || x->at[0].bytes != limit ||
		    x->at[0].nt_over_cached >= CLEAR_CROSS_LEAD + 0.0005)
			snprintf(why, sizeof(why), "measured above a limit where NT led");
		else if (a->bytes != (i ? x->up[i - 1].bytes : limit) * 2 ||
			 a->bytes > clear_probe_limit(cpu_get()->llc_bytes))
			snprintf(why, sizeof(why), "up size %u is %llu KiB", i,
				 (unsigned long long)(a->bytes >> 10));
		else if (a->rounds < 5 && a->bytes <= 16 * MiB)
			snprintf(why, sizeof(why), "up size %u: %u rounds", i, a->rounds);
		else if (i + 1 < x->nr_up && a->nt_over_cached >= CLEAR_CROSS_LEAD - 0.0005)
			snprintf(why, sizeof(why), "went up past %llu KiB, where NT led (%.3f)",
				 (unsigned long long)(a->bytes >> 10), a->nt_over_cached);
		ok = !why[0];
	}
	tap_ok(ok, "... measured by the stop rule: %u sizes from %llu KiB, %u above%s%s", x->nr,
	       (unsigned long long)(limit >> 10), x->nr_up, why[0] ? ": " : "", why);
}

static void test_crossover_format(void)
{
	static const double ratio[] = { 1.4, 0.9 }, held[] = { 0.9 }, up_ratio[] = { 0.45, 1.25 };
	struct clear_crossover x = crossover_here(2, ratio), back;
	struct clear_crossover xu = crossover_here(1, held);
	const uint64_t up_sizes[] = { xu.at[0].bytes * 2, xu.at[0].bytes * 4, 0 };
	struct clear_rank r, rb;
	char text[2048], mc[24];

	cpu_microcode(mc, sizeof(mc));
	rank_of_this_cpu(&r, mc, "c", other_kernel());
	tap_ok(clear_rank_format(&r, &x, text, sizeof(text)) > 0 &&
		       clear_rank_parse(text, &rb, &back) == 0 && back.nr == 2 &&
		       !strcmp(back.nt, x.nt) && back.at[0].bytes == x.at[0].bytes &&
		       back.at[1].bytes == x.at[1].bytes && back.at[0].nt_over_cached == 1.4 &&
		       back.at[1].cached_gbps == 12.5 && back.at[0].rounds == 5 && rb.nr == 2 &&
		       back.nr_up == 0,
	       "the crossover's lines round trip beside the ranking");
	cross_up(&xu, up_sizes, up_ratio);
	xu.fault_seconds = 0.125;
	tap_ok(clear_rank_format(&r, &xu, text, sizeof(text)) > 0 &&
		       clear_rank_parse(text, &rb, &back) == 0 && back.nr == 1 && back.nr_up == 2 &&
		       back.up[0].bytes == up_sizes[0] && back.up[1].bytes == up_sizes[1] &&
		       back.up[0].nt_over_cached == 0.45 && back.up[1].nt_over_cached == 1.25 &&
		       back.fault_seconds == 0.125,
	       "... and its points above the cached limit, and the fault-in's time");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\ncrossover c seconds 0.02 fault 0.000\n"
				"up 16777216 rounds 5 c 12.00 c 10.00 ratio 0.833\n"
				"at 8388608 rounds 5 c 12.00 c 10.00 ratio 0.833\n",
				&rb, &back) == -EINVAL,
	       "a point above the cached limit before the one at it: refused");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\ncrossover c seconds 0.02 fault 0.000\n"
				"at 8388608 rounds 5 c 12.00 c 10.00 ratio 0.833\n"
				"up 8388608 rounds 5 c 12.00 c 10.00 ratio 0.833\n",
				&rb, &back) == -EINVAL,
	       "a point 'above' that is not: refused");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\ncrossover c seconds 0.02 fault 0.000\n"
				"at 8388608 rounds 5 c 12.00 c 10.00 ratio 0.833\n"
				"up 33554432 rounds 5 c 12.00 c 10.00 ratio 0.833\n"
				"up 16777216 rounds 5 c 12.00 c 10.00 ratio 0.833\n",
				&rb, &back) == -EINVAL,
	       "points above not from the smallest up: refused");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\ncrossover c seconds 0.02\n"
				"at 8388608 rounds 5 c 12.00 c 10.00 ratio 0.833\n",
				&rb, &back) == -EINVAL,
	       "a crossover line without its fault-in time: refused");
	tap_ok(clear_rank_format(&r, NULL, text, sizeof(text)) > 0 &&
		       clear_rank_parse(text, &rb, &back) == 0 && back.nr == 0,
	       "a file without them: no crossover (the rules)");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\n"
				"at 8388608 rounds 5 c 12.00 c 10.00 ratio 0.833\n",
				&rb, &back) == -EINVAL,
	       "a point before its crossover line: refused");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\ncrossover c seconds 0.02 fault 0.000\n"
				"at 4194304 rounds 5 c 12.00 c 10.00 ratio 0.833\n"
				"at 8388608 rounds 5 c 12.00 c 10.00 ratio 0.833\n",
				&rb, &back) == -EINVAL,
	       "points not from the largest down: refused");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\ncrossover c seconds 0.02 fault 0.000\n",
				&rb, &back) == -EINVAL,
	       "a crossover line with no point: refused");
	tap_ok(clear_rank_parse("version 3\nvendor X\nkernel c 9.0\ncrossover c seconds 0.02 fault 0.000\n"
				"at 8388608 rounds 5 c 12.00 movnti 10.00 ratio 0.833\n",
				&rb, &back) == -EINVAL,
	       "a point of another kernel than its line's: refused");
}

static void write_rank_with(const char *path, const struct clear_rank *r,
			    const struct clear_crossover *x)
{
	char text[2048];
	int len = clear_rank_format(r, x, text, sizeof(text));

	tap_ok(len > 0 && small_file_write(path, text, (size_t)len) == 0, "wrote %s", path);
}

static void write_rank(const char *path, const struct clear_rank *r)
{
	write_rank_with(path, r, NULL);
}

/* What a fresh ctx chooses for size x threads, and why. */
static const char *choose_threads(uint64_t size, unsigned int threads, char *why, size_t len)
{
	struct prealloc_ctx *ctx;
	const char *name = "";

	if (prealloc_ctx_new(&ctx) < 0)
		return "(no ctx)";
	prealloc_clear_choose(ctx, size, threads, &name, why, len);
	prealloc_ctx_free(ctx);
	return name;
}

static const char *choose(uint64_t size, char *why, size_t len)
{
	return choose_threads(size, 1, why, len);
}

/*
 * The ranking is consulted with the whole job's footprint (size x threads),
 * not one thread's share: 4 threads of a quarter of the probe limit and a
 * page more are over it, and the ranking decides; exactly at it, or one
 * page under, the rules do.
 */
static void test_footprint(const char *rank)
{
	uint64_t probe = clear_probe_limit(cpu_get()->llc_bytes), page = 4096;
	char why[512];
	const char *k;

	k = choose_threads(probe / 4 + page, 4, why, sizeof(why));
	tap_ok(!strcmp(k, "c") && strstr(why, "fastest here") && strstr(why, rank),
	       "4 threads of a quarter of the probe limit and a page: the whole job is over it, "
	       "the ranking decides (%s: %s)", k, why);
	k = choose_threads(probe / 4, 4, why, sizeof(why));
	tap_ok(!strstr(why, "fastest here"),
	       "4 threads of exactly a quarter of it: at the limit, the rules (%s: %s)", k, why);
	k = choose_threads(probe + page, 1, why, sizeof(why));
	tap_ok(!strcmp(k, "c") && strstr(why, "fastest here"),
	       "one thread a page over the probe limit: the ranking (%s: %s)", k, why);
	k = choose_threads(probe, 1, why, sizeof(why));
	tap_ok(!strstr(why, "fastest here"), "one thread exactly at it: the rules (%s: %s)", k,
	       why);
	k = choose_threads(probe - page, 1, why, sizeof(why));
	tap_ok(!strstr(why, "fastest here"), "one thread a page under it: the rules (%s: %s)", k,
	       why);
}

/*
 * What a region of length bytes on node 0, cleared by threads workers, is
 * given; ret_err: prealloc_region_new's error (0: made).
 */
static const char *choose_region(uint64_t length, unsigned int threads, char *why, size_t len,
				 int *ret_err)
{
	static const int node0 = 0;
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = length, .nr_nodes = 1, .nodes = &node0 };
	struct prealloc_region *reg = NULL;
	struct prealloc_ctx *ctx;
	const char *name = "(no region)";

	snprintf(why, len, "no region");
	*ret_err = prealloc_ctx_new(&ctx);
	if (*ret_err < 0)
		return "(no ctx)";
	*ret_err = prealloc_region_new(ctx, &ro, &reg);
	if (*ret_err == 0) {
		name = clear_select_region(reg, threads, why, len).name;
		prealloc_region_free(reg);
	}
	prealloc_ctx_free(ctx);
	return name;
}

/*
 * A region's clear consults the ranking with its node's whole footprint
 * (each worker's share x the workers), not one worker's share: exactly the
 * probe limit over 4 workers is the rules' still, 4 pages more the ranking's.
 * A region bound to node 0 needs mbind, which qemu-user does not implement
 * (ENOSYS: the arm64 cross build's run): there both checks skip, with that cause.
 */
static void test_region_footprint(const char *rank)
{
	uint64_t probe = clear_probe_limit(cpu_get()->llc_bytes), page = 4096;
	char why[512];
	const char *k;
	int err;

	k = choose_region(probe + 4 * page, 4, why, sizeof(why), &err);
	if (err == -ENOSYS) {
		tap_skip("a region bound to node 0: mbind is not implemented here (ENOSYS)");
		tap_skip("a region of exactly the probe limit: mbind is not implemented here (ENOSYS)");
		return;
	}
	tap_ok(!strcmp(k, "c") && strstr(why, "fastest here") && strstr(why, rank),
	       "a region of the probe limit and 4 pages, 4 workers: over it, the ranking (%s: %s; %d)",
	       k, why, err);
	k = choose_region(probe, 4, why, sizeof(why), &err);
	tap_ok(err == 0 && strcmp(why, "no region") && !strstr(why, "fastest here"),
	       "a region of exactly the probe limit, 4 workers: the rules (%s: %s; %d)", k, why, err);
}

/* A measured ranking puts the fastest first (or one level with it, within RANK_LEVEL). */
static void check_order(const struct clear_rank *saved)
{
	double best = 0;
	bool down = true;

	for (unsigned int i = 0; i < saved->nr; i++) {
		best = saved->k[i].gbps > best ? saved->k[i].gbps : best;
		printf("# ranked %u: %s %.2f GB/s\n", i, saved->k[i].kernel, saved->k[i].gbps);
	}
	/* Past the first (the table's choice may be swapped there), fastest first. */
	for (unsigned int i = 2; i < saved->nr; i++)
		down = down && (saved->k[i].gbps <= saved->k[i - 1].gbps ||
				saved->k[i - 1].gbps >= saved->k[0].gbps);
	tap_ok(saved->nr >= 2 && saved->k[0].gbps >= best * 0.97 && down,
	       "... fastest first: %s %.2f GB/s of the best %.2f, the rest in falling order",
	       saved->nr ? saved->k[0].kernel : "-", saved->nr ? saved->k[0].gbps : 0.0, best);
}

/* The crossover in this CPU's file decides at and below the cached limit. */
static void test_crossover_choice(const char *rank, const char *mc)
{
	static const double led[] = { 1.4, 0.9 }, held[] = { 0.8 };
	const struct cpu_id *cpu = cpu_get();
	struct clear_choice pair = clear_select(cpu, clear_probe_limit(cpu->llc_bytes), 1, NULL,
						NULL, 0);
	uint64_t limit = clear_cached_limit(cpu->llc_bytes);
	/* No probe here (no NT kernel built or usable): the figures change nothing. */
	bool probes = pair.nt != NULL;
	struct clear_crossover x = crossover_here(2, led);
	struct clear_rank r;
	char why[512];
	const char *k;

	rank_of_this_cpu(&r, mc, "c", other_kernel());
	write_rank_with(rank, &r, &x);
	k = choose(limit, why, sizeof(why));
	tap_ok(probes ? !strcmp(k, pair.name) && strstr(why, "over the crossover measured here") &&
				strstr(why, rank) :
			!strcmp(k, "c") && !strstr(why, "measured here"),
	       "NT led at the cached limit: a footprint there is probed, the figures named (%s: %s)",
	       k, why);
	k = choose(limit / 2, why, sizeof(why));
	tap_ok(!strcmp(k, "c") && (!probes || limit / 2 < CLEAR_PROBE_MIN ||
				   strstr(why, "within the crossover measured here")),
	       "memset held at half of it: memset there (%s: %s)", k, why);
	k = choose(1 << 20, why, sizeof(why));
	tap_ok(!strcmp(k, "c") && !strstr(why, "measured here"),
	       "a footprint in pieces the probe never takes: the rules (%s: %s)", k, why);

	x = crossover_here(1, held);
	write_rank_with(rank, &r, &x);
	k = choose(limit, why, sizeof(why));
	tap_ok(!strcmp(k, "c") && (!probes || strstr(why, "where memset held")),
	       "memset held at the cached limit: memset, said (%s: %s)", k, why);
}

static void test_choice(void)
{
	char dir[] = "/tmp/test-rank.XXXXXX", cal[256], rank[256], why[512], mc[24];
	uint64_t big = clear_probe_limit(cpu_get()->llc_bytes) * 4;
	struct clear_rank r;
	const char *k;

	if (!mkdtemp(dir)) {
		tap_ok(0, "a temporary directory");
		return;
	}
	tap_remove_at_exit(dir);
	snprintf(cal, sizeof(cal), "%s/calibration", dir);
	snprintf(rank, sizeof(rank), "%s/calibration.ranking", dir);
	setenv("PREALLOC_CALIBRATION", cal, 1);
	cpu_microcode(mc, sizeof(mc));

	/* This CPU's file says memset is fastest for large clears: it decides there. */
	rank_of_this_cpu(&r, mc, "c", other_kernel());
	write_rank(rank, &r);
	k = choose(big, why, sizeof(why));
	tap_ok(!strcmp(k, "c") && strstr(why, "fastest here") && strstr(why, rank),
	       "over the probe limit the cached ranking decides, named (%s: %s)", k, why);
	k = choose(4096, why, sizeof(why));
	tap_ok(!strstr(why, "fastest here"), "below the probe limit the rules decide (%s: %s)", k,
	       why);
	test_footprint(rank);
	test_region_footprint(rank);
	test_crossover_choice(rank, mc);

	/* Another microcode: measured again, for real, and saved over it. */
	rank_of_this_cpu(&r, "0xdeadbeef", "c", other_kernel());
	write_rank(rank, &r);
	k = choose(big, why, sizeof(why));
	tap_ok(strstr(why, "measured") != NULL, "another microcode's file: measured now (%s: %s)", k,
	       why);
	tap_ok(clear_kernel_find(k) != NULL, "... a kernel of the table (%s)", k);
	{
		struct clear_rank saved;
		char text[2048];

		tap_ok(small_file_read(rank, text, sizeof(text)) == 0 &&
			       clear_rank_parse(text, &saved, NULL) == 0 &&
			       clear_rank_matches(&saved, cpu_get()) && !strcmp(saved.k[0].kernel, k),
		       "... and saved for this microcode, its leader the choice");
		check_order(&saved);
		printf("# measured: %.0f ms, %u rounds, %llu MiB buffer, %s %.1f GB/s first\n",
		       saved.seconds * 1e3, saved.rounds,
		       (unsigned long long)(saved.buffer_bytes >> 20), saved.k[0].kernel,
		       saved.k[0].gbps);
	}
	{
		const struct cpu_id *cpu = cpu_get();
		bool probes = clear_select(cpu, clear_probe_limit(cpu->llc_bytes), 1, NULL, NULL, 0)
				      .nt != NULL;
		struct clear_crossover x;
		struct clear_rank saved;
		char text[2048];

		tap_ok(small_file_read(rank, text, sizeof(text)) == 0 &&
			       clear_rank_parse(text, &saved, &x) == 0 &&
			       (probes ? x.nr >= 1 && x.at[0].bytes ==
							     clear_cached_limit(cpu->llc_bytes) :
					 x.nr == 0),
		       "... with the crossover from the cached limit down where a probe runs here");
		if (probes)
			check_cross_rule(&x, clear_cached_limit(cpu->llc_bytes));
		for (unsigned int i = 0; i < x.nr + x.nr_up; i++) {
			const struct clear_cross_point *a = i < x.nr ? &x.at[i] : &x.up[i - x.nr];

			printf("# crossover: %llu KiB, %u rounds: c %.1f, %s %.1f GB/s (%.2f), "
			       "%.0f ms in all (%.0f of them faulting in)\n",
			       (unsigned long long)(a->bytes >> 10), a->rounds, a->cached_gbps, x.nt,
			       a->nt_gbps, a->nt_over_cached, x.seconds * 1e3,
			       x.fault_seconds * 1e3);
		}
	}

	/* none: the built-in rules alone, the file not even read. */
	rank_of_this_cpu(&r, mc, "c", other_kernel());
	write_rank(rank, &r);
	setenv("PREALLOC_CALIBRATION", "none", 1);
	k = choose(big, why, sizeof(why));
	tap_ok(!strstr(why, "fastest here") && !strstr(why, "calibrated"),
	       "PREALLOC_CALIBRATION=none: the built-in rules (%s: %s)", k, why);
	k = choose(clear_cached_limit(cpu_get()->llc_bytes), why, sizeof(why));
	tap_ok(!strcmp(k, "c") && !strstr(why, "measured here"),
	       "... at the cached limit too (%s: %s)", k, why);
	unlink(rank);
	rmdir(dir);
}

int main(void)
{
	test_format();
	test_crossover_format();
	test_cross_next_up();
	test_cross_next();
	test_choice();
	return tap_done();
}
