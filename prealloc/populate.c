/* SPDX-License-Identifier: MIT */
/*
 * Populate: first fault-in of a chunk. MADV_POPULATE_WRITE (Linux 5.14+)
 * faults every page writable and reports exhaustion as an error; where the
 * kernel lacks it, one store per page under a SIGBUS guard does the same.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static __thread sigjmp_buf *touch_jmp;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int guard_users;
static struct sigaction guard_prev;

static void touch_sigbus(int sig, siginfo_t *info, void *uctx)
{
	if (touch_jmp)
		siglongjmp(*touch_jmp, 1);
	/* Not ours: hand it to whoever had it before. */
	if (guard_prev.sa_flags & SA_SIGINFO) {
		guard_prev.sa_sigaction(sig, info, uctx);
		return;
	}
	if (guard_prev.sa_handler != SIG_IGN && guard_prev.sa_handler != SIG_DFL) {
		guard_prev.sa_handler(sig);
		return;
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

int touch_guard_install(void)
{
	struct sigaction sa = { .sa_sigaction = touch_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER };
	int r = 0;

	pthread_mutex_lock(&guard_lock);
	if (guard_users++ == 0 && sigaction(SIGBUS, &sa, &guard_prev) < 0) {
		guard_users--;
		r = -errno;
	}
	pthread_mutex_unlock(&guard_lock);
	return r;
}

/*
 * The last user puts back the handler found at install, but only if ours is
 * still the one installed: a VMM that set its own SIGBUS handler while a
 * job ran keeps it (and ours, left behind nowhere, is simply forgotten).
 */
void touch_guard_remove(void)
{
	struct sigaction cur;

	pthread_mutex_lock(&guard_lock);
	if (guard_users && --guard_users == 0 && sigaction(SIGBUS, NULL, &cur) == 0 &&
	    (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == touch_sigbus)
		sigaction(SIGBUS, &guard_prev, NULL);
	pthread_mutex_unlock(&guard_lock);
}

/* One store per page; a SIGBUS (pool exhausted, poison) becomes -EFAULT. */
static int touch_chunk(uint8_t *addr, uint64_t len, uint64_t page_size)
{
	sigjmp_buf jmp;
	volatile uint64_t off = 0;

	if (sigsetjmp(jmp, 1)) {
		touch_jmp = NULL;
		return -EFAULT;
	}
	touch_jmp = &jmp;
	/* A read-modify-write of one byte keeps data that is already there. */
	for (; off < len; off += page_size) {
		volatile uint8_t *p = addr + off;

		__atomic_fetch_add(p, 0, __ATOMIC_RELAXED);
	}
	touch_jmp = NULL;
	return 0;
}

int populate_chunk(uint8_t *addr, uint64_t len, uint64_t page_size, bool touch)
{
	if (!touch) {
		for (;;) {
			if (madvise(addr, len, MADV_POPULATE_WRITE) == 0)
				return 0;
			/* Interrupted by a signal: pages done so far stay done. */
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
	}
	return touch_chunk(addr, len, page_size);
}
