/* SPDX-License-Identifier: MIT */
/*
 * The devices a domain passes through (hostdev.c): which XML assigns a PCI
 * device through VFIO (<hostdev type='pci'>, <interface type='hostdev'>,
 * <disk type='nvme'>) and which does not (mdev, USB, a non-VFIO driver),
 * their addresses as libvirt writes them (hex or decimal), the refusals
 * that name a bad address, a vIOMMU that keeps the RAM from being pinned at
 * start, and when the hook pre-faults a pinned guest (hostdev_prefault).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "domain.h"
#include "tap.h"

#define HEAD "<domain type='qemu'><name>g</name><uuid>11111111-2222-3333-4444-555555555555</uuid>" \
	"<memory unit='MiB'>128</memory>"
#define PCI(d, b, s, f) "<hostdev mode='subsystem' type='pci' managed='yes'><source><address " \
	"domain='" d "' bus='" b "' slot='" s "' function='" f "'/></source></hostdev>"

static const struct {
	const char *what, *devices;
	const char *list;	/* hostdev_list, or the refusal's words for an error */
	int rc;
	bool viommu, pinned;
} cases[] = {
	{ "no device", "", "", 0, false, false },
	{ "a PCI hostdev: pinned at start", PCI("0x0000", "0x00", "0x03", "0x0"),
	  "0000:00:03.0", 0, false, true },
	{ "no mode (libvirt's default: subsystem), decimal parts",
	  "<hostdev type='pci'><source><address bus='3' slot='4' function='1'/></source></hostdev>",
	  "0000:03:04.1", 0, false, true },
	{ "driver name='vfio': counted",
	  "<hostdev type='pci'><driver name='vfio'/><source><address domain='0x0001' bus='0x81' "
	  "slot='0x1f' function='0x7'/></source></hostdev>", "0001:81:1f.7", 0, false, true },
	{ "driver name='kvm' (not VFIO): not counted",
	  "<hostdev type='pci'><driver name='kvm'/><source><address bus='1' slot='0' "
	  "function='0'/></source></hostdev>", "", 0, false, false },
	{ "mdev, USB and SCSI hostdevs, capabilities mode: none pinned at start",
	  "<hostdev mode='subsystem' type='mdev' model='vfio-pci'><source><address "
	  "uuid='c2177883-f1bb-47f0-914d-32a22e3a8804'/></source></hostdev>"
	  "<hostdev mode='subsystem' type='usb'><source><vendor id='0x1234'/></source></hostdev>"
	  "<hostdev mode='subsystem' type='scsi'><source><adapter name='scsi_host0'/>"
	  "<address bus='0' target='0' unit='0'/></source></hostdev>"
	  "<hostdev mode='capabilities' type='storage'><source><block>/dev/sdf1</block></source>"
	  "</hostdev>", "", 0, false, false },
	{ "an SR-IOV VF as <interface type='hostdev'>",
	  "<interface type='hostdev' managed='yes'><source><address type='pci' domain='0x0000' "
	  "bus='0x82' slot='0x10' function='0x2'/></source></interface>"
	  "<interface type='network'><source network='default'/></interface>",
	  "0000:82:10.2", 0, false, true },
	{ "an NVMe disk", "<disk type='nvme' device='disk'><source type='pci' managed='yes' "
	  "namespace='1'><address domain='0x10000' bus='0x02' slot='0x00' function='0x0'/>"
	  "</source><target dev='vde'/></disk><disk type='file'><source file='/x.img'/></disk>",
	  "10000:02:00.0", 0, false, true },
	{ "all three kinds, in the order of their kinds",
	  "<disk type='nvme'><source type='pci'><address bus='5' slot='0' function='0'/></source>"
	  "</disk>" PCI("0", "1", "0", "0") "<interface type='hostdev'><source><address "
	  "type='pci' bus='2' slot='0' function='3'/></source></interface>",
	  "0000:01:00.0,0000:02:00.3,0000:05:00.0", 0, false, true },
	{ "a vIOMMU: the guest maps what it uses, not pinned at start",
	  PCI("0", "1", "0", "0") "<iommu model='intel'><driver caching_mode='on'/></iommu>",
	  "0000:01:00.0", 0, true, false },
	{ "slot 0x20: refused", PCI("0", "0", "0x20", "0"), "slot='0x20'", -EINVAL, false, false },
	{ "function 8: refused", PCI("0", "0", "1", "8"), "function='8'", -EINVAL, false, false },
	{ "bus -1: refused", PCI("0", "-1", "1", "0"), "bus='-1'", -EINVAL, false, false },
	{ "bus 'x': refused", PCI("0", "x", "1", "0"), "bus='x'", -EINVAL, false, false },
	{ "no bus: refused",
	  "<hostdev type='pci'><source><address slot='1' function='0'/></source></hostdev>",
	  "no bus", -EINVAL, false, false },
	{ "no address: refused", "<hostdev type='pci'><source/></hostdev>", "no PCI <address>",
	  -EINVAL, false, false },
	{ "a bad NVMe address names the disk", "<disk type='nvme'><source type='pci'><address "
	  "bus='1' slot='99' function='0'/></source></disk>", "disk type='nvme' 0", -EINVAL,
	  false, false },
};

static void test_cases(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char xml[2048], why[512] = "", list[512] = "";
		struct domain d;
		int r;

		snprintf(xml, sizeof(xml), HEAD "<devices>%s</devices></domain>", cases[i].devices);
		r = domain_parse(xml, strlen(xml), &d, why, sizeof(why));
		if (cases[i].rc) {
			tap_ok(r == cases[i].rc && strstr(why, cases[i].list), "%s (%s)",
			       cases[i].what, why);
			continue;
		}
		if (r == 0)
			hostdev_list(&d, list, sizeof(list));
		tap_ok(r == 0 && !strcmp(list, cases[i].list) && d.viommu == cases[i].viommu &&
			       domain_pinned(&d) == cases[i].pinned,
		       "%s: [%s] viommu %d pinned %d (%s)", cases[i].what, list, r == 0 && d.viommu,
		       r == 0 && domain_pinned(&d), why);
	}
}

/* More devices than the list keeps: all counted, the first DOM_MAX_HOSTDEVS listed. */
static void test_many(void)
{
	char xml[8192], why[512] = "", list[512] = "", want[512] = "";
	size_t n = (size_t)snprintf(xml, sizeof(xml), HEAD "<devices>");
	unsigned int nr = DOM_MAX_HOSTDEVS + 4;
	struct domain d;
	int r;

	for (unsigned int i = 0; i < nr; i++) {
		n += (size_t)snprintf(xml + n, sizeof(xml) - n, "<hostdev type='pci'><source>"
				      "<address bus='%u' slot='0' function='0'/></source></hostdev>",
				      i + 1);
		if (i < DOM_MAX_HOSTDEVS)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s0000:%02x:00.0",
				 i ? "," : "", i + 1);
	}
	snprintf(xml + n, sizeof(xml) - n, "</devices></domain>");
	snprintf(want + strlen(want), sizeof(want) - strlen(want), " and 4 more");
	r = domain_parse(xml, strlen(xml), &d, why, sizeof(why));
	if (r == 0)
		hostdev_list(&d, list, sizeof(list));
	tap_ok(r == 0 && d.nr_hostdevs == nr && !strcmp(list, want),
	       "%u devices: all counted (%u), %d listed [%s]", nr, r == 0 ? d.nr_hostdevs : 0,
	       DOM_MAX_HOSTDEVS, list);
	hostdev_list(&d, list, 20);
	tap_ok(strlen(list) == 19, "the list cut at its buffer (%zu)", strlen(list));
}

/* hostdev_prefault: the domain's word, else the host's prefault, else pinned + prefault_pinned. */
static void test_prefault(void)
{
	static const struct {
		const char *what;
		int dom_prefault;
		bool devices, viommu, host, host_pinned, shared, want;
	} t[] = {
		{ "pinned, host defaults: pre-faulted", TRI_UNSET, true, false, false, true, true,
		  true },
		{ "pinned, prefault='no' in the domain: not", TRI_NO, true, false, false, true, true,
		  false },
		{ "pinned, prefault_pinned = no on the host: not", TRI_UNSET, true, false, false,
		  false, true, false },
		{ "pinned, a private file backend: not (a pre-fault needs shared)", TRI_UNSET, true,
		  false, false, true, false, false },
		{ "behind a vIOMMU: not", TRI_UNSET, true, true, false, true, true, false },
		{ "no device: not", TRI_UNSET, false, false, false, true, true, false },
		{ "no device, prefault = yes on the host: pre-faulted", TRI_UNSET, false, false, true,
		  true, true, true },
		{ "no device, prefault='yes' in the domain", TRI_YES, false, false, false, false,
		  false, true },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct domain d = { .prefault = t[i].dom_prefault, .viommu = t[i].viommu,
				    .nr_hostdevs = t[i].devices };

		tap_ok(hostdev_prefault(&d, t[i].host, t[i].host_pinned, t[i].shared) == t[i].want,
		       "prefault: %s", t[i].what);
	}
}

int main(void)
{
	test_cases();
	test_many();
	test_prefault();
	return tap_done();
}
