/* SPDX-License-Identifier: MIT */
/*
 * libprealloc: the header admission, the hugepage pools and the record store
 * shared until 0.2, kept so that code including it compiles as before: each
 * now has its own, <prealloc/admit.h>, <prealloc/hugepages.h> and
 * <prealloc/store.h>. New code includes those, or <prealloc.h>.
 */
#ifndef LIBPREALLOC_RECORDS_H
#define LIBPREALLOC_RECORDS_H

#include "job.h"
#include "admit.h"
#include "hugepages.h"
#include "store.h"

#endif
