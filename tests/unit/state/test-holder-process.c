/* SPDX-License-Identifier: MIT */
/*
 * prealloc_holder_process (owners.c) over a fake procfs (fakeroot.h): the
 * name "PREFIX:PID:START" and the check path <proc>/PID of a process (pid
 * 0: the caller), which owner_alive finds alive while that process runs
 * and gone once another process has its pid (another start time), the
 * check path still there; and its refusals: no such process, buffers or
 * the record's 255 bytes too short, NULL arguments.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "state.h"
#include "warm-record.h"

int main(void)
{
	int pid = (int)getpid() + 100021;
	char name[256], check[400], want[400], prefix[260];
	struct prealloc_ctx *ctx;
	struct fakeroot fr;
	struct rec_owner o;
	int r;

	ctx = warm_test_ctx(&fr, 1);
	if (!ctx)
		return tap_done();
	fr_set_process(&fr, pid, 777);
	r = prealloc_holder_process(ctx, "qemu", pid, name, sizeof(name), check, sizeof(check));
	snprintf(want, sizeof(want), "qemu:%d:777", pid);
	tap_ok(r == 0 && !strcmp(name, want), "process %d started at 777: %s (r %d)", pid, name, r);
	snprintf(want, sizeof(want), "%s/%d", fr.proc, pid);
	tap_ok(r == 0 && !strcmp(check, want), "... its check path %s", check);
	owner_holder(&o, name, check, 0);
	tap_ok(owner_alive(ctx, &o), "... alive while that process runs");
	fr_set_process(&fr, pid, 778);
	tap_ok(!owner_alive(ctx, &o), "... gone once its pid is another process's (778)");

	r = prealloc_holder_process(ctx, "qemu", 0, name, sizeof(name), check, sizeof(check));
	snprintf(want, sizeof(want), "qemu:%d:1000", (int)getpid());
	tap_ok(r == 0 && !strcmp(name, want), "pid 0: the caller, %s (r %d)", name, r);
	tap_ok(prealloc_holder_process(ctx, "qemu", pid + 1, name, sizeof(name), check,
				       sizeof(check)) == -ESRCH, "no such process: -ESRCH");
	tap_ok(prealloc_holder_process(ctx, "qemu", pid, name, 8, check, sizeof(check)) ==
		       -ENAMETOOLONG &&
		       prealloc_holder_process(ctx, "qemu", pid, name, sizeof(name), check, 8) ==
			       -ENAMETOOLONG,
	       "a buffer too short for the name or the check: -ENAMETOOLONG");
	memset(prefix, 'p', 250);
	prefix[250] = '\0';
	tap_ok(prealloc_holder_process(ctx, prefix, pid, name, sizeof(name), check,
				       sizeof(check)) == -ENAMETOOLONG,
	       "a name past the record's 255 bytes: -ENAMETOOLONG");
	tap_ok(prealloc_holder_process(NULL, "q", 0, name, 9, check, 9) == -EINVAL &&
		       prealloc_holder_process(ctx, NULL, 0, name, 9, check, 9) == -EINVAL &&
		       prealloc_holder_process(ctx, "q", -1, name, 9, check, 9) == -EINVAL &&
		       prealloc_holder_process(ctx, "q", 0, NULL, 9, check, 9) == -EINVAL &&
		       prealloc_holder_process(ctx, "q", 0, name, 9, NULL, 9) == -EINVAL,
	       "NULL ctx, prefix or buffer, a negative pid: -EINVAL");
	prealloc_ctx_free(ctx);
	return tap_done();
}
