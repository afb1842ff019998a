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

#include "flows.h"

/* Every node must be online and have memory. */
static int check_nodes(struct prepare_req *req)
{
	int nodes[PREALLOC_MAX_NODES], nr = prealloc_nodes(req->ctx, nodes, PREALLOC_MAX_NODES);
	char list[256], path[PATH_MAX];

	for (unsigned int i = 0; i < req->nr_nodes; i++) {
		if (topo_node(req->ctx, req->nodes[i]))
			continue;
		prealloc_format_list(nodes, (unsigned int)MAX(nr, 0), list, sizeof(list));
		sys_path(req->ctx, path, sizeof(path), "/devices/system/node/node%d",
			 req->nodes[i]);
		prepare_fail(req, PREALLOC_STEP_REQUEST,
			     access(path, F_OK) == 0
				 ? "node %d has no memory (nodes with memory: %s)"
				 : "node %d does not exist or is offline (nodes with memory: %s)",
			     req->nodes[i], list);
		return -ENODEV;
	}
	return 0;
}

/* Nodes and bytes per node, from the options. */
static int request_nodes(struct prepare_req *req)
{
	const struct prealloc_prepare_opts *o = &req->o;
	char a[32], b[32];
	uint64_t sum = 0;

	if (o->nr_nodes > PREALLOC_MAX_NODES) {
		prepare_fail(req, PREALLOC_STEP_REQUEST, "nr_nodes %u is more than %d",
			     o->nr_nodes, PREALLOC_MAX_NODES);
		return -EINVAL;
	}
	if (o->nr_nodes && !o->nodes) {
		prepare_fail(req, PREALLOC_STEP_REQUEST, "nr_nodes %u with no nodes array",
			     o->nr_nodes);
		return -EINVAL;
	}
	if (!o->nr_nodes) {
		int nr = prealloc_default_nodes(req->ctx, req->nodes, PREALLOC_MAX_NODES);

		if (nr <= 0)
			return nr < 0 ? nr : -ENODEV;
		req->nr_nodes = (unsigned int)MIN(nr, PREALLOC_MAX_NODES);
	} else {
		req->nr_nodes = o->nr_nodes;
		memcpy(req->nodes, o->nodes, o->nr_nodes * sizeof(*req->nodes));
	}
	req->sized = o->node_bytes && o->nr_nodes;
	for (unsigned int i = 0; req->sized && i < req->nr_nodes; i++) {
		if (o->node_bytes[i] > UINT64_MAX - sum) {
			prepare_fail(req, PREALLOC_STEP_REQUEST,
				     "the node sizes add up to more than 16 EiB");
			return -EOVERFLOW;
		}
		req->node_bytes[i] = o->node_bytes[i];
		sum += o->node_bytes[i];
	}
	req->length = req->sized ? sum : o->length;
	if (req->sized && o->length && o->length != sum) {
		prepare_fail(req, PREALLOC_STEP_REQUEST,
			     "the node sizes add up to %s, not the size given (%s)",
			     prealloc_format_size(sum, a, sizeof(a)),
			     prealloc_format_size(o->length, b, sizeof(b)));
		return -EINVAL;
	}
	if (!req->length) {
		prepare_fail(req, PREALLOC_STEP_REQUEST, "size must be greater than zero");
		return -EINVAL;
	}
	return check_nodes(req);
}

/* The size in whole pages, at least one per node; an even split unless sized. */
static int request_sizes(struct prepare_req *req)
{
	uint64_t unit = req->page == PREALLOC_PAGE_THP ? PREALLOC_PAGE_2M : req->page, pages;
	char sz[32];

	if (req->length % unit) {
		prepare_fail(
		    req, PREALLOC_STEP_REQUEST, "size %s is not a multiple of the %s page size",
		    prealloc_format_size(req->length, sz, sizeof(sz)), prealloc_page_name(req->page));
		return -EINVAL;
	}
	for (unsigned int i = 0; req->sized && i < req->nr_nodes; i++) {
		if (req->node_bytes[i] % unit) {
			prepare_fail(req, PREALLOC_STEP_REQUEST,
				     "node %d's size %s is not a multiple of the %s page size",
				     req->nodes[i],
				     prealloc_format_size(req->node_bytes[i], sz, sizeof(sz)),
				     prealloc_page_name(req->page));
			return -EINVAL;
		}
	}
	pages = req->length / unit;
	if (pages < req->nr_nodes) {
		prepare_fail(
		    req, PREALLOC_STEP_REQUEST, "size %s is fewer than one %s page per node",
		    prealloc_format_size(req->length, sz, sizeof(sz)), prealloc_page_name(req->page));
		return -EINVAL;
	}
	for (unsigned int i = 0; !req->sized && i < req->nr_nodes; i++)
		req->node_bytes[i] =
		    (pages / req->nr_nodes + (i < pages % req->nr_nodes ? 1 : 0)) * unit;
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
static int request_stage(struct prepare_req *req, const char *real)
{
	char why[256], dir[PATH_MAX];

	req->stage_fd = staging_open(req->ctx, req->dir_fd, real[0] ? real : "/", dir, sizeof(dir),
				     why, sizeof(why));
	if (req->stage_fd < 0) {
		prepare_fail(req, PREALLOC_STEP_LOCATION,
			     "cannot use the staging directory %s: %s%s", dir, why,
			     req->stage_fd == -EPERM ? " (remove it; prealloc makes its "
						       "own, mode 0700)"
						     : "");
		return req->stage_fd;
	}
	snprintf(req->stage_name, sizeof(req->stage_name), "%016llx", (unsigned long long)req->id);
	if ((size_t)snprintf(req->tmp, sizeof(req->tmp), "%s/%s", dir, req->stage_name) >=
	    sizeof(req->tmp)) {
		prepare_fail(req, PREALLOC_STEP_LOCATION, "the path %s is too long", dir);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* The final path (absolute), and where the file is staged until it is ready. */
static int request_names(struct prepare_req *req)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	char real[PATH_MAX], base[PATH_MAX], ranges[256], sz[32];
	struct stat st;
	int n = 0;

	if (req->o.flags & PREALLOC_PREPARE_DIR_FD) {
		/* Named by the caller relative to its own descriptor: nothing to resolve. */
		snprintf(real, sizeof(real), "%s", req->dir);
	} else if (!realpath(req->dir, real)) {
		int r = -errno;

		prepare_fail(req, PREALLOC_STEP_LOCATION, "cannot use directory %s: %s", req->dir,
			     strerror(-r));
		return r;
	}
	if (!strcmp(real, "/"))
		real[0] = '\0';
	prealloc_format_list(req->nodes, req->nr_nodes, ranges, sizeof(ranges));
	size_token(req->length, sz, sizeof(sz));
	for (int attempt = 0; attempt < 16; attempt++) {
		unsigned char raw[7];
		char suffix[8];

		if (req->path) {
			snprintf(base, sizeof(base), "%s", req->path);
			n = snprintf(req->final, sizeof(req->final), "%s/%s", real, basename(base));
			break;
		}
		if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
			for (size_t i = 0; i < sizeof(raw); i++)
				raw[i] = (unsigned char)(rand() ^ time(NULL));
		for (size_t i = 0; i < sizeof(raw); i++)
			suffix[i] = alphabet[raw[i] % (sizeof(alphabet) - 1)];
		suffix[sizeof(raw)] = '\0';
		n = snprintf(req->final, sizeof(req->final), "%s/prealloc-node%s-%s-%s", real,
			     ranges, sz, suffix);
		if (fstatat(req->dir_fd, strrchr(req->final, '/') + 1, &st, AT_SYMLINK_NOFOLLOW) <
		    0)
			break;
	}
	if (n < 0 || (size_t)n >= sizeof(req->final)) {
		prepare_fail(req, PREALLOC_STEP_LOCATION, "the path under %s is too long",
			     req->dir);
		return -ENAMETOOLONG;
	}
	snprintf(req->info.path, sizeof(req->info.path), "%s", req->final);
	return req->exists ? 0 : request_stage(req, real);
}

/* The options' own fields, each refusal naming the field: 0 or -EINVAL. */
static int request_options(struct prepare_req *req)
{
	const struct prealloc_prepare_opts *o = &req->o;
	uint64_t ps = o->page_size;
	const char *what = NULL;

	if (ps != PREALLOC_PAGE_AUTO && ps != PREALLOC_PAGE_THP && ps != PREALLOC_PAGE_4K &&
	    ps != PREALLOC_PAGE_2M && ps != PREALLOC_PAGE_1G)
		what = "page_size is none of auto, thp, 4k, 2M and 1G";
	else if (o->path && !*o->path)
		what = "path is empty";
	else if (o->path && strlen(o->path) >= PATH_MAX)
		what = "path is longer than PATH_MAX";
	else if (o->holder && !*o->holder)
		what = "holder is empty";
	else if (o->holder && strlen(o->holder) >= 256)
		what = "holder is longer than 255 bytes";
	else if (o->holder_check && strlen(o->holder_check) >= PATH_MAX)
		what = "holder_check is longer than PATH_MAX";
	if (!what)
		return 0;
	prepare_fail(req, PREALLOC_STEP_REQUEST, "invalid prepare options: %s", what);
	return -EINVAL;
}

int prepare_request(struct prepare_req *req)
{
	int r = request_options(req);

	if (r < 0)
		return r;
	if (!req->o.grow_timeout_ms)
		req->o.grow_timeout_ms = ADMIT_RESERVE_TIMEOUT_MS;
	if (!req->o.lock_timeout_ms)
		req->o.lock_timeout_ms = ADMIT_LOCK_TIMEOUT_MS;
	if (req->o.holder)
		owner_holder(&req->owner, req->o.holder, req->o.holder_check,
			     req->o.holder_expires);
	req->path = req->o.path;
	req->id = record_new_id();
	req->info.record_id = req->id;
	r = request_nodes(req);
	if (r == 0)
		r = prepare_locate(req);
	if (r == 0)
		r = request_sizes(req);
	if (r == 0)
		r = request_names(req);
	req->info.page_size = req->page;
	req->info.created = !req->exists;
	if (r < 0 && !req->info.step)
		prepare_fail(req, PREALLOC_STEP_REQUEST, "invalid request: %s", strerror(-r));
	return r;
}

/*
 * Bytes per node still to fault: a reused file's resident pages are
 * credited to the nodes in proportion, since where they sit is unknown.
 */
static void need_split(const struct prepare_req *req, uint64_t resident, uint64_t page,
		       uint64_t *ret)
{
	for (unsigned int i = 0; i < req->nr_nodes; i++) {
		uint64_t credit = (uint64_t)((double)resident * (double)req->node_bytes[i] /
					     (double)req->length);

		credit = credit / page * page;
		ret[i] = req->node_bytes[i] > credit ? req->node_bytes[i] - credit : 0;
	}
}

/* The record of this run, as admission finds it: PREPARING, owned by us, naming its file. */
struct prepare_new {
	struct prepare_req *req;
	const struct stat *st;	/* a reused file's, at admission */
};

static int record_new(struct prealloc_ctx *ctx, struct store *s, void *arg)
{
	const struct prepare_new *n = arg;
	struct prepare_req *req = n->req;
	const struct stat *st = n->st;
	struct record *r = record_begin(s, req->id);

	if (!r)
		return -ENOMEM;
	owner_self(ctx, &r->owner);
	r->has_file = true;
	r->created = !req->exists;
	r->size = req->length;
	r->page_size = req->page;
	if (!req->more.stay_staged)
		snprintf(r->path, sizeof(r->path), "%s", req->final);
	if (req->more.record_made)	/* written with the record, by admission's save */
		req->more.record_made(r, req->more.arg);
	if (req->exists) {
		r->dev = (uint64_t)st->st_dev;
		r->ino = (uint64_t)st->st_ino;
	} else {
		snprintf(r->tmp, sizeof(r->tmp), "%s", req->tmp);
	}
	return 0;
}

/* Pages a reused file already has are not this run's to fault. */
static int record_admitted(struct prealloc_ctx *ctx, struct store *s, void *arg)
{
	const struct prepare_new *n = arg;
	long ri = store_find(s, n->req->id);
	uint64_t page = n->req->page == PREALLOC_PAGE_THP ? PREALLOC_PAGE_4K : n->req->page;

	if (!n->req->exists || ri < 0)
		return 0;
	for (unsigned int k = 0; k < s->r[ri].nr_pools; k++)
		s->r[ri].pools[k].base = (uint64_t)n->st->st_blocks * 512 / page;
	return store_save(ctx, s);
}

static const struct admit_new_ops prepare_admit_ops = { .make = record_new,
							.admitted = record_admitted };

/*
 * The filesystem's own room: a tmpfs or a hugetlbfs mounted with size= has
 * a limit of its own (a hugetlbfs without one reports no blocks at all).
 */
static int fs_room(struct prepare_req *req, const uint64_t *need, struct prealloc_admit_result *res)
{
	uint64_t total = 0, room;
	struct statfs sfs;

	if ((req->o.flags & PREALLOC_PREPARE_NO_CHECK) || fstatfs(req->dir_fd, &sfs) < 0 ||
	    !sfs.f_blocks)
		return 0;
	for (unsigned int i = 0; i < req->nr_nodes; i++)
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
			     req->dir) >= sizeof(res->cgroup) - 1 &&
	    strlen(req->dir) >= sizeof(res->cgroup))
		memcpy(res->cgroup + sizeof(res->cgroup) - 4, "...", 4);
	return -ENOSPC;
}

/* What admission is asked for this request, need bytes per node in page. */
static struct prealloc_admit_opts admit_opts(const struct prepare_req *req, uint64_t page,
					     const uint64_t *need)
{
	const unsigned int f = req->o.flags;

	return (struct prealloc_admit_opts){
	    .size = sizeof(struct prealloc_admit_opts),
	    .flags = ((f & PREALLOC_PREPARE_GROW_POOLS) ? PREALLOC_ADMIT_GROW_POOLS : 0) |
		     ((f & PREALLOC_PREPARE_NO_CHECK) ? PREALLOC_ADMIT_NO_CHECK : 0) |
		     ((f & PREALLOC_PREPARE_CANCEL_FD) ? PREALLOC_ADMIT_CANCEL_FD : 0) |
		     req->more.admit_flags,
	    .page_size = page,
	    .nr_nodes = req->nr_nodes,
	    .nodes = req->nodes,
	    .node_bytes = need,
	    .grow_timeout_ms = req->o.grow_timeout_ms,
	    .lock_timeout_ms = req->o.lock_timeout_ms,
	    .cancel_fd = req->o.cancel_fd,
	};
}

int prepare_admit(struct prepare_req *req)
{
	struct prealloc_admit_result res = { .size = sizeof(res), .node = -1 };
	uint64_t page = req->page == PREALLOC_PAGE_THP ? PREALLOC_PAGE_4K : req->page;
	struct prealloc_admit_opts ao;
	uint64_t *need = calloc(req->nr_nodes, sizeof(*need));
	struct stat st = { 0 };
	int r;

	if (!need)
		return -ENOMEM;
	if (req->exists && stat(req->final, &st) == 0)
		req->info.resident_before = (uint64_t)st.st_blocks * 512;
	need_split(req, req->info.resident_before, page, need);
	ao = admit_opts(req, page, need);
	res.page_size = page;
	r = fs_room(req, need, &res);
	if (r < 0)
		goto out;
	r = admit_new(req->ctx, &ao, req->id, &prepare_admit_ops, &(struct prepare_new){ req, &st },
		      &res);
	req->recorded = r == 0;
out:
	free(need);
	req->info.admit = res;
	req->info.added = res.added;
	if (r < 0) {
		res.reason = req->info.admit.reason = admit_reason(r, res.reason);
		req->info.step = PREALLOC_STEP_ADMISSION;
		admit_message(&res, r, req->o.flags & PREALLOC_PREPARE_GROW_POOLS, req->info.message,
			      sizeof(req->info.message));
		return r;
	}
	test_pause("after-admission");
	return 0;
}
