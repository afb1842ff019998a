/* SPDX-License-Identifier: MIT */
/*
 * prealloc_warm_take and the directory it links in, through the library
 * alone, on a private tmpfs. With PREALLOC_WARM_TAKE_DIR_FD the link goes
 * into the directory the caller opened, never to where path resolves by
 * name: the directory is renamed after it was opened and a symbolic link
 * to elsewhere put at its name, as a guest's user could in a directory it
 * may write; the file appears in the opened directory, nothing through
 * the link. Without the flag the take opens path's directory itself, one
 * step at a time (prealloc_dir_open): a symbolic link on the way into
 * another guest's directory is refused (-ELOOP, the step named), nothing
 * is linked anywhere and the file stays READY; so is a directory, or a
 * step on the way, of a user other than root and the file's owner
 * (-EPERM), the caller's DIR_FD directory too; the owner's own directory
 * takes the file. Root (mount, chown); skips (1..0 # SKIP) without.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prealloc.h"
#include "tap.h"

static char top[64], mnt[128], state[128], conf[128];

__attribute__((format(printf, 1, 2))) static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static char why[512];	/* the last take's refusal */

/* A take of 4M at path (dir_fd >= 0: DIR_FD; owner > 0: CHOWN to it). */
static int take_as(struct prealloc_ctx *ctx, const char *path, int dir_fd, const char *holder,
		   unsigned int owner)
{
	struct prealloc_warm_take_info info = { .size = sizeof(info) };
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o),
		.flags = (dir_fd >= 0 ? PREALLOC_WARM_TAKE_DIR_FD : 0) |
			 (owner ? PREALLOC_WARM_TAKE_CHOWN : 0),
		.node = 0,
		.page_size = PREALLOC_PAGE_4K,
		.length = UINT64_C(4) << 20,
		.path = path,
		.mount = mnt,
		.uid = owner, .gid = owner,
		.holder = holder,
		.dir_fd = dir_fd,
	};
	int r = prealloc_warm_take(ctx, &o, &info);

	snprintf(why, sizeof(why), "%s", r == 0 ? "" : info.message);
	if (r == 0)
		close(info.fd);
	else
		diag("take %s: %s", path, info.message);
	return r;
}

static int take(struct prealloc_ctx *ctx, const char *path, int dir_fd, const char *holder)
{
	return take_as(ctx, path, dir_fd, holder, 0);
}

/* READY files of node 0, 4k, on mnt. */
static unsigned int ready(struct prealloc_ctx *ctx)
{
	struct prealloc_warm_status st = { .size = sizeof(st) };

	for (unsigned int i = 0; prealloc_warm_status(ctx, conf, i, &st) == 0; i++)
		if (st.node == 0 && st.page_size == PREALLOC_PAGE_4K && !strcmp(st.mount, mnt))
			return st.files[PREALLOC_WARM_READY];
	return 0;
}

/* Entries in dir (but . and ..). */
static unsigned int entries(const char *dir)
{
	unsigned int n = 0;
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/*
 * Without DIR_FD: a symbolic link in path's directory, into another guest's
 * directory; a directory of another user; a step of another user on the
 * way; the owner's own directory.
 */
static void test_by_name(struct prealloc_ctx *ctx)
{
	char a[200], b[200], other[200], mid[200], path[300];
	unsigned int was = ready(ctx);
	int fd;

	snprintf(a, sizeof(a), "%s/guest-a", mnt);
	snprintf(b, sizeof(b), "%s/guest-b", mnt);
	mkdir(a, 0755);
	mkdir(b, 0755);
	snprintf(path, sizeof(path), "%s/to-b", a);
	if (symlink(b, path) < 0)
		diag("symlink: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/to-b/guest.ram", a);
	tap_ok(take(ctx, path, -1, "name-a") == -ELOOP && strstr(why, "guest-a/to-b is a symbolic "
	       "link"), "a symbolic link in the path's directory (into another guest's): -ELOOP, "
	       "the step named");
	tap_ok(entries(b) == 0 && entries(a) == 1 && ready(ctx) == was,
	       "... nothing linked in either directory, the file still READY (%u)", ready(ctx));

	snprintf(other, sizeof(other), "%s/other", mnt);
	mkdir(other, 0755);
	tap_ok(chown(other, 4242, 4242) == 0, "a directory of uid 4242");
	snprintf(path, sizeof(path), "%s/guest.ram", other);
	tap_ok(take(ctx, path, -1, "name-b") == -EPERM && strstr(why, "belongs to uid 4242"),
	       "a take for root into it: -EPERM, the directory's uid named");
	fd = open(other, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tap_ok(take(ctx, path, fd, "name-b") == -EPERM, "... and with it opened (DIR_FD): -EPERM");
	close(fd);
	tap_ok(entries(other) == 0 && ready(ctx) == was,
	       "... nothing linked, the file still READY (%u)", ready(ctx));

	snprintf(mid, sizeof(mid), "%s/mid", mnt);
	mkdir(mid, 0755);
	snprintf(path, sizeof(path), "%s/sub", mid);
	mkdir(path, 0755);
	tap_ok(chown(mid, 4343, 4343) == 0, "a step of uid 4343 above a directory of root's");
	snprintf(path, sizeof(path), "%s/sub/guest.ram", mid);
	tap_ok(take_as(ctx, path, -1, "name-c", 4242) == -EPERM && strstr(why, "mid belongs to "
	       "uid 4343"), "a take for uid 4242 below it: -EPERM, that step named");

	snprintf(path, sizeof(path), "%s/guest.ram", other);
	tap_ok(take_as(ctx, path, -1, "name-d", 4242) == 0 && ready(ctx) == was - 1,
	       "a take for uid 4242 into its own directory: linked there");
	prealloc_warm_give(ctx, NULL, "name-d", NULL);
}


static int fill(struct prealloc_ctx *ctx, const char *text)
{
	struct prealloc_warm_fill_opts o = { .size = sizeof(o), .conf_path = conf };
	FILE *f = fopen(conf, "w");

	if (!f)
		return -errno;
	fprintf(f, "%s", text);
	fclose(f);
	return prealloc_warm_fill(ctx, &o, NULL);
}

int main(void)
{
	char dom[200], moved[220], there[220], outside[128], text[256];
	struct prealloc_ctx *ctx;
	struct stat st;
	int dfd;

	if (geteuid() != 0)
		return tap_skip_all("needs root to mount a private tmpfs");
	snprintf(top, sizeof(top), "/tmp/prealloc-warmdir.XXXXXX");
	if (!mkdtemp(top))
		return 1;
	snprintf(mnt, sizeof(mnt), "%s/mnt", top);
	snprintf(state, sizeof(state), "%s/state", top);
	snprintf(conf, sizeof(conf), "%s/warm.conf", top);
	snprintf(outside, sizeof(outside), "%s/outside", top);
	tap_remove_at_exit(top);	/* at exit, or at a signal that stops the test */
	mkdir(mnt, 0755);
	mkdir(outside, 0755);
	/* A mount namespace of its own: the tmpfs goes with the test, however it ends. */
	if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("none", mnt, "tmpfs", 0, "size=64m") < 0) {
		tap_ok(0, "mount a tmpfs on %s: %s", mnt, strerror(errno));
		return tap_done();
	}
	setenv("PREALLOC_STATE_DIR", state, 1);
	if (prealloc_ctx_new(&ctx) < 0)
		return 1;
	snprintf(text, sizeof(text), "node0.4k = 3 x 4M @ %s\n", mnt);
	tap_ok(fill(ctx, text) == 0, "fill makes three 4 MiB warm files on %s", mnt);

	/* The caller opens its directory, then the name is swapped for a link. */
	snprintf(dom, sizeof(dom), "%s/dom", mnt);
	snprintf(moved, sizeof(moved), "%s/dom-opened", mnt);
	mkdir(dom, 0755);
	dfd = open(dom, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rename(dom, moved);
	if (symlink(outside, dom) < 0)
		diag("symlink: %s", strerror(errno));
	snprintf(there, sizeof(there), "%s/guest.ram", dom);
	tap_ok(take(ctx, there, dfd, "dirfd-a") == 0, "take with DIR_FD succeeds");
	snprintf(text, sizeof(text), "%s/guest.ram", moved);
	tap_ok(lstat(text, &st) == 0 && st.st_size == (4 << 20),
	       "the file is in the directory the caller opened (%s)", text);
	snprintf(text, sizeof(text), "%s/guest.ram", outside);
	tap_ok(lstat(text, &st) < 0 && errno == ENOENT,
	       "nothing went where the path now resolves (%s)", text);

	/* Without the flag the directory is walked: the link is refused, not followed. */
	tap_ok(take(ctx, there, -1, "dirfd-b") == -ELOOP,
	       "without DIR_FD the same path is refused at the link, not followed: -ELOOP");
	prealloc_warm_give(ctx, NULL, "dirfd-a", NULL);
	test_by_name(ctx);

	fill(ctx, "");
	snprintf(text, sizeof(text), "node0.4k = 0 @ %s\n", mnt);
	fill(ctx, text);
	prealloc_ctx_free(ctx);
	close(dfd);
	umount(mnt);
	return tap_done();
}
