/* SPDX-License-Identifier: MIT */
/*
 * How a VMM embeds libprealloc: it maps guest RAM itself, hands the range to
 * the library to bind and populate on one node per half, waits on the job's
 * eventfd from its own event loop (here: poll), and reads the report.
 *
 *   examples/embed [MiB]     (default 256)
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <prealloc.h>

int main(int argc, char **argv)
{
	uint64_t len = (argc > 1 ? strtoull(argv[1], NULL, 10) : 256) << 20;
	struct prealloc_ctx *ctx;
	struct prealloc_region *region;
	struct prealloc_job *job;
	struct prealloc_report rep = { .size = sizeof(rep) };
	int nodes[2], nr, r;
	void *guest_ram;

	r = prealloc_ctx_new(&ctx);
	if (r < 0) {
		fprintf(stderr, "prealloc_ctx_new: %s\n", strerror(-r));
		return 1;
	}
	nr = prealloc_nodes(ctx, nodes, 2);
	if (nr > 2)
		nr = 2;

	/* The VMM's own mapping of guest RAM. */
	guest_ram = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (guest_ram == MAP_FAILED)
		return 1;

	struct prealloc_region_opts ro = {
		.size = sizeof(ro),
		.backing = PREALLOC_BACKING_MAPPED,
		.addr = guest_ram,
		.length = len,
		.nr_nodes = (unsigned int)nr,	/* split evenly over the first two nodes */
		.nodes = nodes,
	};
	r = prealloc_region_new(ctx, &ro, &region);
	if (r < 0) {
		fprintf(stderr, "prealloc_region_new: %s\n", strerror(-r));
		return 1;
	}

	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	r = prealloc_job_start(region, &jo, &job);
	if (r < 0) {
		fprintf(stderr, "prealloc_job_start: %s\n", strerror(-r));
		return 1;
	}

	/* The VMM's event loop: the eventfd turns readable when the job is done. */
	struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };
	while (poll(&pfd, 1, 200) == 0) {
		uint64_t done, total;

		prealloc_job_progress(job, &done, &total);
		printf("progress: %llu of %llu MiB\n", (unsigned long long)(done >> 20),
		       (unsigned long long)(total >> 20));
	}
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	printf("populated %llu MiB in %.3f s with %u threads: %s\n",
	       (unsigned long long)(rep.bytes_done >> 20), rep.seconds, rep.threads,
	       r ? strerror(-r) : "ok");
	for (unsigned int i = 0; i < rep.nr_nodes; i++) {
		struct prealloc_node_report n = { .size = sizeof(n) };

		prealloc_job_node_report(job, i, &n);
		printf("  node %d: %llu pages on node, %llu elsewhere, %llu missing\n", n.node,
		       (unsigned long long)n.pages_on_node, (unsigned long long)n.pages_off_node,
		       (unsigned long long)n.pages_missing);
	}
	prealloc_job_free(job);
	prealloc_region_free(region);	/* MAPPED: the VMM keeps its mapping */
	munmap(guest_ram, len);
	prealloc_ctx_free(ctx);
	return r ? 1 : 0;
}
