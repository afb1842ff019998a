/* SPDX-License-Identifier: MIT */
/*
 * start begin: where QEMU opens a domain's files (libvirt's per-domain
 * directory below memory_backing_dir, opened one step at a time), and the
 * stage's deadline; the files themselves are the front-end layer's
 * (frontend/prefault.c: linked warm, or pre-faulted).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run.h"

/*
 * libvirt's short name for the per-domain directory: <id>-<name cut at 20>,
 * at 20 characters when its daemon runs under a UTF-8 locale (mbstowcs),
 * at 20 bytes under the C locale (or a name that is not UTF-8). A hook
 * always runs with LC_ALL=C and cannot know the daemon's locale: both are
 * candidates. ret[0] is the 20-character one; returns how many differ (1, 2).
 */
static unsigned int short_names(const struct hook_run *run, char ret[2][320])
{
	const unsigned char *n = (const unsigned char *)run->dom.name;
	size_t bytes = 0, chars = 0, utf8 = 0;
	bool valid = true;

	/* 20 UTF-8 characters: every byte but continuation bytes (10xxxxxx) starts one. */
	for (size_t i = 0; n[i]; i++) {
		if ((n[i] & 0xc0) != 0x80 && chars++ == 20)
			break;
		utf8 = i + 1;
	}
	for (size_t i = 0; n[i]; i++) {
		unsigned int len = n[i] < 0x80 ? 1 : (n[i] & 0xe0) == 0xc0 ? 2
			: (n[i] & 0xf0) == 0xe0 ? 3 : (n[i] & 0xf8) == 0xf0 ? 4 : 0;

		for (unsigned int k = 1; k < len && valid; k++)
			valid = (n[i + k] & 0xc0) == 0x80;
		if (!len || !valid) {
			valid = false;
			break;
		}
		i += len - 1;
	}
	bytes = strnlen(run->dom.name, 20);
	snprintf(ret[0], 320, "%d-%.*s", run->dom.id, (int)(valid ? utf8 : bytes), run->dom.name);
	snprintf(ret[1], 320, "%d-%.*s", run->dom.id, (int)bytes, run->dom.name);
	return strcmp(ret[0], ret[1]) ? 2 : 1;
}

int run_backend_path(const struct hook_run *run, unsigned int i, char *buf, size_t len)
{
	char names[2][320];
	unsigned int nr = short_names(run, names), k = 0;
	struct stat st;
	int n;

	/* The one that exists (for display); else libvirt's under a UTF-8 locale. */
	for (unsigned int c = 0; c < nr; c++) {
		n = snprintf(buf, len, "%s/%s", run->backing_dir, names[c]);
		if (n > 0 && (size_t)n < len && lstat(buf, &st) == 0) {
			k = c;
			break;
		}
	}
	n = snprintf(buf, len, "%s/%s/%s", run->backing_dir, names[k],
		     run->g.demand.backends[i].alias);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * below, opened from at (prealloc_dir_open: one step at a time, no link,
 * each step root's or the guest's DAC user's, on memory_backing_dir's
 * filesystem); the refusal in the guest's message.
 */
static int open_below(struct hook_run *run, int at, const char *below)
{
	char why[512];
	int fd = prealloc_dir_open(at, below, run->dom.has_dac ? run->dom.uid : 0, why,
				   sizeof(why));

	if (fd < 0)
		snprintf(run->g.msg, sizeof(run->g.msg), "domain %.200s: libvirt's memory directory "
			 "below %.300s: %.400s: not used", run->dom.name, run->g.mount, why);
	return fd;
}

/*
 * The per-domain directory libvirt made for the guest's memory,
 * <memory_backing_dir>/libvirt/qemu/<short name>, opened one step at a
 * time below memory_backing_dir: never through a symbolic link, each step
 * root's or the guest's DAC user's, on memory_backing_dir's filesystem.
 * The guest's uid may write in libvirt's directories; a link it put there
 * would otherwise let root create a guest-sized file anywhere. Its path
 * goes to ret_dir.
 */
static int open_domain_dir(struct hook_run *run, char *ret_dir, size_t len)
{
	const char *top_path = run->g.mount;
	char names[2][320], below[400];
	unsigned int nr = short_names(run, names), found = 0, k = 0;
	int top, qemu = -1, dom = -EINVAL;
	struct stat st;

	top = open(top_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0) {
		dom = -errno;
		snprintf(run->g.msg, sizeof(run->g.msg), "domain %s: memory_backing_dir %.400s: %s",
			 run->dom.name, top_path, strerror(-dom));
		goto out;
	}
	qemu = dom = open_below(run, top, "libvirt/qemu");
	if (qemu < 0)
		goto out;
	for (unsigned int c = 0; c < nr; c++)
		if (fstatat(qemu, names[c], &st, AT_SYMLINK_NOFOLLOW) == 0) {
			found++;
			k = c;
		}
	if (found != 1) {
		snprintf(run->g.msg, sizeof(run->g.msg), found
			 ? "domain %.200s: both %.300s/%.100s and %.100s exist: which one libvirt "
			   "made is unknown" : "domain %.200s: libvirt's memory directory "
			   "%.300s/%.100s does not exist at start begin", run->dom.name,
			 run->backing_dir, names[0],
			 nr > 1 ? names[1] : "");
		dom = found ? -EEXIST : -ENOENT;
		goto out;
	}
	snprintf(ret_dir, len, "%s/%s", run->backing_dir, names[k]);
	/* From the top again, so that a refusal names the path below it. */
	snprintf(below, sizeof(below), "libvirt/qemu/%s", names[k]);
	dom = open_below(run, top, below);
out:
	if (qemu >= 0)
		close(qemu);
	if (top >= 0)
		close(top);
	return dom;
}

int run_start(struct hook_run *run)
{
	struct guest *g = &run->g;
	uint64_t bytes = 0;
	unsigned int files;
	char dir[4096];
	int dir_fd, r;

	if (!g->prefault && !g->warm)
		return 0;
	for (unsigned int i = 0; i < g->demand.nr_backends; i++)
		if (g->demand.backends[i].file && !run->host.backing_page) {
			guest_log(g, 6, "%s: memory_backing_dir %s is on disk: "
				  "nothing to pre-fault or link", g->name, run->backing_dir);
			return 0;
		}
	files = guest_start_files(g, &bytes);
	/* The deadline grows with the size at a conservative rate: a big guest is not cut off. */
	g->deadline = now_seconds() + run->set.deadline_s +
		      (double)bytes / (double)run->set.prefault_rate;
	if (!files)
		return 0;
	/* The backstop, should a step overrun the deadline it was given. */
	alarm((unsigned int)(g->deadline - now_seconds()) + 5);
	/* libvirt labels the per-domain directory only when it creates it: never make it. */
	dir_fd = open_domain_dir(run, dir, sizeof(dir));
	if (dir_fd < 0)
		return dir_fd;
	r = guest_start(g, dir_fd, dir);
	close(dir_fd);
	return r;
}
