/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: make virtual-machine memory ready before the guest starts.
 *
 * Conventions:
 *  - every function returns 0 (or a count) on success and a negative errno on
 *    failure; nothing here prints, exits or raises signals;
 *  - handles are opaque; options and result structs start with their own
 *    size so the ABI can grow (a smaller, older struct is zero-extended; a
 *    larger, newer one must have an all-zero tail or the call fails -E2BIG);
 *  - output parameters are named ret_* and come last.
 */
#ifndef PREALLOC_H
#define PREALLOC_H

/*
 * One header per object (prealloc/include/prealloc/), all of them here;
 * each also compiles alone. <prealloc/records.h> and <prealloc/flows.h>,
 * the headers of 0.1, still work: they include their objects' headers.
 */
#include "prealloc/sizes.h"	/* page sizes, sizes and node lists as text */
#include "prealloc/ctx.h"	/* the context and the host's topology */
#include "prealloc/region.h"	/* the memory a job works on */
#include "prealloc/job.h"	/* populate, clear, verify; completion; reports */
#include "prealloc/clear.h"	/* clear kernels, calibration, clearing a file */
#include "prealloc/admit.h"	/* admission and claims */
#include "prealloc/hugepages.h"	/* the hugepage pools' status */
#include "prealloc/store.h"	/* the record store and its gc */
#include "prealloc/prepare.h"	/* prepare guest memory in a file, release it */
#include "prealloc/vfio.h"	/* DMA-map a region for a device */
#include "prealloc/warm.h"	/* the warm pool */

#endif
