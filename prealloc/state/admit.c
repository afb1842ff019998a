/* SPDX-License-Identifier: MIT */
/*
 * Admission: before any page is touched, prove that every node of a request
 * can supply its pages, optionally growing a node's hugepage pool to fit.
 * Hugetlb reservations are global, so a mapping bound to one node can pass
 * mmap and still SIGBUS when that node runs dry: the check is per node.
 *
 * A hugetlb admission runs under the store's lock and leaves its pool lines
 * in a PREPARING record, which later admissions subtract until the run has
 * faulted its pages (commit) or given up (rollback). A line is written
 * before the growth it names.
 *
 * Every node and every limit is decided first, touching nothing (a plan);
 * then the pools grow; only then are READY warm files cut for short nodes
 * (admit_warm.c), so that a refused request leaves every warm file as it was.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "state.h"

/* 4K and THP: the node's free memory. */
static uint64_t node_free_memory(struct prealloc_ctx *ctx, int node)
{
	struct prealloc_node_info info = { .size = sizeof(info) };
	char line[128], path[PATH_MAX];
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
	if (proc_path(ctx, path, sizeof(path), "/meminfo") == 0 && (f = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long long kb;

			if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
				avail = (uint64_t)kb << 10;
		}
		fclose(f);
	}
	return MAX(info.mem_free, avail);
}

static void fail_with(struct prealloc_admit_result *res, int reason, int node, uint64_t needed,
		      uint64_t available)
{
	res->reason = reason;
	res->node = node;
	res->needed = needed;
	res->available = available;
}

/*
 * 4K and THP, under the lock: the memory cgroups' room for the whole
 * request, and each node's free memory less what other preparing runs have
 * still to fault there (their 4K shares), so two runs started together are
 * not both admitted against the same free memory. A short node counts the
 * READY warm files of the node (their memory is reclaimable), taken only
 * once every node is admitted: a refused request takes nothing. Leaves a
 * 4K share per node in record id.
 */
static int admit_memory(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			struct store *s, uint64_t id, struct admit_plan *plan,
			struct prealloc_admit_result *res)
{
	bool check = !(o->flags & PREALLOC_ADMIT_NO_CHECK);
	unsigned int first_line = s->r[store_find(s, id)].nr_pools;
	uint64_t total = 0, room, ps = PREALLOC_PAGE_4K;
	int r;

	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		if (o->node_bytes[i] > UINT64_MAX - total)
			return -EINVAL;
		total += o->node_bytes[i];
	}
	room = cgroup_memory_left(ctx, res->cgroup, sizeof(res->cgroup));
	if (check && total > room) {
		fail_with(res, PREALLOC_ADMIT_MEMCG, -1, total, room);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		uint64_t free_bytes = node_free_memory(ctx, o->nodes[i]);
		uint64_t others = store_node_outstanding(ctx, s, o->nodes[i], ps, id) * ps;
		struct rec_pool line = { .node = o->nodes[i], .page_size = ps,
					 .pages = (o->node_bytes[i] + ps - 1) / ps };
		uint64_t short_pages;

		free_bytes = free_bytes > others ? free_bytes - others : 0;
		plan[i].avail = free_bytes;
		r = record_add_pool(&s->r[store_find(s, id)], &line);
		if (r < 0)
			return r;
		if (!check || o->node_bytes[i] <= free_bytes)
			continue;
		short_pages = (o->node_bytes[i] - free_bytes + ps - 1) / ps;
		if (!(o->flags & PREALLOC_ADMIT_KEEP_WARM) &&
		    admit_warm_left(s, o, plan, i) >= short_pages) {
			plan[i].take = short_pages;
			continue;
		}
		fail_with(res, PREALLOC_ADMIT_MEMORY, o->nodes[i], o->node_bytes[i], free_bytes);
		res->promised_others = others;
		return -ENOMEM;
	}
	r = admit_warm_take(ctx, o, s, id, first_line, plan, res);
	return r < 0 ? r : store_save(ctx, s);
}

/* Pool line k of record id: the pointer moves whenever the store grows. */
static struct rec_pool *line_of(struct store *s, uint64_t id, unsigned int k)
{
	long i = store_find(s, id);

	return i < 0 ? NULL : &s->r[i].pools[k];
}

/*
 * Node i of the request is short by need - avail pages: write a line that
 * names the growth, then grow. The line's added is corrected to what the
 * kernel gave (0 when the all-or-nothing growth was undone).
 */
static int grow_node(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
		     struct store *s, uint64_t id, unsigned int k, uint64_t short_by,
		     double deadline, struct prealloc_admit_result *res)
{
	struct grow_result g;
	struct rec_pool *p = line_of(s, id, k);
	/* What the line has already (none yet: warm files are taken after every growth). */
	uint64_t nr = 0, prev = p->added;
	int r;

	r = hugetlb_read(ctx, p->node, o->page_size, &nr, NULL, NULL);
	if (r < 0)
		return r;
	p->added = prev + short_by;
	p->growing = true;
	p->grow_from = nr;
	r = store_save(ctx, s);
	if (r < 0) {
		p->added = prev;
		p->growing = false;
		res->reason = PREALLOC_ADMIT_ACCESS;
		return r;
	}
	test_pause("before-pool-write");
	r = hugetlb_grow(ctx, p->node, o->page_size, short_by, deadline, admit_cancel_fd(o),
			 &g);
	test_pause("after-pool-write");
	p = line_of(s, id, k);
	p->added = prev + g.added;
	p->growing = false;
	res->grow_requested = g.requested;
	res->grow_got = g.got;
	res->grow_seconds = g.seconds;
	if (r < 0) {
		fail_with(res, r == -ENOMEM	  ? PREALLOC_ADMIT_GROW
			       : r == -ECANCELED ? PREALLOC_ADMIT_CANCELED
						 : PREALLOC_ADMIT_ACCESS,
			  p->node, p->pages, p->pages - short_by);
		return r;
	}
	res->added += g.added;
	return 0;
}

/*
 * RESERVE, before any pool write: the node's usable free pool pages (avail)
 * plus what its free and reclaimable memory could become, less the margin
 * the host keeps, must cover need; else the growth could only drain the
 * node (and hold the store's lock for the whole reserve timeout).
 */
static int capacity_check(struct prealloc_ctx *ctx, int node, uint64_t ps, uint64_t need,
			  uint64_t avail, struct prealloc_admit_result *res)
{
	struct node_capacity c;
	uint64_t room;

	if (node_capacity(ctx, node, &c) < 0)
		return 0;	/* no meminfo to judge by: the read-back still decides */
	room = c.estimate > c.margin ? (c.estimate - c.margin) / ps : 0;
	res->capacity_estimate = c.estimate + avail * ps;
	res->capacity_margin = c.margin;
	if (need - avail <= room)
		return 0;
	fail_with(res, PREALLOC_ADMIT_CAPACITY, node, need, avail + room);
	return -ENOMEM;
}

/* Pages other programs reserved (mapped, not faulted) beyond prealloc's own records. */
static uint64_t foreign_reserved(struct prealloc_ctx *ctx, const struct store *s, uint64_t ps,
				 uint64_t id, uint64_t *ret_free)
{
	uint64_t mine = 0, gresv = 0;

	*ret_free = 0;
	for (size_t i = 0; i < s->nr; i++)
		for (unsigned int k = 0; s->r[i].id != id && k < s->r[i].nr_pools; k++)
			if (s->r[i].pools[k].page_size == ps)
				mine += record_outstanding(ctx, &s->r[i], &s->r[i].pools[k]);
	hugetlb_global(ctx, ps, ret_free, &gresv);
	return gresv > mine ? gresv - mine : 0;
}

/*
 * Node i of the request, decided, touching nothing: enough free pages (less
 * others' promises); else READY warm files of the node first, then growth
 * (RESERVE, the node's capacity checked) for the rest; else refused. The
 * warm files count only when they, or growth after them, cover the node.
 */
static int plan_node(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
		     struct store *s, uint64_t id, unsigned int i, struct admit_plan *plan,
		     struct prealloc_admit_result *res)
{
	uint64_t ps = o->page_size, total = 0, free_pages = 0, others, avail, gfree, warm;
	uint64_t need = o->node_bytes[i] / ps + (o->node_bytes[i] % ps ? 1 : 0), short_by;
	struct rec_pool line = { .node = o->nodes[i], .page_size = ps, .pages = need };
	int r;

	r = hugetlb_read(ctx, o->nodes[i], ps, &total, &free_pages, NULL);
	if (r < 0) {
		/* No pool of this size on this system (e.g. no 1G support). */
		fail_with(res, PREALLOC_ADMIT_POOL, o->nodes[i], need, 0);
		return r == -ENOENT ? -EOPNOTSUPP : r;
	}
	r = record_add_pool(&s->r[store_find(s, id)], &line);
	if (r < 0)
		return r;
	others = store_node_outstanding(ctx, s, o->nodes[i], ps, id);
	/* On one node, reservations of other programs (a VMM that mapped, not faulted) count. */
	if (ctx->nr_nodes == 1)
		others += foreign_reserved(ctx, s, ps, id, &gfree);
	avail = free_pages > others ? free_pages - others : 0;
	res->pool_total = total;
	res->pool_free = free_pages;
	res->promised_others = others;
	plan[i].avail = avail;
	if ((o->flags & PREALLOC_ADMIT_NO_CHECK) || avail >= need)
		return 0;
	short_by = need - avail;
	warm = (o->flags & PREALLOC_ADMIT_KEEP_WARM) ? 0 : admit_warm_left(s, o, plan, i);
	if (warm >= short_by || (o->flags & PREALLOC_ADMIT_GROW_POOLS))
		plan[i].take = MIN(warm, short_by);
	if (plan[i].take == short_by)
		return 0;
	if (!(o->flags & PREALLOC_ADMIT_GROW_POOLS)) {
		fail_with(res, PREALLOC_ADMIT_POOL, o->nodes[i], need, avail);
		return -ENOMEM;
	}
	r = capacity_check(ctx, o->nodes[i], ps, need, avail + plan[i].take, res);
	if (r < 0)
		return r;
	plan[i].grow = short_by - plan[i].take;
	return 0;
}

/*
 * Several nodes: the system-wide free count, with the planned growth and
 * takes, less every reservation (prealloc's runs and other programs').
 */
static int global_check(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			const struct store *s, uint64_t id, const struct admit_plan *plan,
			uint64_t need_total, struct prealloc_admit_result *res)
{
	uint64_t ps = o->page_size, gfree, held = foreign_reserved(ctx, s, ps, id, &gfree);

	for (unsigned int n = 0; n < ctx->nr_nodes; n++)
		held += store_node_outstanding(ctx, s, ctx->nodes[n].node, ps, id);
	for (unsigned int i = 0; i < o->nr_nodes; i++)
		gfree += plan[i].take + plan[i].grow;
	if (gfree >= held && gfree - held >= need_total)
		return 0;
	fail_with(res, PREALLOC_ADMIT_GLOBAL, -1, need_total, gfree > held ? gfree - held : 0);
	return -ENOMEM;
}

/* Gives back what record id's lines added so far, forgetting them first (write-ahead). */
static void admit_undo(struct prealloc_ctx *ctx, struct store *s, uint64_t id,
		       unsigned int first_line)
{
	long ri = store_find(s, id);
	struct record *r = &s->r[ri];
	unsigned int n = r->nr_pools;
	struct rec_pool *lines = NULL;

	if (n > first_line && (lines = malloc((n - first_line) * sizeof(*lines))))
		memcpy(lines, &r->pools[first_line], (n - first_line) * sizeof(*lines));
	r->nr_pools = first_line;
	/* A store must never claim pages already given back: save, then shrink. */
	if (store_save(ctx, s) < 0 || !lines) {
		/* Unsaved: the lines stay on disk, and gc gives the growth back. */
		free(lines);
		return;
	}
	for (unsigned int k = 0; k < n - first_line; k++) {
		uint64_t returned;

		hugetlb_shrink(ctx, lines[k].node, lines[k].page_size, lines[k].added, &returned);
	}
	free(lines);
}

/*
 * Hugetlb, under the lock: the cgroup limits, every node planned and the
 * system-wide count, all before any change; then each short pool grows
 * (a growth the kernel refuses leaves every warm file as it was); then the
 * warm files are cut. Any failure gives back this request's lines.
 */
static int admit_hugetlb(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
			 struct store *s, uint64_t id, struct admit_plan *plan,
			 struct prealloc_admit_result *res)
{
	uint64_t ps = o->page_size, need_total = 0, cg_left;
	bool check = !(o->flags & PREALLOC_ADMIT_NO_CHECK);
	unsigned int first_line = s->r[store_find(s, id)].nr_pools;
	double deadline = now_seconds() + o->grow_timeout_ms / 1000.0;
	int r = 0;

	for (unsigned int i = 0; i < o->nr_nodes; i++) {
		/* Page counts, rounded up; no byte count near 2^64 may wrap to "none". */
		uint64_t need = o->node_bytes[i] / ps + (o->node_bytes[i] % ps ? 1 : 0);

		if (need > UINT64_MAX - need_total)
			return -EINVAL;
		need_total += need;
	}
	/* A cgroup limit is per process, not per node, and growth cannot lift it. */
	cg_left = cgroup_hugetlb_left(ctx, ps, res->cgroup, sizeof(res->cgroup));
	if (check && need_total > cg_left) {
		fail_with(res, PREALLOC_ADMIT_CGROUP, -1, need_total, cg_left);
		return -EDQUOT;
	}
	for (unsigned int i = 0; i < o->nr_nodes && r == 0; i++)
		r = plan_node(ctx, o, s, id, i, plan, res);
	/* Several nodes: the system-wide count catches other programs' reservations. */
	if (r == 0 && check && ctx->nr_nodes > 1)
		r = global_check(ctx, o, s, id, plan, need_total, res);
	for (unsigned int i = 0; i < o->nr_nodes && r == 0; i++)
		if (plan[i].grow)
			r = grow_node(ctx, o, s, id, first_line + i, plan[i].grow, deadline, res);
	if (r == 0)
		r = admit_warm_take(ctx, o, s, id, first_line, plan, res);
	if (r == 0)
		r = store_save(ctx, s);
	if (r < 0) {
		res->reason = admit_reason(r, res->reason);
		admit_undo(ctx, s, id, first_line);
		res->added = 0;
	}
	return r;
}

int admit_locked(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o, struct store *s,
		 uint64_t id, struct prealloc_admit_result *res)
{
	unsigned int first_line = s->r[store_find(s, id)].nr_pools;
	struct admit_plan *plan = calloc(o->nr_nodes, sizeof(*plan));
	int r;

	if (!plan)
		return -ENOMEM;
	if (o->page_size != PREALLOC_PAGE_4K) {
		r = admit_hugetlb(ctx, o, s, id, plan, res);
	} else {
		r = admit_memory(ctx, o, s, id, plan, res);
		if (r < 0)
			s->r[store_find(s, id)].nr_pools = first_line;
	}
	free(plan);
	return r;
}

int admit_check_opts(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *opts,
		     struct prealloc_admit_opts *o)
{
	int r = copy_sized_in(o, sizeof(*o), opts);

	if (r < 0)
		return r;
	if (!o->nr_nodes || !o->nodes || !o->node_bytes || o->nr_nodes > PREALLOC_MAX_NODES)
		return -EINVAL;
	if (o->page_size != PREALLOC_PAGE_4K && o->page_size != PREALLOC_PAGE_2M &&
	    o->page_size != PREALLOC_PAGE_1G)
		return -EINVAL;
	if ((o->tag && strchr(o->tag, '\n')) ||
	    (o->holder && (!*o->holder || strlen(o->holder) >= 256)) ||
	    (o->holder_check && strlen(o->holder_check) >= PATH_MAX))
		return -EINVAL;
	for (unsigned int i = 0; i < o->nr_nodes; i++)
		if (!topo_node(ctx, o->nodes[i]))
			return -ENODEV;
	if (!o->grow_timeout_ms)
		o->grow_timeout_ms = ADMIT_RESERVE_TIMEOUT_MS;
	if (!o->lock_timeout_ms)
		o->lock_timeout_ms = ADMIT_LOCK_TIMEOUT_MS;
	return 0;
}

int admit_reason(int err, int reason)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
	case -EROFS:
	case -EBADMSG:
		return PREALLOC_ADMIT_ACCESS;
	case -ENOSPC:
		return reason == PREALLOC_ADMIT_FS ? reason : PREALLOC_ADMIT_ACCESS;
	default:
		return reason;
	}
}

void admit_forget(struct prealloc_ctx *ctx, struct store *s, uint64_t id)
{
	long i = store_find(s, id);

	if (i < 0)
		return;
	/* If this save fails, gc finds a dead run's record and settles it. */
	store_del(s, (size_t)i);
	store_save(ctx, s);
}

int admit_new(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o, uint64_t id,
	      const struct admit_new_ops *ops, void *arg, struct prealloc_admit_result *res)
{
	struct store s;
	int fd = -1, r;

	r = admit_lock_load(ctx, o, &s, &fd, res);
	if (r < 0)
		return r;
	r = ops->make(ctx, &s, arg);
	if (r == 0)
		r = admit_locked(ctx, o, &s, id, res);
	if (r == 0 && ops->admitted)
		r = ops->admitted(ctx, &s, arg);
	if (r < 0)
		admit_forget(ctx, &s, id);
	store_close(&s, fd);
	return r;
}

int admit_lock_load(struct prealloc_ctx *ctx, const struct prealloc_admit_opts *o,
		    struct store *s, int *ret_fd, struct prealloc_admit_result *res)
{
	int r = store_open_cancel(ctx, o->lock_timeout_ms, admit_cancel_fd(o), s, ret_fd);

	if (r < 0)
		res->reason = r == -ETIMEDOUT	? PREALLOC_ADMIT_LOCK
			      : r == -ECANCELED ? PREALLOC_ADMIT_CANCELED
						: PREALLOC_ADMIT_ACCESS;
	return r;
}
