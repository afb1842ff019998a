/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the cgroup parsers admission trusts: a mountinfo
 * line, a /proc/self/cgroup line, a limit file's text and memory.stat.
 * None may crash, read out of bounds or leak; a limit that parses prints
 * back to itself, and what a line yields fits the buffer it was given.
 *
 * The first input byte picks the parser (and, for the line parsers, the
 * controller asked about), so one corpus serves all four.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const controllers[] = { NULL, "memory", "hugetlb", "cpu" };
	const char *controller;
	char *text, out[64], again[32];
	uint64_t v;

	if (size < 1)
		return 0;
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	controller = controllers[(data[0] >> 2) % 4];
	switch (data[0] % 4) {
	case 0:
		/* A small buffer on purpose: a long mount point must be refused, never overrun. */
		if (cgroup_mountinfo_line(text, controller, out, sizeof(out)) > 0 &&
		    strlen(out) >= sizeof(out))
			abort();
		break;
	case 1:
		if (cgroup_self_line(text, controller, out, sizeof(out)) > 0 &&
		    strlen(out) >= sizeof(out))
			abort();
		break;
	case 2:
		if (cgroup_parse_limit(text, &v) == 0 && v != UINT64_MAX) {
			snprintf(again, sizeof(again), "%" PRIu64, v);
			if (cgroup_parse_limit(again, &v) != 0 || strtoull(again, NULL, 10) != v)
				abort();
		}
		break;
	default:
		cgroup_stat_value(text, "total_inactive_file");
		cgroup_stat_value(text, "file");
	}
	free(text);
	return 0;
}
