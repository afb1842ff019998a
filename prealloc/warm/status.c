/* SPDX-License-Identifier: MIT */
/*
 * prealloc_warm_status: the warm pool by mount, node and page size, with
 * the bytes and files in each state, the target warm.conf sets, the
 * last clear's rate there, and the counters every take and give adds to.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "warm.h"

static int status_cmp(const void *a, const void *b)
{
	const struct prealloc_warm_status *x = a, *y = b;
	int c = strcmp(x->mount, y->mount);

	if (c)
		return c;
	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->page_size < y->page_size ? -1 : x->page_size > y->page_size;
}

/* The entry for mount, node and page size in e[0..*nr), added when missing. */
static struct prealloc_warm_status *status_entry(struct prealloc_warm_status *e, unsigned int *nr,
						 const char *mount, int node, uint64_t page_size)
{
	for (unsigned int i = 0; i < *nr; i++)
		if (e[i].node == node && e[i].page_size == page_size && !strcmp(e[i].mount, mount))
			return &e[i];
	e[*nr] = (struct prealloc_warm_status){ .size = sizeof(*e), .node = node,
						.page_size = page_size };
	snprintf(e[*nr].mount, sizeof(e[*nr].mount), "%s", mount);
	return &e[(*nr)++];
}

/* The last clear's GB/s for the entry, from warm-clears ("<dev> <node> <page size> <GB/s>"). */
static void status_rate(struct prealloc_ctx *ctx, struct prealloc_warm_status *e, unsigned int nr)
{
	char *text = NULL, *line, *save = NULL;
	size_t len;

	if (statedir_read(ctx, CLEARS_LEAF, &text, &len) < 0)
		return;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long dev, ps;
		double gbps;
		int node;

		if (sscanf(line, "%llu %d %llu %lf", &dev, &node, &ps, &gbps) != 4)
			continue;
		for (unsigned int i = 0; i < nr; i++) {
			struct stat st;

			if (e[i].node == node && e[i].page_size == ps && stat(e[i].mount, &st) == 0 &&
			    (unsigned long long)st.st_dev == dev)
				e[i].last_clear_gbps = gbps;
		}
	}
	free(text);
}

/* The counters of the entry's mount, node and page size (counters.c). */
static void status_counters(struct prealloc_warm_status *e, const char *text)
{
	uint64_t ps = e->page_size, dev;
	struct stat st;

	if (stat(e->mount, &st) < 0 || !text)
		return;
	dev = (uint64_t)st.st_dev;
	e->takes[0] = counter_get(text, dev, e->node, ps, COUNTER_TAKE_MISS);
	for (int h = PREALLOC_WARM_HIT; h <= PREALLOC_WARM_COLD; h++)
		e->takes[h] = counter_get(text, dev, e->node, ps, counter_take_name(h));
	e->take_refusals = counter_get(text, dev, e->node, ps, COUNTER_TAKE_REFUSED);
	e->renewals = counter_get(text, dev, e->node, ps, COUNTER_RENEWALS);
	e->pressure_files = counter_get(text, dev, e->node, ps, COUNTER_PRESSURE_FILES);
	e->pressure_bytes = counter_get(text, dev, e->node, ps, COUNTER_PRESSURE_BYTES);
	e->last_fill_gbps = (double)counter_get(text, dev, e->node, ps, COUNTER_FILL_RATE) / 1e9;
	e->quarantines = counter_get(text, dev, e->node, ps, COUNTER_QUARANTINES);
	e->trimmed_bytes = counter_get(text, dev, e->node, ps, COUNTER_TRIMMED);
	e->gives = counter_get(text, dev, e->node, ps, COUNTER_GIVES);
	e->created = counter_get(text, dev, e->node, ps, COUNTER_CREATED);
	e->inplace_clears = counter_get(text, dev, e->node, ps, COUNTER_CLEARS);
	for (unsigned int b = 0; b < PREALLOC_WARM_TAKE_BUCKETS; b++)
		e->take_buckets[b] = counter_get(text, dev, e->node, ps, counter_take_bucket_name(b));
	e->take_seconds_sum = (double)counter_get(text, dev, e->node, ps, COUNTER_TAKE_SECONDS_US) / 1e6;
	e->last_pass = (int64_t)counter_get(text, dev, e->node, ps, COUNTER_LAST_PASS);
	e->unmet_bytes = counter_get(text, dev, e->node, ps, COUNTER_UNMET);
}

/* The mount point of device dev (a filesystem's root mounted there, the first), from mountinfo. */
static int mount_of_dev(const struct prealloc_ctx *ctx, uint64_t dev, char *buf, size_t len)
{
	char path[PATH_MAX], mnt[PATH_MAX], root[PATH_MAX], *line = NULL;
	unsigned int maj, min;
	size_t cap = 0;
	int r = -ENOENT;
	FILE *f;

	if (proc_path(ctx, path, sizeof(path), "/self/mountinfo") < 0 || !(f = fopen(path, "re")))
		return -ENOENT;
	while (r < 0 && getline(&line, &cap, f) > 0)
		if (sscanf(line, "%*s %*s %u:%u %4095s %4095s", &maj, &min, root, mnt) == 4 &&
		    makedev(maj, min) == dev && !strcmp(root, "/") &&
		    (size_t)snprintf(buf, len, "%s", mnt) < len)
			r = 0;
	free(line);
	fclose(f);
	return r;
}

/* The mount of device dev: an entry's of e[0..nr), else the page size's own, else /proc's word. */
static bool counted_mount(struct prealloc_ctx *ctx, const struct prealloc_warm_status *e,
			  unsigned int nr, uint64_t dev, uint64_t ps, char *buf, size_t len)
{
	const char *m = warm_mount(ctx, NULL, ps);
	struct stat st;

	for (unsigned int i = 0; i < nr; i++)
		if (stat(e[i].mount, &st) == 0 && (uint64_t)st.st_dev == dev) {
			snprintf(buf, len, "%s", e[i].mount);
			return true;
		}
	if (m && stat(m, &st) == 0 && (uint64_t)st.st_dev == dev) {
		snprintf(buf, len, "%s", m);
		return true;
	}
	return mount_of_dev(ctx, dev, buf, len) == 0;
}

/*
 * An entry for each mount, node and page size the counters name that no
 * target and no file made (a take missed there: an untargeted node, page
 * size or mount), so that what was counted is reported. At most max in all.
 */
static unsigned int status_counted(struct prealloc_ctx *ctx, struct prealloc_warm_status *e,
				   unsigned int nr, unsigned int max, const char *text)
{
	char key[64], mount[PATH_MAX];
	unsigned long long d, p, v;
	int node;

	for (const char *l = text; l && *l && nr < max; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (sscanf(l, "%llu %d %llu %63s %llu", &d, &node, &p, key, &v) != 5 ||
		    !counted_mount(ctx, e, nr, d, p, mount, sizeof(mount)))
			continue;
		status_entry(e, &nr, mount, node, p);
	}
	return nr;
}

/* Whether e[i]'s node is the lowest of the entries of its page size. */
static bool lowest_node(const struct prealloc_warm_status *e, unsigned int nr, unsigned int i)
{
	for (unsigned int j = 0; j < nr; j++)
		if (e[j].page_size == e[i].page_size && e[j].node < e[i].node)
			return false;
	return true;
}

/*
 * Hugetlb pages of e's node and size in use that no record of s accounts
 * for; with_resv: and the pages reserved (by a mapping, not yet faulted),
 * which the kernel counts per page size, not per node (the caller adds
 * them to one node's entries).
 */
static void status_unrecorded(struct prealloc_ctx *ctx, const struct store *s,
			      struct prealloc_warm_status *e, bool with_resv)
{
	uint64_t total = 0, free_pages = 0, recorded = 0, resv = 0, gfree;

	if (e->page_size == PREALLOC_PAGE_4K ||
	    hugetlb_read(ctx, e->node, e->page_size, &total, &free_pages, NULL) < 0)
		return;
	if (with_resv && hugetlb_global(ctx, e->page_size, &gfree, &resv) == 0)
		total += resv;
	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (r->warm != WARM_NONE && r->has_file && r->warm_node == e->node &&
		    r->page_size == e->page_size) {
			recorded += r->size / r->page_size;
			continue;
		}
		for (unsigned int k = 0; r->warm == WARM_NONE && k < r->nr_pools; k++)
			if (r->pools[k].node == e->node && r->pools[k].page_size == e->page_size)
				recorded += r->pools[k].pages;
	}
	e->unrecorded_pages = total - free_pages > recorded ? total - free_pages - recorded : 0;
}

/*
 * The entries of conf's targets, of s's warm files and of what the
 * counters (text) name, unsorted, into *ret (to free) and *ret_nr.
 */
static int status_entries(struct prealloc_ctx *ctx, const struct warm_conf *conf,
			  const struct store *s, const char *text,
			  struct prealloc_warm_status **ret, unsigned int *ret_nr)
{
	size_t lines = 0;
	struct prealloc_warm_status *e;
	char mount[PATH_MAX];
	unsigned int nr = 0;

	for (const char *l = text; l && (l = strchr(l, '\n')); l++)
		lines++;
	e = calloc(s->nr + conf->nr + lines + 1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (unsigned int i = 0; i < conf->nr; i++) {
		const struct warm_target *t = &conf->t[i];
		const char *m = warm_mount(ctx, t->mount, t->page_size);

		status_entry(e, &nr, m ? m : "-", t->node, t->page_size)->target_bytes += t->bytes;
	}
	for (size_t i = 0; i < s->nr; i++) {
		const struct record *rec = &s->r[i];
		struct prealloc_warm_status *x;

		if (rec->warm == WARM_NONE)
			continue;
		warm_record_mount(rec, mount, sizeof(mount));
		x = status_entry(e, &nr, mount, rec->warm_node, rec->page_size);
		x->bytes[rec->warm] += rec->size;
		x->files[rec->warm]++;
		if (rec->warm == PREALLOC_WARM_QUARANTINED)
			x->quarantined_held_bytes += warm_held_bytes(rec);
	}
	nr = status_counted(ctx, e, nr, (unsigned int)(s->nr + conf->nr + lines), text);
	for (unsigned int i = 0; i < nr; i++)
		status_unrecorded(ctx, s, &e[i], lowest_node(e, nr, i));
	*ret = e;
	*ret_nr = nr;
	return 0;
}

EXPORT int prealloc_warm_status(struct prealloc_ctx *ctx, const char *conf_path, unsigned int index,
				struct prealloc_warm_status *ret_status)
{
	struct prealloc_warm_status *e = NULL;
	struct warm_conf conf;
	unsigned int nr = 0;
	char err[512], *text = NULL;
	struct store s;
	int r;

	if (!ctx || !ret_status || ret_status->size < sizeof(size_t))
		return -EINVAL;
	r = warm_conf_load(conf_path, &conf, err, sizeof(err));
	if (r < 0) {
		struct prealloc_warm_status bad = { .size = sizeof(bad) };

		snprintf(bad.message, sizeof(bad.message), "%s", err);
		copy_sized_out(ret_status, &bad, sizeof(bad));
		return r;
	}
	r = store_load(ctx, &s);
	if (r == 0) {
		if (counters_read(ctx, &text) < 0)
			text = NULL;	/* no counters to trust: none reported */
		r = status_entries(ctx, &conf, &s, text, &e, &nr);
		store_free(&s);
	}
	warm_conf_free(&conf);
	if (r == 0) {
		qsort(e, nr, sizeof(*e), status_cmp);
		r = index < nr ? 0 : -ENOENT;
	}
	if (r == 0) {
		status_rate(ctx, &e[index], 1);
		status_counters(&e[index], text);
		copy_sized_out(ret_status, &e[index], sizeof(*e));
	}
	free(text);
	free(e);
	return r;
}
