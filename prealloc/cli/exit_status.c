/* SPDX-License-Identifier: MIT */
/*
 * The exit status of each failure the library names: its step, the
 * admission's reason, the errno (docs/prealloc.1.md, "Exit status"). Pure
 * functions, apart from the messages the commands print, so that a unit
 * test holds every step and reason to the manual's table, including those
 * only a fake sysfs reaches (a page size with no pool at all).
 */
#include <errno.h>

#include "cli.h"

int admission_exit_status(int reason, int err)
{
	switch (reason) {
	case PREALLOC_ADMIT_POOL:
		/* No pool of the size on this kernel is the environment's; a short one, memory. */
		return err == -EOPNOTSUPP ? EXIT_ENVIRONMENT : EXIT_NO_MEMORY;
	case PREALLOC_ADMIT_GLOBAL:
	case PREALLOC_ADMIT_CGROUP:
	case PREALLOC_ADMIT_MEMORY:
	case PREALLOC_ADMIT_MEMCG:
	case PREALLOC_ADMIT_FS:
	case PREALLOC_ADMIT_GROW:
	case PREALLOC_ADMIT_CAPACITY:
		return EXIT_NO_MEMORY;
	case PREALLOC_ADMIT_LOCK:
	case PREALLOC_ADMIT_ACCESS:
		return EXIT_ENVIRONMENT;
	default:
		return EXIT_FAILURE_RUN;
	}
}

int prepare_exit_status(int step, int admit_reason, int err)
{
	switch (step) {
	case PREALLOC_STEP_REQUEST:
		return err == -ENODEV || err == -EINVAL || err == -EOVERFLOW ? EXIT_USAGE
									   : EXIT_FAILURE_RUN;
	case PREALLOC_STEP_LOCATION:
		return err == -ENAMETOOLONG ? EXIT_USAGE : EXIT_ENVIRONMENT;
	case PREALLOC_STEP_ADMISSION:
		return admission_exit_status(admit_reason, err);
	case PREALLOC_STEP_RECORD:
		return EXIT_ENVIRONMENT;
	case PREALLOC_STEP_CREATE:
		switch (err) {
		case -ENOSPC:
		case -ENOMEM:
			return EXIT_NO_MEMORY;
		case -ENODEV:
			return EXIT_USAGE;
		case -EMEDIUMTYPE:
		case -EEXIST:
		case -EACCES:
		case -EPERM:
		case -ENOENT:
		case -EROFS:
			return EXIT_ENVIRONMENT;
		default:
			return EXIT_FAILURE_RUN;
		}
	case PREALLOC_STEP_POPULATE:
		return err == -EFAULT || err == -ENOMEM ? EXIT_NO_MEMORY : EXIT_FAILURE_RUN;
	case PREALLOC_STEP_VERIFY:
		return EXIT_VERIFY;
	case PREALLOC_STEP_COMMIT:
		/* The store (corrupt, locked, not writable) or the name taken: the environment's. */
		return err == -EBADMSG || err == -ETIMEDOUT || err == -EACCES || err == -EPERM ||
				       err == -EEXIST || err == -ENOSPC || err == -EROFS
			       ? EXIT_ENVIRONMENT
			       : EXIT_FAILURE_RUN;
	default:
		return EXIT_FAILURE_RUN;
	}
}

int clear_exit_status(int step, int err)
{
	switch (step) {
	case PREALLOC_CLEAR_STEP_KERNEL:
		return err == -ENOENT ? EXIT_USAGE : EXIT_ENVIRONMENT;
	case PREALLOC_CLEAR_STEP_LOOKUP:
		return err == -ENOENT || err == -ENOTDIR ? EXIT_USAGE : EXIT_ENVIRONMENT;
	case PREALLOC_CLEAR_STEP_SYMLINK:
	case PREALLOC_CLEAR_STEP_TYPE:
	case PREALLOC_CLEAR_STEP_FILESYSTEM:
	case PREALLOC_CLEAR_STEP_MAPPERS:
		return EXIT_ENVIRONMENT;
	case PREALLOC_CLEAR_STEP_OPEN:
	case PREALLOC_CLEAR_STEP_MAP:
		return err == -ENOMEM ? EXIT_NO_MEMORY
		       : err == -EACCES || err == -EPERM || err == -ELOOP || err == -ESTALE ||
				       err == -ENOENT
			       ? EXIT_ENVIRONMENT
			       : EXIT_FAILURE_RUN;
	case PREALLOC_CLEAR_STEP_START:
		return err == -EOPNOTSUPP ? EXIT_ENVIRONMENT : EXIT_FAILURE_RUN;
	default:
		/* Once the workers ran: --verify's verdict, or a failed run (a shrunk file too). */
		return err == -EBADMSG ? EXIT_VERIFY : EXIT_FAILURE_RUN;
	}
}

/* A failed `prealloc qemu` before QEMU ran: its claim, pre-fault or warm take. */
int qemu_exit_status(int err)
{
	switch (err) {
	case -ENOMEM:
	case -EDQUOT:
	case -ENOSPC:
		return EXIT_NO_MEMORY;
	case -EEXIST:
	case -EXDEV:
	case -ENOENT:
	case -ENOTDIR:
	case -ELOOP:
	case -EACCES:
	case -EPERM:
	case -ETIMEDOUT:
	case -EBADMSG:
		return EXIT_ENVIRONMENT;
	default:
		return EXIT_FAILURE_RUN;
	}
}
