/* SPDX-License-Identifier: MIT */
/*
 * A sysfs of two nodes with memory, 0 and 1, both on this process's CPUs
 * (procfs stays the real one): a job gets a pool per node on a one-node
 * machine. Regions over it are NO_BIND: node 1 is not real. For the tests
 * of what each node's pool posts (engine, uring); fakeroot.h fakes procfs
 * too, which a job's placement check cannot run on.
 */
#ifndef PREALLOC_TEST_FAKENODES_H
#define PREALLOC_TEST_FAKENODES_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prealloc.h"

struct fakenodes {
	char sys[64];
};

static inline int fakenodes_write(const struct fakenodes *fn, const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", fn->sys, rel);
	for (char *s = path + strlen(fn->sys) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fputs(text, f);
	return fclose(f) == 0 ? 0 : -errno;
}

static inline void fakenodes_remove(struct fakenodes *fn)
{
	static const char *const leaves[] = {
		"devices/system/node/has_memory", "devices/system/node/node0/cpulist",
		"devices/system/node/node1/cpulist", "devices/system/node/node0",
		"devices/system/node/node1", "devices/system/node", "devices/system", "devices",
	};
	char path[256];

	if (!fn->sys[0])
		return;
	for (size_t i = 0; i < sizeof(leaves) / sizeof(leaves[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", fn->sys, leaves[i]);
		if (unlink(path) < 0)
			rmdir(path);
	}
	rmdir(fn->sys);
	fn->sys[0] = '\0';
}

/* A ctx over the two nodes, its store in state_dir; NULL on failure (fn->sys made or not). */
static inline struct prealloc_ctx *fakenodes_ctx(struct fakenodes *fn, const char *state_dir)
{
	struct prealloc_ctx_opts o = { .size = sizeof(o), .state_dir = state_dir,
				       .sys_root = fn->sys };
	struct prealloc_ctx *c = NULL;

	snprintf(fn->sys, sizeof(fn->sys), "/tmp/prealloc-nodes.XXXXXX");
	if (!mkdtemp(fn->sys)) {
		fn->sys[0] = '\0';
		return NULL;
	}
	if (fakenodes_write(fn, "devices/system/node/has_memory", "0-1\n") < 0 ||
	    fakenodes_write(fn, "devices/system/node/node0/cpulist", "0-1023\n") < 0 ||
	    fakenodes_write(fn, "devices/system/node/node1/cpulist", "0-1023\n") < 0 ||
	    prealloc_ctx_new_opts(&o, &c) < 0)
		return NULL;
	return c;
}

#endif
