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

static void hook_usage(FILE *f, const char *sub)
{
	fprintf(f, "Usage: prealloc hook %s [--root DIR]\n"
		   "Puts the libvirt hook at /etc/libvirt/hooks/qemu.d/prealloc (or removes it)\n"
		   "and makes libvirtd rescan; --root DIR: under DIR, no signal. See\n"
		   "prealloc-libvirt-hook(8).\n", sub);
}

/*
 * prealloc hook install|uninstall [--root DIR]: runs the libvirt hook's own
 * installer (prealloc-libvirt-hook --install), so that everything libvirt
 * stays in the hook; $PREALLOC_LIBVIRT_HOOK names another build of it.
 * Its --help is answered here: the usage names this command, not the hook.
 */
static int hook_exec(const char *action, int argc, char **argv)
{
	const char *hook = getenv("PREALLOC_LIBVIRT_HOOK");
	char *args[8] = { 0 };

	if (!hook || !hook[0])
		hook = PREALLOC_LIBVIRT_HOOK;
	if (argc > 3 || (argc == 2 && !strcmp(argv[1], "--help"))) {
		hook_usage(argc > 3 ? stderr : stdout, argv[0]);
		return argc > 3 ? EXIT_USAGE : EXIT_OK;
	}
	args[0] = (char *)hook;
	args[1] = (char *)action;
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	fflush(stdout);
	execv(hook, args);
	cli_error("cannot run the libvirt hook %s: %s (the prealloc-libvirt package; a build: "
		  "-Dlibvirt_hook)", hook, strerror(errno));
	return EXIT_ENVIRONMENT;
}

static int cmd_hook_install(int argc, char **argv)
{
	return hook_exec("--install", argc, argv);
}

static int cmd_hook_uninstall(int argc, char **argv)
{
	return hook_exec("--uninstall", argc, argv);
}

/* prealloc hook, no subcommand named: its usage (to stdout for --help). */
static int cmd_hook(int argc, char **argv)
{
	bool help = argc == 2 && !strcmp(argv[1], "--help");

	hook_usage(help ? stdout : stderr, "install|uninstall");
	return help ? EXIT_OK : EXIT_USAGE;
}

static const struct cli_command hook_commands[] = {
	{ "install", cmd_hook_install, NULL },
	{ "uninstall", cmd_hook_uninstall, NULL },
	{},
};

/* No command word: create memory (the main job); a word that is no command is a typo. */
static int cmd_prealloc(int argc, char **argv)
{
	if (argc > 1 && isalpha((unsigned char)argv[1][0])) {
		cli_error("unknown command '%s' (commands: info, rm, clear, bench, pool, gc, "
			  "vfio-map, hook, warm, qemu; or a SIZE to create memory, see --help)",
			  argv[1]);
		return EXIT_USAGE;
	}
	return cmd_create(argc, argv);
}

static const struct cli_command commands[] = {
	{ "info", cmd_info, NULL },
	{ "rm", cmd_rm, NULL },
	{ "clear", cmd_clear, NULL },
	{ "bench", cmd_bench, NULL },
	{ "pool", cmd_pool, NULL },
	{ "gc", cmd_gc, NULL },
	{ "vfio-map", cmd_vfio_map, NULL },
	{ "hook", cmd_hook, hook_commands },
	{ "warm", cmd_warm, warm_commands },
	{ "qemu", cmd_qemu, NULL },
	{},
};

/* Every command's path under prefix, one a line, subcommands after their command. */
static void list_commands(const struct cli_command *table, const char *prefix)
{
	char path[128];

	for (; table && table->name; table++) {
		snprintf(path, sizeof(path), "%s%s ", prefix, table->name);
		printf("%.*s\n", (int)strlen(path) - 1, path);
		list_commands(table->subs, path);
	}
}

/* --help or -h among the arguments, before a "--" that ends the options. */
static bool help_asked(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

/*
 * Runs the subcommand argv[1] names among cmd's, or cmd itself. Help asked
 * anywhere on its line runs it with --help alone, so that no usage error
 * comes first; an unknown subcommand word stays an error.
 */
static int dispatch(const struct cli_command *cmd, int argc, char **argv)
{
	char *help[] = { argv[0], "--help", NULL };

	for (const struct cli_command *s = cmd->subs; s && s->name && argc > 1; s++)
		if (!strcmp(argv[1], s->name))
			return dispatch(s, argc - 1, argv + 1);
	if (cmd->subs && argc > 1 && isalpha((unsigned char)argv[1][0]))
		return cmd->fn(argc, argv);
	return help_asked(argc, argv) ? cmd->fn(2, help) : cmd->fn(argc, argv);
}

int main(int argc, char **argv)
{
	/*
	 * A reader that went away (a hook's log reader, `| head`) must not
	 * kill a run before its rollback: writes fail with EPIPE instead, and
	 * output is only ever written after the outcome is settled.
	 */
	signal(SIGPIPE, SIG_IGN);
	/*
	 * A write lease the warm pool takes may be broken before it can clear
	 * the lease's signal owner: SIGIO's default would end the run.
	 */
	signal(SIGIO, SIG_IGN);
	opterr = 0;	/* option_error() reports bad options, in one line */
	if (argc > 1 && !strcmp(argv[1], "--version")) {
		printf("prealloc %s\n", prealloc_version());
		return EXIT_OK;
	}
	/* Hidden: what tests walk (test-help.sh: every command's --help). */
	if (argc == 2 && !strcmp(argv[1], "--list-commands")) {
		list_commands(commands, "");
		return EXIT_OK;
	}
	return dispatch(&(const struct cli_command){ "prealloc", cmd_prealloc, commands }, argc,
			argv);
}
