/* SPDX-License-Identifier: MIT */
/*
 * `prealloc rm FILE...`: release files this tool made, and nothing else,
 * then give back the hugepage pool growth the ledger holds for each.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cmd_rm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "h";
	struct prealloc_ctx *ctx = NULL;
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
	for (int i = optind; i < argc; i++) {
		const char *path = argv[i];
		char abs[PATH_MAX];
		uint64_t returned = 0;
		struct stat st;
		int r;

		if (lstat(path, &st) < 0) {
			cli_error("rm: %s: %s", path, strerror(errno));
			ret = EXIT_ENVIRONMENT;
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			cli_error("rm: %s is a symbolic link; give the file itself", path);
			ret = EXIT_ENVIRONMENT;
			continue;
		}
		r = registry_lookup(path);
		if (r == -ENOENT || r == -EINVAL) {
			cli_error("rm: %s was not made by prealloc (no record in %s); not removing it",
				  path, registry_dir());
			ret = EXIT_ENVIRONMENT;
			continue;
		}
		if (r == -ESTALE) {
			cli_error("rm: %s was made by prealloc but its size changed since; not "
				  "removing it (remove it by hand if it is no longer needed)", path);
			ret = EXIT_ENVIRONMENT;
			continue;
		}
		if (r < 0) {
			cli_error("rm: %s: %s", path, strerror(-r));
			ret = EXIT_ENVIRONMENT;
			continue;
		}
		/* The ledger knows the file by its absolute path, which unlink makes unresolvable. */
		if (!realpath(path, abs)) {
			cli_error("rm: %s: %s", path, strerror(errno));
			ret = EXIT_ENVIRONMENT;
			continue;
		}
		r = registry_release(path);
		if (r < 0) {
			cli_error("rm: cannot remove %s: %s", path, strerror(-r));
			ret = EXIT_FAILURE_RUN;
			continue;
		}
		if (!ctx && (r = prealloc_ctx_new(&ctx)) < 0) {
			cli_error("rm: cannot read the system topology: %s", strerror(-r));
			ret = EXIT_FAILURE_RUN;
			continue;
		}
		r = prealloc_pool_release(ctx, abs, &returned);
		if (r == -ENOENT)
			continue;	/* the run added nothing to any pool */
		if (r < 0) {
			cli_error("rm: removed %s, but cannot give back its pool growth: %s", path,
				  strerror(-r));
			ret = EXIT_FAILURE_RUN;
			continue;
		}
		/* Pages still mapped elsewhere (a running VMM) come back at 'prealloc pool --gc'. */
		for (unsigned int k = 0;; k++) {
			struct prealloc_ledger_entry e = { .size = sizeof(e) };

			if (prealloc_ledger_entry(ctx, k, &e) < 0)
				break;
			if (!strcmp(e.owner, abs) && e.added)
				cli_warn("rm: %llu pages of node %d's pool are still in use (is the "
					 "file still open?); 'prealloc pool --gc' returns them later",
					 (unsigned long long)e.added, e.node);
		}
	}
	prealloc_ctx_free(ctx);
	return ret;
}
