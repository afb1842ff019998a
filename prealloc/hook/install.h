/* SPDX-License-Identifier: MIT */
/* The hook's own installer: --install, --uninstall [--root DIR] (install.c). */
#ifndef PREALLOC_HOOK_INSTALL_H
#define PREALLOC_HOOK_INSTALL_H

/* Whether argv is an installer command line rather than libvirt's 4 arguments. */
static inline int hook_install_args(int argc, char **argv)
{
	/* libvirt always passes `<domain> <op> <subop> -`, whatever the domain's name. */
	return argc >= 2 && argv[1][0] == '-' && !(argc == 5 && argv[4][0] == '-' && !argv[4][1]);
}

/* 0 done, 1 failed, 2 bad usage; prints what it did. */
int hook_install_main(int argc, char **argv);

#endif
