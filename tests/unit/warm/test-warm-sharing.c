/* SPDX-License-Identifier: MIT */
/*
 * Holders that share a uid (prealloc/warm/sharing.c, docs/warm.md threat
 * model), over a fake tree (fakeroot.h) without root: takes give their
 * files the caller's own uid (which fchown allows any user), and each
 * says how many HANDED files of other holders that uid owns already: not
 * the holder's own, not those of a tenant it shares, not a reservation
 * (no path yet, even with a uid), not a take without an owner, not the
 * take's own file (held by its path: no holder). Each record keeps the uid
 * it was given until it is given back. prealloc_warm_shared_uid gives the
 * same count to a front end that takes nothing (the libvirt hook at start).
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "warm.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define K4 PREALLOC_PAGE_4K
#define MIB (UINT64_C(1) << 20)

static struct fakeroot fr;
static unsigned int links;	/* takes' paths made so far */
static uint64_t vm_b;		/* vm-b's file: its record after it is given back */

/* A 4 MiB take for holder (tenant, flags): its info; ret: its result. */
static struct prealloc_warm_take_info take(struct prealloc_ctx *ctx, const char *holder,
					   const char *tenant, unsigned int flags, int *ret)
{
	struct prealloc_warm_take_info ti = { .size = sizeof(ti), .fd = -1 };
	struct prealloc_warm_take_opts o = {
		.size = sizeof(o), .flags = flags, .node = 0, .page_size = K4, .length = 4 * MIB,
		.mount = fr.dir, .uid = getuid(), .gid = getgid(), .holder = holder,
		.tenant = tenant,
	};
	char path[400];

	snprintf(path, sizeof(path), "%s/%s-%u", fr.dir, holder ? holder : "path", links++);
	o.path = flags & PREALLOC_WARM_TAKE_RESERVE ? NULL : path;
	*ret = prealloc_warm_take(ctx, &o, &ti);
	if (ti.fd >= 0)
		close(ti.fd);
	return ti;
}

/* A take for holder that must work; its shared_uid_files, with in with (UINT_MAX: failed). */
static unsigned int take_shared(struct prealloc_ctx *ctx, const char *holder, const char *tenant,
				unsigned int flags, char *with, size_t len)
{
	int r;
	struct prealloc_warm_take_info ti = take(ctx, holder, tenant, flags, &r);

	snprintf(with, len, "%s", ti.shared_uid_with);
	if (holder && !strcmp(holder, "vm-b"))
		vm_b = ti.id;
	if (!tap_ok(r == 0, "%s takes a file: %d (%s)", holder ? holder : "a path", r, ti.message))
		return UINT_MAX;
	return ti.shared_uid_files;
}

/* The record of holder's take (or of id, holder NULL): whether it has a uid, and which. */
static bool record_uid(struct prealloc_ctx *ctx, const char *holder, uint64_t id,
		       uint32_t *ret_uid)
{
	struct store s;
	bool has = false;

	if (store_load(ctx, &s) < 0)
		return false;
	for (size_t i = 0; i < s.nr; i++)
		if (holder ? s.r[i].owner.kind == PREALLOC_OWNER_HOLDER &&
				     !strcmp(s.r[i].owner.holder, holder)
			   : s.r[i].id == id)
			has = s.r[i].has_uid, *ret_uid = s.r[i].uid;
	store_free(&s);
	return has;
}

static void test_takes(struct prealloc_ctx *ctx)
{
	unsigned int n;
	uint32_t uid = 0;
	char with[512];

	n = take_shared(ctx, "vm-a", NULL, PREALLOC_WARM_TAKE_CHOWN, with, sizeof(with));
	tap_ok(n == 0, "the first holder of the uid: none shared (%u)", n);
	tap_ok(record_uid(ctx, "vm-a", 0, &uid) && uid == getuid(),
	       "its record keeps the uid it was given (%u)", uid);
	n = take_shared(ctx, "vm-b", NULL, PREALLOC_WARM_TAKE_CHOWN, with, sizeof(with));
	tap_ok(n == 1 && !strcmp(with, "vm-a"), "a second holder, no tenants: vm-a's file (%u, %s)",
	       n, with);
	n = take_shared(ctx, "vm-c", "t1", PREALLOC_WARM_TAKE_CHOWN, with, sizeof(with));
	tap_ok(n == 2, "tenant t1's first holder: vm-a's and vm-b's, of no tenant (%u)", n);
	n = take_shared(ctx, "vm-d", "t1", PREALLOC_WARM_TAKE_CHOWN, with, sizeof(with));
	tap_ok(n == 2, "t1's second holder: not vm-c's, of its own tenant (%u)", n);
	n = take_shared(ctx, "vm-a", NULL, PREALLOC_WARM_TAKE_CHOWN, with, sizeof(with));
	tap_ok(n == 3 && strcmp(with, "vm-a"), "vm-a's second file: not its first, three others "
	       "(%u, first %s)", n, with);
	n = take_shared(ctx, "vm-e", NULL, 0, with, sizeof(with));
	tap_ok(n == 0 && !record_uid(ctx, "vm-e", 0, &uid),
	       "a take without an owner: nothing said, no uid recorded (%u)", n);
	n = take_shared(ctx, "vm-f", NULL, PREALLOC_WARM_TAKE_RESERVE, with, sizeof(with));
	tap_ok(n == 0 && !record_uid(ctx, "vm-f", 0, &uid), "a reservation: no path, no uid (%u)", n);
	n = take_shared(ctx, NULL, NULL, PREALLOC_WARM_TAKE_CHOWN, with, sizeof(with));
	tap_ok(n == 5, "a take held by its path (no holder): the five others, not itself (%u)", n);
}

/* vm-f's reservation as a failed RESERVED take leaves it: its uid written, no path. */
static bool reservation_with_uid(struct prealloc_ctx *ctx)
{
	struct store s;
	bool done = false;

	if (store_load(ctx, &s) < 0)
		return false;
	for (size_t i = 0; i < s.nr; i++)
		if (s.r[i].owner.kind == PREALLOC_OWNER_HOLDER && !strcmp(s.r[i].owner.holder, "vm-f")) {
			s.r[i].has_uid = true;
			s.r[i].uid = getuid();
			done = !s.r[i].path[0];
		}
	done = done && store_save(ctx, &s) == 0;
	store_free(&s);
	return done;
}

static unsigned int shared(struct prealloc_ctx *ctx, unsigned int uid, const char *holder,
			   const char *tenant, int *ret)
{
	struct prealloc_warm_shared_info si = { .size = sizeof(si) };

	*ret = prealloc_warm_shared_uid(ctx, uid, holder, tenant, &si);
	return si.files;
}

static void test_query(struct prealloc_ctx *ctx)
{
	struct prealloc_warm_give_info gi = { .size = sizeof(gi) };
	struct prealloc_warm_shared_info si = { .size = sizeof(si) };
	unsigned int me = getuid(), n;
	uint32_t uid;
	int r;

	n = shared(ctx, me, "vm-x", NULL, &r);
	tap_ok(r == 0 && n == 6, "a new holder of the uid: the six linked files (%d, %u)", r, n);
	n = reservation_with_uid(ctx) ? shared(ctx, me, "vm-x", NULL, &r) : 0;
	tap_ok(r == 0 && n == 6, "a reservation with a uid but no path: not counted (%d, %u)", r, n);
	n = shared(ctx, me + 1, "vm-x", NULL, &r);
	tap_ok(r == 0 && n == 0, "another uid: none (%d, %u)", r, n);
	n = shared(ctx, me, "vm-x", "t1", &r);
	tap_ok(r == 0 && n == 4, "a new holder of tenant t1: not t1's two (%d, %u)", r, n);
	n = shared(ctx, me, "vm-c", NULL, &r);
	tap_ok(r == 0 && n == 4, "vm-c, its tenant named by its file: not its own, not vm-d's of "
	       "t1 (%d, %u)", r, n);
	tap_ok(vm_b && record_uid(ctx, NULL, vm_b, &uid), "vm-b's file, handed: its uid recorded");
	r = prealloc_warm_give(ctx, NULL, "vm-b", &gi);
	tap_ok(r == 0 && gi.files == 1 && !record_uid(ctx, NULL, vm_b, &uid),
	       "vm-b gives its file back: root's again, its record keeps no uid (%d, %u files)", r,
	       gi.files);
	n = shared(ctx, me, "vm-x", NULL, &r);
	tap_ok(r == 0 && n == 5, "vm-b's file no longer counts: five left (%d, %u)", r, n);
	tap_ok(prealloc_warm_shared_uid(NULL, me, NULL, NULL, &si) == -EINVAL &&
		       prealloc_warm_shared_uid(ctx, me, NULL, NULL, NULL) == -EINVAL &&
		       prealloc_warm_shared_uid(ctx, me, NULL, "@single-tenant", &si) == -EINVAL,
	       "NULL ctx or info, a tenant of the warm pool's own: -EINVAL");
}

int main(void)
{
	struct prealloc_ctx *ctx = warm_test_ctx(&fr, 1);
	const char *names[] = { "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8" };
	bool made = ctx != NULL;

	for (size_t i = 0; made && i < sizeof(names) / sizeof(names[0]); i++)
		made = add_warm_in(fr.dir, ctx, names[i], 0, K4, 4 * MIB, 0) != 0;
	if (tap_ok(made, "eight READY warm files of 4 MiB in the fake tree")) {
		test_takes(ctx);
		test_query(ctx);
	}
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
