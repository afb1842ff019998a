/* SPDX-License-Identifier: MIT */
/* Store kernels that zero resident memory, and the one place that picks one. */
#ifndef PREALLOC_CLEAR_H
#define PREALLOC_CLEAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu.h"

/* Zeroes [dst, dst + len); any alignment, any length; NT kernels end with SFENCE. */
typedef void (*clear_fn)(void *dst, size_t len);

struct clear_kernel {
	const char *name;
	clear_fn fn;
	uint64_t requires;	/* PREALLOC_CPU_* bits */
	bool nontemporal;
};

/* The table, best first. */
extern const struct clear_kernel clear_kernels[];
extern const unsigned int clear_kernels_count;

const struct clear_kernel *clear_kernel_find(const char *name);
bool clear_kernel_usable(const struct clear_kernel *k, uint64_t features);

/*
 * Picks the kernel for clearing size bytes (per worker total) with threads
 * workers: a pure function of its inputs. why gets a short reason.
 */
const struct clear_kernel *clear_select(const struct cpu_id *cpu, uint64_t size,
					unsigned int threads, char *why, size_t why_len);

#endif
