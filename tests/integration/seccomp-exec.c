/* SPDX-License-Identifier: MIT */
/*
 * seccomp-exec --allow N,N,... [--af-unix] [--mdwe] -- COMMAND...: runs
 * COMMAND under the seccomp filter systemd builds for a unit's
 * SystemCallFilter= (the allowed numbers, the rest EPERM as
 * SystemCallErrorNumber=EPERM), SystemCallArchitectures=native (another
 * ABI: killed), RestrictAddressFamilies=AF_UNIX (--af-unix: socket() of any
 * other family EAFNOSUPPORT) and MemoryDenyWriteExecute=yes (--mdwe: a
 * mapping both writable and executable, or mprotect to executable, EPERM).
 * For test-warm-service.sh, where PID 1 is not systemd. No libseccomp: a
 * classic BPF program, each allowed number a compare and a return.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define NATIVE_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_ARCH AUDIT_ARCH_AARCH64
#else
#error "seccomp-exec: no audit arch for this target"
#endif

#define MAX_PROG 4096
#define ARG(n) (offsetof(struct seccomp_data, args[n]))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))

static struct sock_filter prog[MAX_PROG];
static unsigned int len;

static void put(struct sock_filter f)
{
	if (len == MAX_PROG) {
		fprintf(stderr, "seccomp-exec: filter too long\n");
		exit(125);
	}
	prog[len++] = f;
}

/* nr's calls return err when arg's bits of mask are all set (mask 0: always). */
static void refuse_if(long nr, int arg, unsigned int mask, int err)
{
	put((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, mask ? 4 : 1));
	if (mask) {
		put((struct sock_filter)LOAD(ARG(arg)));
		put((struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask));
		put((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, mask, 0, 1));
	}
	put((struct sock_filter)RET(SECCOMP_RET_ERRNO | (unsigned int)err));
	if (mask)
		put((struct sock_filter)LOAD(offsetof(struct seccomp_data, nr)));
}

int main(int argc, char **argv)
{
	bool af_unix = false, mdwe = false;
	char *allow = NULL;
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--allow") && i + 1 < argc)
			allow = argv[++i];
		else if (!strcmp(argv[i], "--af-unix"))
			af_unix = true;
		else if (!strcmp(argv[i], "--mdwe"))
			mdwe = true;
	}
	if (!allow || i + 1 >= argc) {
		fprintf(stderr, "usage: seccomp-exec --allow N,N,... [--af-unix] [--mdwe] -- COMMAND...\n");
		return 125;
	}
	put((struct sock_filter)LOAD(offsetof(struct seccomp_data, arch)));
	put((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_ARCH, 1, 0));
	put((struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS));
	put((struct sock_filter)LOAD(offsetof(struct seccomp_data, nr)));
#ifdef __x86_64__
	put((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1));	/* x32 */
	put((struct sock_filter)RET(SECCOMP_RET_KILL_PROCESS));
#endif
	if (mdwe) {
		refuse_if(SYS_mmap, 2, PROT_WRITE | PROT_EXEC, EPERM);
		refuse_if(SYS_mprotect, 2, PROT_EXEC, EPERM);
		refuse_if(SYS_pkey_mprotect, 2, PROT_EXEC, EPERM);
	}
	if (af_unix) {
		/* socket(family != AF_UNIX): EAFNOSUPPORT; AF_UNIX goes on to the list. */
		put((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4));
		put((struct sock_filter)LOAD(ARG(0)));
		put((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 1, 0));
		put((struct sock_filter)RET(SECCOMP_RET_ERRNO | EAFNOSUPPORT));
		put((struct sock_filter)LOAD(offsetof(struct seccomp_data, nr)));
	}
	for (char *save = NULL, *t = strtok_r(allow, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		put((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)atoi(t), 0, 1));
		put((struct sock_filter)RET(SECCOMP_RET_ALLOW));
	}
	put((struct sock_filter)RET(SECCOMP_RET_ERRNO | EPERM));

	struct sock_fprog fp = { .len = (unsigned short)len, .filter = prog };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) < 0) {
		perror("seccomp-exec: the filter");
		return 125;
	}
	execvp(argv[i + 1], argv + i + 1);
	perror("seccomp-exec: exec");
	return 127;
}
