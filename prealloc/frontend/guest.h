/* SPDX-License-Identifier: MIT */
/*
 * The front-end layer: one guest's memory as a VMM front end describes it
 * (the libvirt hook from domain XML, `prealloc qemu` from its command line),
 * and the per-guest calls over it: the guest's rules, demand per host node,
 * claim or refuse, pre-fault, warm reserve, link and give per backend,
 * release, and a wrapper front end's whole session. Written against the
 * public API only; nothing here knows libvirt or a command line. Messages
 * go through the front end's log function; a refusal, for people, to
 * guest->msg. docs/design.md, "Front ends", says what a front end is.
 */
#ifndef PREALLOC_FRONTEND_GUEST_H
#define PREALLOC_FRONTEND_GUEST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"

struct prealloc_ctx;

#define GUEST_MAX_NODES 64	/* host nodes one backend may use */
#define GUEST_MAX_BACKENDS 96
#define GUEST_MAX_NEEDS 128
#define GUEST_PAGE_4K 4096u

/* How a backend's pages are bound to its nodes (QEMU's policy=). */
enum guest_policy { GUEST_POLICY_DEFAULT = 0, GUEST_POLICY_BIND, GUEST_POLICY_PREFERRED,
		    GUEST_POLICY_INTERLEAVE };

/*
 * One piece of guest RAM the VMM maps: from hugepages, a file in the
 * front end's memory directory, or 4K anonymous memory; with where its
 * pages go.
 */
struct guest_backend {
	char alias[64];		/* the VMM's name for it: pc.ram, ram-node<N>, dimm<N> */
	uint64_t bytes;		/* what the VMM populates */
	uint64_t page_size;	/* 0 or 4K: 4K pages, nothing to size */
	bool file;		/* a file the VMM opens by name in the memory directory
				 * and maps whole: one to pre-fault or start warm */
	bool shared;		/* the VMM maps it share=on */
	int policy;		/* enum guest_policy */
	unsigned int nr_nodes;
	int nodes[GUEST_MAX_NODES];
	uint64_t node_bytes[GUEST_MAX_NODES];
};

struct guest_need {
	int node;
	uint64_t page_size;
	uint64_t bytes;
};

/* The backends and, merged, the hugepages they need per host node and size. */
struct guest_demand {
	unsigned int nr_backends;
	struct guest_backend backends[GUEST_MAX_BACKENDS];
	unsigned int nr_needs;
	struct guest_need needs[GUEST_MAX_NEEDS];
};

/* One message at a syslog level. */
typedef void guest_log_fn(int level, const char *fmt, va_list ap);

/* What a front end's messages call its things (static strings). */
struct guest_words {
	const char *noun;	 /* the guest in a refusal: "domain" */
	const char *dir;	 /* the memory directory: "memory_backing_dir" */
	const char *grow_off;	 /* a refusal's advice when pools may not grow */
	const char *warm_off;	 /* why no backend starts warm when warm is off */
	const char *vmm;	 /* the VMM that maps the memory: "QEMU" */
	const char *shared_how;	 /* what makes a backend shared: "<access mode='shared'/>" */
	const char *private_why; /* what made one private: "its cell's memAccess or ..." */
	const char *private_opt; /* the VMM's own word for a private mapping: "share=off" */
};

struct guest {
	struct prealloc_ctx *ctx;
	const struct guest_words *words;
	guest_log_fn *log;
	char name[256];		/* the guest's name, in messages */
	char holder[80];	/* the records' holder: <front end>:<id> */
	char check[512];	/* exists while the guest lives ("" none) */
	int64_t expires;	/* a claim whose guest never starts is gone then (0 never) */
	char tenant[65];	/* the warm pool's tenant, "" none */
	bool has_owner;		/* files go to uid:gid */
	unsigned int uid, gid;
	bool grow_pools, prefault, warm;
	bool pinned;		/* the VMM pins all of its RAM at start (a device passed through) */
	char mount[512];	/* the memory directory's mount: where warm files are */
	uint64_t mount_page;	/* its page size: hugetlbfs's, 4K tmpfs; 0 on disk */
	unsigned int deadline_s; /* a stage's bound, before pre-fault time */
	double deadline;	/* the stage's end (now_seconds()) */
	int cancel_fd;		/* readable: a pre-fault is cancelled (-1: never) */
	struct guest_demand demand;
	/* claim: backend i starts on a warm file reserved for the holder. */
	bool warmed[GUEST_MAX_BACKENDS];
	char msg[1024];		/* the refusal, for people */
};

/* ---- guest.c: the clock, the log, the rules, what the holder holds ---- */

/* Monotonic seconds, as guest->deadline counts them. */
/* A wait's bound: want_ms, or what is left before the deadline (share of it). */
unsigned int guest_wait_ms(const struct guest *g, unsigned int want_ms, double share);
void guest_log(const struct guest *g, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Whether backend i is a file pre-faulted at start. */
bool guest_prefaulted(const struct guest *g, unsigned int i);
/*
 * The guest's rules, before anything is claimed (guest_claim asks): a
 * file to pre-fault is mapped shared. 0, or -EINVAL with the refusal in msg.
 */
int guest_rules(struct guest *g);
/*
 * The page size of the filesystem dir is on: hugetlbfs's, 4K on tmpfs, 0
 * on any other (a disk); 0, or -errno when it cannot be asked.
 */
int guest_dir_page(const char *dir, uint64_t *ret_page);
/* Pages of (node, size) the holder has claimed already, warm files apart. */
uint64_t guest_claimed(struct guest *g, int node, uint64_t page_size);

/* ---- demand.c: from backends to hugepages per node ---- */

/* Spreads be->bytes over its nodes in page units, the first nodes taking the rest. */
void guest_spread(struct guest_backend *be);
/* The needs, merged per host node and page size; -E2BIG past GUEST_MAX_NEEDS. */
int guest_needs(struct guest_demand *dd);
/* "2M", "1G", "4K" */
const char *guest_page_label(uint64_t page_size, char *buf, size_t len);

/* ---- claim.c ---- */

/* Claim every hugepage the guest needs (its warm files reserved first), or refuse. */
int guest_claim(struct guest *g);
/* Backend i's hugepages claimed now (its warm file was lost since the claim). */
int guest_claim_backend(struct guest *g, unsigned int i);

/* ---- prefault.c: start and release ---- */

/* Files to start (pre-fault or link), and the bytes pre-faulted. */
unsigned int guest_start_files(const struct guest *g, uint64_t *ret_bytes);
/*
 * Each file backend at dir/<alias> (dir_fd open on dir): linked from its
 * warm file, or pre-faulted; on failure what the guest holds is given back.
 */
int guest_start(struct guest *g, int dir_fd, const char *dir);
/* Gives back what the holder holds: its files, claims and warm files; ret_returned pages. */
int guest_release(struct guest *g, uint64_t *ret_returned);

/* ---- warm.c: guests started on warm files ---- */

/* Whether backend i may start on a warm file: 0, or -EINVAL with why (for people). */
int guest_warm_eligible(const struct guest *g, unsigned int i, char *why, size_t len);
/* A READY file reserved for each eligible backend (warmed[]). */
void guest_warm_reserve(struct guest *g);
/* Backend i's reserved file linked in dir_fd (dir); -ENOENT: none reserved. */
int guest_warm_link(struct guest *g, unsigned int i, int dir_fd, const char *dir);
/* The holder's warm files given back; files given back, or -errno. */
int guest_warm_give(struct guest *g);
/* Whether a start now would be warm for backend i, why in why. */
bool guest_warm_plan(struct guest *g, unsigned int i, char *why, size_t len);

/* ---- session.c: a wrapper front end's run of its VMM ---- */

/* What a wrapper front end (it runs the VMM itself) tells its session. */
struct guest_wrapper {
	bool print;			/* the VMM's command line on stdout before it runs */
	int run_failure;		/* the exit status when the VMM cannot run or its memory
					 * cannot be given back after a clean exit */
	int (*exit_status)(int err);	/* the exit status of a failure (-errno) before it runs */
};
/* argv on one line of f, each word as a shell reads it back. */
void guest_print_argv(FILE *f, char **argv);
/*
 * The guest's memory claimed and made ready in g->mount (opened one step
 * at a time), the VMM run with argv, SIGINT, SIGTERM and SIGHUP passed on
 * to it, the memory given back however it ends: the VMM's exit status
 * (128 + a signal), or the wrapper's for a failure of the session's own.
 */
int guest_session(struct guest *g, char **argv, const struct guest_wrapper *w);

#endif
