/* SPDX-License-Identifier: MIT */
/*
 * prealloc-libvirt-hook --install | --uninstall | --refresh [--root DIR]:
 * puts a copy of this binary where libvirt looks for hooks
 * (/etc/libvirt/hooks/qemu.d/prealloc, whatever meson's prefix), writes an
 * example /etc/prealloc/libvirt.conf when none exists, and makes a running
 * libvirtd or virtqemud rescan its hooks (SIGHUP). A copy, not a link:
 * libvirtd's AppArmor profile lets it run what lies under
 * /etc/libvirt/hooks, not a link's target under /usr/libexec. --refresh
 * copies this binary over an installed copy and does nothing where none is
 * (the package's postinst: after an upgrade the hook libvirt runs is the
 * packaged one). --root DIR does it under DIR and signals nobody (a
 * package build or a test). Run by a person: it prints to stdout.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "install.h"
#include "libvirt_conf_example.h"

#define HOOK_PATH "/etc/libvirt/hooks/qemu.d/prealloc"
#define CONF_PATH "/etc/prealloc/libvirt.conf"

/* mkdir -p of path's parent directories, mode 0755. */
static int make_parents(const char *path)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *s = strchr(buf + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	return 0;
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Copies src to dst through a temporary beside it: libvirt never runs half a binary. */
static int copy_file(const char *src, const char *dst, mode_t mode)
{
	char tmp[PATH_MAX], buf[1 << 16];
	int in, out, r = 0;
	ssize_t n;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp-%d", dst, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	while (r == 0 && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		r = n < 0 ? -errno : write_all(out, buf, (size_t)n);
	}
	if (r == 0 && (fchmod(out, mode) < 0 || fsync(out) < 0))
		r = -errno;
	close(in);
	if (close(out) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

/* The example settings, only where no settings file exists: 1 written, 0 kept. */
static int write_example(const char *path)
{
	int fd, r;

	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	r = write_all(fd, conf_example, sizeof(conf_example) - 1);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		unlink(path);
	return r < 0 ? r : 1;
}

/* SIGHUP to each libvirt daemon whose pid file names a live process of that name. */
static void rescan_hooks(void)
{
	static const char *const daemons[] = { "libvirtd", "virtqemud" };
	bool any = false;

	for (size_t i = 0; i < sizeof(daemons) / sizeof(daemons[0]); i++) {
		char path[64], comm[64] = "";
		FILE *f;
		int pid = 0;

		snprintf(path, sizeof(path), "/run/%s.pid", daemons[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%d", &pid) != 1)
			pid = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/comm", pid);
		f = pid > 0 ? fopen(path, "re") : NULL;
		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		if (strcmp(comm, daemons[i]))
			continue;	/* a stale pid file */
		if (kill(pid, SIGHUP) < 0) {
			fprintf(stderr, "prealloc-libvirt-hook: SIGHUP to %s (pid %d): %s\n",
				daemons[i], pid, strerror(errno));
			continue;
		}
		printf("%s (pid %d) rescans its hooks (SIGHUP)\n", daemons[i], pid);
		any = true;
	}
	if (!any)
		printf("no libvirtd or virtqemud runs: it finds the hook when it starts\n");
}

static int usage(FILE *f, int rc)
{
	fprintf(f, "Usage: prealloc-libvirt-hook --install | --uninstall | --refresh [--root DIR]\n"
		   "       prealloc-libvirt-hook DOMAIN OP SUBOP - < domain.xml   (run by libvirt)\n"
		   "--install puts a copy of this binary at " HOOK_PATH ", an example\n"
		   CONF_PATH " where none exists, and sends libvirtd SIGHUP;\n"
		   "--uninstall removes the hook (the settings stay); --refresh copies this binary\n"
		   "over an installed hook, none installed: nothing. --root DIR: under DIR,\n"
		   "no signal. See prealloc-libvirt-hook(8).\n");
	return rc;
}

/* This binary's path into buf: 0, or -errno. */
static int self_path(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/*
 * --refresh: an installed copy replaced by this binary (an upgrade's new
 * build), atomically; no hook, or a link an operator made: left as it is.
 * 0 done (or nothing to do), 1 failed.
 */
static int refresh(const char *hook)
{
	char self[PATH_MAX];
	struct stat st;
	int r;

	if (lstat(hook, &st) < 0) {
		if (errno != ENOENT) {
			fprintf(stderr, "prealloc-libvirt-hook: %s: %s\n", hook, strerror(errno));
			return 1;
		}
		printf("no hook at %s: nothing to refresh\n", hook);
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		printf("%s is no copy of the hook (a link?): left as it is\n", hook);
		return 0;
	}
	r = self_path(self, sizeof(self));
	if (r == 0 && strcmp(self, hook))
		r = copy_file(self, hook, 0755);
	if (r < 0) {
		fprintf(stderr, "prealloc-libvirt-hook: refreshing %s: %s\n", hook, strerror(-r));
		return 1;
	}
	printf("refreshed %s from %s\n", hook, self);
	return 0;
}

/* --uninstall: the hook goes, the settings stay; 0 done, 1 failed. */
static int uninstall(const char *hook, const char *conf)
{
	if (unlink(hook) < 0 && errno != ENOENT) {
		fprintf(stderr, "prealloc-libvirt-hook: removing %s: %s\n", hook, strerror(errno));
		return 1;
	}
	printf("removed %s (%s stays)\n", hook, conf);
	printf("guests running now keep their pages until they stop; then "
	       "`prealloc gc` gives them back\n");
	return 0;
}

/* --install: this binary at hook, the example settings at conf if none; 0 done, 1 failed. */
static int install(const char *hook, const char *conf)
{
	char self[PATH_MAX];
	int r;

	r = self_path(self, sizeof(self));
	if (r < 0) {
		fprintf(stderr, "prealloc-libvirt-hook: /proc/self/exe: %s\n", strerror(-r));
		return 1;
	}
	r = make_parents(hook);
	if (r == 0 && strcmp(self, hook))
		r = copy_file(self, hook, 0755);
	if (r < 0) {
		fprintf(stderr, "prealloc-libvirt-hook: installing %s: %s\n", hook, strerror(-r));
		return 1;
	}
	printf("installed %s\n", hook);
	r = make_parents(conf);
	if (r == 0)
		r = write_example(conf);
	if (r < 0) {
		fprintf(stderr, "prealloc-libvirt-hook: writing %s: %s\n", conf, strerror(-r));
		return 1;
	}
	printf(r ? "wrote %s (every setting at its default)\n" : "kept %s\n", conf);
	return 0;
}

int hook_install_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "install", no_argument, NULL, 'i' },
		{ "uninstall", no_argument, NULL, 'u' },
		{ "refresh", no_argument, NULL, 'f' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char hook[PATH_MAX], conf[PATH_MAX];
	const char *root = "";
	int c, action = 0, r;

	/* --help wherever it stands (before "--"): no usage error comes first. */
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help"))
			return usage(stdout, 0);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'i' || c == 'u' || c == 'f') {
			if (action && action != c)
				return usage(stderr, 2);
			action = c;
		} else if (c == 'r') {
			root = optarg;
		} else {
			return usage(c == 'h' ? stdout : stderr, c == 'h' ? 0 : 2);
		}
	}
	if (!action || optind < argc)
		return usage(stderr, 2);
	if (snprintf(hook, sizeof(hook), "%s" HOOK_PATH, root) >= (int)sizeof(hook) ||
	    snprintf(conf, sizeof(conf), "%s" CONF_PATH, root) >= (int)sizeof(conf)) {
		fprintf(stderr, "prealloc-libvirt-hook: --root %s: path too long\n", root);
		return 2;
	}
	if (action == 'f')
		return refresh(hook);
	r = action == 'u' ? uninstall(hook, conf) : install(hook, conf);
	if (r)
		return r;
	if (!root[0])
		rescan_hooks();
	return 0;
}
