/* SPDX-License-Identifier: MIT */
/*
 * /etc/prealloc/warm.conf (warm/conf_parse.c, warm/conf.c): the targets a good file
 * names, in order, with and without a mount; its settings, and unset ones
 * left unset; every kind of bad line refused with its line number and the
 * reason, and nothing returned for the file; sizes that would wrap (a
 * target, N x SIZE, the targets together) refused; and a file loaded whole
 * (a NUL byte refused, not the end of it), its every error naming it, its
 * absolute path and the checksum of its text kept with what it says.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "warm.h"
#include "tap.h"

#define G (UINT64_C(1) << 30)
#define M (UINT64_C(1) << 20)

static void test_good(void)
{
	static const char text[] = "# the warm pool\n"
				   "\n"
				   "node0.2M = 16G\n"
				   "  node1.1G=8G @ /dev/hugepages-1G   # its own mount\n"
				   "node0.4k = 4G\n"
				   "node3.2M = 0\n"
				   "node0.2M = 4 x 512M @ /mnt/guests";
	struct warm_conf conf;
	char err[256] = "";
	int r = warm_conf_parse(text, &conf, err, sizeof(err));
	struct warm_target *t = conf.t;
	unsigned int nr = conf.nr;

	if (!tap_ok(r == 0 && nr == 5, "a good file: 5 targets (r %d, nr %u, '%s')", r, nr, err))
		return;
	tap_ok(t[0].node == 0 && t[0].page_size == PREALLOC_PAGE_2M && t[0].bytes == 16 * G &&
		       !t[0].mount[0] && t[0].line == 3,
	       "node0.2M = 16G on the default mount, line 3");
	tap_ok(t[1].node == 1 && t[1].page_size == PREALLOC_PAGE_1G && t[1].bytes == 8 * G &&
		       !strcmp(t[1].mount, "/dev/hugepages-1G") && t[1].line == 4,
	       "node1.1G = 8G @ its mount, spaces and a comment around it");
	tap_ok(t[2].node == 0 && t[2].page_size == PREALLOC_PAGE_4K && t[2].bytes == 4 * G,
	       "node0.4k = 4G");
	tap_ok(t[3].node == 3 && t[3].bytes == 0, "a target of 0: none kept there");
	tap_ok(t[4].node == 0 && t[4].page_size == PREALLOC_PAGE_2M && t[4].bytes == 2 * G &&
		       t[4].files == 4 && t[4].file_bytes == 512 * M &&
		       !strcmp(t[4].mount, "/mnt/guests"),
	       "node0.2M = 4 x 512M on another mount: another target, 4 files (last line, no newline)");
	tap_ok(t[0].files == 1 && t[0].file_bytes == 16 * G && t[3].files == 0,
	       "SIZE alone is one file of that size; 0 is no file");
	tap_ok(conf.set.clear_threads == WARM_UNSET && conf.set.clear_rate == WARM_UNSET &&
		       conf.set.max_share == WARM_UNSET && conf.set.psi_stall_us == WARM_UNSET &&
		       conf.set.pressure_step == WARM_UNSET &&
		       conf.set.available_floor == WARM_UNSET &&
		       conf.set.pressure_quiet_s == WARM_UNSET &&
		       conf.set.check_interval_s == WARM_UNSET,
	       "no setting given: every one unset (its user's default)");
	warm_conf_free(&conf);
	r = warm_conf_parse("# nothing\n\n", &conf, err, sizeof(err));
	tap_ok(r == 0 && conf.nr == 0, "comments and blank lines only: no target");
	warm_conf_free(&conf);
}

/* single-tenant: said in so many words, after the size or the mount; never implied. */
static void test_single_tenant(void)
{
	static const char text[] = "node0.4k = 2 x 1G @ /dev/shm single-tenant\n"
				   "node0.2M = 16G single-tenant\n"
				   "node1.2M = 1G @ /mnt/single-tenant\n"
				   "node2.2M = 1G\n";
	struct warm_conf conf;
	char err[256] = "";
	int r = warm_conf_parse(text, &conf, err, sizeof(err));

	if (!tap_ok(r == 0 && conf.nr == 4, "single-tenant targets parse (r %d, '%s')", r, err))
		return;
	tap_ok(conf.t[0].single_tenant && !strcmp(conf.t[0].mount, "/dev/shm") &&
		       conf.t[0].files == 2,
	       "after the mount: single-tenant, the mount without it");
	tap_ok(conf.t[1].single_tenant && conf.t[1].bytes == 16 * G, "after the size: single-tenant");
	tap_ok(!conf.t[2].single_tenant && !strcmp(conf.t[2].mount, "/mnt/single-tenant"),
	       "a mount named so is only a mount");
	tap_ok(!conf.t[3].single_tenant, "without the word: not single-tenant");
	warm_conf_free(&conf);
	r = warm_conf_parse("node0.2M = 1G singletenant\n", &conf, err, sizeof(err));
	tap_ok(r == -EINVAL, "a misspelt word is refused, not ignored (r %d, '%s')", r, err);
	if (r == 0)
		warm_conf_free(&conf);
}

static void test_settings(void)
{
	static const char text[] = "clear_threads = 2\n"
				   "clear_rate = 1.5   # GB/s\n"
				   "max_share = 40%\n"
				   "node0.2M = 4G\n"
				   "pressure = full 200ms 2s\n"
				   "pressure_step = 512M\n"
				   "available_floor = 3G\n"
				   "pressure_quiet = 2m\n"
				   "check_interval = 7s\n";
	struct warm_conf conf;
	char err[256] = "";
	int r = warm_conf_parse(text, &conf, err, sizeof(err));

	if (!tap_ok(r == 0 && conf.nr == 1, "settings and a target (r %d, '%s')", r, err))
		return;
	tap_ok(conf.t[0].line == 4 && conf.t[0].bytes == 4 * G, "the target among them: line 4");
	tap_ok(conf.set.clear_threads == 2, "clear_threads 2 (%llu)",
	       (unsigned long long)conf.set.clear_threads);
	tap_ok(conf.set.clear_rate == 1500000000, "clear_rate 1.5 GB/s in bytes (%llu)",
	       (unsigned long long)conf.set.clear_rate);
	tap_ok(conf.set.max_share == 40, "max_share 40%%");
	tap_ok(conf.set.psi_full == 1 && conf.set.psi_stall_us == 200000 &&
		       conf.set.psi_window_us == 2000000,
	       "pressure full 200ms 2s (%llu us in %llu us)",
	       (unsigned long long)conf.set.psi_stall_us, (unsigned long long)conf.set.psi_window_us);
	tap_ok(conf.set.pressure_step == 512 * M && conf.set.available_floor == 3 * G,
	       "pressure_step 512M, available_floor 3G: different values, each its own");
	tap_ok(conf.set.pressure_quiet_s == 120 && conf.set.check_interval_s == 7,
	       "pressure_quiet 2m is 120 s, check_interval 7 s");
	warm_conf_free(&conf);
	r = warm_conf_parse("pressure = off\nclear_rate = 0\n", &conf, err, sizeof(err));
	tap_ok(r == 0 && conf.set.psi_stall_us == 0 && conf.set.psi_window_us == 0 &&
		       conf.set.clear_rate == 0,
	       "pressure off and clear_rate 0 (no cap) are set, not unset");
	warm_conf_free(&conf);
}

static void test_bad(void)
{
	static const char *const bad[][3] = {
		{ "node0.2M = 16G\nnode0.2M 16G\n", "line 2", "is not 'nodeN.PAGE" },
		{ "node0.3M = 16G\n", "line 1", "bad target 'node0.3M'" },
		{ "node.2M = 16G\n", "line 1", "bad target 'node.2M'" },
		{ "nodeX.2M = 16G\n", "line 1", "bad target" },
		{ "node1024.2M = 16G\n", "line 1", "bad target 'node1024.2M'" },
		{ "node0.2m = 16G\n", "line 1", "bad target 'node0.2m'" },
		{ "socket0.2M = 16G\n", "line 1", "bad target 'socket0.2M'" },
		{ "\n\nnode0.2M = lots\n", "line 3", "bad size 'lots'" },
		{ "node0.2M = -2G\n", "line 1", "bad size '-2G'" },
		{ "node0.2M =\n", "line 1", "bad size ''" },
		{ "node0.2M = 3M\n", "line 1", "3M is not a whole number of 2M pages" },
		{ "node0.2M = 0 x 2G\n", "line 1", "bad file count '0'" },
		{ "node0.2M = x 2G\n", "line 1", "bad file count ''" },
		{ "node0.2M = 2 x 3M\n", "line 1", "3M is not a whole number of 2M pages" },
		{ "node0.2M = 2 x 0\n", "line 1", "files of size 0" },
		{ "node0.1G = 1536M\n", "line 1", "not a whole number of 1G pages" },
		{ "node0.2M = 2G @ mnt\n", "line 1", "bad mount 'mnt'" },
		{ "node0.2M = 2G @\n", "line 1", "bad mount ''" },
		{ "node0.2M = 2G\n# again\nnode0.2M = 4G\n", "line 3",
		  "node0.2M is already set on line 1" },
		{ "node1.4k = 2G @ /dev/shm\nnode1.4k = 1G @ /dev/shm\n", "line 2",
		  "node1.4k is already set on line 1" },
		{ "clear_threads = 0\n", "line 1", "bad clear_threads '0'" },
		{ "clear_threads = two\n", "line 1", "bad clear_threads 'two'" },
		{ "clear_rate = -1\n", "line 1", "bad clear_rate '-1'" },
		{ "clear_rate = 2G\n", "line 1", "bad clear_rate '2G'" },
		{ "max_share = 0%\n", "line 1", "bad max_share '0%'" },
		{ "max_share = 101%\n", "line 1", "bad max_share '101%'" },
		{ "pressure = some 150ms\n", "line 1", "bad pressure 'some 150ms'" },
		{ "pressure = some 150ms 100ms\n", "line 1", "bad pressure" },
		{ "pressure = some 2s 1s\n", "line 1", "bad pressure" },
		{ "pressure = some 100ms 11s\n", "line 1", "bad pressure" },
		{ "pressure = most 100ms 1s\n", "line 1", "bad pressure" },
		{ "pressure = some 100 1s\n", "line 1", "bad pressure" },
		{ "pressure_step = 0\n", "line 1", "bad pressure_step '0'" },
		{ "available_floor = lots\n", "line 1", "bad available_floor 'lots'" },
		{ "pressure_quiet = 500ms\n", "line 1", "bad pressure_quiet '500ms'" },
		{ "check_interval = 5\n", "line 1", "bad check_interval '5'" },
		{ "check_interval = 86400000000s\n", "line 1", "bad check_interval" },
		{ "pressure_quiet = 1441m\n", "line 1", "bad pressure_quiet '1441m'" },
		{ "clear_thread = 1\n", "line 1", "bad target 'clear_thread'" },
		/* 2 x 2^63 wrapped to a target of 0: the next fill removed the node's files. */
		{ "node0.4k = 2 x 8388608T\n", "line 1", "2 x 8388608T is more than 1048576T" },
		{ "node0.2M = 2G\nnode0.1G = 4096 x 8388608T\n", "line 2",
		  "4096 x 8388608T is more than 1048576T" },
		{ "node0.2M = 4097 x 1G\n", "line 1", "bad file count '4097'" },
		{ "node0.2M = 8388608T\n", "line 1", "8388608T is more than 1048576T (1 EiB)" },
		{ "node0.2M = 16777216T\n", "line 1", "16777216T is more than 1048576T" },
		{ "node0.2M = 99999999999999999999999\n", "line 1", "is more than 1048576T" },
		{ "node0.2M = 18446744073709551615 x 2M\n", "line 1", "bad file count" },
		{ "node0.2M = 3 x 524288T\n", "line 1", "3 x 524288T is more than" },
		{ "node0.2M = 1048576T\n#\nnode1.2M = 2M\n", "line 3",
		  "the targets add up to more than 1048576T" },
		{ "node0.2M = 2 x 262144T\nnode1.2M = 2 x 262144T\nnode2.2M = 2M\n", "line 3",
		  "the targets add up to more than" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct warm_conf conf = { .t = (struct warm_target *)1, .nr = 77 };
		char err[256] = "";
		int r = warm_conf_parse(bad[i][0], &conf, err, sizeof(err));

		tap_ok(r == -EINVAL && !strncmp(err, bad[i][1], strlen(bad[i][1])) &&
			       strstr(err, bad[i][2]) && conf.t == (struct warm_target *)1 &&
			       conf.nr == 77,
		       "refused, nothing returned: '%s' (want %s: %s)", err, bad[i][1], bad[i][2]);
	}
}

/* The edges that stay: one target of exactly 1 EiB, and the most files of a size. */
static void test_limits(void)
{
	struct warm_conf conf;
	char err[256] = "";
	int r;

	r = warm_conf_parse("node0.1G = 1048576T\n", &conf, err, sizeof(err));
	tap_ok(r == 0 && conf.nr == 1 && conf.t[0].bytes == UINT64_C(1) << 60,
	       "a target of 1048576T (1 EiB) is taken (r %d, '%s')", r, err);
	if (r == 0)
		warm_conf_free(&conf);
	r = warm_conf_parse("node0.2M = 1024 x 1024T\nnode1.2M = 0\n", &conf, err, sizeof(err));
	tap_ok(r == 0 && conf.nr == 2 && conf.t[0].bytes == UINT64_C(1) << 60 &&
		       conf.t[0].files == 1024,
	       "1024 x 1024T: 1 EiB in all, taken (r %d, '%s')", r, err);
	if (r == 0)
		warm_conf_free(&conf);
}

static char dir[64];

/* path in dir holding len bytes of text. */
static const char *conf_file(const char *leaf, const char *text, size_t len)
{
	static char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, leaf);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		tap_ok(0, "cannot write %s", path);
	if (fd >= 0)
		close(fd);
	return path;
}

/* warm_conf_load(path) refuses with want, err "<path>: " then what: nothing returned. */
static void load_refused(const char *path, int want, const char *what, const char *label)
{
	struct warm_conf conf = { .t = (struct warm_target *)1, .nr = 77 };
	char err[512] = "", prefix[160];
	int r = warm_conf_load(path, &conf, err, sizeof(err));

	snprintf(prefix, sizeof(prefix), "%s: ", path);
	tap_ok(r == want && !strncmp(err, prefix, strlen(prefix)) && strstr(err, what) &&
		       conf.t == (struct warm_target *)1 && conf.nr == 77,
	       "%s: refused (%d), naming the file: '%s'", label, r, err);
	if (r == 0)
		warm_conf_free(&conf);
}

/*
 * What an in-place clear under single-tenant records of the conf it read
 * (warm/declared.c): the path made absolute, as named (not resolved: a
 * link re-pointed later is seen by whoever reads it next), and the FNV-1a
 * 64 of the exact text parsed, by a load and by a parse alike.
 */
static void test_identity(const char *path)
{
	static const char text[] = "node0.2M = 2G\nclear_threads = 2\n";
	char cwd[PATH_MAX], err[512] = "", link[PATH_MAX];
	struct warm_conf conf;
	int r;

	r = warm_conf_load(path, &conf, err, sizeof(err));
	tap_ok(r == 0 && !strcmp(conf.path, path) && conf.sum == fnv1a(text, sizeof(text) - 1),
	       "a load names the file it read, absolute, and the text's FNV-1a 64 (r %d, '%s')", r,
	       conf.path);
	if (r == 0)
		warm_conf_free(&conf);
	r = warm_conf_parse(text, &conf, err, sizeof(err));
	tap_ok(r == 0 && !conf.path[0] && conf.sum == fnv1a(text, sizeof(text) - 1),
	       "a parse alone: the same sum, no path (r %d)", r);
	if (r == 0)
		warm_conf_free(&conf);
	snprintf(link, sizeof(link), "%s/link.conf", dir);
	if (!getcwd(cwd, sizeof(cwd)) || symlink("good.conf", link) < 0 || chdir(dir) < 0) {
		tap_ok(false, "a link and the directory as the working one: %s", strerror(errno));
		return;
	}
	r = warm_conf_load("link.conf", &conf, err, sizeof(err));
	tap_ok(r == 0 && !strcmp(conf.path, link) && conf.sum == fnv1a(text, sizeof(text) - 1),
	       "a relative path is made absolute by the working directory, its link kept "
	       "(r %d, '%s')", r, conf.path);
	if (r == 0)
		warm_conf_free(&conf);
	(void)!chdir(cwd);
}

/*
 * warm_conf_load: the whole file or nothing. A NUL byte ended the text a C
 * string saw, and the lines after it were dropped unread; a directory read
 * as EIO with no name; a FIFO blocked the open for ever.
 */
static void test_load(void)
{
	static const char nul[] = "node0.2M = 2G\n# next: a NUL\nnode1.2M = 2G\0\nnode0.2M = x\n";
	struct warm_conf conf;
	char err[512] = "", other[128], *big;
	const char *path;
	int r;

	snprintf(dir, sizeof(dir), "/tmp/prealloc-test-warm-conf.XXXXXX");
	if (!tap_ok(mkdtemp(dir) != NULL, "a directory for the files"))
		return;
	tap_remove_at_exit(dir);
	path = conf_file("good.conf", "node0.2M = 2G\nclear_threads = 2\n", 32);
	r = warm_conf_load(path, &conf, err, sizeof(err));
	tap_ok(r == 0 && conf.found && conf.nr == 1 && conf.set.clear_threads == 2,
	       "a good file loads (r %d, '%s')", r, err);
	if (r == 0)
		warm_conf_free(&conf);
	test_identity(path);
	snprintf(other, sizeof(other), "%s/absent.conf", dir);
	r = warm_conf_load(other, &conf, err, sizeof(err));
	tap_ok(r == 0 && !conf.found && conf.nr == 0 && conf.sum == 0 &&
		       !strcmp(conf.path, other),
	       "no file: no targets, as before, its path and no sum (r %d, '%s')", r, conf.path);

	load_refused(conf_file("nul.conf", nul, sizeof(nul) - 1), -EINVAL, "line 3: a NUL byte",
		     "a NUL byte on line 3");
	load_refused(conf_file("nul1.conf", "\0", 1), -EINVAL, "line 1: a NUL byte",
		     "a NUL byte alone");
	load_refused(conf_file("bad.conf", "node0.2M = 2G\nnode1.4k = 2 x 8388608T\n", 38),
		     -EINVAL, "line 2: 2 x 8388608T is more than", "a wrapping target");
	load_refused(dir, -EINVAL, "a directory, not a file", "a directory");
	snprintf(other, sizeof(other), "%s/fifo", dir);
	if (mkfifo(other, 0600) == 0) {
		load_refused(other, -EINVAL, "not a regular file", "a FIFO (not waited on)");
	} else {
		tap_skip("no FIFO in %s", dir);
	}
	big = malloc((1 << 20) + 1);
	if (big) {
		memset(big, '#', (1 << 20) + 1);
		load_refused(conf_file("big.conf", big, (1 << 20) + 1), -EINVAL,
			     "larger than 1024 KiB", "a file past 1 MiB");
		big[(1 << 20) - 1] = '\n';
		path = conf_file("max.conf", big, 1 << 20);
		err[0] = '\0';
		r = warm_conf_load(path, &conf, err, sizeof(err));
		tap_ok(r == 0 && conf.nr == 0, "a file of 1 MiB exactly loads (r %d, '%s')", r, err);
		if (r == 0)
			warm_conf_free(&conf);
		free(big);
	}
}

/* A load that blocks (a FIFO opened for reading waits for a writer) fails the test. */
static void timed_out(int sig)
{
	static const char msg[] = "not ok - a load blocked for 30 s\n";

	(void)!write(STDOUT_FILENO, msg, sizeof(msg) - 1);
	tap_on_signal(sig);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);	/* every line out before a timeout kills it */
	signal(SIGALRM, timed_out);
	alarm(30);
	test_good();
	test_single_tenant();
	test_settings();
	test_bad();
	test_limits();
	test_load();
	return tap_done();
}
