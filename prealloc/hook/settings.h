/* SPDX-License-Identifier: MIT */
/*
 * Host settings of the libvirt hook: /etc/prealloc/libvirt.conf, lines of
 * `key = value` and `# comments`. A malformed line is an error that names
 * it, never a silent default.
 */
#ifndef PREALLOC_HOOK_SETTINGS_H
#define PREALLOC_HOOK_SETTINGS_H

#include <stdbool.h>
#include <stdint.h>

#define HOOK_CONF "/etc/prealloc/libvirt.conf"

struct hook_settings {
	bool grow_pools;	  /* grow pools at prepare (default yes; 0.1: reserve) */
	bool prefault;		  /* pre-fault shared file backing at start (default no) */
	bool prefault_pinned;	  /* ... of a guest whose RAM is pinned at start (default yes) */
	bool warm;		  /* start file backing on a warm file (default no) */
	int auto_rule;		  /* placement='auto': AUTO_SPREAD or AUTO_REFUSE */
	unsigned int deadline_s;  /* a stage's bound, before prefault time (default 20) */
	uint64_t prefault_rate;	  /* bytes/s assumed for a prefault's deadline (256 MiB/s) */
	unsigned int start_grace_s; /* a claim lives this long before its guest runs (600) */
	char qemu_conf[256];	  /* where memory_backing_dir is read (/etc/libvirt/qemu.conf) */
	char state_dir[256];	  /* the record store; "" the library's default */
	char status_dir[256];	  /* libvirt's status XML dir (/run/libvirt/qemu) */
};

/* Defaults, then path (missing: defaults). 0, or -EINVAL with why naming the line. */
int settings_load(const char *path, struct hook_settings *s, char *why, size_t why_len);
/* memory_backing_dir from qemu.conf (default /var/lib/libvirt/qemu/ram) + "/libvirt/qemu". */
int settings_backing_dir(const struct hook_settings *s, char *buf, size_t len, char *why,
			 size_t why_len);

/*
 * The page size libvirt gives <hugepages/> without a size: its default
 * hugetlbfs mount, chosen as libvirt chooses it (qemu.conf's
 * hugetlbfs_mount, else the mounted hugetlbfs); host_default (the kernel's
 * default hugepage size) where nothing says otherwise.
 */
uint64_t settings_libvirt_default_page(const struct hook_settings *s, uint64_t host_default);

#endif
