/* SPDX-License-Identifier: MIT */
/* prealloc: make virtual-machine memory ready before the guest starts. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"

/*
 * prealloc hook install|uninstall [--root DIR]: runs the libvirt hook's own
 * installer (prealloc-libvirt-hook --install), so that everything libvirt
 * stays in the hook; $PREALLOC_LIBVIRT_HOOK names another build of it.
 */
static int cmd_hook(int argc, char **argv)
{
	const char *hook = getenv("PREALLOC_LIBVIRT_HOOK");
	char *args[8] = { 0 };

	if (!hook || !hook[0])
		hook = PREALLOC_LIBVIRT_HOOK;
	if (argc < 2 || argc > 4 || (strcmp(argv[1], "install") && strcmp(argv[1], "uninstall"))) {
		fprintf(stderr, "Usage: prealloc hook install|uninstall [--root DIR]\n"
				"Puts the libvirt hook at /etc/libvirt/hooks/qemu.d/prealloc (or "
				"removes it) and makes libvirtd rescan; see prealloc-libvirt-hook(8).\n");
		return argc == 2 && !strcmp(argv[1], "--help") ? EXIT_OK : EXIT_USAGE;
	}
	args[0] = (char *)hook;
	args[1] = !strcmp(argv[1], "install") ? "--install" : "--uninstall";
	for (int i = 2; i < argc; i++)
		args[i] = argv[i];
	fflush(stdout);
	execv(hook, args);
	cli_error("cannot run the libvirt hook %s: %s (built only with libxml2: -Dlibvirt_hook)",
		  hook, strerror(errno));
	return EXIT_ENVIRONMENT;
}

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
	{ "hook", cmd_hook },
	{ "warm", cmd_warm },
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
		cli_error("unknown command '%s' (commands: info, rm, clear, bench, pool, vfio-map, "
			  "hook, warm; or a SIZE to create memory, see --help)", argv[1]);
		return EXIT_USAGE;
	}
	/* No subcommand: create memory (the main job). */
	return cmd_create(argc, argv);
}
