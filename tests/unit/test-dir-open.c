/* SPDX-License-Identifier: MIT */
/*
 * prealloc_dir_open (dir_open.c): a directory opened one step at a time in
 * a private tree under /tmp. A plain path opens, "." and repeated slashes
 * are nothing; a symbolic link at any step is refused, never followed,
 * whether it leads into another directory, to the same one or nowhere; a
 * regular file on the way is no directory; a step of another user than
 * root and uid is refused (root: chown), the user's own step is not; '..'
 * and a relative path without a directory to start from are refused;
 * below a directory the caller opened, every step stays on its filesystem.
 * Each refusal names its step.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prealloc.h"
#include "tap.h"

static char top[64], why[512];

/* prealloc_dir_open of top/rel (absolute) for uid: 0 or its errno; the fd closed. */
static int walk(const char *rel, unsigned int uid)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	why[0] = '\0';
	fd = prealloc_dir_open(AT_FDCWD, path, uid, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}

static void make(const char *rel, bool dir)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	if (dir ? mkdir(path, 0755) : close(open(path, O_CREAT | O_WRONLY, 0600)))
		tap_ok(0, "make %s: %s", path, strerror(errno));
}

static void link_to(const char *target, const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", top, rel);
	if (symlink(target, path) < 0)
		tap_ok(0, "symlink %s: %s", path, strerror(errno));
}

static void test_links(void)
{
	char target[128];

	make("a", true);
	make("a/b", true);
	make("other", true);
	make("a/file", false);
	tap_ok(walk("a/b", 0) == 0, "a plain path opens");
	tap_ok(walk("a//./b/", 0) == 0, "'.' and repeated slashes are nothing");
	snprintf(target, sizeof(target), "%s/other", top);
	link_to(target, "a/to-other");
	tap_ok(walk("a/to-other", 0) == -ELOOP && strstr(why, "a/to-other is a symbolic link"),
	       "a link into another directory, the last step: -ELOOP, named (%s)", why);
	make("other/c", true);
	tap_ok(walk("a/to-other/c", 0) == -ELOOP && strstr(why, "a/to-other is a symbolic link"),
	       "the same link on the way: -ELOOP, named there");
	link_to(".", "a/self");
	tap_ok(walk("a/self/b", 0) == -ELOOP, "a link to its own directory: -ELOOP");
	link_to("nowhere", "a/dangling");
	tap_ok(walk("a/dangling", 0) == -ELOOP, "a dangling link: -ELOOP");
	tap_ok(walk("a/file", 0) == -ENOTDIR && strstr(why, "a/file"),
	       "a regular file on the way: -ENOTDIR, named (%s)", why);
	tap_ok(walk("a/none", 0) == -ENOENT, "a step that does not exist: -ENOENT");
}

static void test_owners(void)
{
	char path[256];

	if (geteuid() != 0) {
		tap_skip("a step of another user: chown needs root");
		return;
	}
	make("u", true);
	make("u/sub", true);
	snprintf(path, sizeof(path), "%s/u", top);
	tap_ok(chown(path, 4242, 4242) == 0, "a step of uid 4242");
	tap_ok(walk("u/sub", 0) == -EPERM && strstr(why, "/u belongs to uid 4242"),
	       "for root: -EPERM, the step and its uid named (%s)", why);
	tap_ok(walk("u/sub", 4343) == -EPERM, "for uid 4343: -EPERM");
	tap_ok(walk("u/sub", 4242) == 0, "for uid 4242, its own step, then root's: opens");
}

static void test_refused(void)
{
	struct stat root, dev;
	int at = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC), below, fd;

	tap_ok(walk("a/../a", 0) == -EINVAL && strstr(why, "'..'"), "'..': -EINVAL (%s)", why);
	tap_ok(prealloc_dir_open(-1, "a/b", 0, NULL, 0) == -EINVAL &&
		       prealloc_dir_open(AT_FDCWD, "a", 0, NULL, 0) == -EINVAL &&
		       prealloc_dir_open(at, NULL, 0, NULL, 0) == -EINVAL &&
		       prealloc_dir_open(at, "", 0, NULL, 0) == -EINVAL,
	       "relative without a directory to start from, NULL or empty: -EINVAL");
	below = open(top, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = prealloc_dir_open(below, "a/b", 0, why, sizeof(why));
	tap_ok(fd >= 0, "below an open directory, a/b opens (%s)", fd >= 0 ? "" : why);
	if (fd >= 0)
		close(fd);
	close(below);
	if (stat("/", &root) == 0 && stat("/proc", &dev) == 0 && root.st_dev != dev.st_dev)
		tap_ok(prealloc_dir_open(at, "proc/self", 0, why, sizeof(why)) == -EXDEV &&
			       strstr(why, "proc is on another filesystem"),
		       "below it, a step on another filesystem: -EXDEV, named (%s)", why);
	else
		tap_skip("/proc is not a filesystem of its own here");
	close(at);
}

int main(void)
{
	snprintf(top, sizeof(top), "/tmp/prealloc-diropen.XXXXXX");
	if (!mkdtemp(top))
		return tap_skip_all("cannot make a directory in /tmp");
	tap_remove_at_exit(top);
	test_links();
	test_owners();
	test_refused();
	return tap_done();
}
