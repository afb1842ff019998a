/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for tests: pthread_create succeeds PREALLOC_TEST_THREADS
 * times (default 3), then fails with EAGAIN, as it does when a task limit
 * (cgroup pids.max, RLIMIT_NPROC) is reached.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	static atomic_int made;
	const char *env = getenv("PREALLOC_TEST_THREADS");
	int limit = env ? atoi(env) : 3;

	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	if (atomic_fetch_add(&made, 1) >= limit)
		return EAGAIN;
	return real(t, a, fn, arg);
}
