/* SPDX-License-Identifier: MIT */
/*
 * prealloc_warm_find says which file prealloc_warm_take would get, over a
 * fake two-node tree (fakeroot.h) without root: for each request the find
 * comes first and changes nothing, then the take, and both must name the
 * same record, hit and size (or both -ENOENT). The requests cover what a
 * front end asks: exactly its size, a larger one cut, a smaller one grown
 * (found only: a grow populates), NO_GROW, a tenant's file and a file any
 * tenant may have (WARM_TENANT_SINGLE), a holder's reservations, and ids
 * the caller counted already (skip_ids) for two backends of one size.
 */
#include <fcntl.h>
#include <string.h>

#include "warm.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

#define K4 PREALLOC_PAGE_4K
#define MIB (UINT64_C(1) << 20)

static struct fakeroot fr;	/* two nodes */
static unsigned int links;	/* takes' paths made so far */

static uint64_t add_warm(struct prealloc_ctx *ctx, const char *name, int node, uint64_t bytes,
			 const char *tenant)
{
	uint64_t id = add_warm_in(fr.dir, ctx, name, node, K4, bytes, 0);
	struct store s;
	long i;

	if (!id || !tenant || store_load(ctx, &s) < 0)
		return id;
	i = store_find(&s, id);
	if (i >= 0)
		snprintf(s.r[i].tenant, sizeof(s.r[i].tenant), "%s", tenant);
	if (i < 0 || store_save(ctx, &s) < 0)
		id = 0;
	store_free(&s);
	return id;
}

static struct prealloc_warm_take_opts request(int node, uint64_t length, unsigned int flags)
{
	return (struct prealloc_warm_take_opts){ .size = sizeof(struct prealloc_warm_take_opts),
						 .flags = flags, .node = node, .page_size = K4,
						 .length = length, .mount = fr.dir };
}

/*
 * Find, then take, with o: both agree (and the find named want, 0: none).
 * ret_files: the find's count. The take's file is left HANDED.
 */
static bool find_then_take(struct prealloc_ctx *ctx, struct prealloc_warm_take_opts o,
			   uint64_t want, int want_hit, const char *what)
{
	struct prealloc_warm_find_info fi = { .size = sizeof(fi) };
	struct prealloc_warm_take_info ti = { .size = sizeof(ti), .fd = -1 };
	char path[400];
	int fr_ret, tr_ret;

	fr_ret = prealloc_warm_find(ctx, &o, &fi);
	snprintf(path, sizeof(path), "%s/link-%u", fr.dir, links++);
	o.path = path;
	tr_ret = prealloc_warm_take(ctx, &o, &ti);
	if (ti.fd >= 0)
		close(ti.fd);
	return tap_ok(fr_ret == tr_ret && (tr_ret < 0 || (fi.id == ti.id && fi.hit == ti.hit &&
							 fi.file_bytes == ti.file_bytes)) &&
			      fi.id == want && fi.hit == (fr_ret < 0 ? 0 : want_hit),
		      "%s: find %d (file %llu, hit %d, %llu bytes), take %d (file %llu, hit %d, "
		      "%llu bytes), want file %llu hit %d: %s", what, fr_ret,
		      (unsigned long long)fi.id, fi.hit, (unsigned long long)fi.file_bytes, tr_ret,
		      (unsigned long long)ti.id, ti.hit, (unsigned long long)ti.file_bytes,
		      (unsigned long long)want, want_hit, fi.message[0] ? fi.message : ti.message);
}

static struct prealloc_warm_find_info find(struct prealloc_ctx *ctx,
					   const struct prealloc_warm_take_opts *o, int *ret)
{
	struct prealloc_warm_find_info fi = { .size = sizeof(fi) };

	*ret = prealloc_warm_find(ctx, o, &fi);
	return fi;
}

static void test_ready(struct prealloc_ctx *ctx)
{
	uint64_t a = add_warm(ctx, "a", 0, 8 * MIB, NULL);
	uint64_t b = add_warm(ctx, "b", 0, 16 * MIB, NULL);
	uint64_t c = add_warm(ctx, "c", 0, 4 * MIB, NULL);
	uint64_t e = add_warm(ctx, "e", 0, 8 * MIB, NULL);
	uint64_t d = add_warm(ctx, "d", 1, 8 * MIB, "t1");
	struct prealloc_warm_take_opts o = request(0, 8 * MIB, 0);
	struct prealloc_warm_find_info fi;
	char conf[PATH_MAX], text[PATH_MAX + 64];
	int r;

	/* e: cleared in place under a declaration that still stands (test-warm-declared.c). */
	snprintf(conf, sizeof(conf), "%s/warm.conf", fr.dir);
	snprintf(text, sizeof(text), "node0.4k = 8M @ %s single-tenant\n", fr.dir);
	if (!tap_ok(a && b && c && d && e && declare_warm(ctx, e, conf, text) == 0,
		    "five READY warm files in the fake tree"))
		return;
	fi = find(ctx, &o, &r);
	tap_ok(r == 0 && fi.files == 4 && fi.reserved == 0,
	       "find counts the READY files of 8 MiB or more and the smaller one: %d, %u", r,
	       fi.files);
	o.flags = PREALLOC_WARM_TAKE_NO_GROW;
	fi = find(ctx, &o, &r);
	tap_ok(r == 0 && fi.files == 3, "NO_GROW: the smaller one does not count: %u", fi.files);
	find_then_take(ctx, request(0, 8 * MIB, 0), a, PREALLOC_WARM_HIT, "exactly its size");
	find_then_take(ctx, request(0, 8 * MIB, PREALLOC_WARM_TAKE_NO_GROW), e, PREALLOC_WARM_HIT,
		       "a single-tenant target's file, to any tenant");
	find_then_take(ctx, request(0, 6 * MIB, 0), b, PREALLOC_WARM_HIT_CUT, "a larger one, cut");
	find_then_take(ctx, request(0, 8 * MIB, PREALLOC_WARM_TAKE_NO_GROW), 0, 0,
		       "NO_GROW and only a smaller one");
	o = request(0, 8 * MIB, 0);
	fi = find(ctx, &o, &r);
	tap_ok(r == 0 && fi.id == c && fi.hit == PREALLOC_WARM_HIT_GROWN && fi.files == 1,
	       "a smaller one, to grow: %d, file %llu, hit %d", r, (unsigned long long)fi.id,
	       fi.hit);
	find_then_take(ctx, request(1, 8 * MIB, 0), 0, 0, "another tenant's file, to none");
	o = request(1, 8 * MIB, 0);
	o.tenant = "t2";
	find_then_take(ctx, o, 0, 0, "another tenant's file, to another tenant");
	o.tenant = "t1";
	find_then_take(ctx, o, d, PREALLOC_WARM_HIT, "its tenant's file");
}

static void test_reserved(struct prealloc_ctx *ctx)
{
	uint64_t f = add_warm(ctx, "f", 1, 8 * MIB, NULL), g = add_warm(ctx, "g", 1, 8 * MIB, NULL);
	struct prealloc_warm_take_opts o = request(1, 8 * MIB, PREALLOC_WARM_TAKE_RESERVE);
	struct prealloc_warm_take_info ti = { .size = sizeof(ti), .fd = -1 };
	struct prealloc_warm_find_info fi;
	uint64_t skip[2];
	int r;

	o.holder = "libvirt:guest";
	o.skip_ids = skip;
	skip[0] = f;
	o.nr_skip_ids = 1;
	fi = find(ctx, &o, &r);
	tap_ok(r == 0 && fi.id == g && fi.files == 1, "skip_ids: the counted file is passed over: "
	       "%d, file %llu, %u files", r, (unsigned long long)fi.id, fi.files);
	o.nr_skip_ids = 0;
	for (int k = 0; k < 2; k++) {
		r = prealloc_warm_take(ctx, &o, &ti);
		if (ti.fd >= 0)
			close(ti.fd);
		ti.fd = -1;
		tap_ok(r == 0 && ti.id == (k ? g : f), "reserve %d for the holder: %d, file %llu", k,
		       r, (unsigned long long)ti.id);
	}
	o.flags = PREALLOC_WARM_TAKE_RESERVED;
	fi = find(ctx, &o, &r);
	tap_ok(r == 0 && fi.id == f && fi.reserved && fi.files == 2 && fi.hit == PREALLOC_WARM_HIT,
	       "RESERVED: the holder's first, of two: %d, file %llu, %u files", r,
	       (unsigned long long)fi.id, fi.files);
	o.nr_skip_ids = 1;
	find_then_take(ctx, o, g, PREALLOC_WARM_HIT, "RESERVED past a counted one");
	o.nr_skip_ids = 0;
	o.holder = "libvirt:other";
	find_then_take(ctx, o, 0, 0, "RESERVED: another holder's");
}

static void test_refused(struct prealloc_ctx *ctx)
{
	struct prealloc_warm_take_opts o = request(0, 8 * MIB, 0);
	struct prealloc_warm_find_info fi = { .size = sizeof(fi) };
	int r;

	tap_ok(prealloc_warm_find(NULL, &o, &fi) == -EINVAL &&
		       prealloc_warm_find(ctx, NULL, &fi) == -EINVAL &&
		       prealloc_warm_find(ctx, &o, NULL) == -EINVAL,
	       "NULL ctx, opts or info: -EINVAL");
	o.length = 4097;
	fi = find(ctx, &o, &r);
	tap_ok(r == -EINVAL && fi.message[0], "a size of no whole page: %d (%s)", r, fi.message);
	o = request(5, 8 * MIB, 0);
	fi = find(ctx, &o, &r);
	tap_ok(r == -ENODEV, "a node with no memory: %d (%s)", r, fi.message);
	o = request(0, 8 * MIB, PREALLOC_WARM_TAKE_RESERVED);
	fi = find(ctx, &o, &r);
	tap_ok(r == -EINVAL, "RESERVED with no holder: %d (%s)", r, fi.message);
}

/* Give refuses exactly the tenant labels take (and find) refuse: a label's life has one bound. */
static void test_tenant_labels(struct prealloc_ctx *ctx)
{
	static const struct {
		const char *label;
		bool valid;
	} t[] = {
		{ "acme", true }, { "a@b", true }, { "@single", false }, { "@", false },
		{ "", false }, { "ac me", false }, { "acm\xc3\xa9", false }, { "tab\there", false },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", true },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct prealloc_warm_take_opts o = request(0, 8 * MIB, 0);
		struct prealloc_warm_give_opts g = { .size = sizeof(g), .tenant = t[i].label };
		char path[400];
		int fr_ret, gr_ret;

		o.tenant = t[i].label;
		find(ctx, &o, &fr_ret);
		snprintf(path, sizeof(path), "%s/nothing-here", fr.dir);
		g.path = path;
		gr_ret = prealloc_warm_give_with(ctx, &g, NULL);
		tap_ok(t[i].valid ? fr_ret != -EINVAL && gr_ret == -ENOENT
				  : fr_ret == -EINVAL && gr_ret == -EINVAL,
		       "tenant '%s' (%zu bytes): %s by take's find (%d) and by give (%d)", t[i].label,
		       strlen(t[i].label), t[i].valid ? "taken" : "refused", fr_ret, gr_ret);
	}
}

int main(void)
{
	struct prealloc_ctx *ctx;

	ctx = warm_test_ctx(&fr, 2);
	if (!ctx)
		return tap_done();
	test_ready(ctx);
	test_reserved(ctx);
	test_refused(ctx);
	test_tenant_labels(ctx);
	prealloc_ctx_free(ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
