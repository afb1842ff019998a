/* SPDX-License-Identifier: MIT */
/*
 * The automatic clear kernel for a ctx: clear_select's rules under the
 * ctx's calibration (clear/calibration.c), and over the probe limit, with no
 * calibration, the kernel this machine measured fastest for large clears
 * (clear/rank.c), measured once per CPU model and microcode and kept
 * beside the calibration; at and below the cached limit, the crossover
 * between memset and NT stores measured with it, kept in the same file.
 * PREALLOC_CALIBRATION=none: the built-in rules.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clear.h"

/* Guards every ctx's clear state's rank_* fields (a ctx has no lock of its own), and crossover. */
static pthread_mutex_t rank_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * The crossover that came with the last ranking a ctx settled: a figure of
 * the machine, like the ranking, but kept per process, not per ctx.
 */
static struct clear_crossover crossover;

/*
 * The ranking and crossover measured now for this ctx (who: for what), saved
 * beside the calibration.
 */
static int ranking_measure(struct prealloc_ctx *ctx, struct clear_ctx *st, const char *who,
			   const char *path)
{
	struct clear_rank rank;
	struct clear_crossover x;
	char text[2048];
	int len, r = clear_rank_measure(&ctx->cpu, &rank, &x);

	if (r < 0)
		return r;
	st->rank = rank;
	crossover = x;
	len = clear_rank_format(&rank, &x, text, sizeof(text));
	if (len < 0 || !path) {
		r = -ENOENT;
	} else {
		if (!getenv("PREALLOC_CALIBRATION"))
			calibration_mkdir();	/* the default directory, as a save makes it */
		r = small_file_write(path, text, (size_t)len);
	}
	snprintf(st->rank_how, sizeof(st->rank_how), "measured %s in %.0f ms%s", who,
		 (rank.seconds + x.seconds) * 1e3, r < 0 ? ", not saved" : "");
	return 0;
}

bool ctx_ranking(struct prealloc_ctx *ctx, const char *who, struct clear_rank *ret, char *how,
		 size_t how_len)
{
	const char *env = getenv("PREALLOC_CALIBRATION");
	struct clear_ctx *st = ctx_clear_get(ctx);
	char path[4096], text[2048];
	struct clear_rank rank;
	struct clear_crossover x;
	bool have, named;
	int r = 0;

	if (!st)
		return false;	/* no memory for it: the built-in rules */
	pthread_mutex_lock(&rank_lock);
	if (!st->rank_settled && !(env && !strcmp(env, "none"))) {
		st->rank_settled = true;
		named = calibration_default_path(path, sizeof(path) - 8) == 0;
		if (named)
			strcat(path, ".ranking");
		if (named && small_file_read(path, text, sizeof(text)) == 0 &&
		    clear_rank_parse(text, &rank, &x) == 0 && clear_rank_matches(&rank, &ctx->cpu)) {
			st->rank = rank;
			crossover = x;
			st->rank_active = true;
			snprintf(st->rank_how, sizeof(st->rank_how), "cached in %s", path);
		} else {
			/* Every other choice waits for it meanwhile: under 0.2 s, once. */
			r = ranking_measure(ctx, st, who, named ? path : NULL);
			st->rank_active = r == 0;
		}
	}
	have = st->rank_active;
	if (have) {
		*ret = st->rank;
		snprintf(how, how_len, "%s", st->rank_how);
	}
	pthread_mutex_unlock(&rank_lock);
	/* Said outside the lock: the callback may call back into the library. */
	if (r < 0)
		ctx_log(ctx, PREALLOC_LOG_INFO, "clear kernels not ranked (%s): the built-in rules",
			strerror(-r));
	return have;
}

bool ctx_crossover(struct prealloc_ctx *ctx, const char *who, struct clear_crossover *ret,
		   char *how, size_t how_len)
{
	struct clear_rank rank;
	bool have = ctx_ranking(ctx, who, &rank, how, how_len);

	pthread_mutex_lock(&rank_lock);
	have = have && crossover.nr;
	if (have)
		*ret = crossover;
	pthread_mutex_unlock(&rank_lock);
	return have;
}

/*
 * At and below the cached limit with no calibration: memset, or the probe
 * past the crossover measured here.
 */
static struct clear_choice crossed(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads,
				   struct clear_choice c, char *why, size_t why_len)
{
	struct clear_crossover x;
	size_t n;
	char how[96];

	if (!clear_crossover_matters(&ctx->cpu, size, threads) ||
	    !ctx_crossover(ctx, "at a cache-sized clear", &x, how, sizeof(how)))
		return c;
	c = clear_select_measured(&ctx->cpu, size, threads, &x, why, why_len);
	n = why ? strlen(why) : 0;
	if (why && n + 1 < why_len)
		snprintf(why + n, why_len - n, " (%s)", how);
	return c;
}

/* Over the probe limit with no calibration: the kernel measured fastest here. */
static struct clear_choice ranked(struct prealloc_ctx *ctx, uint64_t footprint,
				  struct clear_choice c, char *why, size_t why_len)
{
	struct clear_rank rank;
	struct clear_choice m;
	unsigned int i = 0;
	char how[96];

	if (footprint <= clear_probe_limit(ctx->cpu.llc_bytes) ||
	    !ctx_ranking(ctx, "at the first large clear", &rank, how, sizeof(how)))
		return c;
	/* The fastest this process may run (a feature masked since the file was made: the next). */
	while (i < rank.nr && clear_choice_find(rank.k[i].kernel, ctx->cpu.features, &m) < 0)
		i++;
	if (i == rank.nr)
		return c;
	if (why && why_len)
		snprintf(why, why_len, "%llu MiB is over the probe limit; fastest here for large "
			 "clears: %s %.1f GB/s%s%s %.1f (%s)", (unsigned long long)(footprint >> 20),
			 rank.k[i].kernel, rank.k[i].gbps, rank.level && !i ? ", level with " : ", then ",
			 i + 1 < rank.nr ? rank.k[i + 1].kernel : "-",
			 i + 1 < rank.nr ? rank.k[i + 1].gbps : 0.0, how);
	return m;
}

struct clear_choice clear_select_auto(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads,
				      const struct clear_calibration *cal, char *why, size_t why_len)
{
	struct clear_choice c = clear_select(&ctx->cpu, size, threads, cal, why, why_len);
	uint64_t footprint;

	threads = MAX(threads, 1u);
	footprint = size > UINT64_MAX / threads ? UINT64_MAX : size * threads;
	if (cal)
		return c;
	if (footprint > clear_probe_limit(ctx->cpu.llc_bytes))
		return ranked(ctx, footprint, c, why, why_len);
	return crossed(ctx, size, threads, c, why, why_len);
}

struct clear_choice clear_select_region(const struct prealloc_region *region, unsigned int threads,
					char *why, size_t why_len)
{
	struct prealloc_ctx *ctx = region->ctx;
	struct clear_calibration cal;
	bool have_cal = ctx_calibration(ctx, &cal);
	uint64_t best_footprint = 0, best_size = region->length;
	unsigned int best_threads = 1;

	/* Per node: its extents' bytes over its workers, as the engine will spread them. */
	for (unsigned int e = 0; e < region->nr_extents; e++) {
		const struct topo_node *n = topo_node(ctx, region->extents[e].node);
		unsigned int t = threads ? threads : (n && n->nr_cpus ? n->nr_cpus : 1);
		uint64_t bytes = 0;
		bool seen = false;

		for (unsigned int f = 0; f < e; f++)
			seen |= region->extents[f].node == region->extents[e].node;
		if (seen)
			continue;
		for (unsigned int f = e; f < region->nr_extents; f++)
			if (region->extents[f].node == region->extents[e].node)
				bytes += region->extents[f].length;
		if (bytes >= best_footprint) {
			best_footprint = bytes;
			best_size = (bytes + t - 1) / t;
			best_threads = t;
		}
	}
	return clear_select_auto(ctx, best_size, best_threads, have_cal ? &cal : NULL, why, why_len);
}

/* ---- public API ---------------------------------------------------------- */

EXPORT int prealloc_clear_choose(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads,
				 const char **ret_name, char *ret_why, size_t why_len)
{
	struct clear_calibration cal;
	struct clear_choice c;
	bool have_cal;

	if (!ctx || !ret_name || (why_len && !ret_why))
		return -EINVAL;
	have_cal = ctx_calibration(ctx, &cal);
	c = clear_select_auto(ctx, size, threads, have_cal ? &cal : NULL, ret_why, why_len);
	*ret_name = c.name;
	return 0;
}
