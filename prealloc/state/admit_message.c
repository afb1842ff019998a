/* SPDX-License-Identifier: MIT */
/* An admission failure in one line: what was short, where, and the remedy. */
#include <stdio.h>
#include <string.h>

#include "state.h"

#define BOOT_1G_ADVICE                                                                         \
	"; runtime allocation of 1G pages often fails because memory is fragmented: reserve "    \
	"them at boot with 'hugepagesz=1G hugepages=N' on the kernel command line"

/* Pool-growth failures: the kernel gave too few pages, the node cannot, or a signal stopped it. */
static bool growth_message(const struct prealloc_admit_result *res, char *buf, size_t len)
{
	const char *lbl = prealloc_page_name(res->page_size);
	const char *boot = res->page_size == PREALLOC_PAGE_1G ? BOOT_1G_ADVICE : "";
	char a[32], b[32], c[32];

	switch (res->reason) {
	case PREALLOC_ADMIT_GROW:
		snprintf(buf, len,
			 "cannot grow node %d's %s hugepage pool: asked the kernel for %llu pages "
			 "(%llu needed free, %llu were), it allocated only %llu in %.1f s even after "
			 "compacting the node, and the pool was put back as it was; free memory on "
			 "the node, use a smaller size or another node%s",
			 res->node, lbl, (unsigned long long)res->grow_requested,
			 (unsigned long long)res->needed, (unsigned long long)res->available,
			 (unsigned long long)res->grow_got, res->grow_seconds, boot);
		return true;
	case PREALLOC_ADMIT_CAPACITY:
		snprintf(buf, len,
			 "node %d cannot supply %llu %s hugepages (%s): it has an estimated %s free "
			 "or reclaimable (free memory, file cache, reclaimable slab and its free %s "
			 "hugepages) and %s must stay free for the host, which leaves room for %llu "
			 "of them; the pool was not touched; use a smaller size or another node",
			 res->node, (unsigned long long)res->needed, lbl,
			 prealloc_format_size(res->needed * res->page_size, a, sizeof(a)),
			 prealloc_format_size(res->capacity_estimate, b, sizeof(b)), lbl,
			 prealloc_format_size(res->capacity_margin, c, sizeof(c)),
			 (unsigned long long)res->available);
		return true;
	case PREALLOC_ADMIT_CANCELED:
		if (res->node < 0)
			snprintf(buf, len, "interrupted while waiting for the state lock; nothing "
				 "was changed");
		else
			snprintf(buf, len, "interrupted while growing node %d's %s hugepage pool; "
				 "the growth was given back", res->node, lbl);
		return true;
	default:
		return false;
	}
}

/* Memory (4k/thp) failures: the node, a memory cgroup, the filesystem. */
static bool memory_message(const struct prealloc_admit_result *res, char *buf, size_t len)
{
	char a[32], b[32];

	prealloc_format_size(res->available, a, sizeof(a));
	prealloc_format_size(res->needed, b, sizeof(b));
	switch (res->reason) {
	case PREALLOC_ADMIT_MEMORY:
		snprintf(buf, len,
			 "node %d has %s free, %s needed; use a smaller size, another node, or "
			 "hugepages (--page-size 2M --grow-pools)", res->node, a, b);
		return true;
	case PREALLOC_ADMIT_MEMCG:
		snprintf(buf, len,
			 "the memory cgroup limit %s leaves room for %s (its reclaimable file cache "
			 "counted), %s needed; raise the limit, use a smaller size, or hugepages "
			 "(--page-size 2M --grow-pools: they are not charged to the memory cgroup)",
			 res->cgroup, a, b);
		return true;
	case PREALLOC_ADMIT_FS:
		snprintf(buf, len,
			 "%s has %s free, %s needed; mount it with a larger size= or use a smaller "
			 "size", res->cgroup, a, b);
		return true;
	default:
		return false;
	}
}

void admit_message(const struct prealloc_admit_result *res, int err, bool grow_pools, char *buf,
		   size_t len)
{
	const char *lbl = prealloc_page_name(res->page_size);
	const char *boot = res->page_size == PREALLOC_PAGE_1G ? BOOT_1G_ADVICE : "";
	unsigned long long need = res->needed, avail = res->available;

	if (growth_message(res, buf, len) || memory_message(res, buf, len))
		return;
	switch (res->reason) {
	case PREALLOC_ADMIT_POOL:
		if (err == -EOPNOTSUPP) {
			snprintf(buf, len, "node %d has no %s hugepage pool on this kernel", res->node,
				 lbl);
			return;
		}
		snprintf(buf, len,
			 "node %d has %llu free %s hugepages (%llu free in its pool of %llu, %llu "
			 "promised to other runs), %llu needed; pass --grow-pools to grow the node's "
			 "pool, use a smaller size or another node%s",
			 res->node, avail, lbl, (unsigned long long)res->pool_free,
			 (unsigned long long)res->pool_total, (unsigned long long)res->promised_others,
			 need, boot);
		return;
	case PREALLOC_ADMIT_GLOBAL:
		snprintf(buf, len,
			 "only %llu %s hugepages are free system-wide once other programs' "
			 "reservations are counted, %llu needed; pass --grow-pools, use a smaller size%s",
			 avail, lbl, need, boot);
		return;
	case PREALLOC_ADMIT_CGROUP:
		snprintf(buf, len,
			 "the hugetlb cgroup limit %s leaves room for %llu %s hugepages, %llu needed; "
			 "raise the limit or use a smaller size", res->cgroup, avail, lbl, need);
		return;
	case PREALLOC_ADMIT_LOCK:
		snprintf(buf, len, "timed out waiting for the record store's lock (another prealloc "
				   "run holds it)");
		return;
	case PREALLOC_ADMIT_ACCESS:
		if (err == -EBADMSG) {
			snprintf(buf, len, "the record store is corrupt; it was left as it is for "
					   "inspection (move it away to start afresh)");
			return;
		}
		snprintf(buf, len, "cannot %s: %s%s",
			 grow_pools ? "grow the hugepage pool or write the record store"
				 : "write the record store",
			 strerror(-err), err == -EACCES || err == -EPERM ? " (run as root)" : "");
		return;
	default:
		snprintf(buf, len, "admission failed: %s", strerror(-err));
	}
}
