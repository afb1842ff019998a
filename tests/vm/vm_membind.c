/* SPDX-License-Identifier: MIT */
/*
 * vm_membind NODE COMMAND [ARGS...]: run COMMAND under the memory policy
 * bind-to-NODE (with MPOL_F_STATIC_NODES, as `numactl --membind` may set),
 * the way a user confines prealloc with numactl. The guest has no numactl.
 */
#include <errno.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MPOL_F_STATIC_NODES
#define MPOL_F_STATIC_NODES (1 << 15)
#endif

int main(int argc, char **argv)
{
	unsigned long mask[16] = { 0 };
	int node;

	if (argc < 3) {
		fprintf(stderr, "usage: vm_membind NODE COMMAND [ARGS...]\n");
		return 2;
	}
	node = atoi(argv[1]);
	if (node < 0 || node >= 1024)
		return 2;
	mask[node / 64] |= 1UL << (node % 64);
	if (set_mempolicy(MPOL_BIND | MPOL_F_STATIC_NODES, mask, 1025) < 0) {
		fprintf(stderr, "vm_membind: set_mempolicy: %s\n", strerror(errno));
		return 2;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "vm_membind: %s: %s\n", argv[2], strerror(errno));
	return 127;
}
