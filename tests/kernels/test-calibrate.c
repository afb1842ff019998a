/* SPDX-License-Identifier: MIT */
/*
 * prealloc_calibrate through the public API, fast: two usable kernels, two
 * small sizes, one thread count at a larger one, one repeat. The result has the
 * shape asked for, every figure is a rate (> 0), the calibration built from
 * it names only kernels usable here and ends in the class for any size;
 * auto is the last column, timed, with its paired ratio and its share of
 * cached stores; repeat 0 takes 7 to 31 repetitions a point; --writes beyond
 * its maximum and a kernel list with no room for auto are -EINVAL;
 * SAVE with a path writes a file that prealloc_calibration_load on a fresh
 * ctx reads back as the same classes. An unknown kernel is -ENOENT naming
 * its index. Skips (1..0 # SKIP) when fewer than two kernels are usable.
 *
 * Under emulation (PREALLOC_TEST_EMULATED, which tests/kernels/meson.build
 * sets for a cross build: its tests run under the exe_wrapper) the points
 * are larger; the checks are the same.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prealloc.h"
#include "tap.h"

static const char *usable[16];
static int nr_usable;

/*
 * The points: two sizes within the cached limit (half the LLC, at most
 * 8 MiB), and the thread count's. Each sample clears 64 MiB in passes of
 * its size, three jobs a pass, and under qemu-user a job costs about
 * 1.5 ms: 16 KiB's 4096 passes made a call 71 s there (the test 250-300 s,
 * 7 s natively). At 256 and 512 KiB (cached for any LLC from 1 MiB) and
 * 4 MiB a call runs 13 times fewer jobs.
 */
struct points {
	uint64_t sizes[2], large;
};

static const struct points native = { { 16u << 10, 64u << 10 }, 1u << 20 };
static const struct points emulated = { { 256u << 10, 512u << 10 }, 4u << 20 };

static bool is_usable(const char *name)
{
	for (int i = 0; i < nr_usable && i < 16; i++)
		if (!strcmp(usable[i], name))
			return true;
	return false;
}

static bool all_rates(const double *gbps, unsigned int n)
{
	for (unsigned int k = 0; k < n; k++)
		if (!(gbps[k] > 0) || !isfinite(gbps[k]))
			return false;
	return true;
}

/* Classes ascending, the last for any size, each kernel usable here. */
static bool calibration_sane(const struct prealloc_calibration *cal)
{
	if (!cal->nr_classes || cal->nr_classes > PREALLOC_CALIBRATION_CLASSES ||
	    cal->classes[cal->nr_classes - 1].max_bytes != UINT64_MAX)
		return false;
	for (unsigned int i = 0; i < cal->nr_classes; i++)
		if (!is_usable(cal->classes[i].kernel) ||
		    (i && cal->classes[i].max_bytes <= cal->classes[i - 1].max_bytes))
			return false;
	return true;
}

static bool same_classes(const struct prealloc_calibration *a, const struct prealloc_calibration *b)
{
	if (a->nr_classes != b->nr_classes)
		return false;
	for (unsigned int i = 0; i < a->nr_classes; i++)
		if (a->classes[i].max_bytes != b->classes[i].max_bytes ||
		    strcmp(a->classes[i].kernel, b->classes[i].kernel))
			return false;
	return true;
}

static void check_shape(const struct prealloc_calibrate_opts *o,
			const struct prealloc_calibrate_result *res)
{
	bool ok = res->nr_kernels == 3 && res->nr_sizes == 2 && res->nr_threads == 1 &&
		  res->repeat == 1 && res->repeat_max == 1 && res->threads_repeat[0] == 1 &&
		  res->threads[0] == 1 && res->large_size == o->large_size &&
		  res->bad_kernel == -1 && !strcmp(res->kernels[2], "auto") && res->writes == 1;

	for (unsigned int i = 0; ok && i < 2; i++)
		ok = !strcmp(res->kernels[i], o->kernels[i]) && res->sizes[i] == o->sizes[i] &&
		     res->size_auto[i][0] && res->size_calibrated[i][0] &&
		     res->size_auto_ratio[i] > 0 && isfinite(res->size_auto_ratio[i]) &&
		     res->size_repeat[i] == 1;
	tap_ok(ok, "the result's shape: 2 kernels (%s, %s) and auto, 2 sizes, 1 thread count at "
		   "%u KiB, written once, auto measured (%.2f %.2f)",
	       res->kernels[0], res->kernels[1], (unsigned int)(o->large_size >> 10),
	       res->size_auto_ratio[0], res->size_auto_ratio[1]);
	tap_ok(all_rates(res->size_gbps[0], 3) && all_rates(res->size_gbps[1], 3) &&
		       all_rates(res->threads_gbps[0], 3),
	       "every figure > 0 GB/s (%.2f %.2f %.2f / %.2f %.2f %.2f / %.2f %.2f %.2f)",
	       res->size_gbps[0][0], res->size_gbps[0][1], res->size_gbps[0][2],
	       res->size_gbps[1][0], res->size_gbps[1][1], res->size_gbps[1][2],
	       res->threads_gbps[0][0], res->threads_gbps[0][1], res->threads_gbps[0][2]);
	tap_ok(res->spread == 0, "one repetition: no spread (%.3f)", res->spread);
	/* One repetition: auto/best is auto's figure over the best kernel's, exactly. */
	for (unsigned int i = 0; i < 2; i++) {
		const double *g = res->size_gbps[i];
		double want = g[2] / (g[0] > g[1] ? g[0] : g[1]);

		tap_ok(fabs(res->size_auto_ratio[i] - want) < 1e-9,
		       "auto/best at %u KiB: auto over the best of the two, %.4f (%.4f)",
		       (unsigned int)(res->sizes[i] >> 10), want, res->size_auto_ratio[i]);
	}
	/* Below the cached limit auto is one cached kernel: all its bytes by cached stores. */
	tap_ok(res->size_auto_cached[0] == 1 && res->size_auto_cached[1] == 1,
	       "auto at %u and %u KiB (%s): every byte by cached stores (%.3f %.3f)",
	       (unsigned int)(res->sizes[0] >> 10), (unsigned int)(res->sizes[1] >> 10),
	       res->size_auto[0], res->size_auto_cached[0], res->size_auto_cached[1]);
	tap_ok(calibration_sane(&res->calibration),
	       "the calibration: %u classes, ascending, the last for any size, kernels usable here "
	       "(first %s)", res->calibration.nr_classes, res->calibration.classes[0].kernel);
}

int main(void)
{
	const char *env = getenv("PREALLOC_TEST_EMULATED");
	const struct points *pt = env && *env && strcmp(env, "0") ? &emulated : &native;
	struct prealloc_calibrate_opts o = {
		.size = sizeof(o),
		.nr_sizes = 2,
		.sizes = { pt->sizes[0], pt->sizes[1] },
		.nr_threads = 1,
		.threads = { 1 },
		.large_size = pt->large,
		.nr_kernels = 2,
		.repeat = 1,
	};
	struct prealloc_calibration back = { .size = sizeof(back) };
	struct prealloc_calibrate_result *res = calloc(1, sizeof(*res));
	struct prealloc_ctx *ctx, *ctx2;
	char dir[] = "/tmp/prealloc-calibrate.XXXXXX", path[64];
	int r;

	if (!res || prealloc_ctx_new(&ctx) < 0) {
		tap_ok(0, "context");
		return tap_done();
	}
	nr_usable = prealloc_clear_kernels(ctx, usable, 16);
	if (nr_usable < 2) {
		return tap_skip_all("%d clear kernel(s) usable here, two needed", nr_usable);
	}
	o.kernels[0] = usable[0];
	o.kernels[1] = usable[nr_usable - 1];
	res->size = sizeof(*res);
	r = prealloc_calibrate(ctx, &o, res);
	tap_ok(r == 0 && !res->saved, "measured without SAVE (%d)", r);
	check_shape(&o, res);
	o.writes = PREALLOC_CALIBRATE_WRITES_MAX + 1;
	r = prealloc_calibrate(ctx, &o, res);
	tap_ok(r == -EINVAL, "writes over %d: -EINVAL (%d)", PREALLOC_CALIBRATE_WRITES_MAX, r);
	o.writes = 2;
	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	r = prealloc_calibrate(ctx, &o, res);
	tap_ok(r == 0 && res->writes == 2, "writes 2: measured, said (%d, %u)", r, res->writes);
	o.writes = 0;
	o.nr_kernels = PREALLOC_CALIBRATE_KERNELS;
	for (unsigned int i = 2; i < PREALLOC_CALIBRATE_KERNELS; i++)
		o.kernels[i] = usable[0];
	r = prealloc_calibrate(ctx, &o, res);
	tap_ok(r == -EINVAL, "%d kernels leave no column for auto: -EINVAL (%d)",
	       PREALLOC_CALIBRATE_KERNELS, r);
	o.nr_kernels = 2;

	/* repeat 0: each point from 7 repetitions on, until auto/best is known, at most 31. */
	{
		struct prealloc_calibrate_opts a = o;

		/* One kernel and 8 MiB: a sample's 64 MiB in 8 jobs, not 64 (2-3 s in all). */
		a.repeat = 0;
		a.nr_sizes = 1;
		a.sizes[0] = 8u << 20;
		a.large_size = 8u << 20;
		a.nr_kernels = 1;
		memset(res, 0, sizeof(*res));
		res->size = sizeof(*res);
		r = prealloc_calibrate(ctx, &a, res);
		tap_ok(r == 0 && res->repeat == PREALLOC_CALIBRATE_REPEAT_AUTO_MIN &&
			       res->repeat_max == PREALLOC_CALIBRATE_REPEAT_AUTO_MAX &&
			       res->size_repeat[0] >= res->repeat &&
			       res->size_repeat[0] <= res->repeat_max &&
			       res->threads_repeat[0] >= res->repeat &&
			       res->threads_repeat[0] <= res->repeat_max,
		       "repeat 0: %u and %u repetitions, within %u-%u (%d)", res->size_repeat[0],
		       res->threads_repeat[0], res->repeat, res->repeat_max, r);
	}

	if (!mkdtemp(dir)) {
		tap_ok(0, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	tap_remove_at_exit(dir);
	snprintf(path, sizeof(path), "%s/calibration", dir);
	o.flags = PREALLOC_CALIBRATE_SAVE;
	o.path = path;
	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	r = prealloc_calibrate(ctx, &o, res);
	tap_ok(r == 0 && res->saved == 1 && access(path, R_OK) == 0,
	       "SAVE with a path: saved, %s written (%d)", path, r);
	r = prealloc_ctx_new(&ctx2);
	if (r == 0) {
		r = prealloc_calibration_load(ctx2, path, &back);
		tap_ok(r == 0 && same_classes(&back, &res->calibration),
		       "a fresh ctx loads it back: the same %u classes (%d)", back.nr_classes, r);
		prealloc_ctx_free(ctx2);
	} else {
		tap_ok(0, "a second context (%d)", r);
	}
	unlink(path);
	rmdir(dir);

	o.flags = 0;
	o.kernels[1] = "warp_drive";
	memset(res, 0, sizeof(*res));
	res->size = sizeof(*res);
	r = prealloc_calibrate(ctx, &o, res);
	tap_ok(r == -ENOENT && res->bad_kernel == 1, "an unknown kernel: -ENOENT at index %d (%d)",
	       res->bad_kernel, r);
	prealloc_ctx_free(ctx);
	free(res);
	return tap_done();
}
