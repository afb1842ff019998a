/* SPDX-License-Identifier: MIT */
/*
 * What the hook (and prealloc-domain) do for a domain, through the
 * library's flows: claim its hugepages for it as a named holder, pre-fault
 * its file backing, give it all back. Messages go through the program's
 * log function, which it passes to run_init.
 */
#ifndef PREALLOC_HOOK_RUN_H
#define PREALLOC_HOOK_RUN_H

#include <stdarg.h>

#include <prealloc.h>

#include "domain.h"
#include "settings.h"

#define HOLDER_PREFIX "libvirt:"

/* One message at a syslog level: the hook's to stderr and syslog, prealloc-domain's to stderr. */
typedef void hook_log_fn(int level, const char *fmt, va_list ap);

struct hook_run {
	struct prealloc_ctx *ctx;
	struct hook_settings set;
	struct domain dom;
	struct host_view host;
	struct dom_demand demand;
	char backing_dir[512];	/* memory_backing_dir + /libvirt/qemu */
	char backing_top[512];	/* memory_backing_dir: the warm files' mount */
	char holder[80];	/* libvirt:<uuid> */
	char check[512];	/* libvirt's status XML: exists while the domain runs */
	int64_t expires;	/* a claim whose domain never starts is gone then */
	double deadline;	/* the stage's end (now_seconds()): every wait fits before it */
	bool reserve, prefault, warm;
	/* prepare: backend i starts on a warm file reserved for the holder (warm.c). */
	bool warmed[DOM_MAX_BACKENDS];
	char msg[1024];		/* the refusal, for people */
	hook_log_fn *log;
};

/* Settings, domain, host view and demand; 0 or -errno with run->msg. */
int run_init(struct hook_run *run, hook_log_fn *log, const char *xml, size_t len);
/* A wait's bound: want_ms, or what is left before the stage's deadline (share of it). */
unsigned int run_wait_ms(const struct hook_run *run, unsigned int want_ms, double share);
/* What the run did, through the program's log function. */
void run_log(const struct hook_run *run, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void run_free(struct hook_run *run);
/* Whether backend i is a file the hook pre-faults at start begin. */
bool run_backend_prefaulted(const struct hook_run *run, unsigned int i);
/* Pages of (node, size) the holder has claimed already (prealloc-domain --reserve), warm files apart. */
uint64_t run_claimed(struct hook_run *run, int node, uint64_t page_size);
/* prepare begin: claim every hugepage the domain needs, or refuse. */
int run_claim(struct hook_run *run);
/* start begin: backend i's hugepages claimed now (its warm file was lost since prepare). */
int run_claim_backend(struct hook_run *run, unsigned int i);
/*
 * start begin: each file backend at the path QEMU opens, linked from its
 * warm file (warm) or pre-faulted (prefault).
 */
int run_start(struct hook_run *run);
/* release end: give back what the holder holds; ret_returned pages. */
int run_release(struct hook_run *run, uint64_t *ret_returned);
/* The exact file QEMU opens for backend i. */
int run_backend_path(const struct hook_run *run, unsigned int i, char *buf, size_t len);

/* ---- warm.c: guests started on warm files (docs/libvirt.md, Warm starts) ---- */

/* Whether backend i may start on a warm file: 0, or -EINVAL with why (for people). */
int run_warm_eligible(const struct hook_run *run, unsigned int i, char *why, size_t len);
/* prepare begin: a READY file reserved for each eligible backend (warmed[]). */
void run_warm_reserve(struct hook_run *run);
/* start begin: backend i's reserved file linked in dir_fd (dir); -ENOENT: none reserved. */
int run_warm_link(struct hook_run *run, unsigned int i, int dir_fd, const char *dir);
/* release: the holder's warm files given back; files given back, or -errno. */
int run_warm_give(struct hook_run *run);
/* prealloc-domain: whether a start now would be warm for backend i, why in why. */
bool run_warm_plan(struct hook_run *run, unsigned int i, char *why, size_t len);

#endif
