/* SPDX-License-Identifier: MIT */
/*
 * The job engine on anonymous and memfd regions (no root needed): verify
 * as a verdict (-EBADMSG with the exact first dirty offset at chunk and
 * region edges, -EXDEV for missing pages), huge_bytes on THP, chunk_size
 * validation, and the internal API flows use (engine.h): a serial op run
 * in order, extra ranges, the flow's finish and completion sinks;
 * cancel seen inside a chunk; fixed workers, each chunk worked on the
 * same CPU in every job (the calibration's passes rely on it); and two
 * node crews (over a fake sysfs): node_done once per node with that node's
 * own result, job_done once after them, progress adding up to the bytes
 * done, and the eventfd queue's node and end events.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <numaif.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "tap.h"
#include "fakenodes.h"

#define MiB (UINT64_C(1) << 20)
#define CHUNK (2 * MiB)
#define LEN (8 * MiB)
#define EDGE 130

static struct prealloc_ctx *ctx;

static struct prealloc_region *region_make(int backing, uint64_t len)
{
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = backing, .length = len };
	struct prealloc_region *region = NULL;
	int r = prealloc_region_new(ctx, &ro, &region);

	if (r < 0)
		printf("# region (backing %d): %s\n", backing, strerror(-r));
	return region;
}

static int job_run(struct prealloc_region *region, int op, unsigned int flags, uint64_t chunk,
		   struct prealloc_report *rep)
{
	struct prealloc_job_opts jo = {
		.size = sizeof(jo), .op = op, .flags = flags, .threads = 2, .chunk_size = chunk,
	};

	rep->size = sizeof(*rep);
	return prealloc_run(region, &jo, rep);
}

/* One dirty byte at off: -EBADMSG at exactly off. Returns 1 when right. */
static int dirty_at(struct prealloc_region *region, uint64_t off)
{
	uint8_t *p = prealloc_region_addr(region);
	struct prealloc_report rep;
	int r;

	p[off] = 0x5a;
	r = job_run(region, PREALLOC_OP_VERIFY, 0, CHUNK, &rep);
	p[off] = 0;
	if (r == -EBADMSG && rep.error == -EBADMSG && rep.error_offset == off &&
	    rep.nonzero_offset == off)
		return 1;
	printf("# dirty byte at %llu: r %d error %d error_offset %llu nonzero %llu\n",
	       (unsigned long long)off, r, rep.error, (unsigned long long)rep.error_offset,
	       (unsigned long long)rep.nonzero_offset);
	return 0;
}

static void test_verdict(void)
{
	/* Region edges, and the edges of the chunk [CHUNK, 2 * CHUNK). */
	const uint64_t edges[][2] = { { 0, 0 }, { LEN - EDGE, LEN }, { CHUNK, 0 },
				      { 2 * CHUNK - EDGE, 2 * CHUNK } };
	struct prealloc_region *region = region_make(PREALLOC_BACKING_MEMFD, LEN);
	struct prealloc_report rep;
	int r;

	if (!region) {
		tap_ok(0, "verdict: memfd region");
		return;
	}
	r = job_run(region, PREALLOC_OP_VERIFY, 0, CHUNK, &rep);
	tap_ok(r == -EXDEV && rep.error == -EXDEV && rep.error_node >= 0,
	       "verdict: verify of a region not yet populated fails -EXDEV (got %d, node %d)", r,
	       rep.error_node);
	r = job_run(region, PREALLOC_OP_POPULATE, PREALLOC_JOB_VERIFY, CHUNK, &rep);
	tap_ok(r == 0 && rep.error == 0, "verdict: populate --verify passes (%d)", r);
	for (size_t e = 0; e < ARRAY_SIZE(edges); e++) {
		uint64_t lo = edges[e][0], hi = edges[e][1] ? edges[e][1] : lo + EDGE;
		unsigned int good = 0;

		for (uint64_t off = lo; off < hi; off++)
			good += (unsigned int)dirty_at(region, off);
		tap_ok(good == hi - lo, "verdict: -EBADMSG at the exact offset for [%llu, %llu): %u/%llu",
		       (unsigned long long)lo, (unsigned long long)hi, good,
		       (unsigned long long)(hi - lo));
	}
	r = job_run(region, PREALLOC_OP_VERIFY, 0, CHUNK, &rep);
	tap_ok(r == 0 && rep.nonzero_offset == UINT64_MAX, "verdict: clean again verifies (%d)", r);
	/*
	 * A populate with VERIFY reads each 2 MiB step back as it goes
	 * (JOB_FUSED_STEP): in one chunk of the whole region, a byte at
	 * either edge of a step, and the lowest of two in different steps.
	 */
	{
		const uint64_t at[][2] = { { 2 * MiB - 1, 0 }, { 2 * MiB, 0 }, { 6 * MiB + 5, 0 },
					   { LEN - 1, 0 }, { 5 * MiB, 3 * MiB + 7 } };
		uint8_t *p = prealloc_region_addr(region);

		for (size_t i = 0; i < ARRAY_SIZE(at); i++) {
			uint64_t want = at[i][1] ? at[i][1] : at[i][0];

			p[at[i][0]] = 0x5a;
			if (at[i][1])
				p[at[i][1]] = 0x5a;
			r = job_run(region, PREALLOC_OP_POPULATE, PREALLOC_JOB_VERIFY, LEN, &rep);
			p[at[i][0]] = 0;
			if (at[i][1])
				p[at[i][1]] = 0;
			tap_ok(r == -EBADMSG && rep.nonzero_offset == want && rep.error_offset == want,
			       "verdict: populate --verify reads each step back: a byte at %llu found "
			       "there (%d, nonzero %llu, error at %llu)", (unsigned long long)want, r,
			       (unsigned long long)rep.nonzero_offset,
			       (unsigned long long)rep.error_offset);
		}
		r = job_run(region, PREALLOC_OP_POPULATE, PREALLOC_JOB_VERIFY, LEN, &rep);
		tap_ok(r == 0 && rep.nonzero_offset == UINT64_MAX && rep.verify_seconds >= 0,
		       "verdict: a clean populate --verify in one chunk passes (%d)", r);
	}
	prealloc_region_free(region);
}

/*
 * The same verdict where numa_maps counts (THP: one step a huge page):
 * nothing populated is every page missing, all populated none.
 */
static void test_verdict_numa_maps(void)
{
	struct prealloc_node_report nr = { .size = sizeof(nr) };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_VERIFY };
	struct prealloc_region *region = region_make(PREALLOC_BACKING_ANON_THP, LEN);
	struct prealloc_job *job;
	int r;

	for (int pass = 0; region && pass < 2; pass++) {
		jo.op = pass ? PREALLOC_OP_POPULATE : PREALLOC_OP_VERIFY;
		jo.flags = pass ? PREALLOC_JOB_VERIFY : 0;
		if (prealloc_job_start(region, &jo, &job) < 0)
			break;
		r = prealloc_job_wait(job);
		prealloc_job_node_report(job, 0, &nr);
		prealloc_job_free(job);
		tap_ok(pass ? r == 0 && nr.pages_missing == 0 && nr.pages_on_node == LEN / 4096
			    : r == -EXDEV && nr.pages_missing == LEN / 4096 && nr.pages_on_node == 0,
		       "verdict (THP, numa_maps): %s: %d, %llu on, %llu missing", pass ? "populated"
			: "not populated", r, (unsigned long long)nr.pages_on_node,
		       (unsigned long long)nr.pages_missing);
	}
	if (!region)
		tap_ok(0, "verdict (THP, numa_maps): region");
	prealloc_region_free(region);
}

static void test_chunk_size(void)
{
	const uint64_t bad[] = { 4096 + 1, LEN + 4096, UINT64_MAX - 4095, UINT64_MAX };
	struct prealloc_region *region = region_make(PREALLOC_BACKING_ANON, LEN);
	struct prealloc_report rep;

	if (!region) {
		tap_ok(0, "chunk_size: anon region");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		tap_ok(job_run(region, PREALLOC_OP_POPULATE, 0, bad[i], &rep) == -EINVAL,
		       "chunk_size %llu is refused with -EINVAL", (unsigned long long)bad[i]);
	tap_ok(job_run(region, PREALLOC_OP_POPULATE, 0, LEN, &rep) == 0 && rep.bytes_done == LEN,
	       "chunk_size of the whole region works");
	prealloc_region_free(region);
}

static void test_huge_bytes(void)
{
	struct prealloc_node_report nr = { .size = sizeof(nr) };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_region *region;
	struct prealloc_job *job;
	char thp[128] = "";
	int r;

	read_file_str("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof(thp));
	if (strstr(thp, "[never]")) {
		tap_skip("huge_bytes: transparent_hugepage/enabled is [never]");
		return;
	}
	region = region_make(PREALLOC_BACKING_ANON_THP, 64 * MiB);
	if (!region || prealloc_job_start(region, &jo, &job) < 0) {
		tap_ok(0, "huge_bytes: THP job");
		prealloc_region_free(region);
		return;
	}
	r = prealloc_job_wait(job);
	prealloc_job_node_report(job, 0, &nr);
	tap_ok(r == 0 && nr.huge_bytes > 0 && nr.huge_bytes <= nr.bytes &&
		       nr.huge_bytes % (2 * MiB) == 0,
	       "huge_bytes: anon THP reports %llu of %llu bytes in huge pages",
	       (unsigned long long)nr.huge_bytes, (unsigned long long)nr.bytes);
	prealloc_job_free(job);
	prealloc_region_free(region);

	region = region_make(PREALLOC_BACKING_ANON, 8 * MiB);
	if (region && prealloc_job_start(region, &jo, &job) == 0) {
		prealloc_job_wait(job);
		prealloc_job_node_report(job, 0, &nr);
		tap_ok(nr.huge_bytes == 0, "huge_bytes: 4K anon reports 0");
		prealloc_job_free(job);
	}
	prealloc_region_free(region);
}

/* ---- the flow API -------------------------------------------------------- */

struct order {
	uint64_t last, pieces, back;	/* back: steps to a lower address */
};

static int order_setup(const struct job_op_args *args, void **ret_state)
{
	struct order *o = calloc(1, sizeof(*o));

	(void)args;
	if (!o)
		return -ENOMEM;
	*ret_state = o;
	return 0;
}

static int order_piece(void *state, uint8_t *p, uint64_t len)
{
	struct order *o = state;

	(void)len;
	if (o->pieces && (uint64_t)(uintptr_t)p <= o->last)
		o->back++;
	o->last = (uintptr_t)p;
	o->pieces++;
	return 0;
}

static int order_method(const void *state)
{
	(void)state;
	return PREALLOC_METHOD_NONE;
}

static struct order *seen_order;

static void order_teardown(void *state)
{
	struct order *o = state;

	*seen_order = *o;
	free(o);
}

/* An op a flow owns, outside ops.c's table: the engine needs nothing else. */
static const struct job_op serial_op = {
	.name = "order", .op = -1, .serial = true, .setup = order_setup,
	.piece = order_piece, .method = order_method, .teardown = order_teardown,
};

struct flow_seen {
	atomic_int finishes, nodes, jobs, destroyed, released;
	int status, done_in_finish, job_res;
	uint64_t bytes_done;
	atomic_uint_fast64_t progress; /* what the sink's progress was given, all steps */
};

static int flow_finish(struct prealloc_job *job, int status, void *arg)
{
	struct flow_seen *f = arg;
	struct prealloc_report rep;

	atomic_fetch_add(&f->finishes, 1);
	f->status = status;
	f->done_in_finish = prealloc_job_done(job);
	job_fill_report(job, &rep);
	f->bytes_done = rep.bytes_done;
	return status ? status : -ENOTRECOVERABLE;
}

static void flow_destroy(void *arg)
{
	atomic_fetch_add(&((struct flow_seen *)arg)->destroyed, 1);
}

static int sink_node(void *data, int node, int res)
{
	(void)node;
	(void)res;
	atomic_fetch_add(&((struct flow_seen *)data)->nodes, 1);
	return 0;
}

static int sink_job(void *data, int res)
{
	struct flow_seen *f = data;

	f->job_res = res;
	atomic_fetch_add(&f->jobs, 1);
	return 0;
}

static void sink_release(void *data)
{
	atomic_fetch_add(&((struct flow_seen *)data)->released, 1);
}

static void sink_progress(void *data, uint64_t bytes)
{
	atomic_fetch_add(&((struct flow_seen *)data)->progress, bytes);
}

static const struct job_sink_ops test_sink_ops = {
	.node_done = sink_node,
	.job_done = sink_job,
	.release = sink_release,
	.progress = sink_progress,
};

static void test_flow(void)
{
	struct prealloc_region *region = region_make(PREALLOC_BACKING_ANON, LEN);
	struct prealloc_job_opts jo = {
		.size = sizeof(jo), .op = PREALLOC_OP_POPULATE, .threads = 2, .chunk_size = CHUNK,
	};
	static struct flow_seen f;
	struct order order = { 0 };
	const struct job_flow flow = { flow_finish, flow_destroy, &f };
	const struct job_sink sink = { &test_sink_ops, &f };
	const struct job_range extra = { -1, 0, 2 * CHUNK };
	const struct job_spec spec = {
		.flow = &flow, .extra = &extra, .nr_extra = 1,
		.serial = &serial_op, .sink = &sink,
	};
	struct prealloc_job *job;
	int r, nodes;

	seen_order = &order;
	if (!region || job_start_spec(region, &jo, &spec, &job) < 0) {
		tap_ok(0, "flow: job_start_spec");
		prealloc_region_free(region);
		return;
	}
	tap_ok(job_flow_arg(job) == &f, "flow: job_flow_arg gives the flow's arg");
	r = prealloc_job_wait(job);
	nodes = prealloc_job_node_count(job, NULL, 0);
	tap_ok(r == -ENOTRECOVERABLE && f.status == 0 && atomic_load(&f.finishes) == 1,
	       "flow: finish ran once with status 0 and its return is the result (%d)", r);
	tap_ok(f.done_in_finish == 0, "flow: prealloc_job_done is 0 during finish");
	tap_ok(atomic_load(&f.nodes) == nodes && atomic_load(&f.jobs) == 1 &&
		       f.job_res == -ENOTRECOVERABLE,
	       "flow: the sink saw %d node completions for %d nodes and one job completion",
	       atomic_load(&f.nodes), nodes);
	/* Extents and the extra range, then once more serially. */
	tap_ok(f.bytes_done == 2 * (LEN + 2 * CHUNK),
	       "flow: the op + serial over extents and extra range: %llu bytes",
	       (unsigned long long)f.bytes_done);
	/* Every step of both phases, each counted by its own length. */
	tap_ok(atomic_load(&f.progress) == f.bytes_done,
	       "flow: the sink's progress adds up to the bytes done (%llu)",
	       (unsigned long long)atomic_load(&f.progress));
	prealloc_job_free(job);
	tap_ok(atomic_load(&f.destroyed) == 1 && atomic_load(&f.released) == 1,
	       "flow: destroy and release ran at free");
	/* One node: its extents' chunks ascending, then the extra range's (one step back). */
	tap_ok(order.back == (nodes == 1 ? 1u : order.back) &&
		       order.pieces == (LEN + 2 * CHUNK) / CHUNK,
	       "flow: the serial op took every chunk in queue order (%llu pieces, %llu steps back)",
	       (unsigned long long)order.pieces, (unsigned long long)order.back);
	prealloc_region_free(region);
}

/*
 * Cancel is seen between a chunk's steps, not only between chunks: one
 * worker on one 1 GiB chunk, cancelled once its first step is counted,
 * stops long before the chunk's end.
 */
static void test_cancel_in_chunk(void)
{
	const uint64_t len = 1024 * MiB;
	struct prealloc_region *region = region_make(PREALLOC_BACKING_ANON, len);
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE,
					.threads = 1, .chunk_size = len };
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_job *job = NULL;
	uint64_t done = 0, total = 0;
	int r;

	if (!region || prealloc_job_start(region, &jo, &job) < 0) {
		tap_ok(0, "cancel in a chunk: job started");
		prealloc_region_free(region);
		return;
	}
	while (!done && !prealloc_job_done(job))
		prealloc_job_progress(job, &done, &total);
	prealloc_job_cancel(job);
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	tap_ok(r == -ECANCELED && rep.bytes_done < len,
	       "cancel in a chunk: one 1 GiB chunk stops at a step (%d, %llu MiB of %llu done)", r,
	       (unsigned long long)(rep.bytes_done / MiB), (unsigned long long)(len / MiB));
	prealloc_job_free(job);
	prealloc_region_free(region);
}

#define FIXED_CHUNKS 6

/* Per chunk, the CPU each of its pieces ran on (-1: none yet, -2: more than one). */
struct cpu_map {
	uint8_t *base;
	atomic_int cpu[FIXED_CHUNKS];
};

static struct cpu_map *cpu_map;

static int cpu_piece(void *state, uint8_t *p, uint64_t len)
{
	size_t chunk = (size_t)(p - cpu_map->base) / CHUNK;
	int cpu = sched_getcpu(), was = -1;

	(void)state;
	(void)len;
	if (chunk >= FIXED_CHUNKS)
		return -ERANGE;
	/*
	 * Chunk 0 takes longest: from a shared queue the other workers would
	 * take its owner's later chunks meanwhile.
	 */
	usleep(chunk ? 2000 : 20000);
	if (!atomic_compare_exchange_strong(&cpu_map->cpu[chunk], &was, cpu) && was != cpu)
		atomic_store(&cpu_map->cpu[chunk], -2);
	return 0;
}

static int cpu_method(const void *state)
{
	(void)state;
	return PREALLOC_METHOD_NONE;
}

static const struct job_op cpu_op = {
	.name = "cpu", .op = -1, .piece = cpu_piece, .method = cpu_method,
};

/* One job's chunk -> CPU map; false if a chunk was seen on two CPUs or not at all. */
static bool fixed_run(struct prealloc_region *region, bool fixed, unsigned int threads,
		      int *ret_cpus)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_VERIFY,
					.flags = PREALLOC_JOB_NO_PLACEMENT, .threads = threads,
					.chunk_size = CHUNK };
	const struct job_spec spec = { .op = &cpu_op, .fixed_workers = fixed };
	struct cpu_map map = { .base = region->addr };
	struct prealloc_job *job;
	bool ok = true;

	for (unsigned int i = 0; i < FIXED_CHUNKS; i++)
		atomic_init(&map.cpu[i], -1);
	cpu_map = &map;
	if (job_start_spec(region, &jo, &spec, &job) < 0)
		return false;
	ok = prealloc_job_wait(job) == 0;
	prealloc_job_free(job);
	for (unsigned int i = 0; i < FIXED_CHUNKS; i++) {
		ret_cpus[i] = atomic_load(&map.cpu[i]);
		ok = ok && ret_cpus[i] >= 0;
	}
	return ok;
}

/* The n-th CPU of the node's allowed set, wrapping. */
static int node_cpu(const struct topo_node *t, unsigned int n)
{
	unsigned int seen = 0;

	n %= t->nr_cpus;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &t->cpus) && seen++ == n)
			return cpu;
	return -1;
}

/*
 * Fixed workers: worker i runs on the node's i-th CPU alone and takes
 * chunks i, i + threads, ...: chunk c is worked on CPU (c % threads) of
 * the node in each of 20 jobs, with 2 workers and with 3 (the third
 * wraps to the first CPU). Needs two CPUs on the node to tell anything.
 */
static void test_fixed_workers(void)
{
	struct prealloc_region *region = region_make(PREALLOC_BACKING_ANON, FIXED_CHUNKS * CHUNK);
	const struct topo_node *t;
	int cpus[FIXED_CHUNKS], node = 0;

	if (!region) {
		tap_ok(0, "fixed workers: region");
		return;
	}
	t = prealloc_default_nodes(ctx, &node, 1) < 1 ? NULL : topo_node(ctx, node);
	if (!t || t->nr_cpus < 2) {
		tap_skip("fixed workers: node %d has fewer than 2 allowed CPUs", node);
		prealloc_region_free(region);
		return;
	}
	for (unsigned int threads = 2; threads <= 3; threads++) {
		unsigned int runs = 20, good = 0;
		int bad_chunk = -1, bad_cpu = 0;

		for (unsigned int i = 0; i < runs; i++) {
			bool ok = fixed_run(region, true, threads, cpus);

			for (unsigned int c = 0; c < FIXED_CHUNKS && ok; c++) {
				ok = cpus[c] == node_cpu(t, c % threads);
				if (!ok) {
					bad_chunk = (int)c;
					bad_cpu = cpus[c];
				}
			}
			good += ok;
		}
		tap_ok(good == runs,
		       "fixed workers, %u threads: chunk c on the node's CPU (c %% %u) in %u of %u jobs%s",
		       threads, threads, good, runs, bad_chunk < 0 ? "" : " (a chunk moved)");
		if (bad_chunk >= 0)
			printf("#   chunk %d ran on CPU %d, want %d\n", bad_chunk, bad_cpu,
			       node_cpu(t, (unsigned int)bad_chunk % threads));
	}
	prealloc_region_free(region);
}

/* ---- per node: what the sinks get from two node crews ---------------------- */

static struct fakenodes fake;

/* What the sinks were told: per node, the job, the progress in bytes. */
struct node_events {
	atomic_uint calls[2], strays, jobs, late; /* late: a node after the job's end */
	atomic_int res[2], job_res;
	atomic_uint_fast64_t progress;
	struct prealloc_job *job; /* set by the flow's finish, which runs first */
	atomic_int done_at_end;	  /* prealloc_job_done() in job_done */
};

static int nodes_finish(struct prealloc_job *job, int status, void *arg)
{
	((struct node_events *)arg)->job = job;
	return status;
}

static int nodes_node(void *data, int node, int res)
{
	struct node_events *e = data;

	if (atomic_load(&e->jobs))
		atomic_fetch_add(&e->late, 1);
	if (node != 0 && node != 1) {
		atomic_fetch_add(&e->strays, 1);
		return 0;
	}
	atomic_fetch_add(&e->calls[node], 1);
	atomic_store(&e->res[node], res);
	return 0;
}

static int nodes_job(void *data, int res)
{
	struct node_events *e = data;

	atomic_store(&e->done_at_end, e->job ? prealloc_job_done(e->job) : -1);
	atomic_store(&e->job_res, res);
	atomic_fetch_add(&e->jobs, 1);
	return 0;
}

static void nodes_progress(void *data, uint64_t bytes)
{
	atomic_fetch_add(&((struct node_events *)data)->progress, bytes);
}

static const struct job_sink_ops nodes_sink_ops = {
	.node_done = nodes_node,
	.job_done = nodes_job,
	.progress = nodes_progress,
};

/*
 * An op that fails -EIO at one offset (node 1's first byte); node 0's
 * pieces wait for that failure first, so node 0 finishes after the job
 * has its error, on another node, having done at most its first piece
 * (none when the cancel came before it).
 */
static struct fail_at {
	uint8_t *base;
	uint64_t at; /* UINT64_MAX: never */
	atomic_bool failed;
} fail_at;

static int fail_piece(void *state, uint8_t *p, uint64_t len)
{
	uint64_t off = (uint64_t)(p - fail_at.base);

	(void)state;
	(void)len;
	if (off == fail_at.at) {
		atomic_store(&fail_at.failed, true);
		return -EIO;
	}
	for (int i = 0; fail_at.at != UINT64_MAX && off < fail_at.at && i < 5000; i++) {
		if (atomic_load(&fail_at.failed))
			break;
		usleep(1000);
	}
	return 0;
}

static const struct job_op fail_op = {
	.name = "fail-at",
	.op = -1,
	.piece = fail_piece,
	.method = cpu_method,
};

/*
 * Two pools (nodes 0 and 1, 32 MiB each, one worker each): each sink gets
 * node_done once per node with that node (res 0, or the job's error on the
 * node where it happened: never on the other), then job_done once with the
 * result, once prealloc_job_done() is 1; progress adds up to exactly the
 * bytes done. The io_uring
 * completion's eventfd queue carries the same: a node event per node (res
 * the node) and one end, last, with the error.
 */
static void test_node_sinks(void)
{
	static const int nodes[] = { 0, 1 };
	struct prealloc_ctx *c2 = fakenodes_ctx(&fake, prealloc_ctx_state_dir(ctx));

	if (fake.sys[0])
		tap_remove_at_exit(fake.sys);

	if (!tap_ok(c2 != NULL, "per node: a ctx over a sysfs with nodes 0 and 1")) {
		fakenodes_remove(&fake);
		return;
	}
	for (int failing = 0; failing <= 1; failing++) {
		struct prealloc_region_opts ro = { .size = sizeof(ro),
						   .backing = PREALLOC_BACKING_ANON,
						   .flags = PREALLOC_REGION_NO_BIND,
						   .length = 64 * MiB,
						   .nr_nodes = 2,
						   .nodes = nodes };
		struct prealloc_completion c = {
			.size = sizeof(c),
			.ring_fd = -1,
			.flags = PREALLOC_COMPLETION_NODES,
			.user_data_end = 0xe,
			.user_data_node = 0xa,
			.user_data_progress = 0xb,
			.progress_step = 16 * MiB,
		};
		struct prealloc_job_opts jo = { .size = sizeof(jo),
						.op = PREALLOC_OP_VERIFY,
						.flags = PREALLOC_JOB_NO_PLACEMENT,
						.threads = 1,
						.chunk_size = 16 * MiB,
						.completion = &c };
		struct node_events e = { 0 };
		const struct job_sink sink = { &nodes_sink_ops, &e };
		const struct job_flow flow = { nodes_finish, NULL, &e };
		const struct job_spec spec = { .op = &fail_op, .sink = &sink, .flow = &flow };
		struct prealloc_report rep = { .size = sizeof(rep) };
		struct prealloc_region *region = NULL;
		struct prealloc_job *job = NULL;
		unsigned int ends = 0, seen[2] = { 0 }, others = 0, after_end = 0;
		int want = failing ? -EIO : 0, end_res = 1, r, res;
		uint64_t ud;

		r = prealloc_region_new(c2, &ro, &region);
		if (r == 0) {
			fail_at.base = prealloc_region_addr(region);
			fail_at.at = failing ? 32 * MiB : UINT64_MAX;
			atomic_store(&fail_at.failed, false);
			r = job_start_spec(region, &jo, &spec, &job);
		}
		if (r < 0) {
			tap_ok(0, "per node: a job on two nodes (%d)", r);
			prealloc_region_free(region);
			break;
		}
		r = prealloc_job_wait(job);
		prealloc_job_report(job, &rep);
		for (int n = 0; n < 4096 && prealloc_job_event(job, &ud, &res) == 1; n++) {
			after_end += ends;
			if (ud == 0xe) {
				ends++;
				end_res = res;
			} else if (ud == 0xa && (res == 0 || res == 1)) {
				seen[res]++;
			} else if (ud != 0xb) {
				others++;
			}
		}
		tap_ok(atomic_load(&e.calls[0]) == 1 && atomic_load(&e.calls[1]) == 1 &&
			       atomic_load(&e.strays) == 0 && atomic_load(&e.res[0]) == 0 &&
			       atomic_load(&e.res[1]) == want,
		       "per node, %s: node_done once for node 0 (res %d) and node 1 (res %d, want "
		       "%d)",
		       failing ? "node 1 fails" : "done", atomic_load(&e.res[0]),
		       atomic_load(&e.res[1]), want);
		tap_ok(atomic_load(&e.jobs) == 1 && atomic_load(&e.job_res) == want &&
			       atomic_load(&e.late) == 0 && atomic_load(&e.done_at_end) == 1 &&
			       r == want,
		       "per node, %s: job_done once, after both nodes and prealloc_job_done(), res "
		       "%d (wait %d)",
		       failing ? "node 1 fails" : "done", atomic_load(&e.job_res), r);
		tap_ok(atomic_load(&e.progress) == rep.bytes_done &&
			       (failing ? rep.bytes_done <= 16 * MiB : rep.bytes_done == 64 * MiB),
		       "per node, %s: progress adds up to the bytes done (%llu of %llu MiB)",
		       failing ? "node 1 fails" : "done",
		       (unsigned long long)(atomic_load(&e.progress) >> 20),
		       (unsigned long long)(rep.bytes_done >> 20));
		tap_ok(ends == 1 && after_end == 0 && end_res == want && seen[0] == 1 &&
			       seen[1] == 1 && others == 0 &&
			       (!failing || (rep.error == -EIO && rep.error_node == 1 &&
					     rep.error_offset == 32 * MiB)),
		       "per node, %s: the eventfd queue: node events 0 and 1, one end %d last; "
		       "report error %d on node %d",
		       failing ? "node 1 fails" : "done", end_res, rep.error, rep.error_node);
		prealloc_job_free(job);
		prealloc_region_free(region);
	}
	prealloc_ctx_free(c2);
	fakenodes_remove(&fake);
}

/*
 * placement_query (move_pages, the path the check phase takes where a
 * mapping spans extents): pages on the asked node are on it, pages on any
 * other node off it, pages never touched missing. One node suffices: asked
 * about a node the pages are not on, every present page must count as off.
 */
static void test_placement_query(void)
{
	enum { PAGES = 64, UNTOUCHED = 8 };
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t on = 0, off = 0, missing = 0;
	uint8_t *p = mmap(NULL, PAGES * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	void *first;
	int here = -1, r;

	if (!tap_ok(p != MAP_FAILED, "placement_query: an anonymous mapping"))
		return;
	for (int i = 0; i < PAGES - UNTOUCHED; i++)
		p[i * ps] = 1;
	first = p;
	move_pages(0, 1, &first, NULL, &here, 0);
	r = placement_query(p, PAGES * ps, (uint64_t)ps, here, &on, &off, &missing);
	tap_ok(r == 0 && on == PAGES - UNTOUCHED && off == 0 && missing == UNTOUCHED,
	       "placement_query on node %d, where the pages are: %llu on, %llu off, %llu missing",
	       here, (unsigned long long)on, (unsigned long long)off, (unsigned long long)missing);
	on = off = missing = 0;
	r = placement_query(p, PAGES * ps, (uint64_t)ps, here + 1, &on, &off, &missing);
	tap_ok(r == 0 && on == 0 && off == PAGES - UNTOUCHED && missing == UNTOUCHED,
	       "placement_query on node %d, where they are not: %llu on, %llu off, %llu missing",
	       here + 1, (unsigned long long)on, (unsigned long long)off,
	       (unsigned long long)missing);
	munmap(p, PAGES * ps);
}

/*
 * placement_pagemap (the check phase's path for anonymous 4K memory where
 * page frames can be read): written pages on their node, pages only read
 * (the shared zero page) and pages never touched missing, as move_pages
 * counts them.
 */
static void test_placement_pagemap(void)
{
	enum { PAGES = 64, READ = 8, UNTOUCHED = 8 };
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t on = 0, off = 0, missing = 0, qon = 0, qoff = 0, qmissing = 0;
	volatile uint8_t *p = mmap(NULL, PAGES * ps, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *first;
	int here = -1, r;

	if (!placement_pagemap_ok()) {
		/* The cause, proven: not root (frames read as 0), or no memory blocks listed. */
		tap_skip("placement_pagemap: %s", geteuid() != 0 ? "not root: pagemap hides page frames"
			 : access("/sys/devices/system/memory/block_size_bytes", R_OK) != 0
				 ? "no /sys/devices/system/memory: no memory blocks to map frames to nodes"
				 : "pagemap unusable here");
		return;
	}
	if (!tap_ok(p != MAP_FAILED, "placement_pagemap: an anonymous mapping"))
		return;
	madvise((void *)p, PAGES * ps, MADV_NOHUGEPAGE);
	for (int i = 0; i < PAGES - READ - UNTOUCHED; i++)
		p[i * ps] = 1;
	for (int i = PAGES - READ - UNTOUCHED; i < PAGES - UNTOUCHED; i++)
		(void)p[i * ps];
	first = (void *)p;
	move_pages(0, 1, &first, NULL, &here, 0);
	r = placement_pagemap((const uint8_t *)p, PAGES * ps, here, &on, &off, &missing);
	placement_query((uint8_t *)p, PAGES * ps, (uint64_t)ps, here, &qon, &qoff, &qmissing);
	tap_ok(r == 0 && on == PAGES - READ - UNTOUCHED && off == 0 && missing == READ + UNTOUCHED &&
		       on == qon && off == qoff && missing == qmissing,
	       "placement_pagemap on node %d: %llu on, %llu off, %llu missing (zero pages missing); "
	       "move_pages: %llu, %llu, %llu", here, (unsigned long long)on,
	       (unsigned long long)off, (unsigned long long)missing, (unsigned long long)qon,
	       (unsigned long long)qoff, (unsigned long long)qmissing);
	on = off = missing = 0;
	r = placement_pagemap((const uint8_t *)p, PAGES * ps, here + 1, &on, &off, &missing);
	tap_ok(r == 0 && on == 0 && off == PAGES - READ - UNTOUCHED,
	       "placement_pagemap on node %d, where they are not: %llu on, %llu off", here + 1,
	       (unsigned long long)on, (unsigned long long)off);
	munmap((void *)p, PAGES * ps);
}

int main(void)
{
	if (prealloc_ctx_new(&ctx) < 0) {
		printf("not ok 1 - context\n1..1\n");
		return 1;
	}
	test_verdict();
	test_verdict_numa_maps();
	test_chunk_size();
	test_huge_bytes();
	test_flow();
	test_cancel_in_chunk();
	test_fixed_workers();
	test_node_sinks();
	test_placement_query();
	test_placement_pagemap();
	prealloc_ctx_free(ctx);
	return tap_done();
}
