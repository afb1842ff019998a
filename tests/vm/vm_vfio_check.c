/* SPDX-License-Identifier: MIT */
/*
 * vm_vfio_check BDF: prove, through libprealloc's VFIO API and the QEMU edu
 * device's DMA engine, that a DMA map is real.
 *
 *  1. a 64 MiB 2M-hugetlb region on nodes 0 and 1 is populated and mapped
 *     in one job, placed from IOVA 0xfe000000 so the MSI window splits it;
 *     VmLck grows by exactly the region;
 *  2. a pattern goes RAM (node 0, below the window) -> device -> RAM (node
 *     1, above it) through the IOVAs, and the bytes match;
 *  3. the pinned region is cleared in place by each node's workers, the
 *     mapping kept; the device then reads zeros through the IOVAs;
 *  4. after unmap VmLck is back and a DMA to the old IOVA writes nothing;
 *
 * and before them, IOVAs already taken: a map failing halfway unmaps what it
 * had mapped and nothing else, and a handle never places over its own maps.
 * Then the memlock admission counts what is pinned already: without
 * CAP_IPC_LOCK and with RLIMIT_MEMLOCK 10 MiB, a second 8 MiB map made while
 * a first one pins 8 MiB fits on its own but not with the first: refused
 * before any pin (VmLck unchanged), and it maps once the first is gone.
 * With FILE (a file the CLI prepared), after them: one region of it mapped
 * through two handles on one container; `prealloc rm FILE` is refused while
 * either maps it, also after the other unmaps or fails a map.
 *
 * edu (QEMU docs/specs/edu): BAR0 registers 0x80 DMA source, 0x88 dest,
 * 0x90 count, 0x98 command (bit 0 run, bit 1 device->RAM); its buffer sits
 * at 0x40000. Under TCG this proves the mapping and the data path, not the
 * store fences of the clear kernels. One line per step; exit 0 or 1.
 *
 * Usage: vm_vfio_check BDF [FILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/vfio.h>

#include "edu.h"
#include "prealloc.h"

#define M (UINT64_C(1) << 20)
#define REGION (64 * M)

static int failures;

static void check(int ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	printf("vfio: %s %s", ok ? "ok" : "FAIL", what);
	va_start(ap, fmt);
	if (fmt[0]) {
		printf(": ");
		vprintf(fmt, ap);
	}
	va_end(ap);
	printf("\n");
	fflush(stdout);
	failures += !ok;
}

static long vm_kib(const char *key)
{
	char line[256], fmt[32];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	snprintf(fmt, sizeof(fmt), "%s: %%ld kB", key);
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

/* ---- the edu device ------------------------------------------------------ */

/* ---- the proof -------------------------------------------------------------- */

/* A pattern from node 0 (below the MSI window) to node 1 (above it) through the device. */
static void copy_through(uint8_t *base, const struct prealloc_vfio_map_info *mi)
{
	uint64_t a = 1 * M, b = 40 * M;
	int r = edu_copy(base, mi, a, b);

	check(r == 0, "dma copy",
	      "%d bytes RAM@iova 0x%llx (node 0) -> edu -> RAM@iova 0x%llx (node 1) %s", XFER,
	      (unsigned long long)iova_of(mi, a), (unsigned long long)iova_of(mi, b),
	      r == -EIO ? "MISMATCH" : r ? strerror(-r) : "match");
}

/* Clear the pinned region in place, mapping kept; the device must read zeros. */
static void clear_pinned(struct prealloc_region *reg, uint8_t *base,
			 const struct prealloc_vfio_map_info *mi)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_CLEAR };
	struct prealloc_report rep = { .size = sizeof(rep) };
	uint64_t scratch = 60 * M, from[2] = { 1 * M, 40 * M };
	int r;

	memset(base, 0xa5, REGION);
	r = prealloc_run(reg, &jo, &rep);
	check(r == 0 && rep.nr_nodes == 2, "clear pinned", "%s by the %s kernel on %u nodes",
	      r ? strerror(-r) : "cleared in place", rep.clear_kernel, rep.nr_nodes);
	for (int i = 0; i < 2; i++) {
		memset(base + scratch, 0xff, XFER);
		r = edu_dma(iova_of(mi, from[i]), 0);
		if (r == 0)
			r = edu_dma(iova_of(mi, scratch), 1);
		check(r == 0 && all_bytes(base + scratch, XFER, 0), "device reads zeros",
		      "node %d, iova 0x%llx: %s", i, (unsigned long long)iova_of(mi, from[i]),
		      r ? strerror(-r) : all_bytes(base + scratch, XFER, 0) ? "all zero" : "NOT zero");
	}
}

static int map_region(struct prealloc_ctx *ctx, struct prealloc_vfio *v, struct prealloc_region **reg,
		      struct prealloc_vfio_map_info *mi)
{
	static const int nodes[] = { 0, 1 };
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MEMFD,
					   .page_size = 2 * M, .length = REGION, .nr_nodes = 2,
					   .nodes = nodes };
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo), .iova = 0xfe000000 };
	long before = vm_kib("VmLck"), after;
	int r;

	r = prealloc_region_new(ctx, &ro, reg);
	if (r < 0)
		return r;
	r = prealloc_vfio_map(v, *reg, &jo, &mo, mi, NULL);
	after = vm_kib("VmLck");
	check(r == 0, "populate + map, one job", "%s; %u segments, %u mappings, %.6f s in MAP_DMA",
	      r ? mi->message : "done", mi->nr_segments, mi->mappings, mi->seconds);
	for (unsigned int i = 0; i < mi->nr_segments; i++)
		printf("vfio:   segment iova 0x%llx +%llu MiB <- offset %llu MiB\n",
		       (unsigned long long)mi->segments[i].iova,
		       (unsigned long long)(mi->segments[i].length / M),
		       (unsigned long long)(mi->segments[i].offset / M));
	check(r == 0 && mi->nr_segments == 2 && mi->segments[1].iova == 0xff000000, "msi split",
	      "below and above 0xfee00000");
	check(after - before == (long)(REGION >> 10), "pinned", "VmLck %ld -> %ld kB (VmPin %ld kB)",
	      before, after, vm_kib("VmPin"));
	return r;
}

/* A mapping the caller made on the container itself, as a VMM maps its own RAM. */
static int raw_map(struct prealloc_vfio *v, void *p, uint64_t iova, uint64_t len, bool map)
{
	struct vfio_iommu_type1_dma_map m = { .argsz = sizeof(m), .vaddr = (uintptr_t)p,
					       .iova = iova, .size = len,
					       .flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE };
	struct vfio_iommu_type1_dma_unmap u = { .argsz = sizeof(u), .iova = iova, .size = len };
	int fd = prealloc_vfio_container_fd(v);

	if (map)
		return ioctl(fd, VFIO_IOMMU_MAP_DMA, &m) < 0 ? -errno : 0;
	return ioctl(fd, VFIO_IOMMU_UNMAP_DMA, &u) < 0 ? -errno : 0;
}

static int node0_region(struct prealloc_ctx *ctx, uint64_t len, struct prealloc_region **ret)
{
	static const int node0[] = { 0 };
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_MEMFD,
					   .page_size = 2 * M, .length = len, .nr_nodes = 1,
					   .nodes = node0 };

	return prealloc_region_new(ctx, &ro, ret);
}

/*
 * IOVAs already taken. (1) A map that fails halfway gives back what it had
 * mapped and nothing else: the caller's own 2 MiB at 0xff000000, then a 16
 * MiB region placed from 0xfe000000 maps 14 MiB below the MSI window and
 * collides above it (MAP_DMA -EEXIST); VmLck must hold the caller's 2 MiB
 * only, and once that is gone the same IOVAs take the region whole.
 * (2) Regions this handle mapped are not placed over: a second region from
 * the same IOVA lands after the first, and a fixed IOVA on the first is
 * refused before any pin.
 */
static void taken_iovas(struct prealloc_ctx *ctx, struct prealloc_vfio *v)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_vfio_map_opts from = { .size = sizeof(from), .iova = 0xfe000000 };
	struct prealloc_vfio_map_opts at = { .size = sizeof(at), .iova = 0xff000000,
					     .flags = PREALLOC_VFIO_MAP_FIXED };
	struct prealloc_vfio_map_info mb = { .size = sizeof(mb) }, mc = { .size = sizeof(mc) };
	struct prealloc_region *b = NULL, *c = NULL;
	long before = vm_kib("VmLck"), mid;
	void *own = mmap(NULL, 2 * M, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	int r;

	r = own == MAP_FAILED ? -errno : raw_map(v, own, 0xff000000, 2 * M, true);
	mid = vm_kib("VmLck");
	check(r == 0 && mid - before == 2048, "caller's own mapping", "%s; VmLck %ld -> %ld kB",
	      r ? strerror(-r) : "2 MiB at 0xff000000", before, mid);
	r = node0_region(ctx, 16 * M, &b);
	if (r == 0)
		r = prealloc_vfio_map(v, b, &jo, &from, &mb, NULL);
	check(r < 0 && mb.step == PREALLOC_VFIO_STEP_MAP && vm_kib("VmLck") == mid,
	      "failed map gives back its own", "%s; VmLck %ld kB, want %ld",
	      r ? mb.message : "MAPPED over another mapping", vm_kib("VmLck"), mid);
	if (own != MAP_FAILED) {
		check(raw_map(v, own, 0xff000000, 2 * M, false) == 0, "caller's mapping intact",
		      "%s", "unmapped by its owner");
		munmap(own, 2 * M);
	}
	r = b ? prealloc_vfio_map(v, b, &jo, &from, &mb, NULL) : -EINVAL;
	check(r == 0 && vm_kib("VmLck") - before == 16 * 1024, "same iovas after the failure",
	      "%s; VmLck %ld kB", r ? mb.message : "16 MiB mapped whole", vm_kib("VmLck"));
	r = node0_region(ctx, 2 * M, &c);
	if (r == 0)
		r = prealloc_vfio_map(v, c, &jo, &from, &mc, NULL);
	check(r == 0 && mc.nr_segments == 1 && mc.segments[0].iova == 0xff200000,
	      "second region placed after the first", "%s at 0x%llx", r ? mc.message : "mapped",
	      (unsigned long long)mc.segments[0].iova);
	if (c && r == 0)
		prealloc_vfio_unmap(v, c);
	r = c ? prealloc_vfio_map(v, c, &jo, &at, &mc, NULL) : -EINVAL;
	check(r == -ERANGE && mc.step == PREALLOC_VFIO_STEP_FIT && vm_kib("VmLck") - before == 16 * 1024,
	      "fixed over a mapped region refused", "%s", r ? mc.message : "MAPPED over it");
	if (b)
		prealloc_vfio_unmap(v, b);
	prealloc_region_free(c);
	prealloc_region_free(b);
	check(vm_kib("VmLck") == before, "taken iovas: all unmapped", "VmLck %ld kB, want %ld",
	      vm_kib("VmLck"), before);
}

/* `prealloc rm path` run as a person would: its exit status, its stderr in msg. */
static int rm_cli(const char *path, char *msg, size_t len)
{
	int out[2], status;
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	msg[0] = '\0';
	if (pipe(out) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		dup2(out[1], 2);
		close(out[0]);
		close(out[1]);
		execlp("prealloc", "prealloc", "rm", path, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	while (pid > 0 && got + 1 < len && (n = read(out[0], msg + got, len - 1 - got)) > 0)
		got += (size_t)n;
	msg[got] = '\0';
	if (got && msg[got - 1] == '\n')
		msg[got - 1] = '\0';
	close(out[0]);
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* rm must be refused with exit 4, naming this process as the one that pins the file. */
static void rm_refused(const char *path, const char *when)
{
	char msg[512], pid[32];
	int rc = rm_cli(path, msg, sizeof(msg));

	snprintf(pid, sizeof(pid), "pid %d", (int)getpid());
	check(rc == 4 && strstr(msg, "DMA-mapped") && strstr(msg, pid) && access(path, F_OK) == 0,
	      "rm refused", "%s: exit %d (want 4), file %s: %s", when, rc,
	      access(path, F_OK) == 0 ? "kept" : "REMOVED", msg);
}

/*
 * One region of a prepared file mapped through two handles on one
 * container (a handle on the caller's fd: a VMM's second user of its
 * container). Each mapping holds its own lock on the file, so that `prealloc
 * rm` stays refused while either maps it: after the other unmaps, and after
 * a map of the other fails (MAP_DMA -EEXIST on an IOVA the first holds).
 * Once neither maps it, rm removes it.
 */
static void shared_file(struct prealloc_ctx *ctx, struct prealloc_vfio *a, const char *path)
{
	struct prealloc_vfio_opts bo = { .size = sizeof(bo), .flags = PREALLOC_VFIO_CALLER_FD,
					 .fd = prealloc_vfio_container_fd(a) };
	struct prealloc_vfio_map_opts at_a = { .size = sizeof(at_a), .iova = UINT64_C(0x100000000),
					       .flags = PREALLOC_VFIO_MAP_FIXED };
	struct prealloc_vfio_map_opts at_b = { .size = sizeof(at_b), .iova = UINT64_C(0x180000000),
					       .flags = PREALLOC_VFIO_MAP_FIXED };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_vfio_info bi = { .size = sizeof(bi) };
	struct prealloc_region *reg = NULL;
	struct prealloc_vfio *b = NULL;
	char msg[512];
	struct stat st;
	int r, rc;

	r = stat(path, &st) < 0 ? -errno : 0;
	struct prealloc_region_opts ro = { .size = sizeof(ro), .backing = PREALLOC_BACKING_FILE,
					   .flags = PREALLOC_REGION_REUSE |
						    PREALLOC_REGION_ADOPT_PLACEMENT,
					   .length = (uint64_t)st.st_size, .path = path };
	if (r == 0)
		r = prealloc_region_new(ctx, &ro, &reg);
	if (r == 0)
		r = prealloc_vfio_open(ctx, &bo, &b, &bi);
	if (r == 0 && (r = prealloc_vfio_map(a, reg, NULL, &at_a, &mi, NULL)) == 0)
		r = prealloc_vfio_map(b, reg, NULL, &at_b, &mi, NULL);
	check(r == 0, "shared file: two handles map it", "%s at 0x100000000 and 0x180000000",
	      r ? (mi.message[0] ? mi.message : bi.message[0] ? bi.message : strerror(-r)) : path);
	if (r < 0)
		goto out;
	rm_refused(path, "both handles map it");
	r = prealloc_vfio_unmap(a, reg);
	check(r == 0, "shared file: first handle unmapped", "%s", r ? strerror(-r) : "");
	rm_refused(path, "the second handle still maps it");

	r = prealloc_vfio_map(a, reg, NULL, &at_b, &mi, NULL);
	check(r < 0 && mi.step == PREALLOC_VFIO_STEP_MAP, "shared file: a colliding map fails",
	      "%s", r ? mi.message : "MAPPED over the second handle's IOVA");
	if (r == 0)
		prealloc_vfio_unmap(a, reg);
	rm_refused(path, "after the first handle's failed map, the second still maps it");

	r = prealloc_vfio_unmap(b, reg);
	check(r == 0, "shared file: second handle unmapped", "%s", r ? strerror(-r) : "");
	prealloc_region_free(reg);
	reg = NULL;
	rc = rm_cli(path, msg, sizeof(msg));
	check(rc == 0 && access(path, F_OK) < 0, "shared file: rm once neither maps it",
	      "exit %d, file %s %s", rc, access(path, F_OK) < 0 ? "gone" : "STILL THERE", msg);
out:
	prealloc_vfio_close(b);
	prealloc_region_free(reg);
}

/* One node-0 region of len mapped (populated in the map's job); the map's result. */
static int map_small(struct prealloc_ctx *ctx, struct prealloc_vfio *v, uint64_t len,
		     struct prealloc_region **reg, struct prealloc_vfio_map_info *mi)
{
	struct prealloc_job_opts jo = { .size = sizeof(jo), .op = PREALLOC_OP_POPULATE };
	struct prealloc_vfio_map_opts mo = { .size = sizeof(mo) };
	int r = node0_region(ctx, len, reg);

	*mi = (struct prealloc_vfio_map_info){ .size = sizeof(*mi) };
	return r < 0 ? r : prealloc_vfio_map(v, *reg, &jo, &mo, mi, NULL);
}

/*
 * The memlock admission counts memory this process has pinned already. In
 * a child without CAP_IPC_LOCK (uid 65534) and RLIMIT_MEMLOCK 10 MiB: 8 MiB
 * maps; a second 8 MiB, fitting alone, is refused at the MEMLOCK step with
 * nothing pinned (VmLck still 8 MiB); after the first unmaps, it maps.
 */
static void memlock_total(struct prealloc_ctx *ctx, struct prealloc_vfio *v)
{
	struct rlimit rl = { .rlim_cur = 10 * M, .rlim_max = 10 * M };
	struct prealloc_vfio_map_info mi;
	struct prealloc_region *a = NULL, *b = NULL;
	pid_t pid = fork();
	int st, r;

	if (pid == 0) {
		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0 || setgroups(0, NULL) < 0 ||
		    setgid(65534) < 0 || setuid(65534) < 0) {
			check(0, "memlock total", "cannot drop to uid 65534: %s", strerror(errno));
			_exit(1);
		}
		r = map_small(ctx, v, 8 * M, &a, &mi);
		check(r == 0 && vm_kib("VmLck") == 8 * 1024, "memlock total: 8 MiB under 10 MiB maps",
		      "%s, VmLck %ld kB", r ? mi.message : "mapped", vm_kib("VmLck"));
		r = map_small(ctx, v, 8 * M, &b, &mi);
		check(r == -ENOMEM && mi.step == PREALLOC_VFIO_STEP_MEMLOCK &&
		      mi.locked_now == 8 * M && vm_kib("VmLck") == 8 * 1024,
		      "memlock total: a second 8 MiB, fitting alone, refused before any pin",
		      "%d at step %d (%s), locked_now %llu, VmLck %ld kB", r, mi.step, mi.message,
		      (unsigned long long)mi.locked_now, vm_kib("VmLck"));
		prealloc_region_free(b);
		b = NULL;
		prealloc_vfio_unmap(v, a);
		r = map_small(ctx, v, 8 * M, &b, &mi);
		check(r == 0, "memlock total: it maps once the first is unmapped", "%s",
		      r ? mi.message : "mapped");
		prealloc_vfio_unmap(v, b);
		prealloc_region_free(b);
		prealloc_region_free(a);
		fflush(stdout);
		_exit(failures ? 1 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		failures++;
}

int main(int argc, char **argv)
{
	struct prealloc_vfio_opts vo = { .size = sizeof(vo) };
	struct prealloc_vfio_info vi = { .size = sizeof(vi) };
	struct prealloc_vfio_map_info mi = { .size = sizeof(mi) };
	struct prealloc_region *reg = NULL;
	struct prealloc_vfio *v;
	struct prealloc_ctx *ctx;
	uint8_t *base;
	long before;
	int r;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: %s BDF [FILE]\n", argv[0]);
		return 1;
	}
	vo.device = argv[1];
	if (prealloc_ctx_new(&ctx) < 0 || prealloc_vfio_open(ctx, &vo, &v, &vi) < 0) {
		printf("vfio: FAIL open %s: %s\n", argv[1], vi.message);
		return 1;
	}
	check(1, "open", "group %d, type %d, page sizes 0x%llx, %u IOVA ranges, dma_avail %u",
	      vi.group, vi.iommu_type, (unsigned long long)vi.pgsize_bitmap, vi.nr_ranges,
	      vi.dma_avail);
	for (unsigned int i = 0; i < vi.nr_ranges; i++)
		printf("vfio:   usable iova 0x%llx-0x%llx\n", (unsigned long long)vi.ranges[i].start,
		       (unsigned long long)vi.ranges[i].last);
	r = edu_setup(ioctl(prealloc_vfio_group_fd(v), VFIO_GROUP_GET_DEVICE_FD, argv[1]));
	check(r >= 0, "edu", "%s", r < 0 ? strerror(-r) : "BAR0 mapped, bus master on");
	if (r >= 0)
		taken_iovas(ctx, v);
	before = vm_kib("VmLck");
	if (r < 0 || map_region(ctx, v, &reg, &mi) < 0)
		return 1;
	base = prealloc_region_addr(reg);
	copy_through(base, &mi);
	clear_pinned(reg, base, &mi);

	r = prealloc_vfio_unmap(v, reg);
	check(r == 0 && vm_kib("VmLck") == before, "unmap", "VmLck back to %ld kB", vm_kib("VmLck"));
	memset(base + 1 * M, 0x5a, XFER);
	r = edu_dma(iova_of(&mi, 1 * M), 1);	/* the device buffer holds zeros */
	check(r == 0 && all_bytes(base + 1 * M, XFER, 0x5a), "old iova blocked",
	      "a DMA to 0x%llx after unmap %s", (unsigned long long)iova_of(&mi, 1 * M),
	      all_bytes(base + 1 * M, XFER, 0x5a) ? "wrote nothing" : "WROTE MEMORY");
	prealloc_region_free(reg);
	memlock_total(ctx, v);
	if (argc == 3)
		shared_file(ctx, v, argv[2]);
	prealloc_vfio_close(v);
	prealloc_ctx_free(ctx);
	return failures ? 1 : 0;
}
