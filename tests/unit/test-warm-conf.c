/* SPDX-License-Identifier: MIT */
/*
 * /etc/prealloc/warm.conf (flows/warm_conf.c): the targets a good file
 * names, in order, with and without a mount; every kind of bad line refused
 * with its line number and the reason, and nothing returned for the file.
 */
#include <stdlib.h>
#include <string.h>

#include "flows.h"
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
	struct warm_target *t = NULL;
	unsigned int nr = 0;
	char err[256] = "";
	int r = warm_conf_parse(text, &t, &nr, err, sizeof(err));

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
	free(t);
	r = warm_conf_parse("# nothing\n\n", &t, &nr, err, sizeof(err));
	tap_ok(r == 0 && nr == 0, "comments and blank lines only: no target");
	free(t);
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
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct warm_target *t = (struct warm_target *)1;
		unsigned int nr = 77;
		char err[256] = "";
		int r = warm_conf_parse(bad[i][0], &t, &nr, err, sizeof(err));

		tap_ok(r == -EINVAL && !strncmp(err, bad[i][1], strlen(bad[i][1])) &&
			       strstr(err, bad[i][2]) && t == (struct warm_target *)1 && nr == 77,
		       "refused, nothing returned: '%s' (want %s: %s)", err, bad[i][1], bad[i][2]);
	}
}

int main(void)
{
	test_good();
	test_bad();
	return tap_done();
}
