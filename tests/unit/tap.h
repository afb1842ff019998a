/* SPDX-License-Identifier: MIT */
/* A few lines of TAP for test programs: ok/not ok per case, plan at the end. */
#ifndef PREALLOC_TAP_H
#define PREALLOC_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned int tap_count, tap_failed;

__attribute__((format(printf, 2, 3))) static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %u - ", cond ? "" : "not ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	return cond;
}

__attribute__((format(printf, 1, 2))) static inline void tap_skip(const char *fmt, ...)
{
	va_list ap;

	printf("ok %u # SKIP ", ++tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/*
 * The whole program skipped, for a cause it proved: TAP's own plan with a
 * SKIP directive, and exit 0. (Under meson's protocol 'tap' an exit of 77
 * is an error, not a skip.) Returns what main() returns.
 */
__attribute__((format(printf, 1, 2))) static inline int tap_skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return EXIT_SUCCESS;
}

static inline int tap_done(void)
{
	printf("1..%u\n", tap_count);
	return tap_failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
