/* SPDX-License-Identifier: MIT */
/*
 * One hook (or prealloc-domain) invocation: the settings, the domain and
 * the host as libvirt sees them, turned into the front-end layer's guest
 * (frontend/guest.h), whose calls claim its hugepages for it as a named
 * holder, pre-fault or link its files and give it all back. Messages go
 * through the program's log function, which it passes to run_init.
 */
#ifndef PREALLOC_HOOK_RUN_H
#define PREALLOC_HOOK_RUN_H

#include <prealloc.h>

#include "domain.h"
#include "guest.h"
#include "settings.h"

#define HOLDER_PREFIX "libvirt:"

struct hook_run {
	struct guest g;		/* the domain's memory, holder, switches and refusal */
	struct hook_settings set;
	struct domain dom;
	struct host_view host;
	char backing_dir[512];	/* memory_backing_dir + /libvirt/qemu */
};

/* Settings, domain, host view and guest; 0 or -errno with run->g.msg. */
int run_init(struct hook_run *run, guest_log_fn *log, const char *xml, size_t len);
void run_free(struct hook_run *run);
/*
 * start begin: each file backend at the path QEMU opens, linked from its
 * warm file (warm) or pre-faulted (prefault).
 */
int run_start(struct hook_run *run);
/* sharing.c: whether the domain has a DAC uid and no dynamic MAC label (sVirt). */
bool sharing_unconfined(const struct domain *d);
/*
 * sharing.c, start begin: whether the domain, with no dynamic MAC label,
 * runs as a uid that other guests' warm files were given (si: the warm
 * pool's answer); the warning for the log in buf.
 */
bool sharing_warning(const struct domain *d, const struct prealloc_warm_shared_info *si,
		     char *buf, size_t len);
/* Asks the warm pool (prealloc_warm_shared_uid) and logs sharing_warning's warning. */
void run_sharing_check(struct hook_run *run);
/* The exact file QEMU opens for backend i. */
int run_backend_path(const struct hook_run *run, unsigned int i, char *buf, size_t len);

#endif
