/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: the header of prepare and release until 0.2 (and, through
 * <prealloc/records.h>, of admission and the store), kept so that code
 * including it compiles as before: prepare and release are now
 * <prealloc/prepare.h>, page sizes and their names <prealloc/sizes.h>.
 * New code includes those, or <prealloc.h>.
 */
#ifndef LIBPREALLOC_FLOWS_H
#define LIBPREALLOC_FLOWS_H

#include "records.h"
#include "prepare.h"

#endif
