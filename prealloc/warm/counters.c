/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's counters (warm.h): one file in the state directory,
 * "warm-counters", a line per counter:
 *
 *	<mount dev> <node> <page size> <name> <value>
 *
 * Rewritten whole under its own lock file (read, change one line, temp file
 * and rename: statedir_write_at), so a crash leaves the old or the new file and
 * two processes never lose each other's counts. Its own lock, not the
 * store's: a counter is bumped both under the store's lock and after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

#define COUNTERS_LOCK_LEAF "warm-counters.lock"
#define COUNTERS_LOCK_MS 1000

const char *counter_take_name(int hit)
{
	static const char *const names[] = { [PREALLOC_WARM_HIT] = "take_full",
					     [PREALLOC_WARM_HIT_CUT] = "take_cut",
					     [PREALLOC_WARM_HIT_GROWN] = "take_partial",
					     [PREALLOC_WARM_COLD] = "take_cold" };

	return hit > 0 && hit <= PREALLOC_WARM_COLD ? names[hit] : NULL;
}

/* A line's key and value; whether it parsed. */
static bool counter_line(const char *line, unsigned long long *dev, int *node,
			 unsigned long long *ps, char name[64], unsigned long long *v)
{
	return sscanf(line, "%llu %d %llu %63s %llu", dev, node, ps, name, v) == 5;
}

/* Whether line's key is change c's. */
static bool counter_is(const struct counter_change *c, unsigned long long d, int nd,
		       unsigned long long p, const char *key, uint64_t dev, int node, uint64_t ps)
{
	return d == dev && nd == node && p == ps && !strcmp(key, c->name);
}

/*
 * Under the lock: the file in dir again, with each of c[0..n) applied to
 * its line of (dev, node, ps): its n added, or (set) its value replaced.
 */
static int counter_change(int dir, uint64_t dev, int node, uint64_t ps,
			  const struct counter_change *c, size_t n)
{
	char *old = NULL, *text = NULL, *line, *save = NULL, key[64];
	unsigned long long d, p, v, now[COUNTER_CHANGES_MAX];
	size_t len = 0, cap = 0, k;
	FILE *f;
	int r, nd;

	r = statedir_read_at(dir, COUNTERS_LEAF, &old, &len, NULL);
	if (r < 0 && r != -ENOENT)
		return r;	/* not ours to trust: left as it is */
	f = open_memstream(&text, &cap);
	if (!f) {
		free(old);
		return -ENOMEM;
	}
	for (k = 0; k < n; k++)
		now[k] = c[k].n;
	for (line = old ? strtok_r(old, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		if (!counter_line(line, &d, &nd, &p, key, &v))
			continue;	/* a line no build of ours wrote: dropped */
		for (k = 0; k < n && !counter_is(&c[k], d, nd, p, key, dev, node, ps); k++)
			;
		if (k < n)
			now[k] = c[k].set ? c[k].n : v + c[k].n;
		else
			fprintf(f, "%s\n", line);
	}
	for (k = 0; k < n; k++)
		fprintf(f, "%llu %d %llu %s %llu\n", (unsigned long long)dev, node,
			(unsigned long long)ps, c[k].name, now[k]);
	r = fclose(f) ? -ENOMEM : statedir_write_at(dir, COUNTERS_LEAF, text, cap);
	free(text);
	free(old);
	return r;
}

int counter_change_all(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		       const struct counter_change *c, size_t n)
{
	int dir, lock, r;

	if (!ctx || !c || !n || n > COUNTER_CHANGES_MAX || !dev)
		return -EINVAL;
	/* The state directory resolved once: the lock, the read and the write in it. */
	r = statedir_open(ctx, true, &dir);
	if (r < 0)
		return r;
	r = statedir_lock_at(dir, COUNTERS_LOCK_LEAF, COUNTERS_LOCK_MS, -1, &lock);
	if (r == 0) {
		r = counter_change(dir, dev, node, page_size, c, n);
		statedir_unlock(lock);
	}
	close(dir);
	return r;
}

int counter_add(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t n)
{
	struct counter_change c = { name, n, false };

	return name ? counter_change_all(ctx, dev, node, page_size, &c, 1) : -EINVAL;
}

int counter_set(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t v)
{
	struct counter_change c = { name, v, true };

	return name ? counter_change_all(ctx, dev, node, page_size, &c, 1) : -EINVAL;
}

static const char *const take_buckets[] = { COUNTER_TAKE_BUCKETS };
_Static_assert(sizeof(take_buckets) / sizeof(take_buckets[0]) == PREALLOC_WARM_TAKE_BUCKETS,
	       "a bucket name for each bound, and one over the last");

const char *counter_take_bucket_name(unsigned int i)
{
	return i < PREALLOC_WARM_TAKE_BUCKETS ? take_buckets[i] : NULL;
}

/* The take histogram's bucket of seconds: its counter's name (the bounds in prealloc.h). */
static const char *take_bucket(double seconds)
{
	static const double bounds[] = { COUNTER_TAKE_BOUNDS };
	unsigned int i = 0;

	while (i < sizeof(bounds) / sizeof(bounds[0]) && seconds > bounds[i])
		i++;
	return take_buckets[i];
}

void counter_take(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size, int r,
		  int hit, double seconds)
{
	struct counter_change c[3] = {
		{ r == -ENOENT ? COUNTER_TAKE_MISS : r < 0 ? COUNTER_TAKE_REFUSED
							   : counter_take_name(hit), 1, false },
		{ take_bucket(seconds), 1, false },
		{ COUNTER_TAKE_SECONDS_US, (uint64_t)(seconds * 1e6 + 0.5), false },
	};

	/* A take handed over is observed in the histogram too: one write for both. */
	if (c[0].name)
		counter_change_all(ctx, dev, node, page_size, c, r < 0 ? 1 : 3);
}

void counter_pressure(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		      uint64_t bytes)
{
	const struct counter_change c[] = { { COUNTER_PRESSURE_FILES, 1, false },
					    { COUNTER_PRESSURE_BYTES, bytes, false } };

	counter_change_all(ctx, dev, node, page_size, c, 2);
}

int counter_set_at(struct prealloc_ctx *ctx, const char *mount, int node, uint64_t page_size,
		   const char *name, uint64_t v)
{
	struct stat st;

	if (!mount || stat(mount, &st) < 0)
		return -ENOENT;
	return counter_set(ctx, (uint64_t)st.st_dev, node, page_size, name, v);
}

uint64_t counter_get(const char *text, uint64_t dev, int node, uint64_t page_size,
		     const char *name)
{
	unsigned long long d, p, v;
	char key[64];
	int nd;

	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (counter_line(line, &d, &nd, &p, key, &v) && d == dev && nd == node &&
		    p == page_size && !strcmp(key, name))
			return v;
	return 0;
}

int counters_read(struct prealloc_ctx *ctx, char **ret_text)
{
	size_t len;
	int r = statedir_read(ctx, COUNTERS_LEAF, ret_text, &len);

	return r == -ENOENT ? 0 : r;
}

/*
 * The last clear's rate of r's mount, node and page size, for status: one
 * line each in CLEARS_LEAF. Called under the store's lock: two passes
 * never lose each other's rates.
 */
void counter_clear_rate(struct prealloc_ctx *ctx, const struct record *r, double gbps)
{
	char *old = NULL, *text = NULL, *line, *save = NULL;
	size_t len = 0, cap = 0;
	FILE *f;

	statedir_read(ctx, CLEARS_LEAF, &old, &len);
	f = open_memstream(&text, &cap);
	if (!f) {
		free(old);
		return;
	}
	for (line = old ? strtok_r(old, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long dev, ps;
		int node;

		if (sscanf(line, "%llu %d %llu", &dev, &node, &ps) == 3 &&
		    (dev != r->dev || node != r->warm_node || ps != r->page_size))
			fprintf(f, "%s\n", line);
	}
	fprintf(f, "%llu %d %llu %.3f\n", (unsigned long long)r->dev, r->warm_node,
		(unsigned long long)r->page_size, gbps);
	fclose(f);
	statedir_write(ctx, CLEARS_LEAF, text, cap);
	free(text);
	free(old);
}
