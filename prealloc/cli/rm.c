/* SPDX-License-Identifier: MIT */
/*
 * `prealloc rm FILE...`: release files this tool made, and nothing else,
 * with the hugepage pool growth recorded for each (the library's release
 * flow); a file whose run died before it was ready is released too.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

#define MAX_OF(a, b) ((a) > (b) ? (a) : (b))

static int rm_one(struct prealloc_ctx *ctx, const char *path)
{
	struct prealloc_release_info info = { .size = sizeof(info) };
	int r = prealloc_release(ctx, path, &info);

	switch (r) {
	case 0:
		break;
	case -ELOOP:
		cli_error("rm: %s is a symbolic link; give the file itself", path);
		return EXIT_ENVIRONMENT;
	case -ENOENT:
	case -EINVAL:
		cli_error("rm: %s was not made by prealloc (no record in %s); not removing it", path,
			  prealloc_ctx_state_dir(ctx));
		return EXIT_ENVIRONMENT;
	case -ESTALE:
		cli_error("rm: %s was made by prealloc but its size changed since; not removing it "
			  "(remove it by hand if it is no longer needed)", path);
		return EXIT_ENVIRONMENT;
	case -EBUSY:
		if (info.warm) {
			cli_error("rm: %s is a warm file the pool handed out; give it back with "
				  "'prealloc warm give %s'", path, path);
			return EXIT_ENVIRONMENT;
		}
		if (info.pinned) {
			cli_error("rm: %s is in use: DMA-mapped (pinned) for a device by pid %d; "
				  "stop that mapping first", path, info.pid);
			return EXIT_ENVIRONMENT;
		}
		cli_error("rm: %s is still being prepared by pid %d; wait for it or stop it first",
			  path, info.pid);
		return EXIT_ENVIRONMENT;
	case -EBADMSG:
		cli_error("rm: the record store in %s is corrupt; nothing was removed",
			  prealloc_ctx_state_dir(ctx));
		return EXIT_ENVIRONMENT;
	default:
		cli_error("rm: %s: %s", path, strerror(-r));
		return r == -ETIMEDOUT || r == -EACCES || r == -EPERM ? EXIT_ENVIRONMENT
								     : EXIT_FAILURE_RUN;
	}
	/* Pages still mapped elsewhere (a running VMM) come back at 'prealloc gc'. */
	if (info.in_use)
		cli_warn("rm: %llu hugepages are still in use (is the file still open?); 'prealloc "
			 "gc' returns them later", (unsigned long long)info.in_use);
	return EXIT_OK;
}

int cmd_rm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "h";
	struct prealloc_ctx *ctx;
	int c, ret = EXIT_OK;

	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("Usage: prealloc rm FILE...\n"
			       "Remove guest memory files made by prealloc, returning their pages.\n"
			       "Refuses any file prealloc did not make.\n");
			return EXIT_OK;
		default:
			return option_error("rm", argv, short_opts, opts);
		}
	}
	if (optind == argc) {
		cli_error("rm: no file given");
		return EXIT_USAGE;
	}
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	for (int i = optind; i < argc; i++) {
		int r = rm_one(ctx, argv[i]);

		ret = MAX_OF(ret, r);
	}
	prealloc_ctx_free(ctx);
	return ret;
}
