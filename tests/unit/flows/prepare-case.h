/* SPDX-License-Identifier: MIT */
/*
 * One refused prepare request, checked whole: its errno, its step, its
 * whole one-line message (a message naming the wrong field, node or size
 * fails), and nothing left after it: the private tmpfs directory holds
 * what it held before (no file, no staging directory) and the store no
 * record. For test-prepare-req.c and test-prepare-locate.c, each of which
 * includes it once.
 */
#ifndef PREALLOC_TEST_PREPARE_CASE_H
#define PREALLOC_TEST_PREPARE_CASE_H

#include <errno.h>
#include <string.h>

#include "prealloc.h"
#include "fakeroot.h"
#include "tap.h"
#include "flows-test.h"

static struct fakeroot fr;	/* nodes 0 to 2 with memory; node 3 without */
static struct prealloc_ctx *ctx;
static char shm[256], disk[256];	/* a private tmpfs directory; one on disk ("" none) */
static char guest[300];			/* <shm>/guest: the default path */

/* What a case changes in the default request, and the whole message it expects. */
typedef void (*case_fn)(struct prealloc_prepare_opts *o, char *want, size_t len);

struct req_case {
	const char *what;
	case_fn fn;
	int err;
	int step;
};

/* The default: 1 MiB of 4k pages on node 0, at <shm>/guest. */
static inline struct prealloc_prepare_opts default_opts(void)
{
	static const int node0[] = { 0 };

	return (struct prealloc_prepare_opts){
		.size = sizeof(struct prealloc_prepare_opts), .page_size = PREALLOC_PAGE_4K,
		.length = MIB, .nr_nodes = 1, .nodes = node0, .path = guest, .threads = 1,
	};
}

/*
 * Runs one refusal and checks it whole: errno, step, message, and that
 * the directory holds exactly what it held before and the store no record.
 */
static inline void run_case(const struct req_case *c)
{
	struct prealloc_prepare_opts o = default_opts();
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	char want[1024] = "", before[1024], after[1024];
	unsigned int nb = dir_entries(shm, before, sizeof(before)), na;
	int r;

	c->fn(&o, want, sizeof(want));
	r = prealloc_prepare(ctx, &o, &info, NULL);
	na = dir_entries(shm, after, sizeof(after));
	tap_ok(r == c->err && info.step == c->step && info.error == c->err &&
		       !strcmp(info.message, want),
	       "%s: %d at step %d, '%s' (want %d at %d%s%s)", c->what, r, info.step, info.message,
	       c->err, c->step, strcmp(info.message, want) ? ", message " : "",
	       strcmp(info.message, want) ? want : "");
	tap_ok(nb == na && !strcmp(before, after) && nr_records(ctx) == 0,
	       "%s: nothing left (entries before '%s', after '%s', %u records)", c->what, before,
	       after, nr_records(ctx));
}

#define RUN_ALL(cases)                                                   \
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) \
		run_case(&cases[i])

/*
 * The private directories, and a ctx over a fake tree of nodes 0 to 2 with
 * memory and node 3 without; 0, or -1 with the reason in why.
 */
static inline int prepare_case_start(const char **why)
{
	if (shm_dir(shm, sizeof(shm)) < 0) {
		*why = "/dev/shm is not a tmpfs: a prepared file needs one";
		return -1;
	}
	if (disk_dir(disk, sizeof(disk)) < 0)
		disk[0] = '\0';
	snprintf(guest, sizeof(guest), "%s/guest", shm);
	if (fakeroot_make(&fr, 3) < 0) {
		*why = "cannot build the fake tree in /tmp";
		return -1;
	}
	tap_remove_at_exit(fr.dir);
	fr_write(fr.sys, "devices/system/node/node3/cpulist", "0-1023\n");
	ctx = fakeroot_ctx(&fr);
	tap_ok(ctx != NULL, "a ctx over the fake sysfs and procfs (nodes 0-2, 3 no memory)");
	return 0;
}

#endif
