/* SPDX-License-Identifier: MIT */
/*
 * vm_as_user UID MEMLOCK_BYTES CMD [ARG...]: run CMD as UID (group UID,
 * no supplementary groups, so no capabilities) with RLIMIT_MEMLOCK set to
 * MEMLOCK_BYTES: the rig's guest runs as root, the memlock check needs a
 * caller without CAP_IPC_LOCK.
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rlimit rl;
	uid_t uid;

	if (argc < 4) {
		fprintf(stderr, "usage: %s UID MEMLOCK_BYTES CMD [ARG...]\n", argv[0]);
		return 127;
	}
	uid = (uid_t)strtoul(argv[1], NULL, 10);
	rl.rlim_cur = rl.rlim_max = strtoull(argv[2], NULL, 0);
	if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0 || setgroups(0, NULL) < 0 || setgid(uid) < 0 ||
	    setuid(uid) < 0) {
		perror("vm_as_user");
		return 127;
	}
	execvp(argv[3], argv + 3);
	perror(argv[3]);
	return 127;
}
