/* SPDX-License-Identifier: MIT */
/*
 * The clear kernels ranked for large clears on this machine (clear_rank.c,
 * clear_auto.c): the file's text round trip and what it refuses; a file of
 * this CPU and microcode decides over the probe limit and is named in the
 * reason, one of another microcode is measured again, nothing decides
 * below the probe limit, and PREALLOC_CALIBRATION=none means the built-in
 * rules alone. The measurement itself runs once for real.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "memory.h"
#include "other-kernel.h"
#include "tap.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* A ranking of this CPU (microcode as given) naming first, then second. */
static void rank_of_this_cpu(struct clear_rank *r, const char *microcode, const char *first,
			     const char *second)
{
	const struct cpu_id *cpu = cpu_get();

	memset(r, 0, sizeof(*r));
	snprintf(r->vendor, sizeof(r->vendor), "%s", cpu->vendor);
	snprintf(r->model_name, sizeof(r->model_name), "%s", cpu->model_name);
	r->family = cpu->family;
	r->model = cpu->model;
	snprintf(r->microcode, sizeof(r->microcode), "%s", microcode);
	r->nr = 2;
	snprintf(r->k[0].kernel, sizeof(r->k[0].kernel), "%s", first);
	r->k[0].gbps = 30.5;
	snprintf(r->k[1].kernel, sizeof(r->k[1].kernel), "%s", second);
	r->k[1].gbps = 12.25;
	r->buffer_bytes = 128 * MiB;
	r->rounds = 6;
	r->seconds = 0.1;
}

static void test_format(void)
{
	struct clear_rank r, back;
	char text[2048], mc[24];

	cpu_microcode(mc, sizeof(mc));
	rank_of_this_cpu(&r, mc, "c", other_kernel());
	tap_ok(clear_rank_format(&r, text, sizeof(text)) > 0 && clear_rank_parse(text, &back) == 0 &&
		       !strcmp(back.k[0].kernel, "c") && back.k[1].gbps == 12.25 && back.nr == 2 &&
		       back.buffer_bytes == 128 * MiB && clear_rank_matches(&back, cpu_get()),
	       "format, parse: the same ranking back, of this CPU");
	tap_ok(clear_rank_parse("version 1\nvendor X\nkernel warp_drive 9.0\n", &back) == -EINVAL,
	       "an unknown kernel is refused");
	tap_ok(clear_rank_parse("vendor X\nkernel c 9.0\n", &back) == -EINVAL, "no version: refused");
	tap_ok(clear_rank_parse("version 1\nvendor X\n", &back) == -EINVAL, "no kernel: refused");
	rank_of_this_cpu(&r, "0xdeadbeef", "c", other_kernel());
	tap_ok(strcmp(mc, "0xdeadbeef") && !clear_rank_matches(&r, cpu_get()),
	       "another microcode (this CPU: %s): not this machine's", mc);
}

static void write_rank(const char *path, const struct clear_rank *r)
{
	char text[2048];
	int len = clear_rank_format(r, text, sizeof(text));

	tap_ok(len > 0 && small_file_write(path, text, (size_t)len) == 0, "wrote %s", path);
}

/* What a fresh ctx chooses for size x 1 thread, and why. */
static const char *choose(uint64_t size, char *why, size_t len)
{
	struct prealloc_ctx *ctx;
	const char *name = "";

	if (prealloc_ctx_new(&ctx) < 0)
		return "(no ctx)";
	prealloc_clear_choose(ctx, size, 1, &name, why, len);
	prealloc_ctx_free(ctx);
	return name;
}

static void test_choice(void)
{
	char dir[] = "/tmp/test-rank.XXXXXX", cal[256], rank[256], why[512], mc[24];
	uint64_t big = clear_probe_limit(cpu_get()->llc_bytes) * 4;
	struct clear_rank r;
	const char *k;

	if (!mkdtemp(dir)) {
		tap_ok(0, "a temporary directory");
		return;
	}
	tap_remove_at_exit(dir);
	snprintf(cal, sizeof(cal), "%s/calibration", dir);
	snprintf(rank, sizeof(rank), "%s/calibration.ranking", dir);
	setenv("PREALLOC_CALIBRATION", cal, 1);
	cpu_microcode(mc, sizeof(mc));

	/* This CPU's file says memset is fastest for large clears: it decides there. */
	rank_of_this_cpu(&r, mc, "c", other_kernel());
	write_rank(rank, &r);
	k = choose(big, why, sizeof(why));
	tap_ok(!strcmp(k, "c") && strstr(why, "fastest here") && strstr(why, rank),
	       "over the probe limit the cached ranking decides, named (%s: %s)", k, why);
	k = choose(4096, why, sizeof(why));
	tap_ok(!strstr(why, "fastest here"), "below the probe limit the rules decide (%s: %s)", k,
	       why);

	/* Another microcode: measured again, for real, and saved over it. */
	rank_of_this_cpu(&r, "0xdeadbeef", "c", other_kernel());
	write_rank(rank, &r);
	k = choose(big, why, sizeof(why));
	tap_ok(strstr(why, "measured") != NULL, "another microcode's file: measured now (%s: %s)", k,
	       why);
	tap_ok(clear_kernel_find(k) != NULL, "... a kernel of the table (%s)", k);
	{
		struct clear_rank saved;
		char text[2048];

		tap_ok(small_file_read(rank, text, sizeof(text)) == 0 &&
			       clear_rank_parse(text, &saved) == 0 &&
			       clear_rank_matches(&saved, cpu_get()) && !strcmp(saved.k[0].kernel, k),
		       "... and saved for this microcode, its leader the choice");
		printf("# measured: %.0f ms, %u rounds, %llu MiB buffer, %s %.1f GB/s first\n",
		       saved.seconds * 1e3, saved.rounds,
		       (unsigned long long)(saved.buffer_bytes >> 20), saved.k[0].kernel,
		       saved.k[0].gbps);
	}

	/* none: the built-in rules alone, the file not even read. */
	rank_of_this_cpu(&r, mc, "c", other_kernel());
	write_rank(rank, &r);
	setenv("PREALLOC_CALIBRATION", "none", 1);
	k = choose(big, why, sizeof(why));
	tap_ok(!strstr(why, "fastest here") && !strstr(why, "calibrated"),
	       "PREALLOC_CALIBRATION=none: the built-in rules (%s: %s)", k, why);
	unlink(rank);
	rmdir(dir);
}

int main(void)
{
	test_format();
	test_choice();
	return tap_done();
}
