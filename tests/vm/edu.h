/* SPDX-License-Identifier: MIT */
/*
 * The QEMU edu device for the VM rig's VFIO checkers (vm_vfio_check,
 * vm_iommufd_check): BAR0 registers 0x80 DMA source, 0x88 dest, 0x90 count,
 * 0x98 command (bit 0 run, bit 1 device->RAM); its buffer sits at 0x40000
 * (QEMU docs/specs/edu). Static functions: each checker includes it once.
 */
#ifndef PREALLOC_VM_EDU_H
#define PREALLOC_VM_EDU_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/vfio.h>

#include "prealloc.h"

#define EDU_BUF 0x40000
#define XFER 2048	/* QEMU 7.2's edu aborts on a 4096-byte DMA */

static volatile uint8_t *bar0;

static void reg_write(unsigned int off, uint64_t v)
{
	*(volatile uint64_t *)(bar0 + off) = v;
}

/* One DMA: to_ram 0 copies from IOVA iova into the device's buffer, 1 back. */
static int edu_dma(uint64_t iova, int to_ram)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	reg_write(0x80, to_ram ? EDU_BUF : iova);
	reg_write(0x88, to_ram ? iova : EDU_BUF);
	reg_write(0x90, XFER);
	reg_write(0x98, 1 | (to_ram ? 2 : 0));
	for (int i = 0; i < 1000; i++) {	/* edu runs each DMA on a 100 ms timer */
		if (!(*(volatile uint32_t *)(bar0 + 0x98) & 1))
			return 0;
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

/* The device fd's BAR0 mapped, bus mastering on (vfio-pci leaves it off); dev, or -errno. */
static int edu_setup(int dev)
{
	struct vfio_region_info cfg = { .argsz = sizeof(cfg), .index = VFIO_PCI_CONFIG_REGION_INDEX };
	struct vfio_region_info bar = { .argsz = sizeof(bar), .index = VFIO_PCI_BAR0_REGION_INDEX };
	uint16_t cmd;

	if (dev < 0)
		return -errno;
	if (ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &cfg) < 0 ||
	    ioctl(dev, VFIO_DEVICE_GET_REGION_INFO, &bar) < 0)
		return -errno;
	if (pread(dev, &cmd, 2, (off_t)cfg.offset + 4) != 2)
		return -EIO;
	cmd |= 0x6;	/* memory space, bus master */
	if (pwrite(dev, &cmd, 2, (off_t)cfg.offset + 4) != 2)
		return -EIO;
	bar0 = mmap(NULL, bar.size, PROT_READ | PROT_WRITE, MAP_SHARED, dev, (off_t)bar.offset);
	if (bar0 == MAP_FAILED)
		return -errno;
	return dev;
}

static uint64_t iova_of(const struct prealloc_vfio_map_info *mi, uint64_t off)
{
	for (unsigned int i = 0; i < mi->nr_segments; i++)
		if (off - mi->segments[i].offset < mi->segments[i].length)
			return mi->segments[i].iova + (off - mi->segments[i].offset);
	return UINT64_MAX;
}

static int all_bytes(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return 0;
	return 1;
}

/*
 * A pattern written at base + a, copied by the device through a's IOVA into
 * its buffer and back through b's IOVA to base + b: 0 when the bytes match,
 * -EIO when they do not, -errno when a DMA failed.
 */
static int edu_copy(uint8_t *base, const struct prealloc_vfio_map_info *mi, uint64_t a, uint64_t b)
{
	int r;

	for (int i = 0; i < XFER; i++)
		base[a + i] = (uint8_t)(i * 7 + 3);
	memset(base + b, 0, XFER);
	r = edu_dma(iova_of(mi, a), 0);
	if (r == 0)
		r = edu_dma(iova_of(mi, b), 1);
	if (r == 0 && memcmp(base + a, base + b, XFER))
		r = -EIO;
	return r;
}

#endif
