/* SPDX-License-Identifier: MIT */
/*
 * The exit status of every step and reason the library names, against
 * docs/prealloc.1.md's table: 1 a run that failed, 2 bad input, 3 not
 * enough memory, 4 the environment, 5 --verify's verdict. Some rows are
 * reached only through a fake sysfs (a page size with no pool at all:
 * admission's POOL with -EOPNOTSUPP), which the CLI cannot be given, so
 * the mapping is held here as a table.
 */
#include <errno.h>

#include "cli.h"
#include "tap.h"

struct row {
	int step;	/* enum prealloc_step, or enum prealloc_clear_file_step */
	int reason;	/* enum prealloc_admit_reason (prepare's ADMISSION) */
	int err;
	int want;
	const char *why; /* the manual's words */
};

/* `prealloc` (create): the prepare flow's step, admission's reason, the errno. */
static const struct row prepare_rows[] = {
	{ PREALLOC_STEP_NONE, 0, -EIO, 1, "no step named: a run that failed" },
	{ PREALLOC_STEP_REQUEST, 0, -ENODEV, 2, "unknown or offline node, node without memory" },
	{ PREALLOC_STEP_REQUEST, 0, -EINVAL, 2, "size not a multiple of the page size" },
	{ PREALLOC_STEP_REQUEST, 0, -EOVERFLOW, 2, "overflowing size" },
	{ PREALLOC_STEP_REQUEST, 0, -ENOMEM, 1, "the request could not be built" },
	{ PREALLOC_STEP_LOCATION, 0, -ENAMETOOLONG, 2, "a --file name too long" },
	{ PREALLOC_STEP_LOCATION, 0, -EOPNOTSUPP, 4, "no hugetlbfs mounted for the page size" },
	{ PREALLOC_STEP_LOCATION, 0, -EMEDIUMTYPE, 4, "a path on the wrong filesystem" },
	{ PREALLOC_STEP_LOCATION, 0, -EEXIST, 4, "an existing file without --reuse" },
	{ PREALLOC_STEP_LOCATION, 0, -ELOOP, 4, "a symbolic link" },
	{ PREALLOC_STEP_LOCATION, 0, -EBUSY, 4, "--reuse of a file another process maps" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_POOL, -ENOMEM, 3,
	  "a node short of free hugepages" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_POOL, -EOPNOTSUPP, 4,
	  "no pool of the page size at all (environment, not memory)" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_GLOBAL, -ENOMEM, 3,
	  "system-wide free hugepages less promised ones" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_CGROUP, -EDQUOT, 3,
	  "the hugetlb cgroup limit too low" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_MEMORY, -ENOMEM, 3,
	  "4k/thp: free memory less other runs' promises" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_GROW, -ENOMEM, 3,
	  "--grow-pools could not grow a node's pool" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_LOCK, -ETIMEDOUT, 4,
	  "the lock not obtained in time" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_ACCESS, -EACCES, 4,
	  "a pool or the record store not writable" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_ACCESS, -EBADMSG, 4, "a corrupt record store" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_MEMCG, -ENOMEM, 3,
	  "the memory cgroup limit too low" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_FS, -ENOSPC, 3,
	  "a tmpfs or hugetlbfs size= too small" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_CAPACITY, -ENOMEM, 3,
	  "a --grow-pools more than the node could supply" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_CANCELED, -ECANCELED, 1,
	  "cancelled without a signal seen (a signal exits 128 + it, before this)" },
	{ PREALLOC_STEP_ADMISSION, PREALLOC_ADMIT_OK, -EINVAL, 1, "admission failed, no reason" },
	{ PREALLOC_STEP_RECORD, 0, -EACCES, 4, "the record store not writable" },
	{ PREALLOC_STEP_RECORD, 0, -EBADMSG, 4, "a corrupt record store" },
	{ PREALLOC_STEP_CREATE, 0, -ENOSPC, 3, "a filesystem too small for the file" },
	{ PREALLOC_STEP_CREATE, 0, -ENOMEM, 3, "no memory for the file" },
	{ PREALLOC_STEP_CREATE, 0, -ENODEV, 2, "a node without memory" },
	{ PREALLOC_STEP_CREATE, 0, -EMEDIUMTYPE, 4, "the wrong filesystem" },
	{ PREALLOC_STEP_CREATE, 0, -EEXIST, 4, "an existing file" },
	{ PREALLOC_STEP_CREATE, 0, -EACCES, 4, "a directory not writable" },
	{ PREALLOC_STEP_CREATE, 0, -EPERM, 4, "not permitted" },
	{ PREALLOC_STEP_CREATE, 0, -ENOENT, 4, "a file that vanished" },
	{ PREALLOC_STEP_CREATE, 0, -EROFS, 4, "a read-only filesystem" },
	{ PREALLOC_STEP_CREATE, 0, -EIO, 1, "anything else" },
	{ PREALLOC_STEP_POPULATE, 0, -EFAULT, 3, "a node ran out while populating" },
	{ PREALLOC_STEP_POPULATE, 0, -ENOMEM, 3, "a node ran out while populating" },
	{ PREALLOC_STEP_POPULATE, 0, -EHWPOISON, 1, "a poisoned page" },
	{ PREALLOC_STEP_POPULATE, 0, -EAGAIN, 1, "workers that could not start" },
	{ PREALLOC_STEP_VERIFY, 0, -EBADMSG, 5, "--verify found a non-zero byte" },
	{ PREALLOC_STEP_VERIFY, 0, -EXDEV, 5, "--verify found a page off its node" },
	{ PREALLOC_STEP_COMMIT, 0, -EBADMSG, 4, "a corrupt record store" },
	{ PREALLOC_STEP_COMMIT, 0, -ETIMEDOUT, 4, "the lock not obtained in time" },
	{ PREALLOC_STEP_COMMIT, 0, -EACCES, 4, "the record store not writable" },
	{ PREALLOC_STEP_COMMIT, 0, -EPERM, 4, "the record store not writable" },
	{ PREALLOC_STEP_COMMIT, 0, -EEXIST, 4, "the name taken meanwhile" },
	{ PREALLOC_STEP_COMMIT, 0, -ENOSPC, 4, "the state dir full" },
	{ PREALLOC_STEP_COMMIT, 0, -EROFS, 4, "a read-only filesystem" },
	{ PREALLOC_STEP_COMMIT, 0, -EIO, 1, "anything else" },
};

/* `prealloc clear`: the flow's error_step and the errno. */
static const struct row clear_rows[] = {
	{ PREALLOC_CLEAR_STEP_NONE, 0, -EIO, 1, "no step named: a run that failed" },
	{ PREALLOC_CLEAR_STEP_KERNEL, 0, -ENOENT, 2, "an unknown --method" },
	{ PREALLOC_CLEAR_STEP_KERNEL, 0, -EOPNOTSUPP, 4, "a --method this CPU cannot run" },
	{ PREALLOC_CLEAR_STEP_LOOKUP, 0, -ENOENT, 2, "a missing file" },
	{ PREALLOC_CLEAR_STEP_LOOKUP, 0, -ENOTDIR, 2, "a path through a non-directory" },
	{ PREALLOC_CLEAR_STEP_LOOKUP, 0, -EACCES, 4, "a path the caller may not look up" },
	{ PREALLOC_CLEAR_STEP_SYMLINK, 0, -ELOOP, 4, "a symbolic link, even with --force" },
	{ PREALLOC_CLEAR_STEP_TYPE, 0, -EINVAL, 4, "not a regular file" },
	{ PREALLOC_CLEAR_STEP_FILESYSTEM, 0, -EMEDIUMTYPE, 4, "not on hugetlbfs or tmpfs" },
	{ PREALLOC_CLEAR_STEP_MAPPERS, 0, -EBUSY, 4, "another process maps the file" },
	{ PREALLOC_CLEAR_STEP_MAPPERS, 0, -EACCES, 4, "/proc unreadable" },
	{ PREALLOC_CLEAR_STEP_OPEN, 0, -ESTALE, 4, "another file took its place" },
	{ PREALLOC_CLEAR_STEP_OPEN, 0, -EACCES, 4, "a file the caller may not write" },
	{ PREALLOC_CLEAR_STEP_OPEN, 0, -EPERM, 4, "not permitted" },
	{ PREALLOC_CLEAR_STEP_OPEN, 0, -ELOOP, 4, "a link put at the path" },
	{ PREALLOC_CLEAR_STEP_OPEN, 0, -ENOENT, 4, "a file that vanished after its check" },
	{ PREALLOC_CLEAR_STEP_OPEN, 0, -EIO, 1, "anything else" },
	{ PREALLOC_CLEAR_STEP_MAP, 0, -ENOMEM, 3, "too few hugepages to back its holes" },
	{ PREALLOC_CLEAR_STEP_MAP, 0, -ESTALE, 4, "another file took its place" },
	{ PREALLOC_CLEAR_STEP_MAP, 0, -EINVAL, 1, "anything else" },
	{ PREALLOC_CLEAR_STEP_START, 0, -EOPNOTSUPP, 4, "a kernel not built" },
	{ PREALLOC_CLEAR_STEP_START, 0, -EAGAIN, 1, "workers that could not start" },
	{ PREALLOC_CLEAR_STEP_CLEAR, 0, -EFAULT, 1, "a worker failed (SIGBUS)" },
	{ PREALLOC_CLEAR_STEP_CLEAR, 0, -ENXIO, 1, "the file shrank while it was cleared" },
	{ PREALLOC_CLEAR_STEP_SWAPPED, 0, -EIO, 1, "swapped-out pages could not be cleared" },
	{ PREALLOC_CLEAR_STEP_TAIL, 0, -ENXIO, 1, "the partial last page was cut away" },
	{ PREALLOC_CLEAR_STEP_TAIL, 0, -EIO, 1, "the partial last page could not be written" },
	{ PREALLOC_CLEAR_STEP_SYNC, 0, -EIO, 1, "written back to disk failed" },
	{ PREALLOC_CLEAR_STEP_VERIFY, 0, -EBADMSG, 5, "--verify found a non-zero byte" },
	{ PREALLOC_CLEAR_STEP_VERIFY, 0, -EIO, 1, "the read-back itself failed" },
};

#define NR(a) (sizeof(a) / sizeof((a)[0]))

/* Each value first..last of an enum has a row: a step left out of the table fails. */
static void covers(const struct row *rows, size_t nr, bool by_reason, int first, int last,
		   const char *what)
{
	for (int v = first; v <= last; v++) {
		bool found = false;

		for (size_t i = 0; i < nr && !found; i++)
			found = (by_reason ? rows[i].step == PREALLOC_STEP_ADMISSION &&
						     rows[i].reason == v
					   : rows[i].step == v);
		tap_ok(found, "%s %d has a row", what, v);
	}
}

/* A command whose status follows the errno alone: the errno, the status, the manual's words. */
struct err_row {
	int err, want;
	const char *why;
};

/* warm take (prealloc(1), "warm take"): no pages 3, bad request 2, place 4, else 1. */
static const struct err_row warm_rows[] = {
	{ -ENOENT, 3, "no READY file on the node and mount: nothing touched" },
	{ -EINVAL, 2, "a size that is no whole number of pages, a relative path" },
	{ -EXDEV, 4, "the path on another mount than the warm files" },
	{ -EEXIST, 4, "something already at the path" },
	{ -ENODEV, 4, "a node without memory" },
	{ -ELOOP, 4, "a symbolic link in the path's directory, not followed" },
	{ -ENOTDIR, 4, "a step of the path's directory that is no directory" },
	{ -EPERM, 4, "a step of the path's directory another user's than root or the owner" },
	{ -ETIMEDOUT, 4, "the store's lock" },
	{ -EBADMSG, 4, "a corrupt store" },
	{ -EIO, 1, "the take failed while it ran" },
	{ -ENOMEM, 3, "a partial hit whose growth found no free pages" },
};

/*
 * prealloc qemu before QEMU runs (prealloc(1), "qemu"): no memory 3, the
 * environment 4 (DIR on another filesystem, a file at DIR/ID), else 1.
 */
static const struct err_row qemu_rows[] = {
	{ -ENOMEM, 3, "the claim found no free pages" },
	{ -EDQUOT, 3, "a hugetlb cgroup limit" },
	{ -ENOSPC, 3, "the filesystem is full" },
	{ -EEXIST, 4, "a file already at DIR/ID" },
	{ -EXDEV, 4, "a warm file on another mount than --dir" },
	{ -ENOENT, 4, "--dir does not exist" },
	{ -ENOTDIR, 4, "--dir is no directory" },
	{ -ELOOP, 4, "a link at DIR/ID, or a symbolic link in --dir, not followed" },
	{ -EACCES, 4, "--dir not writable" },
	{ -EPERM, 4, "no permission to grow the pool; a step of --dir another user's" },
	{ -ETIMEDOUT, 4, "the store's lock" },
	{ -EBADMSG, 4, "a corrupt store" },
	{ -EIO, 1, "the pre-fault failed while it ran" },
	{ -EINVAL, 1, "a request the command's checks let through" },
};

/* Each row of cmd's table against status(err). */
static void err_rows(const char *cmd, int (*status)(int), const struct err_row *rows, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		int got = status(rows[i].err);

		tap_ok(got == rows[i].want, "%s: err %d: exit %d, %s (got %d)", cmd, -rows[i].err,
		       rows[i].want, rows[i].why, got);
	}
}

int main(void)
{
	for (size_t i = 0; i < NR(prepare_rows); i++) {
		const struct row *r = &prepare_rows[i];
		int got = prepare_exit_status(r->step, r->reason, r->err);

		tap_ok(got == r->want, "create: step %d reason %d err %d: exit %d, %s (got %d)",
		       r->step, r->reason, -r->err, r->want, r->why, got);
	}
	/* Admission's own mapping, as prepare's ADMISSION step uses it. */
	for (size_t i = 0; i < NR(prepare_rows); i++) {
		const struct row *r = &prepare_rows[i];
		int got;

		if (r->step != PREALLOC_STEP_ADMISSION)
			continue;
		got = admission_exit_status(r->reason, r->err);
		tap_ok(got == r->want, "admission: reason %d err %d: exit %d (got %d)", r->reason,
		       -r->err, r->want, got);
	}
	for (size_t i = 0; i < NR(clear_rows); i++) {
		const struct row *r = &clear_rows[i];
		int got = clear_exit_status(r->step, r->err);

		tap_ok(got == r->want, "clear: step %d err %d: exit %d, %s (got %d)", r->step,
		       -r->err, r->want, r->why, got);
	}
	err_rows("warm take", warm_take_exit_status, warm_rows, NR(warm_rows));
	err_rows("qemu", qemu_exit_status, qemu_rows, NR(qemu_rows));
	covers(prepare_rows, NR(prepare_rows), false, PREALLOC_STEP_NONE, PREALLOC_STEP_COMMIT,
	       "prepare step");
	covers(prepare_rows, NR(prepare_rows), true, PREALLOC_ADMIT_OK, PREALLOC_ADMIT_CANCELED,
	       "admission reason");
	covers(clear_rows, NR(clear_rows), false, PREALLOC_CLEAR_STEP_NONE,
	       PREALLOC_CLEAR_STEP_VERIFY, "clear step");
	return tap_done();
}
