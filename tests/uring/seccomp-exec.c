/* SPDX-License-Identifier: MIT */
/*
 * seccomp-exec [setup,enter,register] PROGRAM [ARGS...]: runs PROGRAM with
 * those io_uring system calls failing with EPERM from its first instruction
 * (default: all three), as a container runtime's profile does.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "seccomp.h"

int main(int argc, char **argv)
{
	unsigned int which = DENY_ALL;
	int arg = 1, r;

	if (argc > 2 && strchr("ser", argv[1][0]) && !strchr(argv[1], '/')) {
		which = (strstr(argv[1], "setup") ? DENY_SETUP : 0) |
			(strstr(argv[1], "enter") ? DENY_ENTER : 0) |
			(strstr(argv[1], "register") ? DENY_REGISTER : 0);
		arg = 2;
	}
	if (arg >= argc) {
		fprintf(stderr, "usage: seccomp-exec [setup,enter,register] PROGRAM [ARGS...]\n");
		return 2;
	}
	r = deny_io_uring(which);
	if (r < 0) {
		fprintf(stderr, "seccomp-exec: cannot install the filter: %s\n", strerror(-r));
		return 1;
	}
	execvp(argv[arg], argv + arg);
	perror("seccomp-exec: exec");
	return 127;
}
