/* SPDX-License-Identifier: MIT */
/*
 * `prealloc qemu [OPTIONS] SIZE -- QEMU [ARGS...]`: plain QEMU's wrapper
 * front end (docs/design.md, "Front ends"). The guest's memory, one
 * file-backed backend per host node, goes through the front-end layer
 * (frontend/guest.h) that the libvirt hook uses too: claimed, then linked
 * from a warm file (--warm) or pre-faulted at DIR/ID (DIR/ID-nodeN for
 * each of several nodes); QEMU runs with it (-object
 * memory-backend-file,... and -machine memory-backend=ID, or one -numa node
 * per backend), and when QEMU exits (or fails, or this command is
 * signalled: the signal goes on to QEMU) it is given back. What every
 * wrapper shares (options, the guest, the run) is wrap.c's; this file is
 * what QEMU alone needs: its name and words for sharing, its usage, its
 * memory options.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "guest.h"
#include "cli.h"

static int usage(FILE *f, int rc)
{
	fprintf(f,
		"Usage: prealloc qemu [--node LIST] [--page-size 4k|2M|1G] [--dir DIR] [--id ID]\n"
		"                     [--warm] [--tenant NAME] [--grow-pools] [--print]\n"
		"                     [--dry-run] [--verbose] SIZE -- QEMU [ARGS...]\n"
		"Prepare SIZE of guest memory on host node N (pre-faulted, or a warm file of the\n"
		"pool with --warm), run QEMU with it and give it back when QEMU exits. QEMU gets\n"
		"  -object memory-backend-file,id=ID,mem-path=DIR/ID,size=BYTES,share=on,\n"
		"          prealloc=off,host-nodes=N,policy=bind -machine memory-backend=ID\n"
		"after ARGS (without -m, or with -m SIZE). SIGINT, SIGTERM and SIGHUP go on to\n"
		"QEMU; the exit status is QEMU's (128 + the signal that ended it).\n"
		"With several nodes, guest node I gets the I-th node listed: one such object\n"
		"each, id ID-nodeN, and -numa node,nodeid=I,memdev=ID-nodeN (give no -numa).\n"
		"  --node LIST      host nodes: N, N,M, N-M; N:SIZE,... to size each (adding\n"
		"                   up to SIZE), else SIZE split evenly (default: the first\n"
		"                   node with memory)\n"
		"  --page-size P    4k, 2M or 1G (default 2M)\n"
		"  --dir DIR        where the file goes, on hugetlbfs or tmpfs (default: the\n"
		"                   page size's hugetlbfs mount, /dev/shm for 4k)\n"
		"  --id ID          the backend's id and file name (default prealloc-PID)\n"
		"  --warm           start on a READY warm file of the node when there is one\n"
		"  --tenant NAME    the warm pool's tenant (docs/warm.md)\n"
		"  --grow-pools     grow the node's hugepage pool where it is short\n"
		"  --print          print the QEMU command line before running it\n"
		"  --dry-run        print it and do nothing else\n"
		"  --verbose        say what was prepared and given back\n");
	return rc;
}

/*
 * QEMU's options for the backends: an -object each, then -machine
 * memory-backend=ID for one, or a -numa node each for several (guest node
 * i on backend i). 0, or EXIT_FAILURE_RUN out of memory.
 */
static int qemu_options(struct wrap_cmd *q, const struct guest *g)
{
	unsigned int nr = g->demand.nr_backends;
	bool ok = true;

	for (unsigned int i = 0; i < nr && ok; i++) {
		const struct guest_backend *be = &g->demand.backends[i];

		ok = wrap_opt(q, "-object", "memory-backend-file,id=%s,mem-path=%s/%s,size=%llu,"
			      "share=on,prealloc=off,host-nodes=%d,policy=bind", be->alias,
			      g->mount, be->alias, (unsigned long long)be->bytes, be->nodes[0]);
	}
	for (unsigned int i = 0; i < nr && ok; i++)
		ok = nr == 1 ? wrap_opt(q, "-machine", "memory-backend=%s", g->demand.backends[0].alias)
			     : wrap_opt(q, "-numa", "node,nodeid=%u,memdev=%s", i,
					g->demand.backends[i].alias);
	if (!ok)
		cli_error("qemu: %s", strerror(ENOMEM));
	return ok ? 0 : EXIT_FAILURE_RUN;
}

int cmd_qemu(int argc, char **argv)
{
	static struct wrap_cmd q = { .name = "qemu", .vmm_name = "QEMU", .shared_on = "share=on",
				     .shared_off = "share=off", .page_size = PREALLOC_PAGE_2M,
				     .usage = usage, .options = qemu_options };

	return wrap_main(&q, argc, argv);
}
