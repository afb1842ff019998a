/* SPDX-License-Identifier: MIT */
/*
 * store_note (state/store_lock.c): a line for the log about a store held
 * under its lock is said only once store_close has dropped the lock (the
 * log callback may call back into the library, which would wait on it);
 * about a store read without the lock, at once. The callback checks the
 * lock itself: it takes it with no wait.
 */
#include <string.h>

#include "state.h"
#include "warm-record.h"
#include "fakeroot.h"
#include "tap.h"

static struct fakeroot fr;
static struct prealloc_ctx *log_ctx;
static unsigned int said, said_free;
static char last[512];

/* The log: each line counted, and whether the store's lock was free then. */
static void on_log(void *userdata, int level, const char *msg)
{
	int fd;

	(void)userdata, (void)level;
	said++;
	snprintf(last, sizeof(last), "%s", msg);
	if (statedir_lock_leaf(log_ctx, "lock", 0, -1, &fd) == 0) {
		said_free++;
		statedir_unlock(fd);
	}
}

int main(void)
{
	struct store s;
	int lock;

	log_ctx = warm_test_ctx(&fr, 1);
	if (!log_ctx)
		return tap_done();
	prealloc_ctx_set_log(log_ctx, on_log, NULL);
	if (tap_ok(store_open(log_ctx, 1000, &s, &lock) == 0, "the store opens, locked")) {
		store_note(log_ctx, &s, PREALLOC_LOG_WARNING, "first %d", 1);
		store_note(log_ctx, &s, PREALLOC_LOG_INFO, "second");
		tap_ok(said == 0, "two notes under the lock: none said yet (%u)", said);
		store_close(&s, lock);
		tap_ok(said == 2 && said_free == 2 && !strcmp(last, "second"),
		       "both said once it is closed, the lock free each time, in order (%u, %u, '%s')",
		       said, said_free, last);
	}
	if (tap_ok(store_load(log_ctx, &s) == 0, "the store read without the lock")) {
		store_note(log_ctx, &s, PREALLOC_LOG_INFO, "at once");
		tap_ok(said == 3 && said_free == 3 && !strcmp(last, "at once"),
		       "a note about it is said at once (%u, '%s')", said, last);
		store_free(&s);
	}
	prealloc_ctx_free(log_ctx);
	fakeroot_remove(&fr);
	return tap_done();
}
