/* SPDX-License-Identifier: MIT */
/*
 * Which warm file a take gets (docs/warm.md): the request checked, then
 * one pick, that prealloc_warm_take runs under the store's lock and
 * prealloc_warm_find runs over the store as it is, changing nothing: a
 * front end asks the library which file it would get instead of matching
 * the records itself.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

/* A READY file cleared in place for a tenant goes to it only; WARM_TENANT_SINGLE's to any. */
static bool tenant_may_take(const struct record *r, const char *tenant)
{
	return !r->tenant[0] || !strcmp(r->tenant, WARM_TENANT_SINGLE) ||
	       (tenant && !strcmp(r->tenant, tenant));
}

/* Whether the caller counted record id already (opts' skip_ids). */
static bool pick_skipped(const struct prealloc_warm_take_opts *o, uint64_t id)
{
	for (unsigned int k = 0; o->skip_ids && k < o->nr_skip_ids; k++)
		if (o->skip_ids[k] == id)
			return true;
	return false;
}

/* RESERVED: r is the file o's holder reserved, of exactly its size. */
static bool reserved_for(const struct record *r, const struct prealloc_warm_take_opts *o)
{
	return r->warm == PREALLOC_WARM_HANDED && !r->path[0] && r->size == o->length &&
	       r->owner.kind == PREALLOC_OWNER_HOLDER && !strcmp(r->owner.holder, o->holder);
}

long warm_pick(const struct store *s, const struct prealloc_warm_take_opts *o, uint64_t dev,
	       unsigned int *ret_files)
{
	bool reserved = o->flags & PREALLOC_WARM_TAKE_RESERVED;
	bool no_grow = o->flags & PREALLOC_WARM_TAKE_NO_GROW;
	long best = -1, grow = -1, held = -1;
	unsigned int n = 0, smaller = 0;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (!warm_is(r, o->node, o->page_size, dev) || pick_skipped(o, r->id))
			continue;
		if (reserved) {
			if (reserved_for(r, o) && n++ == 0)
				held = (long)i;
			continue;
		}
		if (!warm_ready(r) || !tenant_may_take(r, o->tenant))
			continue;
		if (r->size < o->length) {
			smaller++;
			if (grow < 0 || r->size > s->r[grow].size)
				grow = (long)i;
		} else {
			n++;
			if (best < 0 || r->size < s->r[best].size)
				best = (long)i;
		}
	}
	if (ret_files)
		*ret_files = n + (reserved || no_grow ? 0 : smaller);
	if (reserved)
		return held;
	return best >= 0 ? best : no_grow ? -1 : grow;
}

int warm_hit_of(uint64_t file_bytes, uint64_t length)
{
	return file_bytes > length   ? PREALLOC_WARM_HIT_CUT
	       : file_bytes < length ? PREALLOC_WARM_HIT_GROWN
				     : PREALLOC_WARM_HIT;
}

__attribute__((format(printf, 4, 5))) int warm_fail(char *msg, size_t len, int err,
						    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return err;
}

int warm_pick_miss(const struct prealloc_warm_take_opts *o, char *msg, size_t len)
{
	char sz[32];

	return warm_fail(msg, len, -ENOENT,
			 (o->flags & PREALLOC_WARM_TAKE_RESERVED)
				 ? "no warm file of %s reserved for it on node %d in %s pages"
				 : "no ready warm file of %s or more on node %d in %s pages",
			 prealloc_format_size(o->length, sz, sizeof(sz)), o->node,
			 prealloc_page_name(o->page_size));
}

/* The request's fields, as a take and a find check them alike. */
static int check_request(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o,
			 char *msg, size_t len)
{
	if (!topo_node(ctx, o->node))
		return warm_fail(msg, len, -ENODEV, "node %d has no memory", o->node);
	/* Never a record the store's reader would refuse: expiry on the clock's scale. */
	if (o->holder_expires < 0 || o->holder_expires > WARM_EXPIRES_MAX)
		return warm_fail(msg, len, -EINVAL, "holder_expires %lld is not a time between the "
				 "epoch and the year 9999", (long long)o->holder_expires);
	if (o->tenant && !tenant_valid(o->tenant))
		return warm_fail(msg, len, -EINVAL, "the tenant must be 1 to %d printable bytes, the "
				 "first not '@'", TENANT_MAX - 1);
	if ((o->page_size != PREALLOC_PAGE_4K && o->page_size != PREALLOC_PAGE_2M &&
	     o->page_size != PREALLOC_PAGE_1G) || !o->length || o->length % o->page_size)
		return warm_fail(msg, len, -EINVAL, "the size must be a whole number of 4k, 2M or "
				 "1G pages");
	if ((o->flags & (PREALLOC_WARM_TAKE_RESERVE | PREALLOC_WARM_TAKE_RESERVED)) &&
	    (!o->holder || !o->holder[0] ||
	     (o->flags & PREALLOC_WARM_TAKE_RESERVE && o->flags & PREALLOC_WARM_TAKE_RESERVED)))
		return warm_fail(msg, len, -EINVAL, "a reserve, or a take of what was reserved, "
				 "needs a holder (and is one or the other)");
	if (o->nr_skip_ids && !o->skip_ids)
		return warm_fail(msg, len, -EINVAL, "nr_skip_ids without skip_ids");
	return 0;
}

/*
 * The directory of o->path opened (DIR_FD: the caller's; else step by step,
 * no symbolic link, prealloc_dir_open), root's or the file's owner's, on the
 * mount's device ms.
 */
static int open_dir(const struct prealloc_warm_take_opts *o, const char *mount,
		    const struct stat *ms, char *msg, size_t len, int *ret_dir)
{
	unsigned int owner = (o->flags & PREALLOC_WARM_TAKE_CHOWN) ? o->uid : geteuid();
	char dir[4096], why[512];
	struct stat ds;
	int fd;

	snprintf(dir, sizeof(dir), "%s", o->path);
	if (!(o->flags & PREALLOC_WARM_TAKE_DIR_FD))
		fd = prealloc_dir_open(AT_FDCWD, dirname(dir), owner, why, sizeof(why));
	else if ((fd = fcntl(o->dir_fd, F_DUPFD_CLOEXEC, 0)) < 0)
		fd = -errno;
	if (fd < 0)
		return warm_fail(msg, len, fd, "cannot link at %s: %s", o->path,
				 (o->flags & PREALLOC_WARM_TAKE_DIR_FD) ? strerror(-fd) : why);
	if (fstat(fd, &ds) < 0 || !S_ISDIR(ds.st_mode)) {
		close(fd);
		return warm_fail(msg, len, -ENOTDIR, "the directory of %s is not one", o->path);
	}
	if (ds.st_uid != 0 && ds.st_uid != owner) {
		close(fd);
		return warm_fail(msg, len, -EPERM, "cannot link at %s: its directory belongs to "
				 "uid %u, neither root nor uid %u (the file's owner)", o->path,
				 (unsigned int)ds.st_uid, owner);
	}
	if (ds.st_dev != ms->st_dev) {
		close(fd);
		return warm_fail(msg, len, -EXDEV, "%s is not on %s, where the warm files are",
				 o->path, mount);
	}
	*ret_dir = fd;
	return 0;
}

int warm_take_check(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o, char *msg,
		    size_t len, uint64_t *ret_dev, int *ret_dir)
{
	const char *mount = warm_mount(ctx, o->mount, o->page_size);
	struct stat ms;
	int r = check_request(ctx, o, msg, len);

	if (r < 0)
		return r;
	if (ret_dir && !(o->flags & PREALLOC_WARM_TAKE_RESERVE) &&
	    (!o->path || o->path[0] != '/' || strlen(o->path) >= 4096))
		return warm_fail(msg, len, -EINVAL, "the path must be absolute");
	if (!mount || stat(mount, &ms) < 0)
		return warm_fail(msg, len, -ENOENT, "no %s mount for the warm files",
				 prealloc_page_name(o->page_size));
	*ret_dev = (uint64_t)ms.st_dev;
	if (!ret_dir)
		return 0;	/* a find: nothing to link */
	*ret_dir = -1;
	if (o->flags & PREALLOC_WARM_TAKE_RESERVE)
		return 0;	/* no path: nothing to link */
	return open_dir(o, mount, &ms, msg, len, ret_dir);
}
