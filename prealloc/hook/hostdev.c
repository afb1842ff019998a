/* SPDX-License-Identifier: MIT */
/*
 * Devices passed through to the guest, and what they mean for its memory.
 * A PCI device QEMU assigns through VFIO (<hostdev type='pci'>, an
 * <interface type='hostdev'> VF, a <disk type='nvme'>) makes its memory
 * listener map every RAM section for the device's DMA when the device is
 * realized: every page is faulted, zeroed and pinned on QEMU's one thread
 * before the guest runs, unless a vIOMMU (<iommu>) lets the guest map what
 * it uses later. mdev devices pin what their vendor driver asks for, and
 * USB or SCSI hostdevs pin nothing: neither counts here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain.h"
#include "domain_xml.h"

/* The parts of a PCI address and their bounds: domain, bus, slot, function. */
static const struct { const char *attr; unsigned long max; bool need; } pci_parts[] = {
	{ "@domain", 0xffffffffUL, false }, { "@bus", 0xff, true },
	{ "@slot", 0x1f, true }, { "@function", 7, true },
};

/* The <address> element at n as "dddd:bb:ss.f"; 0 or -EINVAL naming what is wrong. */
static int pci_addr(struct px *p, xmlNodePtr n, const char *what, unsigned int i,
		    struct dom_hostdev *h)
{
	unsigned long v[4] = { 0 };

	for (unsigned int k = 0; k < 4; k++) {
		char buf[32], *end;

		if (!px_str(p, n, pci_parts[k].attr, buf, sizeof(buf))) {
			if (pci_parts[k].need)
				return px_bad(p, "%s %u: its PCI address has no %s", what, i,
					      pci_parts[k].attr + 1);
			continue;
		}
		errno = 0;
		v[k] = strtoul(buf, &end, 0);
		if (errno || end == buf || *end || buf[0] == '-' || v[k] > pci_parts[k].max)
			return px_bad(p, "%s %u: PCI address %s='%s' (0 to %#lx)", what, i,
				      pci_parts[k].attr + 1, buf, pci_parts[k].max);
	}
	snprintf(h->addr, sizeof(h->addr), "%04lx:%02lx:%02lx.%lx", v[0], v[1], v[2], v[3]);
	return 0;
}

/*
 * Each device expr selects, its PCI address at addr_expr below it; a
 * device whose driver is not VFIO (driver_expr names another) is not one.
 */
static int collect(struct px *p, struct domain *d, const char *expr, const char *addr_expr,
		   const char *driver_expr, int kind, const char *what)
{
	xmlXPathObjectPtr o = px_nodes(p, expr);
	unsigned int nr = px_count(o);
	int r = 0;

	for (unsigned int i = 0; r == 0 && i < nr; i++) {
		xmlNodePtr n = o->nodesetval->nodeTab[i];
		xmlXPathObjectPtr a;
		struct dom_hostdev h = { .kind = kind };
		char drv[32];

		if (driver_expr && px_str(p, n, driver_expr, drv, sizeof(drv)) &&
		    strcmp(drv, "vfio"))
			continue;
		p->x->node = n;
		a = xmlXPathEvalExpression((const xmlChar *)addr_expr, p->x);
		if (px_count(a) != 1)
			r = px_bad(p, "%s %u: no PCI <address> in its <source>", what, i);
		else
			r = pci_addr(p, a->nodesetval->nodeTab[0], what, i, &h);
		xmlXPathFreeObject(a);
		if (r == 0 && d->nr_hostdevs < DOM_MAX_HOSTDEVS)
			d->hostdevs[d->nr_hostdevs] = h;
		d->nr_hostdevs += r == 0;
	}
	xmlXPathFreeObject(o);
	return r;
}

int hostdev_parse(struct px *p, struct domain *d)
{
	char buf[64];
	int r;

	r = collect(p, d, "/domain/devices/hostdev[not(@mode) or @mode='subsystem'][@type='pci']",
		    "source/address", "driver/@name", HOSTDEV_PCI, "hostdev");
	if (r == 0)
		r = collect(p, d, "/domain/devices/interface[@type='hostdev']",
			    "source/address[not(@type) or @type='pci']", "driver/@name",
			    HOSTDEV_INTERFACE, "interface type='hostdev'");
	if (r == 0)
		r = collect(p, d, "/domain/devices/disk[@type='nvme']",
			    "source[not(@type) or @type='pci']/address", NULL, HOSTDEV_NVME,
			    "disk type='nvme'");
	d->viommu = px_str(p, NULL, "/domain/devices/iommu/@model", buf, sizeof(buf));
	return r;
}

bool domain_pinned(const struct domain *d)
{
	return d->nr_hostdevs && !d->viommu;
}

void hostdev_list(const struct domain *d, char *buf, size_t len)
{
	unsigned int shown = d->nr_hostdevs < DOM_MAX_HOSTDEVS ? d->nr_hostdevs : DOM_MAX_HOSTDEVS;
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	for (unsigned int i = 0; i < shown && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "," : "", d->hostdevs[i].addr);
	if (d->nr_hostdevs > shown && n < len)
		snprintf(buf + n, len - n, " and %u more", d->nr_hostdevs - shown);
}

bool hostdev_prefault(const struct domain *d, bool host_prefault, bool host_prefault_pinned,
		      bool files_shared)
{
	if (d->prefault != TRI_UNSET)
		return d->prefault == TRI_YES;
	return host_prefault || (domain_pinned(d) && host_prefault_pinned && files_shared);
}
