/* SPDX-License-Identifier: MIT */
/*
 * A seccomp filter in raw BPF (no libseccomp): the named io_uring system
 * calls fail with EPERM, as container runtimes' default profiles make them;
 * everything else is allowed. Installed for the calling thread and those it
 * creates afterwards, kept across exec.
 */
#ifndef PREALLOC_TEST_SECCOMP_H
#define PREALLOC_TEST_SECCOMP_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

enum {
	DENY_SETUP = 1u << 0,	 /* io_uring_setup */
	DENY_ENTER = 1u << 1,	 /* io_uring_enter */
	DENY_REGISTER = 1u << 2, /* io_uring_register */
	DENY_ALL = DENY_SETUP | DENY_ENTER | DENY_REGISTER,
};

/* 0, or -errno when the filter could not be installed. */
static inline int deny_io_uring(unsigned int which)
{
	static const int nr[] = { __NR_io_uring_setup, __NR_io_uring_enter,
				  __NR_io_uring_register };
	struct sock_filter f[16];
	unsigned int n = 0;

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	for (unsigned int i = 0; i < 3; i++) {
		if (!(which & (1u << i)))
			continue;
		/* Equal: fall through to the EPERM return; else skip it. */
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr[i],
						      0, 1);
		f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
						      SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
	}
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		return -errno;
	return 0;
}

#endif
