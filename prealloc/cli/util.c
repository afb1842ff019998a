/* SPDX-License-Identifier: MIT */
/* Messages: one line, prefixed with the program name, on stderr. */
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

const char *program_name = "prealloc";

static void vmessage(const char *prefix, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", program_name, prefix);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("error: ", fmt, ap);
	va_end(ap);
}

void cli_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmessage("warning: ", fmt, ap);
	va_end(ap);
}

void cli_log(void *userdata, int level, const char *msg)
{
	(void)userdata;
	if (level <= PREALLOC_LOG_WARNING)
		fprintf(stderr, "%s: %s\n", program_name, msg);
}

double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int read_sysfs_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}
