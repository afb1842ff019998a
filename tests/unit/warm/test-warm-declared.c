/* SPDX-License-Identifier: MIT */
/*
 * A file cleared in place under a single-tenant declaration goes to a take
 * only while that declaration stands (warm/declared.c), over a fake tree
 * without root. Each case makes one READY WARM_TENANT_SINGLE file whose
 * record names the warm.conf its pass read and that text's sum, changes
 * the conf, then asks find (which must change nothing) and take: the same
 * text, or another that still declares the target, hands it out; the
 * declaration withdrawn, or moved to another node or mount, the conf gone,
 * a directory, a bad line, or no declaration recorded at all does not, and
 * the take leaves it DIRTY without its label for the next pass to renew.
 * The take's own $PREALLOC_WARM_CONF never counts: the record's path does.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "warm.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define K4 PREALLOC_PAGE_4K
#define MIB (UINT64_C(1) << 20)

static struct fakeroot fr;
static unsigned int links;
static char conf[PATH_MAX];	/* the warm.conf a pass read */

/* The conf's text, with its declaration on node0.4k here or (decl) as decl says. */
static const char *text_of(const char *extra, const char *decl)
{
	static char text[PATH_MAX * 2];

	snprintf(text, sizeof(text), "%snode0.4k = 8M @ %s%s\n", extra, fr.dir, decl);
	return text;
}

static int write_file(const char *path, const char *text)
{
	FILE *f;

	unlink(path);
	rmdir(path);
	f = fopen(path, "we");
	return f && fputs(text, f) >= 0 && fclose(f) == 0 ? 0 : -1;
}

static int write_conf(const char *text)
{
	return write_file(conf, text);
}

/* The record id as the store has it now (its state, label and declaration). */
static struct record record_of(struct prealloc_ctx *ctx, uint64_t id)
{
	struct record r = { 0 };
	struct store s;
	long i;

	if (store_load(ctx, &s) < 0)
		return r;
	i = store_find(&s, id);
	if (i >= 0) {
		r = s.r[i];
		r.pools = NULL;
		r.nr_pools = 0;
	}
	store_free(&s);
	return r;
}

/* The record's declaration gone: a store written before it was recorded. */
static int undeclare(struct prealloc_ctx *ctx, uint64_t id)
{
	struct store s;
	long i;
	int r;

	if (store_load(ctx, &s) < 0)
		return -1;
	i = store_find(&s, id);
	if (i >= 0)
		warm_declared_set(&s.r[i], NULL);
	r = i >= 0 ? store_save(ctx, &s) : -1;
	store_free(&s);
	return r;
}

/* How the conf changes between the pass's clear and the take (0, or -1 it could not). */
enum change {
	SAME,		/* the very text */
	UNRELATED,	/* a comment and a setting added, the declaration kept */
	WITHDRAWN,	/* "single-tenant" removed */
	OTHER_NODE,	/* declared for node1.4k instead */
	OTHER_MOUNT,	/* declared for node0.4k on another mount (procfs: another device) */
	REMOVED,	/* the file gone */
	DIRECTORY,	/* a directory where the file was */
	BAD_LINE,	/* a line that does not parse after the declaration */
	UNDECLARED,	/* the record names no conf (a store from before it) */
	ENV_ONLY,	/* withdrawn at the record's path; the take's $PREALLOC_WARM_CONF declares it */
};

static int change_conf(struct prealloc_ctx *ctx, uint64_t id, enum change c)
{
	static char other[PATH_MAX + 32], node1[PATH_MAX * 2];

	switch (c) {
	case SAME:
		return 0;
	case UNRELATED:
		return write_conf(text_of("# edited\nclear_threads = 2\n", " single-tenant"));
	case WITHDRAWN:
		return write_conf(text_of("", ""));
	case OTHER_NODE:
		snprintf(node1, sizeof(node1), "node1.4k = 8M @ %s single-tenant\n%s", fr.dir,
			 text_of("", ""));
		return write_conf(node1);
	case OTHER_MOUNT:
		return write_conf("node0.4k = 8M @ /proc single-tenant\n");
	case REMOVED:
		return unlink(conf);
	case DIRECTORY:
		return unlink(conf) < 0 ? -1 : mkdir(conf, 0700);
	case BAD_LINE:
		return write_conf(text_of("", " single-tenant\nnode0.4k = what\n"));
	case UNDECLARED:
		return undeclare(ctx, id);
	case ENV_ONLY:
		snprintf(other, sizeof(other), "%s/env.conf", fr.dir);
		if (write_file(other, text_of("", " single-tenant")) < 0)
			return -1;
		setenv("PREALLOC_WARM_CONF", other, 1);
		return write_conf(text_of("", ""));
	}
	return -1;
}

/*
 * A new file cleared in place under the conf as it is now, then the conf
 * changed as c says; find and take (by another tenant) must both hand it
 * out (stands) or neither, the take then leaving it DIRTY, unlabelled.
 */
static void one_case(struct prealloc_ctx *ctx, const char *what, enum change c, bool stands)
{
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o), .node = 0, .page_size = K4, .length = 8 * MIB,
		.mount = fr.dir, .tenant = "other-tenant",
	};
	struct prealloc_warm_find_info fi = { .size = sizeof(fi) };
	struct prealloc_warm_take_info ti = { .size = sizeof(ti), .fd = -1 };
	char name[32], path[PATH_MAX];
	struct record r;
	uint64_t id;
	int fr_ret, tr_ret;

	snprintf(name, sizeof(name), "f%u", links);
	id = add_warm_in(fr.dir, ctx, name, 0, K4, 8 * MIB, 0);
	if (!tap_ok(id && write_conf(text_of("", " single-tenant")) == 0 &&
			    declare_warm(ctx, id, conf, text_of("", " single-tenant")) == 0 &&
			    change_conf(ctx, id, c) == 0,
		    "%s: a file cleared in place under %s, then the conf changed", what, conf))
		return;
	fr_ret = prealloc_warm_find(ctx, &o, &fi);
	r = record_of(ctx, id);
	tap_ok(r.warm == PREALLOC_WARM_READY && !strcmp(r.tenant, WARM_TENANT_SINGLE),
	       "%s: find changes nothing (state %d, label '%s')", what, r.warm, r.tenant);
	snprintf(path, sizeof(path), "%s/link-%u", fr.dir, links++);
	o.path = path;
	tr_ret = prealloc_warm_take(ctx, &o, &ti);
	if (ti.fd >= 0)
		close(ti.fd);
	unsetenv("PREALLOC_WARM_CONF");
	r = record_of(ctx, id);
	if (stands)
		tap_ok(fr_ret == 0 && fi.id == id && tr_ret == 0 && ti.id == id &&
			       r.warm == PREALLOC_WARM_HANDED,
		       "%s: it stands: find (%d) and take (%d) hand it to another tenant", what,
		       fr_ret, tr_ret);
	else
		tap_ok(fr_ret == -ENOENT && tr_ret == -ENOENT && r.warm == PREALLOC_WARM_DIRTY &&
			       !r.tenant[0] && !r.declared[0] && access(path, F_OK) < 0,
		       "%s: it does not stand: find (%d) and take (%d) miss, the file DIRTY "
		       "(state %d), its label ('%s') and declaration ('%s') gone", what, fr_ret,
		       tr_ret, r.warm, r.tenant, r.declared);
}

int main(void)
{
	struct prealloc_ctx *ctx = warm_test_ctx(&fr, 2);

	if (!ctx)
		return tap_done();
	snprintf(conf, sizeof(conf), "%s/warm.conf", fr.dir);
	one_case(ctx, "the same text", SAME, true);
	one_case(ctx, "an unrelated line edited", UNRELATED, true);
	one_case(ctx, "the declaration withdrawn", WITHDRAWN, false);
	one_case(ctx, "declared for another node", OTHER_NODE, false);
	one_case(ctx, "declared for another mount", OTHER_MOUNT, false);
	one_case(ctx, "the conf removed", REMOVED, false);
	one_case(ctx, "a directory in its place", DIRECTORY, false);
	one_case(ctx, "a bad line added", BAD_LINE, false);
	one_case(ctx, "no declaration recorded", UNDECLARED, false);
	one_case(ctx, "withdrawn, the take's $PREALLOC_WARM_CONF declaring it", ENV_ONLY, false);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
