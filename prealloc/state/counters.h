/* SPDX-License-Identifier: MIT */
/*
 * The warm pool's counters (counters.c): takes by what they found, pressure
 * give-backs, renewals, quarantines, what holders added past their records,
 * the last fill's rate, kept in the state directory
 * by mount device, node and page size, so that every process that takes or
 * gives adds to them and a one-shot status reads them. They reset when the
 * state directory does (/run: at boot).
 */
#ifndef PREALLOC_COUNTERS_H
#define PREALLOC_COUNTERS_H

#include <stdint.h>

struct prealloc_ctx;

/* What a counter is kept by: the mount's device, the page size, the node. */
struct record_key {
	uint64_t dev, page_size;
	int node;
};

#define COUNTERS_LEAF "warm-counters"

/* The names a counters line may carry; status reads them by these. */
#define COUNTER_TAKE_MISS "take_miss"		/* no READY file: refused, nothing touched */
#define COUNTER_TAKE_REFUSED "take_refused"	/* a file found, the take refused (growth, ...) */
#define COUNTER_RENEWALS "renewals"
#define COUNTER_PRESSURE_FILES "pressure_files"
#define COUNTER_PRESSURE_BYTES "pressure_bytes"
#define COUNTER_FILL_RATE "fill_bytes_per_second"	/* a gauge: the last fill's */
#define COUNTER_QUARANTINES "quarantines"	/* files quarantined, once each */
#define COUNTER_TRIMMED "trimmed_bytes"		/* cut past a record as its file came back */

/* "take_full", "take_cut", "take_partial", "take_cold" by enum prealloc_warm_hit; NULL past. */
const char *counter_take_name(int hit);

/*
 * Adds n to name's counter of (dev, node, page_size) (set: replaces it), under
 * the counters' own lock; best effort: 0 or a negative errno that no caller
 * needs to act on (a count lost is never a take refused).
 */
int counter_add(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t n);
int counter_set(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t v);
/* A take's end: its hit kind counted, or a miss (-ENOENT), or a refusal (other errors). */
void counter_take(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size, int r,
		  int hit);
/* A file of bytes given back under memory pressure. */
void counter_pressure(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		      uint64_t bytes);
/* The same, by the mount's path (its device from stat). */
int counter_set_at(struct prealloc_ctx *ctx, const char *mount, int node, uint64_t page_size,
		   const char *name, uint64_t v);
/* name's value for (dev, node, page_size) in text (counters_read's); 0 when absent. */
uint64_t counter_get(const char *text, uint64_t dev, int node, uint64_t page_size,
		     const char *name);
/* The whole counters file, NUL-terminated (*ret_text to free; NULL when there is none). */
int counters_read(struct prealloc_ctx *ctx, char **ret_text);

#endif
