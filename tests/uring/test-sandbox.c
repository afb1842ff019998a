/* SPDX-License-Identifier: MIT */
/*
 * io_uring forbidden: a job's events arrive through its eventfd, with the
 * same user_data and res, and its report says so.
 *  (a) a seccomp filter denies io_uring_setup, _enter and _register from the
 *      start (as container runtimes do); then kernel.io_uring_disabled=2
 *      (root; restored after);
 *  (b) a sandbox applied late: the caller made its ring, then setup and
 *      register are denied: the library can neither make a ring nor send
 *      ringless, so it falls back, and the caller still waits on its ring
 *      (a POLL_ADD on the eventfd: io_uring_enter is allowed);
 *  (c) one path denied, the other used: register denied (private ring),
 *      setup denied (the ringless send, 6.13+).
 * Each case runs in a child (a filter cannot be removed); the child prints
 * its TAP lines and hands its counts back through a pipe.
 */
#include <liburing.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <prealloc.h>

#include "tap.h"
#include "seccomp.h"

#define UD_END UINT64_C(0x5afe0000000000e1)
#define UD_NODE UINT64_C(0x5afe0000000000d2)
#define UD_EFD UINT64_C(0x5afe0000000000f3)

static const bool lib_uring = LIB_HAS_URING;

static const char *path_name(int p)
{
	return p == PREALLOC_NOTIFY_URING_REGISTERED	 ? "registered"
	       : p == PREALLOC_NOTIFY_URING_PRIVATE_RING ? "private ring"
							 : "eventfd";
}

static bool kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;

	uname(&u);
	sscanf(u.release, "%d.%d", &a, &b);
	return a > maj || (a == maj && b >= min);
}

/* Runs fn in a child; its TAP lines count as ours. */
static void in_child(void (*fn)(void *), void *arg)
{
	unsigned int counts[2];
	int p[2], status;
	pid_t pid;

	fflush(stdout);
	if (pipe(p) < 0 || (pid = fork()) < 0) {
		tap_ok(0, "fork");
		return;
	}
	if (pid == 0) {
		close(p[0]);
		fn(arg);
		counts[0] = tap_count;
		counts[1] = tap_failed;
		fflush(stdout);
		_exit(write(p[1], counts, sizeof(counts)) == sizeof(counts) ? 0 : 1);
	}
	close(p[1]);
	if (read(p[0], counts, sizeof(counts)) == sizeof(counts)) {
		tap_count = counts[0];
		tap_failed = counts[1];
	} else {
		tap_ok(0, "the child died before reporting");
	}
	close(p[0]);
	waitpid(pid, &status, 0);
}

/*
 * One job with a completion on ring_fd (-1: none), waited for the way a
 * VMM would: on its ring when it has one (the eventfd polled through it
 * when the job's path is the eventfd), else poll(2). Checks the path, the
 * error and the end event.
 */
static void job_check(const char *name, struct io_uring *ring, unsigned int cflags, int want_path,
		      int want_error)
{
	struct prealloc_completion c = {
		.size = sizeof(c), .ring_fd = ring ? ring->ring_fd : -1,
		.flags = cflags | PREALLOC_COMPLETION_NODES,
		.user_data_end = UD_END, .user_data_node = UD_NODE,
	};
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_ANON,
					   .length = 32 << 20 };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .threads = 2, .completion = &c };
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct prealloc_region *reg = NULL;
	struct prealloc_job *job = NULL;
	struct prealloc_ctx *ctx = NULL;
	int end_res = 1, ends = 0, path, r;
	struct __kernel_timespec ts = { .tv_sec = 10 };	/* a lost end fails, not hangs */
	bool ring_usable = true;
	uint64_t ud, count;

	prealloc_ctx_new(&ctx);
	prealloc_region_new(ctx, &ro, &reg);
	r = prealloc_job_start(reg, &jo, &job);
	if (!tap_ok(r == 0, "%s: job started (%d)", name, r))
		goto out;
	path = prealloc_job_notify(job);
	tap_ok(path == want_path, "%s: path %s (got %s)", name, path_name(want_path),
	       path_name(path));
	while (ends == 0) {
		if (ring && path != PREALLOC_NOTIFY_EVENTFD) {
			struct io_uring_cqe *cqe;

			if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) < 0)
				break;
			if (cqe->user_data == UD_END) {
				ends++;
				end_res = cqe->res;
			}
			io_uring_cqe_seen(ring, cqe);
			continue;
		}
		if (ring && ring_usable) {
			/* The caller's loop stays on its ring: the eventfd is one more poll there. */
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			struct io_uring_cqe *cqe;

			io_uring_prep_poll_add(sqe, prealloc_job_eventfd(job), POLLIN);
			sqe->user_data = UD_EFD;
			if (io_uring_submit(ring) < 0) {
				ring_usable = false;	/* io_uring_enter denied too: poll(2) */
				continue;
			}
			if (io_uring_wait_cqe_timeout(ring, &cqe, &ts) < 0)
				break;
			io_uring_cqe_seen(ring, cqe);
		} else {
			struct pollfd pfd = { .fd = prealloc_job_eventfd(job), .events = POLLIN };

			if (poll(&pfd, 1, 10000) != 1)
				break;
		}
		if (read(prealloc_job_eventfd(job), &count, sizeof(count)) < 0)
			continue;
		while (prealloc_job_event(job, &ud, &r) == 1)
			if (ud == UD_END) {
				ends++;
				end_res = r;
			}
	}
	r = prealloc_job_wait(job);
	prealloc_job_report(job, &rep);
	tap_ok(ends == 1 && end_res == 0 && r == 0, "%s: the end arrived once, res 0 (%d)", name,
	       end_res);
	tap_ok(rep.notify == want_path && rep.notify_error == want_error,
	       "%s: report says %s, error %d (got %s, %d)", name, path_name(want_path), want_error,
	       path_name(rep.notify), rep.notify_error);
out:
	prealloc_job_free(job);
	prealloc_region_free(reg);
	prealloc_ctx_free(ctx);
}

/* What the library says when it cannot use io_uring for a reason it proved. */
static int why(int err)
{
	return lib_uring ? err : -EOPNOTSUPP;
}

static int best_path(void)
{
	if (!lib_uring)
		return PREALLOC_NOTIFY_EVENTFD;
	return kernel_at_least(6, 13) ? PREALLOC_NOTIFY_URING_REGISTERED
				      : PREALLOC_NOTIFY_URING_PRIVATE_RING;
}

/* (a) denied from the start: the caller has no ring; one inherited from the parent is useless. */
static void from_start(void *inherited)
{
	struct io_uring ring;
	int r;

	r = deny_io_uring(DENY_ALL);
	if (!tap_ok(r == 0, "(a) seccomp filter installed (%d)", r))
		return;
	r = io_uring_queue_init(4, &ring, 0);
	tap_ok(r == -EPERM, "(a) the caller's io_uring_setup fails with EPERM (got %d)", r);
	job_check("(a) seccomp, no ring", NULL, 0, PREALLOC_NOTIFY_EVENTFD, 0);
	job_check("(a) seccomp, inherited ring", inherited, 0, PREALLOC_NOTIFY_EVENTFD,
		  why(-EPERM));
}

/* (b) the caller made its ring, then setup and register are denied. */
static void late(void *unused)
{
	struct io_uring ring;
	int r;

	(void)unused;
	io_uring_queue_init(8, &ring, 0);
	r = deny_io_uring(DENY_SETUP | DENY_REGISTER);
	if (!tap_ok(r == 0, "(b) late seccomp filter installed (%d)", r))
		return;
	job_check("(b) late sandbox", &ring, 0, PREALLOC_NOTIFY_EVENTFD, why(-EPERM));
	io_uring_queue_exit(&ring);
}

/* (c) register denied: the private ring; setup denied: the ringless send. */
static void one_path(void *arg)
{
	unsigned int deny = (unsigned int)(uintptr_t)arg;
	struct io_uring ring;
	int want;

	io_uring_queue_init(8, &ring, 0);
	deny_io_uring(deny);
	if (deny == DENY_REGISTER) {
		want = lib_uring ? PREALLOC_NOTIFY_URING_PRIVATE_RING : PREALLOC_NOTIFY_EVENTFD;
		job_check("(c) register denied", &ring, 0, want, lib_uring ? 0 : -EOPNOTSUPP);
	} else if (kernel_at_least(6, 13) || !lib_uring) {
		want = lib_uring ? PREALLOC_NOTIFY_URING_REGISTERED : PREALLOC_NOTIFY_EVENTFD;
		job_check("(c) setup denied", &ring, 0, want, lib_uring ? 0 : -EOPNOTSUPP);
	} else {
		tap_skip("(c) setup denied: kernel before 6.13 has no ringless send");
	}
	io_uring_queue_exit(&ring);
}

/* (a) kernel.io_uring_disabled=2: no new rings for anyone, root included. */
static void sysctl_disabled(void *pre)
{
	struct io_uring ring;
	int r;

	r = io_uring_queue_init(4, &ring, 0);
	tap_ok(r == -EPERM, "(a) sysctl: io_uring_setup fails with EPERM (got %d)", r);
	job_check("(a) sysctl, no ring", NULL, 0, PREALLOC_NOTIFY_EVENTFD, 0);
	/* A ring made before the flip: no private ring; the ringless send is not gated by it. */
	job_check("(a) sysctl, earlier ring, private ring only", pre,
		  PREALLOC_COMPLETION_NO_REGISTERED, PREALLOC_NOTIFY_EVENTFD, why(-EPERM));
	job_check("(a) sysctl, earlier ring, default", pre, 0, best_path() ==
		  PREALLOC_NOTIFY_URING_REGISTERED ? PREALLOC_NOTIFY_URING_REGISTERED :
		  PREALLOC_NOTIFY_EVENTFD, best_path() == PREALLOC_NOTIFY_URING_REGISTERED ?
		  0 : why(-EPERM));
}

static int sysctl_write(const char *path, const char *value)
{
	FILE *f = fopen(path, "we");
	int r;

	if (!f)
		return -errno;
	r = fputs(value, f) < 0 ? -EIO : 0;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}

static void case_sysctl(void)
{
	static const char path[] = "/proc/sys/kernel/io_uring_disabled";
	char old[16] = "";
	struct io_uring ring;
	FILE *f = fopen(path, "re");

	if (!f) {
		tap_skip("(a) sysctl: %s does not exist on this kernel (added in 6.6)", path);
		return;
	}
	if (!fgets(old, sizeof(old), f))
		old[0] = '\0';
	fclose(f);
	if (geteuid() != 0) {
		tap_skip("(a) sysctl: not root, cannot set kernel.io_uring_disabled");
		return;
	}
	io_uring_queue_init(8, &ring, 0);
	if (!tap_ok(sysctl_write(path, "2") == 0, "(a) sysctl: kernel.io_uring_disabled=2 (was %.1s)",
		    old))
		return;
	in_child(sysctl_disabled, &ring);
	tap_ok(sysctl_write(path, old) == 0, "(a) sysctl: kernel.io_uring_disabled restored to %.1s",
	       old);
	io_uring_queue_exit(&ring);
}

int main(void)
{
	struct io_uring ring;

	/* The inherited ring: made by the parent before the child's filter. */
	if (io_uring_queue_init(8, &ring, 0) < 0) {
		return tap_skip_all("io_uring_setup fails before any filter: no io_uring here");
	}
	in_child(from_start, &ring);
	in_child(late, NULL);
	in_child(one_path, (void *)(uintptr_t)DENY_REGISTER);
	in_child(one_path, (void *)(uintptr_t)DENY_SETUP);
	case_sysctl();
	io_uring_queue_exit(&ring);
	return tap_done();
}
