/* SPDX-License-Identifier: MIT */
/*
 * prealloc_warm_take with PREALLOC_WARM_TAKE_DIR_FD through the library
 * alone, on a private tmpfs: the link goes into the directory the caller
 * opened, never to where path resolves by name. The directory is renamed
 * after it was opened and a symbolic link to elsewhere put at its name, as
 * a guest's user could in a directory it may write: the file appears in the
 * opened directory, and nothing appears through the link. Without the flag
 * the same take goes by name (the link's target), which is what the flag is
 * for. Root (mount); skips (1..0 # SKIP) without.
 */
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

static int take(struct prealloc_ctx *ctx, const char *path, int dir_fd, const char *holder)
{
	struct prealloc_warm_take_info info = { .size = sizeof(info) };
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o),
		.flags = dir_fd >= 0 ? PREALLOC_WARM_TAKE_DIR_FD : 0,
		.node = 0,
		.page_size = PREALLOC_PAGE_4K,
		.length = UINT64_C(4) << 20,
		.path = path,
		.mount = mnt,
		.holder = holder,
		.dir_fd = dir_fd,
	};
	int r = prealloc_warm_take(ctx, &o, &info);

	if (r == 0)
		close(info.fd);
	else
		diag("take %s: %s", path, info.message);
	return r;
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
	snprintf(text, sizeof(text), "node0.4k = 2 x 4M @ %s\n", mnt);
	tap_ok(fill(ctx, text) == 0, "fill makes two 4 MiB warm files on %s", mnt);

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

	/* Without the flag the path is resolved by name: the link is followed. */
	tap_ok(take(ctx, there, -1, "dirfd-b") == -EXDEV,
	       "without DIR_FD the same path resolves through the link, off the mount: -EXDEV");

	prealloc_warm_give(ctx, NULL, "dirfd-a", NULL);
	fill(ctx, "");
	snprintf(text, sizeof(text), "node0.4k = 0 @ %s\n", mnt);
	fill(ctx, text);
	prealloc_ctx_free(ctx);
	close(dfd);
	umount(mnt);
	return tap_done();
}
