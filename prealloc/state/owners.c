/* SPDX-License-Identifier: MIT */
/*
 * Who owns a record and whether it still lives (a run: its pid with the
 * start time it had; a named holder: its check, or for one that is a
 * process, its pid with its start time), where a record's file is
 * now, and how many promised pages a live run has still to fault.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>

#include "state.h"

uint64_t process_start_time(const struct prealloc_ctx *ctx, int pid)
{
	char path[PATH_MAX], buf[1024], *p;
	unsigned long long start = 0;

	if (pid <= 0 || proc_path(ctx, path, sizeof(path), "/%d/stat", pid) < 0)
		return 0;
	if (read_file_str(path, buf, sizeof(buf)) < 0)
		return 0;
	/* The command name may hold spaces and parens: fields resume after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* After ") ": state is field 3; starttime is field 22, 19 fields further. */
	p++;
	for (int field = 2; field < 21 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1)
		return 0;
	return start;
}

void owner_self(const struct prealloc_ctx *ctx, struct rec_owner *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = PREALLOC_OWNER_RUN;
	o->pid = (int)getpid();
	o->start = process_start_time(ctx, o->pid);
}

void owner_holder(struct rec_owner *o, const char *holder, const char *check, int64_t expires)
{
	memset(o, 0, sizeof(*o));
	o->kind = PREALLOC_OWNER_HOLDER;
	snprintf(o->holder, sizeof(o->holder), "%s", holder);
	snprintf(o->check, sizeof(o->check), "%s", check ? check : "");
	o->expires = expires;
}

void record_set_busy(const struct prealloc_ctx *ctx, struct record *r, bool busy)
{
	r->busy_pid = busy ? (int)getpid() : 0;
	r->busy_start = busy ? process_start_time(ctx, r->busy_pid) : 0;
}

bool record_busy(const struct prealloc_ctx *ctx, const struct record *r)
{
	struct rec_owner run = { .kind = PREALLOC_OWNER_RUN, .pid = r->busy_pid,
				 .start = r->busy_start };

	return r->busy_pid > 0 && owner_alive(ctx, &run);
}

bool record_busy_elsewhere(const struct prealloc_ctx *ctx, const struct record *r)
{
	return r->busy_pid != (int)getpid() && record_busy(ctx, r);
}

EXPORT int prealloc_holder_process(struct prealloc_ctx *ctx, const char *prefix, int pid,
				   char *ret_holder, size_t holder_len, char *ret_check,
				   size_t check_len)
{
	uint64_t start;
	int n;

	if (!ctx || !prefix || pid < 0 || !ret_holder || !ret_check)
		return -EINVAL;
	pid = pid ? pid : (int)getpid();
	start = process_start_time(ctx, pid);
	if (!start)
		return -ESRCH;
	n = snprintf(ret_holder, holder_len, "%s:%d:%llu", prefix, pid, (unsigned long long)start);
	if (n < 0 || (size_t)n >= holder_len || (size_t)n >= sizeof(((struct rec_owner *)0)->holder))
		return -ENAMETOOLONG;
	return proc_path(ctx, ret_check, check_len, "/%d", pid);
}

/*
 * A holder that is one process (prealloc_holder_process): its name ends
 * in ":PID:START" and its check path is <proc>/PID. Its pid and start
 * time; false for any other holder.
 */
static bool holder_process(const struct prealloc_ctx *ctx, const struct rec_owner *o,
			   int *ret_pid, uint64_t *ret_start)
{
	const char *p = strrchr(o->holder, ':');
	unsigned long long start;
	char check[PATH_MAX];
	int pid, n = 0;

	if (!p || !o->check[0])
		return false;
	while (p > o->holder && p[-1] != ':')	/* to the PID's first digit */
		p--;
	if (p == o->holder || strspn(p, "0123456789:") != strlen(p) ||
	    sscanf(p, "%d:%llu%n", &pid, &start, &n) != 2 || p[n] || pid <= 0 || !start)
		return false;
	if (proc_path(ctx, check, sizeof(check), "/%d", pid) < 0 || strcmp(check, o->check))
		return false;
	*ret_pid = pid;
	*ret_start = start;
	return true;
}

bool owner_alive(const struct prealloc_ctx *ctx, const struct rec_owner *o)
{
	uint64_t start;
	struct stat st;
	int pid;

	switch (o->kind) {
	case PREALLOC_OWNER_RUN:
		/*
		 * The start time tells a pid reused by another process. Where
		 * it could not be read when the record was made (no procfs in a
		 * container), the process's existence is all there is to go by.
		 */
		if (!o->start)
			return o->pid > 0 && (kill(o->pid, 0) == 0 || errno == EPERM);
		return process_start_time(ctx, o->pid) == o->start;
	case PREALLOC_OWNER_HOLDER:
		if (ctx->holder_fn) {
			int r = ctx->holder_fn(ctx->holder_userdata, o->holder);

			if (r >= 0)
				return r > 0;	/* unknown: fall through to the record's own check */
		}
		/* One process: that one, not another that has its pid since. */
		if (holder_process(ctx, o, &pid, &start))
			return process_start_time(ctx, pid) == start;
		/*
		 * With both a check path and an expiry, the holder lives while
		 * the path exists or until the expiry: a guest that has not
		 * started yet (libvirt writes its status file only then).
		 */
		if (o->check[0] && lstat(o->check, &st) == 0)
			return true;
		if (o->expires)
			return time(NULL) < o->expires;
		return !o->check[0];
	default:
		return false;
	}
}

int file_statx(int dirfd, const char *path, int flags, struct statx *ret)
{
	if (statx(dirfd, path, flags | AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS | STATX_BTIME,
		  ret) < 0)
		return -errno;
	return 0;
}

static uint64_t statx_dev(const struct statx *stx)
{
	return (uint64_t)makedev(stx->stx_dev_major, stx->stx_dev_minor);
}

void record_set_identity(struct record *r, const struct statx *stx)
{
	bool born = stx->stx_mask & STATX_BTIME;

	r->dev = statx_dev(stx);
	r->ino = stx->stx_ino;
	r->tag_sec = born ? stx->stx_btime.tv_sec : 0;
	r->tag_nsec = born ? (long)stx->stx_btime.tv_nsec : 0;
}

bool record_is_file(const struct record *r, const struct statx *stx)
{
	if (!S_ISREG(stx->stx_mode) || statx_dev(stx) != r->dev || stx->stx_ino != r->ino)
		return false;
	if (!r->tag_sec && !r->tag_nsec)
		return true;
	if ((stx->stx_mask & STATX_BTIME) && stx->stx_btime.tv_sec == r->tag_sec &&
	    (long)stx->stx_btime.tv_nsec == r->tag_nsec)
		return true;
	/* A store written before birth times were kept: the mtime it had set. */
	return stx->stx_mtime.tv_sec == r->tag_sec && (long)stx->stx_mtime.tv_nsec == r->tag_nsec;
}

bool holder_claim_pending(const struct prealloc_ctx *ctx, const struct record *r)
{
	const struct rec_owner *o = &r->owner;
	struct stat st;

	/*
	 * A holder's claim without a file (pages its guest will fault itself)
	 * is promised to it until its check path appears: it counts against
	 * other admissions while the guest is starting.
	 */
	if (r->state != PREALLOC_RECORD_READY || o->kind != PREALLOC_OWNER_HOLDER ||
	    r->has_file || !o->check[0] || !o->expires)
		return false;
	return lstat(o->check, &st) < 0 && owner_alive(ctx, o);
}

static bool same_file(const char *path, const struct record *r)
{
	struct statx stx;

	return path[0] && file_statx(AT_FDCWD, path, 0, &stx) == 0 && record_is_file(r, &stx);
}

/* A regular file at path, whoever it is. */
static bool regular_at(const char *path)
{
	struct stat st;

	return path[0] && lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

unsigned int record_file_names(const struct record *r)
{
	unsigned int names = 0;

	if (!r->has_file)
		return 0;
	if (r->ino && r->warm != WARM_NONE)
		return same_file(r->tmp, r) ? RECORD_AT_TMP : 0;
	if (r->ino) {
		names |= same_file(r->path, r) ? RECORD_AT_PATH : 0;
		names |= same_file(r->tmp, r) ? RECORD_AT_TMP : 0;
		return names;
	}
	/*
	 * Not yet known by identity (a run killed before it recorded dev and
	 * ino): the hidden name, whose random id the record holds and which
	 * lives in the creator's private staging directory, is the identity.
	 */
	if (r->tmp[0])
		return regular_at(r->tmp) ? RECORD_AT_TMP : 0;
	/* A caller's own file named at admission, before it existed: by path alone. */
	return regular_at(r->path) ? RECORD_AT_PATH : 0;
}

int record_file_where(const struct record *r)
{
	unsigned int names = record_file_names(r);

	return names & RECORD_AT_PATH ? 1 : names & RECORD_AT_TMP ? 2 : 0;
}

uint64_t record_outstanding(const struct prealloc_ctx *ctx, const struct record *r,
			    const struct rec_pool *p)
{
	uint64_t total = 0, resident;
	const char *file;
	struct stat st;
	int where;

	if (holder_claim_pending(ctx, r))
		return p->pages;
	if (r->state != PREALLOC_RECORD_PREPARING || !owner_alive(ctx, &r->owner))
		return 0;
	where = record_file_where(r);
	file = where == 1 ? r->path : r->tmp;
	if (!where || stat(file, &st) < 0 || !p->page_size)
		return p->pages;
	/*
	 * hugetlbfs counts a file's pages in st_blocks as they are faulted.
	 * Workers fill all nodes at once, so each node is credited its share
	 * of what the file gained since it was named.
	 */
	for (unsigned int k = 0; k < r->nr_pools; k++)
		if (r->pools[k].page_size == p->page_size)
			total += r->pools[k].pages;
	resident = (uint64_t)st.st_blocks * 512 / p->page_size;
	resident = resident > p->base ? resident - p->base : 0;
	if (!total)
		return 0;
	resident = (uint64_t)((double)resident * (double)p->pages / (double)total);
	return resident >= p->pages ? 0 : p->pages - resident;
}

uint64_t store_node_outstanding(const struct prealloc_ctx *ctx, const struct store *s, int node,
				uint64_t page_size, uint64_t skip_id)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < s->nr; i++) {
		if (s->r[i].id == skip_id)
			continue;
		for (unsigned int k = 0; k < s->r[i].nr_pools; k++)
			if (s->r[i].pools[k].node == node && s->r[i].pools[k].page_size == page_size)
				sum += record_outstanding(ctx, &s->r[i], &s->r[i].pools[k]);
	}
	return sum;
}
