/* SPDX-License-Identifier: MIT */
/*
 * `prealloc warm drain`: every warm file no guest holds given back, as the
 * warm pool shrinking to a target of 0 gives them back (docs/warm.md): one
 * prealloc_warm_fill pass over a warm.conf that exists and names no
 * target. READY, DIRTY and QUARANTINED files are removed and the hugepage
 * growth they added goes back to the pool; HANDED (reserved included) and
 * CLEARING files stay, with their records. A RETURNING file (a give under
 * way, or one that died) is settled as give settles it first. A file given
 * back while its holder still has it open or mapped is DIRTY: it leaves
 * the warm pool, and its holder keeps its pages until it lets go. The
 * package's prerm runs it on remove, after the service stopped
 * (docs/packaging.md); an operator can too.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

const char warm_drain_synopsis[] = "prealloc warm drain\n";

/* An empty warm.conf no one else can see: a memfd, by its /proc path. */
static int empty_conf(char *path, size_t len)
{
	int fd = memfd_create("prealloc-drain.conf", MFD_CLOEXEC);

	if (fd < 0)
		return -errno;
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

static int drain_status(int r)
{
	if (r == 0)
		return EXIT_OK;
	return r == -ENOMEM ? EXIT_NO_MEMORY : EXIT_ENVIRONMENT;
}

int cmd_warm_drain(int argc, char **argv)
{
	struct prealloc_warm_fill_opts o = { .size = sizeof(o) };
	struct prealloc_warm_fill_info info = { .size = sizeof(info) };
	struct prealloc_ctx *ctx;
	char conf[64], size[32];
	int fd, r;

	if (argc == 2 && !strcmp(argv[1], "--help")) {
		printf("Usage: %s", warm_drain_synopsis);
		printf("Give back every warm file no guest holds: READY, DIRTY and QUARANTINED\n"
		       "files are removed with the hugepages they added; handed and reserved\n"
		       "files stay (see prealloc(1), docs/warm.md).\n");
		return EXIT_OK;
	}
	if (argc > 1) {
		cli_error("warm drain: unknown argument '%s' (it takes none)", argv[1]);
		return EXIT_USAGE;
	}
	fd = empty_conf(conf, sizeof(conf));
	if (fd < 0) {
		cli_error("warm drain: memfd_create: %s", strerror(-fd));
		return EXIT_ENVIRONMENT;
	}
	o.conf_path = conf;
	ctx = cli_context();
	if (!ctx) {
		close(fd);
		return EXIT_ENVIRONMENT;
	}
	r = prealloc_warm_fill(ctx, &o, &info);
	prealloc_ctx_free(ctx);
	close(fd);
	printf("warm drain: %u warm file%s given back (%s)\n", info.dropped,
	       info.dropped == 1 ? "" : "s", prealloc_format_size(info.dropped_bytes, size, sizeof(size)));
	if (r < 0 || info.message[0])
		cli_error("warm drain: %s%s", info.message[0] ? info.message : strerror(-r),
			  info.message[0] ? "" : store_hint(r));
	return drain_status(r);
}
