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

/* One header per topic (prealloc/include/prealloc/), all of them here. */
#include "prealloc/ctx.h"
#include "prealloc/job.h"
#include "prealloc/clear.h"
#include "prealloc/records.h"
#include "prealloc/flows.h"
#include "prealloc/vfio.h"
#include "prealloc/warm.h"

#endif
