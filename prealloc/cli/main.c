/* SPDX-License-Identifier: MIT */
/* prealloc: make virtual-machine memory ready before the guest starts. */
#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "info", cmd_info },
	{ "rm", cmd_rm },
	{ "clear", cmd_clear },
	{ "bench", cmd_bench },
	{ "pool", cmd_pool },
	{ "vfio-map", cmd_vfio_map },
};

int main(int argc, char **argv)
{
	/*
	 * A reader that went away (a hook's log reader, `| head`) must not
	 * kill a run before its rollback: writes fail with EPIPE instead, and
	 * output is only ever written after the outcome is settled.
	 */
	signal(SIGPIPE, SIG_IGN);
	opterr = 0;	/* option_error() reports bad options, in one line */
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("prealloc %s\n", prealloc_version());
		return EXIT_OK;
	}
	for (size_t i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	/* A word that is neither a command, an option nor a size is a typo. */
	if (argc > 1 && isalpha((unsigned char)argv[1][0])) {
		cli_error("unknown command '%s' (commands: info, rm, clear, bench, pool, vfio-map; or "
			  "a SIZE to create memory, see --help)", argv[1]);
		return EXIT_USAGE;
	}
	/* No subcommand: create memory (the main job). */
	return cmd_create(argc, argv);
}
