/* SPDX-License-Identifier: MIT */
/* The warm pool as Prometheus metrics (metrics.c, docs/operations.md). */
#ifndef PREALLOC_CLI_METRICS_H
#define PREALLOC_CLI_METRICS_H

#include <stdbool.h>
#include <stdio.h>

#include "prealloc.h"

/* The exposition of every status entry to f; -errno with why (len bytes) on failure. */
int metrics_render(struct prealloc_ctx *ctx, const char *conf, FILE *f, char *why, size_t len);
/*
 * The same into path, atomically: written to PATH.XXXXXX (mkostemp's
 * name, made O_EXCL), mode 0644, then renamed over path.
 */
int metrics_write(struct prealloc_ctx *ctx, const char *conf, const char *path, char *why,
		  size_t len);
/* Whether a status command line names a --format (cmd_warm_status_format's then). */
bool status_format_given(int argc, char **argv);
int cmd_warm_status_format(int argc, char **argv);
/* Whether --conf FILE (NULL: none given) does not exist: said, for an exit status of 2. */
bool status_conf_missing(const char *conf);
/* The table line's counters (", 2 given back under pressure (2.0G)", ...). */
void status_human_counters(const struct prealloc_warm_status *st);

#endif
