/* SPDX-License-Identifier: MIT */
/* prealloc: make virtual-machine memory ready before the guest starts. */
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "info", cmd_info },
	{ "rm", cmd_rm },
};

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("prealloc %s\n", prealloc_version());
		return EXIT_OK;
	}
	for (size_t i = 0; argc > 1 && i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	/* No subcommand: create memory (the main job). */
	return cmd_create(argc, argv);
}
