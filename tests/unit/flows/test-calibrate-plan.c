/* SPDX-License-Identifier: MIT */
/*
 * prealloc_calibrate's refusals, all decided before its buffer is mapped
 * or a kernel timed (calibrate.c: resolve_kernels, plan_points), over a
 * fake sysfs/procfs (fakeroot.h), so each takes no time and no memory:
 * every size under a page and every thread count of 0 or over 256 is
 * -EINVAL (not only the first); 256 threads pass and a buffer over half
 * the available memory is -ENOMEM with the need and the limit said; a
 * kernel this build knows but this CPU cannot run is -EOPNOTSUPP at its
 * index, for calibrate and for a clear (its KERNEL step); a result of size
 * 0 or no options is -EINVAL.
 *
 * tests/kernels/test-calibrate holds the measurements, writes and repeat
 * at their bounds, too many kernels and an unknown one (-ENOENT).
 */
#include <errno.h>
#include <string.h>

#include "prealloc.h"
#include "fakeroot.h"
#include "tap.h"
#include "flows-test.h"

static struct fakeroot fr;
static struct prealloc_ctx *ctx;

static int calibrate(struct prealloc_calibrate_opts *o, struct prealloc_calibrate_result *res)
{
	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	o->size = sizeof(*o);
	return prealloc_calibrate(ctx, o, res);
}

static void test_points(void)
{
	struct prealloc_calibrate_result res;
	struct prealloc_calibrate_opts o;
	int r;

	o = (struct prealloc_calibrate_opts){ .nr_sizes = 2, .sizes = { K4, 2048 },
					      .nr_threads = 1, .threads = { 1 } };
	r = calibrate(&o, &res);
	tap_ok(r == -EINVAL, "sizes 4 KiB and 2 KiB: the second under a page, -EINVAL (%d)", r);
	o = (struct prealloc_calibrate_opts){ .nr_sizes = 1, .sizes = { K4 }, .nr_threads = 2,
					      .threads = { 1, 0 } };
	r = calibrate(&o, &res);
	tap_ok(r == -EINVAL, "threads 1 and 0: -EINVAL (%d)", r);
	o.threads[1] = 257;
	r = calibrate(&o, &res);
	tap_ok(r == -EINVAL, "threads 1 and 257: -EINVAL (%d)", r);
	/* 256 threads pass; then a size no machine has half the memory for. */
	o = (struct prealloc_calibrate_opts){ .nr_sizes = 1, .sizes = { UINT64_C(1) << 60 },
					      .nr_threads = 1, .threads = { 256 } };
	r = calibrate(&o, &res);
	tap_ok(r == -ENOMEM && res.buffer_bytes == UINT64_C(1) << 60 && res.buffer_limit > 0 &&
		       res.buffer_limit < res.buffer_bytes && res.nr_threads == 1 &&
		       res.threads[0] == 256,
	       "256 threads and a 1 EiB size: -ENOMEM, needing 1 EiB of a limit of %llu MiB (%d)",
	       (unsigned long long)(res.buffer_limit >> 20), r);
	res.size = 0;
	tap_ok(prealloc_calibrate(ctx, &o, &res) == -EINVAL &&
		       prealloc_calibrate(ctx, NULL, &res) == -EINVAL &&
		       prealloc_calibrate(NULL, &o, &res) == -EINVAL,
	       "a result of size 0, no options, no ctx: -EINVAL");
}

/* The kernels this build knows, per architecture (clear/<arch>/clear.c's table). */
static const char *const known[] = {
#if defined(__x86_64__)
	"avx2_nt", "avx512_nt", "clzero", "movnti", "rep_stosb",
#elif defined(__aarch64__)
	"dc_zva", "mops", "stnp",
#endif
	"c",
};

/* A kernel known here that this CPU (or this build) cannot run; NULL if it runs them all. */
static const char *unusable_kernel(void)
{
	const char *names[16];
	int n = prealloc_clear_kernels(ctx, names, 16);

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		bool usable = false;

		for (int k = 0; k < n && k < 16; k++)
			usable |= !strcmp(names[k], known[i]);
		if (!usable)
			return known[i];
	}
	return NULL;
}

static void test_unusable(const char *shm)
{
	struct prealloc_clear_file_opts co = { .size = sizeof(co) };
	struct prealloc_clear_file_info info = { .size = sizeof(info) };
	struct prealloc_calibrate_result res;
	struct prealloc_calibrate_opts o;
	const char *name = unusable_kernel();
	char path[400];
	int r;

	if (!name) {
		tap_skip("this CPU runs every kernel this build knows: none to refuse");
		tap_skip("(the same, for a clear)");
		return;
	}
	o = (struct prealloc_calibrate_opts){ .nr_kernels = 2, .kernels = { "c", name } };
	r = calibrate(&o, &res);
	tap_ok(r == -EOPNOTSUPP && res.bad_kernel == 1,
	       "calibrate with %s, which this CPU cannot run: -EOPNOTSUPP at index 1 (r %d index "
	       "%d)", name, r, res.bad_kernel);
	snprintf(path, sizeof(path), "%s/data", shm);
	make_file_at(path, 0600, 2 * K4, 0x11);
	co.kernel = name;
	r = prealloc_clear_file(ctx, path, &co, &info, NULL);
	tap_ok(r == -EOPNOTSUPP && info.error_step == PREALLOC_CLEAR_STEP_KERNEL &&
		       nonzero_bytes(path) == 2 * K4,
	       "a clear with %s: -EOPNOTSUPP at KERNEL, the file untouched (r %d step %d)", name, r,
	       info.error_step);
}

int main(void)
{
	char shm[256];

	if (shm_dir(shm, sizeof(shm)) < 0)
		return tap_skip_all("/dev/shm is not a tmpfs");
	if (fakeroot_make(&fr, 1) < 0)
		return tap_skip_all("cannot build the fake tree in /tmp");
	tap_remove_at_exit(fr.dir);
	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx over the fake sysfs and procfs"))
		return tap_done();
	test_points();
	test_unusable(shm);
	prealloc_ctx_free(ctx);
	return tap_done();
}
