/* SPDX-License-Identifier: MIT */
/*
 * Populate: first fault-in of a chunk. MADV_POPULATE_WRITE (Linux 5.14+)
 * faults every page writable and reports exhaustion as an error; where the
 * kernel lacks it, one store per page under the SIGBUS guard does the same.
 *
 * The SIGBUS guard is here too: what any worker runs over memory that can
 * fault with SIGBUS (the touch fallback, a clear and the zero check over a
 * file whose owner may truncate it) runs through sigbus_guarded(), and a
 * SIGBUS in there becomes that call's error instead of the process's end.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

#include "memory.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* One guarded call on a thread's stack; outer is the call it runs inside, if any. */
struct sigbus_guard {
	sigjmp_buf jmp;
	uintptr_t lo, hi;		/* the range the call touches */
	uintptr_t fault;		/* the address that faulted */
	int code;			/* its si_code */
	struct sigbus_guard *outer;
};

static __thread struct sigbus_guard *guard_cur;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int guard_users;
static struct sigaction guard_prev;

/*
 * Ours: a fault the kernel raised (not kill(2), not an asynchronous
 * BUS_MCEERR_AO about a page elsewhere) at an address that a guarded call
 * on this thread touches: the innermost call whose range holds it returns.
 * Everything else goes to whoever had SIGBUS before.
 */
static void guard_sigbus(int sig, siginfo_t *info, void *uctx)
{
	uintptr_t addr = (uintptr_t)info->si_addr;
	bool fault = info->si_code > 0 && info->si_code != BUS_MCEERR_AO;

	for (struct sigbus_guard *g = guard_cur; fault && g; g = g->outer) {
		if (addr < g->lo || addr >= g->hi)
			continue;
		g->fault = addr;
		g->code = info->si_code;
		siglongjmp(g->jmp, 1);
	}
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

int sigbus_guard_install(void)
{
	struct sigaction sa = { .sa_sigaction = guard_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER };
	int r = 0;

	pthread_mutex_lock(&guard_lock);
	if (guard_users == 0 && sigaction(SIGBUS, &sa, &guard_prev) < 0)
		r = -errno;
	else
		__atomic_add_fetch(&guard_users, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&guard_lock);
	return r;
}

/*
 * The last user puts back the handler found at install, but only if ours is
 * still the one installed: a VMM that set its own SIGBUS handler while a
 * job ran keeps it (and ours, left behind nowhere, is simply forgotten).
 */
void sigbus_guard_remove(void)
{
	struct sigaction cur;

	pthread_mutex_lock(&guard_lock);
	if (guard_users && __atomic_sub_fetch(&guard_users, 1, __ATOMIC_RELEASE) == 0 &&
	    sigaction(SIGBUS, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == guard_sigbus)
		sigaction(SIGBUS, &guard_prev, NULL);
	pthread_mutex_unlock(&guard_lock);
}

int sigbus_guarded(const void *addr, uint64_t len, int (*fn)(void *arg), void *arg,
		   uint64_t *ret_fault)
{
	struct sigbus_guard g = { .lo = (uintptr_t)addr, .hi = (uintptr_t)addr + len };
	int r;

	/* No handler of ours anywhere: a SIGBUS would not reach g anyway. */
	if (!__atomic_load_n(&guard_users, __ATOMIC_ACQUIRE))
		return fn(arg);
	g.outer = guard_cur;
	if (sigsetjmp(g.jmp, 1)) {
		guard_cur = g.outer;
		if (ret_fault)
			*ret_fault = g.fault - g.lo;
		/* A memory error, as MADV_POPULATE_WRITE says it; else a page that is gone. */
		return g.code == BUS_MCEERR_AR ? -EHWPOISON : -EFAULT;
	}
	guard_cur = &g;
	r = fn(arg);
	guard_cur = g.outer;
	return r;
}

struct touch_args {
	uint8_t *addr;
	uint64_t len, step;
};

/* One store per page; a read-modify-write of one byte keeps data that is already there. */
static int touch_pages(void *arg)
{
	const struct touch_args *t = arg;

	for (uint64_t off = 0; off < t->len; off += t->step) {
		volatile uint8_t *p = t->addr + off;

		__atomic_fetch_add(p, 0, __ATOMIC_RELAXED);
	}
	return 0;
}

int populate_chunk(uint8_t *addr, uint64_t len, uint64_t page_size, bool touch)
{
	struct touch_args t = { addr, len, page_size };

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
	/* A SIGBUS (pool exhausted, poison) becomes -EFAULT or -EHWPOISON. */
	return sigbus_guarded(addr, len, touch_pages, &t, NULL);
}
