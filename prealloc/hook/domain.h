/* SPDX-License-Identifier: MIT */
/*
 * A libvirt domain as the hook needs it: its memory, NUMA cells and their
 * binding to host nodes, hugepages, backing and access, memory devices, DAC
 * label and the per-domain prealloc settings; and the demand that follows
 * from it per host node and page size. Pure code over the XML text:
 * unit-tested and fuzzed without libvirt.
 */
#ifndef PREALLOC_HOOK_DOMAIN_H
#define PREALLOC_HOOK_DOMAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "guest.h"

#define DOM_MAX_CELLS 64
#define DOM_MAX_DIMMS 32	/* memory devices, every model */
#define DOM_MAX_PAGES 8
#define DOM_MAX_NODES 64	/* host nodes a binding may name */
#define DOM_NAMESPACE "urn:x-prealloc:libvirt:1"
#define DOM_MAX_HOSTDEVS 16	/* devices passed through that are listed; more are counted */

enum dom_mode { MODE_NONE = 0, MODE_STRICT, MODE_PREFERRED, MODE_INTERLEAVE, MODE_RESTRICTIVE };
enum dom_source { SOURCE_ANON = 0, SOURCE_FILE, SOURCE_MEMFD };
enum dom_tristate { TRI_UNSET = 0, TRI_YES, TRI_NO };
/* <access mode>, <cell memAccess>, <memory access>: DEFAULT defers to the next level. */
enum dom_access { ACCESS_DEFAULT = 0, ACCESS_SHARED, ACCESS_PRIVATE };
/* <devices><memory model>: the models libvirt 9 knows. */
enum dom_mem_model { MEM_DIMM = 0, MEM_NVDIMM, MEM_VIRTIO_PMEM, MEM_VIRTIO_MEM, MEM_SGX_EPC };

/* Host nodes memory may use: a bitmap of up to DOM_MAX_NODES. */
struct dom_binding {
	int mode;		/* enum dom_mode; NONE: unbound */
	bool automatic;		/* placement='auto': numad's choice, unknown to a hook */
	uint64_t nodes;		/* bit n: host node n */
};

struct dom_cell {
	int id;
	uint64_t bytes;
	int access;			/* enum dom_access: memAccess */
	struct dom_binding bind;	/* memnode, else numatune memory, else unbound */
};

/* A <devices><memory> device of any model; demand.c decides which count. */
struct dom_dimm {
	int model;		/* enum dom_mem_model */
	uint64_t bytes;		/* <target><size>: what <memory> includes */
	uint64_t requested;	/* virtio-mem <target><requested>: plugged at start */
	uint64_t page_size;	/* <source><pagesize>; 0: its cell's */
	uint64_t source_nodes;	/* <source><nodemask>, host nodes; 0: its cell's */
	int access;		/* enum dom_access: the access attribute */
	int cell;		/* target node (guest cell), -1 none */
	char alias[64];		/* from the XML, else libvirt's: dimm<slot>, virtiomem<N> */
};

/* A PCI device the guest gets through VFIO: how the XML says so. */
enum dom_hostdev_kind { HOSTDEV_PCI = 0, HOSTDEV_INTERFACE, HOSTDEV_NVME };

/* One device passed through with VFIO, by its host PCI address. */
struct dom_hostdev {
	int kind;		/* enum dom_hostdev_kind */
	char addr[20];		/* "0000:00:03.0" */
};

/* <hugepages><page size nodeset/>: nodeset names guest cells. */
struct dom_page {
	uint64_t size;		/* bytes; 0: the host's default hugepage size */
	uint64_t cells;		/* bit n: guest cell n; 0: every cell not named elsewhere */
};

struct domain {
	char name[256];
	char uuid[64];
	int id;			/* -1 when not running (no id attribute) */
	uint64_t memory;	/* <memory>, bytes: initial + DIMMs */
	unsigned int nr_cells;
	struct dom_cell cells[DOM_MAX_CELLS];
	struct dom_binding bind;	/* <numatune><memory> */
	bool hugepages;
	unsigned int nr_pages;
	struct dom_page pages[DOM_MAX_PAGES];
	int source;		/* enum dom_source */
	int access;		/* enum dom_access: <memoryBacking><access> */
	bool shared;		/* <access mode='shared'/>: the domain's level only */
	unsigned int nr_dimms;
	struct dom_dimm dimms[DOM_MAX_DIMMS];
	bool has_dac;
	unsigned int uid, gid;	/* DAC label */
	/* A dynamic SELinux or AppArmor label (sVirt): its QEMU confined apart from others. */
	bool mac_dynamic;
	/* PCI devices assigned through VFIO (<hostdev>, <interface type='hostdev'>, NVMe disks). */
	unsigned int nr_hostdevs;	/* all of them; the first DOM_MAX_HOSTDEVS listed */
	struct dom_hostdev hostdevs[DOM_MAX_HOSTDEVS];
	bool viommu;		/* <devices><iommu>: DMA maps what the guest maps */
	int grow_pools, prefault, warm;	/* enum dom_tristate, from <metadata> */
	char tenant[65];		/* <metadata> tenant='': the warm pool's tenant, "" none */
};

/* Parses len bytes of domain XML; 0 or -EINVAL with why[] saying what is wrong. */
int domain_parse(const char *xml, size_t len, struct domain *ret, char *why, size_t why_len);

/*
 * Whether QEMU pins every page of the guest's RAM when it starts: a device
 * passed through VFIO and no vIOMMU (QEMU maps each RAM section for the
 * device's DMA at realize, faulting, zeroing and pinning what is not there
 * yet); behind a vIOMMU it maps what the guest maps, later.
 */
bool domain_pinned(const struct domain *d);
/* The devices as "0000:00:03.0,0000:00:04.0 and 2 more" (at most len). */
void hostdev_list(const struct domain *d, char *buf, size_t len);
/*
 * Whether the hook pre-faults the domain's file backing: its own
 * prefault='yes|no', else the host's prefault, else, for a domain whose
 * RAM is pinned at start (domain_pinned) with every file backend shared,
 * the host's prefault_pinned: the pin would fault every page on QEMU's one
 * thread anyway.
 */
bool hostdev_prefault(const struct domain *d, bool host_prefault, bool host_prefault_pinned,
		      bool files_shared);

/* ---- demand ------------------------------------------------------------- */

enum auto_rule { AUTO_SPREAD = 0, AUTO_REFUSE };

struct host_view {
	unsigned int nr_nodes;
	int nodes[DOM_MAX_NODES];	/* host nodes with memory, ascending */
	uint64_t default_page;		/* the default hugepage size, bytes */
	int auto_rule;			/* placement='auto': enum auto_rule */
	uint64_t backing_page;		/* page size of memory_backing_dir's fs; 0: not memory */
};

/* Every backend a domain may have: one per cell and memory device. */
_Static_assert(DOM_MAX_CELLS + DOM_MAX_DIMMS <= GUEST_MAX_BACKENDS, "backends");
_Static_assert(DOM_MAX_NODES <= GUEST_MAX_NODES, "host nodes");

/*
 * What the domain asks of the host: each backend (guest.h: one guest RAM
 * backend QEMU gets from hugepages or memory_backing_dir, or 4K anonymous
 * memory; nvdimm, virtio-pmem and sgx-epc have none) and, merged, the
 * hugepages per host node and page size. Unbound, preferred and interleaved memory is
 * spread over the allowed nodes in page units (the first nodes take the
 * remainder). -EINVAL with why[]: a binding to no host node, a page size
 * that does not divide the memory, placement='auto' refused by the host.
 */
int domain_demand(const struct domain *d, const struct host_view *h, struct guest_demand *ret,
		  char *why, size_t why_len);

/* A node list as "0-2,5". */
void nodes_format(uint64_t mask, char *buf, size_t len);

#endif
