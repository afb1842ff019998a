/* SPDX-License-Identifier: MIT */
/* `prealloc rm FILE...`: release files this tool made, and nothing else. */
#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

int cmd_rm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c, ret = EXIT_OK;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			printf("Usage: prealloc rm FILE...\n"
			       "Remove guest memory files made by prealloc, returning their pages.\n"
			       "Refuses any file prealloc did not make.\n");
			return EXIT_OK;
		default:
			fprintf(stderr, "Try 'prealloc rm --help'.\n");
			return EXIT_USAGE;
		}
	}
	if (optind == argc) {
		cli_error("rm: no file given");
		return EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		const char *path = argv[i];
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
		if (r < 0) {
			cli_error("rm: %s: %s", path, strerror(-r));
			ret = EXIT_ENVIRONMENT;
			continue;
		}
		r = registry_release(path);
		if (r < 0) {
			cli_error("rm: cannot remove %s: %s", path, strerror(-r));
			ret = EXIT_FAILURE_RUN;
		}
	}
	return ret;
}
