/* SPDX-License-Identifier: MIT */
/*
 * The prepare flow up to its record: the request checked (nodes, sizes),
 * the file's place and name, and admission with the record it leaves.
 * Nothing is created before the record exists.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "admit.h"
#include "prepare.h"
#include "staging.h"
#include "statedir.h"

void node_ranges(const int *nodes, unsigned int nr, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < nr && off < len; i++) {
		unsigned int j = i;

		while (j + 1 < nr && nodes[j + 1] == nodes[j] + 1)
			j++;
		off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "", nodes[i]);
		if (j > i && off < len)
			off += (size_t)snprintf(buf + off, len - off, "-%d", nodes[j]);
		i = j;
	}
}

/* Every node must be online and have memory. */
static int check_nodes(struct prepare_req *q)
{
	int nodes[PREALLOC_MAX_NODES], nr = prealloc_nodes(q->ctx, nodes, PREALLOC_MAX_NODES);
	char list[256], path[PATH_MAX];

	for (unsigned int i = 0; i < q->nr_nodes; i++) {
		if (topo_node(q->ctx, q->nodes[i]))
			continue;
		node_ranges(nodes, (unsigned int)MAX(nr, 0), list, sizeof(list));
		sys_path(q->ctx, path, sizeof(path), "/devices/system/node/node%d", q->nodes[i]);
		prepare_fail(q, PREALLOC_STEP_REQUEST,
			     access(path, F_OK) == 0
				     ? "node %d has no memory (nodes with memory: %s)"
				     : "node %d does not exist or is offline (nodes with memory: %s)",
			     q->nodes[i], list);
		return -ENODEV;
	}
	return 0;
}

/* Nodes and bytes per node, from the options. */
static int request_nodes(struct prepare_req *q)
{
	const struct prealloc_prepare_opts *o = &q->o;
	char a[32], b[32];
	uint64_t sum = 0;

	if (o->nr_nodes > PREALLOC_MAX_NODES || (o->nr_nodes && !o->nodes))
		return -EINVAL;
	if (!o->nr_nodes) {
		int nr = prealloc_default_nodes(q->ctx, q->nodes, PREALLOC_MAX_NODES);

		if (nr <= 0)
			return nr < 0 ? nr : -ENODEV;
		q->nr_nodes = (unsigned int)MIN(nr, PREALLOC_MAX_NODES);
	} else {
		q->nr_nodes = o->nr_nodes;
		memcpy(q->nodes, o->nodes, o->nr_nodes * sizeof(*q->nodes));
	}
	q->sized = o->node_bytes && o->nr_nodes;
	for (unsigned int i = 0; q->sized && i < q->nr_nodes; i++) {
		if (o->node_bytes[i] > UINT64_MAX - sum) {
			prepare_fail(q, PREALLOC_STEP_REQUEST,
				     "the node sizes add up to more than 16 EiB");
			return -EOVERFLOW;
		}
		q->node_bytes[i] = o->node_bytes[i];
		sum += o->node_bytes[i];
	}
	q->length = q->sized ? sum : o->length;
	if (q->sized && o->length && o->length != sum) {
		prepare_fail(q, PREALLOC_STEP_REQUEST,
			     "the node sizes add up to %s, not the size given (%s)",
			     format_bytes(sum, a, sizeof(a)), format_bytes(o->length, b, sizeof(b)));
		return -EINVAL;
	}
	if (!q->length) {
		prepare_fail(q, PREALLOC_STEP_REQUEST, "size must be greater than zero");
		return -EINVAL;
	}
	return check_nodes(q);
}

/* The size in whole pages, at least one per node; an even split unless sized. */
static int request_sizes(struct prepare_req *q)
{
	uint64_t unit = q->page == PREALLOC_PAGE_THP ? PREALLOC_PAGE_2M : q->page, pages;
	char sz[32];

	if (q->length % unit) {
		prepare_fail(q, PREALLOC_STEP_REQUEST, "size %s is not a multiple of the %s page size",
			     format_bytes(q->length, sz, sizeof(sz)), prealloc_page_name(q->page));
		return -EINVAL;
	}
	for (unsigned int i = 0; q->sized && i < q->nr_nodes; i++) {
		if (q->node_bytes[i] % unit) {
			prepare_fail(q, PREALLOC_STEP_REQUEST,
				     "node %d's size %s is not a multiple of the %s page size",
				     q->nodes[i], format_bytes(q->node_bytes[i], sz, sizeof(sz)),
				     prealloc_page_name(q->page));
			return -EINVAL;
		}
	}
	pages = q->length / unit;
	if (pages < q->nr_nodes) {
		prepare_fail(q, PREALLOC_STEP_REQUEST, "size %s is fewer than one %s page per node",
			     format_bytes(q->length, sz, sizeof(sz)), prealloc_page_name(q->page));
		return -EINVAL;
	}
	for (unsigned int i = 0; !q->sized && i < q->nr_nodes; i++)
		q->node_bytes[i] = (pages / q->nr_nodes + (i < pages % q->nr_nodes ? 1 : 0)) * unit;
	return 0;
}

void size_token(uint64_t bytes, char *buf, size_t len)
{
	static const char suffix[] = "KMGT";
	int s = -1;

	while (s < 3 && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		s++;
	}
	if (s < 0)
		snprintf(buf, len, "%llu", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)bytes, suffix[s]);
}

/*
 * The staging directory on the final directory's mount, and the staged
 * file's name in it: the record's id, unique to the record, which gc
 * trusts as the file's identity until dev and ino are recorded.
 */
static int request_stage(struct prepare_req *q, const char *real)
{
	char why[256], dir[PATH_MAX];

	q->stage_fd = staging_open(q->ctx, q->dir_fd, real[0] ? real : "/", dir, sizeof(dir), why,
				   sizeof(why));
	if (q->stage_fd < 0) {
		prepare_fail(q, PREALLOC_STEP_LOCATION, "cannot use the staging directory %s: %s%s",
			     dir, why, q->stage_fd == -EPERM ? " (remove it; prealloc makes its "
			     "own, mode 0700)" : "");
		return q->stage_fd;
	}
	snprintf(q->stage_name, sizeof(q->stage_name), "%016llx", (unsigned long long)q->id);
	if ((size_t)snprintf(q->tmp, sizeof(q->tmp), "%s/%s", dir, q->stage_name) >=
	    sizeof(q->tmp)) {
		prepare_fail(q, PREALLOC_STEP_LOCATION, "the path %s is too long", dir);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* The final path (absolute), and where the file is staged until it is ready. */
static int request_names(struct prepare_req *q)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char real[PATH_MAX], base[PATH_MAX], ranges[256], sz[32];
	struct stat st;
	int n = 0;

	if (q->o.flags & PREALLOC_PREPARE_DIR_FD) {
		/* Named by the caller relative to its own descriptor: nothing to resolve. */
		snprintf(real, sizeof(real), "%s", q->dir);
	} else if (!realpath(q->dir, real)) {
		int r = -errno;

		prepare_fail(q, PREALLOC_STEP_LOCATION, "cannot use directory %s: %s", q->dir,
			     strerror(-r));
		return r;
	}
	if (!strcmp(real, "/"))
		real[0] = '\0';
	node_ranges(q->nodes, q->nr_nodes, ranges, sizeof(ranges));
	size_token(q->length, sz, sizeof(sz));
	for (int attempt = 0; attempt < 16; attempt++) {
		unsigned char raw[7];
		char suffix[8];

		if (q->path) {
			snprintf(base, sizeof(base), "%s", q->path);
			n = snprintf(q->final, sizeof(q->final), "%s/%s", real, basename(base));
			break;
		}
		if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
			for (size_t i = 0; i < sizeof(raw); i++)
				raw[i] = (unsigned char)(rand() ^ time(NULL));
		for (size_t i = 0; i < sizeof(raw); i++)
			suffix[i] = alphabet[raw[i] % (sizeof(alphabet) - 1)];
		suffix[sizeof(raw)] = '\0';
		n = snprintf(q->final, sizeof(q->final), "%s/prealloc-node%s-%s-%s", real, ranges, sz,
			     suffix);
		if (fstatat(q->dir_fd, strrchr(q->final, '/') + 1, &st, AT_SYMLINK_NOFOLLOW) < 0)
			break;
	}
	if (n < 0 || (size_t)n >= sizeof(q->final)) {
		prepare_fail(q, PREALLOC_STEP_LOCATION, "the path under %s is too long", q->dir);
		return -ENAMETOOLONG;
	}
	snprintf(q->info.path, sizeof(q->info.path), "%s", q->final);
	return q->exists ? 0 : request_stage(q, real);
}

int prepare_request(struct prepare_req *q)
{
	const struct prealloc_prepare_opts *o = &q->o;
	uint64_t ps = o->page_size;
	int r;

	if ((ps != PREALLOC_PAGE_AUTO && ps != PREALLOC_PAGE_THP && ps != PREALLOC_PAGE_4K &&
	     ps != PREALLOC_PAGE_2M && ps != PREALLOC_PAGE_1G) ||
	    (o->path && (!*o->path || strlen(o->path) >= PATH_MAX)) ||
	    (o->holder && (!*o->holder || strlen(o->holder) >= 256)) ||
	    (o->holder_check && strlen(o->holder_check) >= PATH_MAX)) {
		prepare_fail(q, PREALLOC_STEP_REQUEST, "invalid prepare options");
		return -EINVAL;
	}
	if (!q->o.reserve_timeout_ms)
		q->o.reserve_timeout_ms = ADMIT_RESERVE_TIMEOUT_MS;
	if (!q->o.lock_timeout_ms)
		q->o.lock_timeout_ms = ADMIT_LOCK_TIMEOUT_MS;
	if (o->holder) {
		owner_holder(&q->holder, o->holder, o->holder_check, o->holder_expires);
	}
	q->path = o->path;
	q->id = record_new_id();
	q->info.record_id = q->id;
	r = request_nodes(q);
	if (r == 0)
		r = prepare_locate(q);
	if (r == 0)
		r = request_sizes(q);
	if (r == 0)
		r = request_names(q);
	q->info.page_size = q->page;
	q->info.created = !q->exists;
	if (r < 0 && !q->info.step)
		prepare_fail(q, PREALLOC_STEP_REQUEST, "invalid request: %s", strerror(-r));
	return r;
}

/*
 * Bytes per node still to fault: a reused file's resident pages are
 * credited to the nodes in proportion, since where they sit is unknown.
 */
static void need_split(const struct prepare_req *q, uint64_t resident, uint64_t page,
		       uint64_t *ret)
{
	for (unsigned int i = 0; i < q->nr_nodes; i++) {
		uint64_t credit = (uint64_t)((double)resident * (double)q->node_bytes[i] /
					     (double)q->length);

		credit = credit / page * page;
		ret[i] = q->node_bytes[i] > credit ? q->node_bytes[i] - credit : 0;
	}
}

/* The record of this run, as admission finds it: PREPARING, owned by us, naming its file. */
static int record_new(struct prepare_req *q, struct store *s, const struct stat *st)
{
	struct record *r = store_add(s, q->id);

	if (!r)
		return -ENOMEM;
	r->state = PREALLOC_RECORD_PREPARING;
	owner_self(q->ctx, &r->owner);
	r->has_file = true;
	r->created = !q->exists;
	r->size = q->length;
	r->page_size = q->page;
	snprintf(r->path, sizeof(r->path), "%s", q->final);
	if (q->exists) {
		r->dev = (uint64_t)st->st_dev;
		r->ino = (uint64_t)st->st_ino;
	} else {
		snprintf(r->tmp, sizeof(r->tmp), "%s", q->tmp);
	}
	return 0;
}

/*
 * The filesystem's own room: a tmpfs or a hugetlbfs mounted with size= has
 * a limit of its own (a hugetlbfs without one reports no blocks at all).
 */
static int fs_room(struct prepare_req *q, const uint64_t *need, struct prealloc_admit_result *res)
{
	uint64_t total = 0, room;
	struct statfs sfs;

	if ((q->o.flags & PREALLOC_PREPARE_NO_CHECK) || fstatfs(q->dir_fd, &sfs) < 0 || !sfs.f_blocks)
		return 0;
	for (unsigned int i = 0; i < q->nr_nodes; i++)
		total += need[i];
	room = (uint64_t)sfs.f_bavail * (uint64_t)sfs.f_bsize;
	if (total <= room)
		return 0;
	res->reason = PREALLOC_ADMIT_FS;
	res->node = -1;
	res->needed = total;
	res->available = room;
	/* A mount path longer than the field is cut short, said with "...". */
	if ((size_t)snprintf(res->cgroup, sizeof(res->cgroup), "%.*s", (int)sizeof(res->cgroup) - 1,
			     q->dir) >= sizeof(res->cgroup) - 1 && strlen(q->dir) >= sizeof(res->cgroup))
		memcpy(res->cgroup + sizeof(res->cgroup) - 4, "...", 4);
	return -ENOSPC;
}

int prepare_admit(struct prepare_req *q)
{
	struct prealloc_admit_result res = { .size = sizeof(res), .node = -1 };
	uint64_t page = q->page == PREALLOC_PAGE_THP ? PREALLOC_PAGE_4K : q->page;
	struct prealloc_admit_opts ao = {
		.size = sizeof(ao),
		.flags = ((q->o.flags & PREALLOC_PREPARE_RESERVE) ? PREALLOC_ADMIT_RESERVE : 0) |
			 ((q->o.flags & PREALLOC_PREPARE_NO_CHECK) ? PREALLOC_ADMIT_NO_CHECK : 0) |
			 ((q->o.flags & PREALLOC_PREPARE_CANCEL_FD) ? PREALLOC_ADMIT_CANCEL_FD : 0),
		.page_size = page,
		.nr_nodes = q->nr_nodes,
		.nodes = q->nodes,
		.node_bytes = NULL,
		.reserve_timeout_ms = q->o.reserve_timeout_ms,
		.lock_timeout_ms = q->o.lock_timeout_ms,
		.cancel_fd = q->o.cancel_fd,
	};
	uint64_t *need = calloc(q->nr_nodes, sizeof(*need));
	struct stat st = { 0 };
	struct store s;
	int fd = -1, r;

	if (!need)
		return -ENOMEM;
	if (q->exists && stat(q->final, &st) == 0)
		q->info.resident_before = (uint64_t)st.st_blocks * 512;
	need_split(q, q->info.resident_before, page, need);
	ao.node_bytes = need;
	res.page_size = page;
	r = fs_room(q, need, &res);
	if (r < 0)
		goto out;
	r = admit_lock_load(q->ctx, &ao, &s, &fd, &res);
	if (r < 0)
		goto out;
	r = record_new(q, &s, &st);
	if (r == 0)
		r = admit_locked(q->ctx, &ao, &s, q->id, &res);
	/* Pages a reused file already has are not this run's to fault. */
	for (unsigned int k = 0; r == 0 && q->exists && k < s.r[s.nr - 1].nr_pools; k++)
		s.r[s.nr - 1].pools[k].base = (uint64_t)st.st_blocks * 512 / page;
	if (r == 0 && q->exists)
		r = store_save(q->ctx, &s);
	q->recorded = r == 0;
	if (r < 0)
		admit_forget(q->ctx, &s, q->id);
	store_free(&s);
	statedir_unlock(fd);
out:
	free(need);
	q->info.admit = res;
	q->info.added = res.added;
	if (r < 0) {
		res.reason = q->info.admit.reason = admit_reason(r, res.reason);
		q->info.step = PREALLOC_STEP_ADMISSION;
		admit_message(&res, r, q->o.flags & PREALLOC_PREPARE_RESERVE, q->info.message,
			      sizeof(q->info.message));
		return r;
	}
	test_pause("after-admission");
	return 0;
}
