/* SPDX-License-Identifier: MIT */
/*
 * Admission: before any page is touched, prove that every node of a request
 * can supply its pages, optionally growing a node's hugepage pool to fit.
 * Hugetlb reservations are global, so a mapping bound to one node can pass
 * mmap and still SIGBUS when that node runs dry: the check is per node.
 *
 * A hugetlb admission holds the pool lock while it checks and grows, and
 * leaves an in-flight entry per node in the ledger, which later admissions
 * subtract until the run has faulted its pages (commit) or given up
 * (rollback).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pool.h"

#define DEFAULT_RESERVE_TIMEOUT_MS 5000
#define DEFAULT_LOCK_TIMEOUT_MS 30000

struct prealloc_reservation {
	struct prealloc_ctx *ctx;
	uint64_t id;
	uint64_t page_size;
	unsigned int nr;
	bool in_ledger;		/* hugetlb: entries recorded */
	bool finished;		/* committed or rolled back */
	unsigned int lock_timeout_ms;
};

/* "2MB", "1GB": the hugetlb cgroup's name for a page size. */
static void cgroup_size_name(uint64_t page_size, char *buf, size_t len)
{
	if (page_size >= PREALLOC_PAGE_1G)
		snprintf(buf, len, "%lluGB", (unsigned long long)(page_size >> 30));
	else if (page_size >= (UINT64_C(1) << 20))
		snprintf(buf, len, "%lluMB", (unsigned long long)(page_size >> 20));
	else
		snprintf(buf, len, "%lluKB", (unsigned long long)(page_size >> 10));
}

/* Where cgroup v2 is mounted, from /proc/self/mountinfo. */
static int cgroup2_mount(char *buf, size_t len)
{
	char *line = NULL;
	size_t cap = 0;
	int r = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		char mnt[PATH_MAX], fstype[64];
		char *dash = strstr(line, " - ");

		/* Fields: id parent maj:min root mountpoint ... - fstype source opts */
		if (!dash || sscanf(dash, " - %63s", fstype) != 1 || strcmp(fstype, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if ((size_t)snprintf(buf, len, "%s", mnt) < len)
			r = 0;
		break;
	}
	free(line);
	fclose(f);
	return r;
}

static int read_limit(const char *dir, const char *file, uint64_t *ret)
{
	char path[PATH_MAX + 64], buf[64];
	int r;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -ENAMETOOLONG;
	r = read_file_str(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	if (!strcmp(buf, "max")) {
		*ret = UINT64_MAX;
		return 0;
	}
	return read_file_u64(path, ret);
}

/*
 * Pages the calling process may still fault under its hugetlb cgroup
 * limits (this cgroup and every ancestor, max and rsvd.max); UINT64_MAX
 * when unlimited. where gets the tightest limit file.
 */
static uint64_t cgroup_pages_left(uint64_t page_size, char *where, size_t where_len)
{
	char mnt[PATH_MAX], rel[PATH_MAX], dir[2 * PATH_MAX], name[16], *line = NULL;
	uint64_t left = UINT64_MAX;
	size_t cap = 0, mnt_len;
	FILE *f;

	where[0] = '\0';
	rel[0] = '\0';
	if (cgroup2_mount(mnt, sizeof(mnt)) < 0)
		return left;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return left;
	while (getline(&line, &cap, f) > 0) {
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(rel, sizeof(rel), "%s", line + 3);
		}
	}
	free(line);
	fclose(f);
	cgroup_size_name(page_size, name, sizeof(name));
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", mnt, rel) >= sizeof(dir))
		return left;
	mnt_len = strlen(mnt);
	for (;;) {
		static const char *const kinds[][2] = { { "max", "current" },
							{ "rsvd.max", "rsvd.current" } };

		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
			char fmax[48], fcur[48];
			uint64_t max, cur = 0, pages;

			snprintf(fmax, sizeof(fmax), "hugetlb.%s.%s", name, kinds[k][0]);
			snprintf(fcur, sizeof(fcur), "hugetlb.%s.%s", name, kinds[k][1]);
			if (read_limit(dir, fmax, &max) < 0 || max == UINT64_MAX)
				continue;
			read_limit(dir, fcur, &cur);
			pages = max > cur ? (max - cur) / page_size : 0;
			if (pages < left) {
				int n = snprintf(where, where_len, "%s/%s", dir, fmax);

				left = pages;
				/* A path too long for the result is cut short; say so with "...". */
				if (n < 0 || (size_t)n >= where_len)
					snprintf(where + where_len - 4, 4, "...");
			}
		}
		/* Up one level, stopping at the mount point (the root cgroup has no limits). */
		char *slash = strrchr(dir, '/');

		if (!slash || (size_t)(slash - dir) < mnt_len)
			break;
		*slash = '\0';
	}
	return left;
}

/* 4K and THP: the node's free memory. */
static uint64_t node_free_memory(struct prealloc_ctx *ctx, int node)
{
	struct prealloc_node_info info = { .size = sizeof(info) };
	char line[128];
	uint64_t avail = 0;
	FILE *f;

	if (prealloc_node_info(ctx, node, &info) < 0)
		return 0;
	if (ctx->nr_nodes != 1)
		return info.mem_free;
	/*
	 * On one node the node's meminfo can cover only part of the memory
	 * (a VM whose memory was hotplugged reports the boot memory there):
	 * take the larger of its MemFree and the system's MemAvailable.
	 */
	f = fopen("/proc/meminfo", "re");
	if (f) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long kb;

			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
				avail = (uint64_t)kb << 10;
		}
		fclose(f);
	}
	return MAX(info.mem_free, avail);
}

static int admit_memory(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			struct prealloc_admit_result *res)
{
	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		uint64_t free_bytes = node_free_memory(ctx, o->nodes[i]);

		if (o->node_bytes[i] <= free_bytes || (o->flags & PREALLOC_ADMIT_NO_CHECK))
			continue;
		res->reason = PREALLOC_ADMIT_MEMORY;
		res->node = o->nodes[i];
		res->needed = o->node_bytes[i];
		res->available = free_bytes;
		return -ENOMEM;
	}
	return 0;
}

static uint64_t new_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		id = ((uint64_t)getpid() << 32) ^ (uint64_t)(now_seconds() * 1e6);
	return id ? id : 1;
}

static void fail_with(struct prealloc_admit_result *res, int reason, int node, uint64_t needed,
		      uint64_t available)
{
	res->reason = reason;
	res->node = node;
	res->needed = needed;
	res->available = available;
}

/* This run's ledger entry for node i of the request. */
static struct ledger_entry reservation_entry(const struct prealloc_reservation *resv,
					     const struct prealloc_admit_opts *o, unsigned int i,
					     uint64_t pages, uint64_t added)
{
	struct ledger_entry e = {
		.id = resv->id,
		.state = PREALLOC_LEDGER_IN_FLIGHT,
		.node = o->nodes[i],
		.page_size = o->page_size,
		.pages = pages,
		.added = added,
		.pid = (int)getpid(),
		.start_time = process_start_time((int)getpid()),
	};

	snprintf(e.owner, sizeof(e.owner), "%s", o->owner && *o->owner ? o->owner : "-");
	return e;
}

/*
 * The hugetlb admission proper, under the lock: checks each node, grows
 * the short ones (RESERVE), and on success appends the in-flight entries.
 * On failure the growth made so far is undone.
 */
static int admit_hugetlb(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			 struct prealloc_reservation *resv, struct prealloc_admit_result *res)
{
	uint64_t ps = o->page_size, need_total = 0, others_total = 0, gfree = 0, gresv = 0;
	uint64_t *need = NULL, *added = NULL, cg_left;
	size_t *slot = NULL;	/* this run's ledger entry per node, or SIZE_MAX */
	bool check = !(o->flags & PREALLOC_ADMIT_NO_CHECK);
	double deadline;
	struct ledger l = { 0 };
	int fd = -1, r;

	need = calloc(o->nr_nodes, sizeof(*need));
	added = calloc(o->nr_nodes, sizeof(*added));
	slot = malloc(o->nr_nodes * sizeof(*slot));
	if (!need || !added || !slot) {
		r = -ENOMEM;
		goto out;
	}
	for (unsigned int i = 0; i < o->nr_nodes; i++)
		slot[i] = SIZE_MAX;
	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		/* Page counts, rounded up; no byte count near 2^64 may wrap to "none". */
		need[i] = o->node_bytes[i] / ps + (o->node_bytes[i] % ps ? 1 : 0);
		if (need[i] > UINT64_MAX - need_total) {
			r = -EINVAL;
			goto out;
		}
		need_total += need[i];
	}

	/* A cgroup limit is per process, not per node, and growth cannot lift it. */
	cg_left = cgroup_pages_left(ps, res->cgroup, sizeof(res->cgroup));
	if (check && need_total > cg_left) {
		fail_with(res, PREALLOC_ADMIT_CGROUP, -1, need_total, cg_left);
		r = -EDQUOT;
		goto out;
	}

	r = pool_lock(resv->lock_timeout_ms, &fd);
	if (r < 0) {
		res->reason = r == -ETIMEDOUT ? PREALLOC_ADMIT_LOCK : PREALLOC_ADMIT_ACCESS;
		goto out;
	}
	r = ledger_load(&l);
	if (r < 0) {
		res->reason = PREALLOC_ADMIT_ACCESS;
		goto out;
	}
	for (size_t i = 0; i < l.nr; i++)
		if (l.e[i].page_size == ps)
			others_total += ledger_outstanding(&l, i);
	pool_global(ps, &gfree, &gresv);

	deadline = now_seconds() + o->reserve_timeout_ms / 1000.0;
	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		uint64_t total = 0, free_pages = 0, others, avail;
		struct grow_result g;

		r = pool_read(o->nodes[i], ps, &total, &free_pages, NULL);
		if (r < 0) {
			/* No pool of this size on this system (e.g. no 1G support). */
			fail_with(res, PREALLOC_ADMIT_POOL, o->nodes[i], need[i], 0);
			r = r == -ENOENT ? -EOPNOTSUPP : r;
			goto undo;
		}
		others = ledger_node_outstanding(&l, o->nodes[i], ps, 0);
		/*
		 * On one node, reservations of other programs (a VMM that
		 * mapped but did not fault yet) count against the node too.
		 */
		if (ctx->nr_nodes == 1 && gresv > others_total)
			others += gresv - others_total;
		avail = free_pages > others ? free_pages - others : 0;
		res->pool_total = total;
		res->pool_free = free_pages;
		res->reserved_others = others;
		if (!check || avail >= need[i])
			continue;
		if (!(o->flags & PREALLOC_ADMIT_RESERVE)) {
			fail_with(res, PREALLOC_ADMIT_POOL, o->nodes[i], need[i], avail);
			r = -ENOMEM;
			goto undo;
		}
		/*
		 * Write ahead: the ledger names the growth before the pool has
		 * it, so a run killed while growing leaves growth that gc can
		 * find. (If the kernel then gives fewer pages, gc may return up
		 * to the difference in free pages: the lesser harm.)
		 */
		struct ledger_entry e = reservation_entry(resv, o, i, need[i], need[i] - avail);

		r = ledger_append(&l, &e);
		if (r < 0)
			goto undo;
		slot[i] = l.nr - 1;
		r = ledger_save(&l);
		if (r < 0) {
			res->reason = PREALLOC_ADMIT_ACCESS;
			goto undo;
		}
		r = pool_grow(o->nodes[i], ps, need[i] - avail, deadline, &g);
		l.e[slot[i]].added = g.added;
		res->grow_requested = g.requested;
		res->grow_got = g.got;
		res->grow_seconds = g.seconds;
		if (r < 0) {
			fail_with(res, r == -ENOMEM ? PREALLOC_ADMIT_GROW : PREALLOC_ADMIT_ACCESS,
				  o->nodes[i], need[i], avail);
			goto undo;
		}
		added[i] = g.added;
		res->added += g.added;
	}
	/* Several nodes: the system-wide count catches other programs' reservations. */
	if (check && ctx->nr_nodes > 1) {
		uint64_t held = MAX(gresv, others_total);

		pool_global(ps, &gfree, &gresv);
		if (gfree < held || gfree - held < need_total) {
			fail_with(res, PREALLOC_ADMIT_GLOBAL, -1, need_total,
				  gfree > held ? gfree - held : 0);
			r = -ENOMEM;
			goto undo;
		}
	}

	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		struct ledger_entry e = reservation_entry(resv, o, i, need[i], added[i]);

		if (slot[i] != SIZE_MAX)
			continue;	/* written ahead of its growth */
		r = ledger_append(&l, &e);
		if (r < 0)
			goto undo;
		slot[i] = l.nr - 1;
	}
	r = ledger_save(&l);
	if (r < 0) {
		res->reason = PREALLOC_ADMIT_ACCESS;
		goto undo;
	}
	resv->in_ledger = true;
	goto out;

undo:
	/* Forget the entries first: a ledger must never claim pages already given back. */
	for (unsigned int i = o->nr_nodes; i-- > 0;)
		if (slot && slot[i] != SIZE_MAX)
			ledger_remove(&l, slot[i]);	/* appended in node order, removed in reverse */
	if (fd >= 0)
		ledger_save(&l);
	for (unsigned int i = 0; added && i < o->nr_nodes; i++) {
		uint64_t returned;

		pool_shrink(o->nodes[i], ps, added[i], &returned);
	}
	res->added = 0;
out:
	ledger_free(&l);
	pool_unlock(fd);
	free(need);
	free(added);
	free(slot);
	return r;
}

EXPORT int prealloc_admit(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *opts,
			  struct prealloc_reservation **ret_resv,
			  struct prealloc_admit_result *ret_result)
{
	struct prealloc_admit_result res = { .size = sizeof(res), .node = -1 };
	struct prealloc_admit_opts o;
	struct prealloc_reservation *resv;
	int r;

	if (!ctx || !opts || !ret_resv)
		return -EINVAL;
	r = copy_sized_in(&o, sizeof(o), opts);
	if (r < 0)
		return r;
	if (!o.nr_nodes || !o.nodes || !o.node_bytes || o.nr_nodes > PREALLOC_MAX_NODES)
		return -EINVAL;
	if (o.page_size != PREALLOC_PAGE_4K && o.page_size != PREALLOC_PAGE_2M &&
	    o.page_size != PREALLOC_PAGE_1G)
		return -EINVAL;
	if (o.owner && strchr(o.owner, '\n'))
		return -EINVAL;
	for (unsigned int i = 0; i < o.nr_nodes; i++)
		if (!topo_node(ctx, o.nodes[i]))
			return -ENODEV;
	if (!o.reserve_timeout_ms)
		o.reserve_timeout_ms = DEFAULT_RESERVE_TIMEOUT_MS;
	if (!o.lock_timeout_ms)
		o.lock_timeout_ms = DEFAULT_LOCK_TIMEOUT_MS;

	resv = calloc(1, sizeof(*resv));
	if (!resv)
		return -ENOMEM;
	resv->ctx = ctx;
	resv->id = new_id();
	resv->page_size = o.page_size;
	resv->nr = o.nr_nodes;
	resv->lock_timeout_ms = o.lock_timeout_ms;
	res.page_size = o.page_size;

	if (o.page_size == PREALLOC_PAGE_4K)
		r = admit_memory(ctx, &o, &res);
	else
		r = admit_hugetlb(ctx, &o, resv, &res);
	if (r == -EACCES || r == -EPERM || r == -EROFS)
		res.reason = PREALLOC_ADMIT_ACCESS;
	if (ret_result && ret_result->size >= sizeof(size_t))
		copy_sized_out(ret_result, &res, sizeof(res));
	if (r < 0) {
		free(resv);
		return r;
	}
	*ret_resv = resv;
	return 0;
}

/* Applies fn to this reservation's entries under the lock and saves. */
static int resv_update(struct prealloc_reservation *resv,
		       int (*fn)(struct ledger *l, size_t i, const void *arg), const void *arg)
{
	struct ledger l = { 0 };
	int fd = -1, r;

	r = pool_lock(resv->lock_timeout_ms, &fd);
	if (r < 0)
		return r;
	r = ledger_load(&l);
	for (size_t i = 0; r == 0 && i < l.nr;) {
		if (l.e[i].id != resv->id) {
			i++;
			continue;
		}
		/* fn returns 1 when it removed entry i. */
		r = fn(&l, i, arg);
		if (r == 0)
			i++;
		else if (r == 1)
			r = 0;
	}
	if (r == 0)
		r = ledger_save(&l);
	ledger_free(&l);
	pool_unlock(fd);
	return r;
}

struct owner_arg {
	const char *owner;
	uint64_t dev, ino, resident;
};

static int set_owner_fn(struct ledger *l, size_t i, const void *arg)
{
	const struct owner_arg *a = arg;
	struct ledger_entry *e = &l->e[i];

	snprintf(e->owner, sizeof(e->owner), "%s", a->owner);
	e->dev = a->dev;
	e->ino = a->ino;
	e->base = a->resident;
	return 0;
}

EXPORT int prealloc_reservation_set_owner(struct prealloc_reservation *resv, const char *owner)
{
	struct owner_arg a = { .owner = owner };
	char abs[PATH_MAX];
	struct stat st;

	if (!resv || !owner || !*owner || strchr(owner, '\n'))
		return -EINVAL;
	if (!resv->in_ledger)
		return 0;
	/* A file is known by its identity too, so a reused path is not mistaken for it. */
	if (stat(owner, &st) == 0 && S_ISREG(st.st_mode) && realpath(owner, abs)) {
		a.owner = abs;
		a.dev = (uint64_t)st.st_dev;
		a.ino = (uint64_t)st.st_ino;
		a.resident = (uint64_t)st.st_blocks * 512 / resv->page_size;
	}
	return resv_update(resv, set_owner_fn, &a);
}

static int commit_fn(struct ledger *l, size_t i, const void *arg)
{
	(void)arg;
	/* Only growth needs remembering; an entry that added nothing goes. */
	if (!l->e[i].added) {
		ledger_remove(l, i);
		return 1;
	}
	l->e[i].state = PREALLOC_LEDGER_HELD;
	l->e[i].pid = 0;
	l->e[i].start_time = 0;
	return 0;
}

EXPORT int prealloc_reservation_commit(struct prealloc_reservation *resv)
{
	int r = 0;

	if (!resv)
		return -EINVAL;
	if (resv->finished)
		return -EALREADY;
	if (resv->in_ledger)
		r = resv_update(resv, commit_fn, NULL);
	if (r == 0)
		resv->finished = true;
	return r;
}

static int rollback_fn(struct ledger *l, size_t i, const void *arg)
{
	uint64_t *total = (uint64_t *)arg, returned, left;
	int r;

	r = ledger_return_growth(l, i, &returned, &left);
	if (r < 0)
		return r;
	*total += returned;
	if (left) {
		/* Pages still in use (the file is open elsewhere): gc gives them back later. */
		l->e[i].state = PREALLOC_LEDGER_ORPHAN;
		return 0;
	}
	ledger_remove(l, i);
	return 1;
}

EXPORT int prealloc_reservation_rollback(struct prealloc_reservation *resv, uint64_t *ret_returned)
{
	uint64_t total = 0;
	int r = 0;

	if (ret_returned)
		*ret_returned = 0;
	if (!resv)
		return -EINVAL;
	if (resv->finished)
		return -EALREADY;
	if (resv->in_ledger)
		r = resv_update(resv, rollback_fn, &total);
	if (ret_returned)
		*ret_returned = total;
	if (r == 0)
		resv->finished = true;
	return r;
}

EXPORT void prealloc_reservation_abandon(struct prealloc_reservation *resv)
{
	/* The ledger keeps the entries; pool --gc settles them once we are gone. */
	free(resv);
}

EXPORT void prealloc_reservation_free(struct prealloc_reservation *resv)
{
	if (!resv)
		return;
	if (!resv->finished)
		prealloc_reservation_rollback(resv, NULL);
	free(resv);
}
