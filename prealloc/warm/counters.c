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

/* Under the lock: the file in dir again, with (dev, node, ps, name) added to (or set to) n. */
static int counter_change(int dir, uint64_t dev, int node, uint64_t ps, const char *name,
			  uint64_t n, bool set)
{
	char *old = NULL, *text = NULL, *line, *save = NULL, key[64];
	unsigned long long d, p, v, now = n;
	size_t len = 0, cap = 0;
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
	for (line = old ? strtok_r(old, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
		if (!counter_line(line, &d, &nd, &p, key, &v))
			continue;	/* a line no build of ours wrote: dropped */
		if (d == dev && nd == node && p == ps && !strcmp(key, name)) {
			now = set ? n : v + n;
			continue;
		}
		fprintf(f, "%s\n", line);
	}
	fprintf(f, "%llu %d %llu %s %llu\n", (unsigned long long)dev, node,
		(unsigned long long)ps, name, now);
	r = fclose(f) ? -ENOMEM : statedir_write_at(dir, COUNTERS_LEAF, text, cap);
	free(text);
	free(old);
	return r;
}

static int counter_locked(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t ps,
			  const char *name, uint64_t n, bool set)
{
	int dir, lock, r;

	if (!ctx || !name || !dev)
		return -EINVAL;
	/* The state directory resolved once: the lock, the read and the write in it. */
	r = statedir_open(ctx, true, &dir);
	if (r < 0)
		return r;
	r = statedir_lock_at(dir, COUNTERS_LOCK_LEAF, COUNTERS_LOCK_MS, -1, &lock);
	if (r == 0) {
		r = counter_change(dir, dev, node, ps, name, n, set);
		statedir_unlock(lock);
	}
	close(dir);
	return r;
}

int counter_add(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t n)
{
	return counter_locked(ctx, dev, node, page_size, name, n, false);
}

int counter_set(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t v)
{
	return counter_locked(ctx, dev, node, page_size, name, v, true);
}

void counter_take(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size, int r,
		  int hit)
{
	const char *name = r == -ENOENT ? COUNTER_TAKE_MISS
			   : r < 0	? COUNTER_TAKE_REFUSED
					: counter_take_name(hit);

	if (name)
		counter_add(ctx, dev, node, page_size, name, 1);
}

void counter_pressure(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		      uint64_t bytes)
{
	counter_add(ctx, dev, node, page_size, COUNTER_PRESSURE_FILES, 1);
	counter_add(ctx, dev, node, page_size, COUNTER_PRESSURE_BYTES, bytes);
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
