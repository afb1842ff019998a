/* SPDX-License-Identifier: MIT */
/*
 * A minimal VMM on the KVM API that embeds libprealloc, the way a real one
 * would: its guest RAM is prepared by the library's crews of workers while the
 * VMM's own event loop keeps running, and the VMM learns that the RAM is
 * ready from a CQE in its own io_uring (no thread, no extra fd).
 *
 *   1. create the VM and a vCPU; the guest's code and stack get a memory
 *      slot of their own, so the RAM under test is untouched;
 *   2. prealloc_prepare_start(): guest RAM as a file on every node of the
 *      current policy, 2M hugepages where a 2M hugetlbfs is mounted and its
 *      pool has them (--grow-pools grows it), else 4k in /dev/shm;
 *   3. the event loop: a 1 ms timer (IORING_OP_TIMEOUT) on the same ring
 *      as the completion, the worst tick delay measured, until the end CQE;
 *   4. map the file, KVM_SET_USER_MEMORY_REGION, run the guest: 32-bit
 *      protected mode, flat segments; it checks every byte of the RAM is
 *      zero and reports the result and its TSC time through port I/O;
 *   5. prealloc_release(): the file and any pool growth go back.
 *
 * Where io_uring is forbidden (seccomp, kernel.io_uring_disabled) the same
 * loop runs on poll(2) with a timerfd, and the events come through the
 * job's eventfd. The path used is printed.
 *
 *   examples/kvm-vmm [--grow-pools] [MiB [DIR]]   MiB: default 64, at most 2048;
 *                                                 DIR: where the file goes (its fs
 *                                                 sets the page size)
 * Exit 0: RAM zero; 1: failure; 77: /dev/kvm is absent (printed why).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <prealloc.h>
#if HAVE_LIBURING
#include <liburing.h>
#endif

#define RAM_GPA 0x40000000u	/* guest RAM at 1 GiB: 32-bit addresses reach it */
#define CODE_SIZE 0x10000u	/* slot 0: code at 0, stack top at 64 KiB */
#define TICK_NS 1000000		/* the event loop's timer: 1 ms */
enum { UD_TICK = 1, UD_READY, UD_PROGRESS, UD_EVENTFD };

/*
 * The guest: rdtsc; scan the RAM for a non-zero dword (repe scasd with
 * eax = 0); rdtsc; out 0x11/0x12 = cycles low/high, 0x13 = address of the
 * first non-zero dword, 0x10 = 1 if one was found else 0; hlt.
 */
static uint8_t guest_code[] = {
	0x0f, 0x31,			/* rdtsc */
	0x89, 0xc3, 0x89, 0xd5,		/* mov ebx, eax; mov ebp, edx */
	0xbf, 0, 0, 0, 0,		/* mov edi, RAM_GPA        (patched at 7) */
	0xb9, 0, 0, 0, 0,		/* mov ecx, RAM bytes / 4  (patched at 12) */
	0x31, 0xc0, 0xfc,		/* xor eax, eax; cld */
	0xf3, 0xaf,			/* repe scasd */
	0x0f, 0x95, 0xc0, 0x89, 0xc6,	/* setnz al; mov esi, eax */
	0x0f, 0x31,			/* rdtsc */
	0x29, 0xd8, 0x19, 0xea,		/* sub eax, ebx; sbb edx, ebp */
	0x89, 0xd1,			/* mov ecx, edx */
	0x66, 0xba, 0x11, 0x00, 0xef,	/* out 0x11, eax */
	0x89, 0xc8,			/* mov eax, ecx */
	0x66, 0xba, 0x12, 0x00, 0xef,	/* out 0x12, eax */
	0x8d, 0x47, 0xfc,		/* lea eax, [edi - 4] */
	0x66, 0xba, 0x13, 0x00, 0xef,	/* out 0x13, eax */
	0x89, 0xf0,			/* mov eax, esi */
	0x66, 0xba, 0x10, 0x00, 0xef,	/* out 0x10, eax */
	0xf4,				/* hlt */
};

struct vm {
	int kvm, fd, vcpu;
	struct kvm_run *run;
	uint8_t *code;
};

struct loop {
	int64_t deadline;	/* the next tick, CLOCK_MONOTONIC ns */
	int64_t worst;		/* worst delay of a tick, ns */
	unsigned int ticks;
	int result;		/* the end event's res */
	bool done;
};

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A tick: how late it came, and the next deadline (ticks missed are skipped). */
static void tick(struct loop *l)
{
	int64_t t = now_ns();

	if (t - l->deadline > l->worst)
		l->worst = t - l->deadline;
	l->ticks++;
	while (l->deadline <= t)
		l->deadline += TICK_NS;
}

/* The EVENTFD path's events are the CQEs' (user_data, res): one handler. */
static void on_event(struct loop *l, uint64_t user_data, int res)
{
	if (user_data == UD_READY) {
		l->result = res;
		l->done = true;
	}
}

static void drain_eventfd(struct prealloc_job *job, struct loop *l)
{
	uint64_t n, user_data;
	int res;

	if (read(prealloc_job_eventfd(job), &n, sizeof(n)) < 0 && errno != EAGAIN)
		return;
	while (prealloc_job_event(job, &user_data, &res) == 1)
		on_event(l, user_data, res);
}

#if HAVE_LIBURING
static void arm_tick(struct io_uring *ring, struct loop *l, struct __kernel_timespec *ts)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	*ts = (struct __kernel_timespec){ l->deadline / 1000000000, l->deadline % 1000000000 };
	io_uring_prep_timeout(sqe, ts, 0, IORING_TIMEOUT_ABS);
	io_uring_sqe_set_data64(sqe, UD_TICK);
}

static void arm_eventfd(struct io_uring *ring, struct prealloc_job *job)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	io_uring_prep_poll_add(sqe, prealloc_job_eventfd(job), POLLIN);
	io_uring_sqe_set_data64(sqe, UD_EVENTFD);
}

/* Step 3 on the ring: ticks, progress, and the end CQE (or the eventfd, polled here). */
static void loop_uring(struct io_uring *ring, struct prealloc_job *job, struct loop *l)
{
	struct __kernel_timespec ts;
	struct io_uring_cqe *cqe;

	arm_tick(ring, l, &ts);
	if (prealloc_job_notify(job) == PREALLOC_NOTIFY_EVENTFD)
		arm_eventfd(ring, job);
	while (!l->done && io_uring_submit_and_wait(ring, 1) >= 0) {
		unsigned int head, seen = 0;

		io_uring_for_each_cqe(ring, head, cqe) {
			seen++;
			if (cqe->user_data == UD_TICK) {
				tick(l);
				arm_tick(ring, l, &ts);
			} else if (cqe->user_data == UD_EVENTFD) {
				drain_eventfd(job, l);
				arm_eventfd(ring, job);
			} else {
				on_event(l, cqe->user_data, cqe->res);
			}
		}
		io_uring_cq_advance(ring, seen);
	}
}
#endif

/* Step 3 without io_uring: poll(2) on a timerfd and the job's eventfd. */
static void loop_poll(struct prealloc_job *job, struct loop *l)
{
	struct itimerspec its = {
		.it_interval = { 0, TICK_NS },
		.it_value = { l->deadline / 1000000000, l->deadline % 1000000000 },
	};
	struct pollfd pfd[2] = {
		{ .fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC), .events = POLLIN },
		{ .fd = prealloc_job_eventfd(job), .events = POLLIN },
	};
	uint64_t n;

	timerfd_settime(pfd[0].fd, TFD_TIMER_ABSTIME, &its, NULL);
	while (!l->done && poll(pfd, 2, -1) >= 0) {
		if ((pfd[0].revents & POLLIN) && read(pfd[0].fd, &n, sizeof(n)) > 0)
			tick(l);
		if (pfd[1].revents & POLLIN)
			drain_eventfd(job, l);
	}
	close(pfd[0].fd);
}

/* Step 1: the VM, its code slot and one vCPU in flat 32-bit protected mode. */
static int vm_create(struct vm *vm)
{
	struct kvm_sregs sregs;
	struct kvm_regs regs = { .rflags = 2, .rip = 0, .rsp = CODE_SIZE };
	struct kvm_segment seg = { .base = 0, .limit = 0xffffffff, .selector = 1 << 3,
				   .present = 1, .type = 11, .db = 1, .s = 1, .g = 1 };
	int size;

	vm->fd = ioctl(vm->kvm, KVM_CREATE_VM, 0);
	vm->code = mmap(NULL, CODE_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (vm->fd < 0 || vm->code == MAP_FAILED)
		return -1;
	memcpy(vm->code, guest_code, sizeof(guest_code));
	struct kvm_userspace_memory_region slot0 = {
		.slot = 0, .guest_phys_addr = 0, .memory_size = CODE_SIZE,
		.userspace_addr = (uintptr_t)vm->code,
	};
	vm->vcpu = ioctl(vm->fd, KVM_CREATE_VCPU, 0);
	size = ioctl(vm->kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &slot0) < 0 || vm->vcpu < 0 || size <= 0)
		return -1;
	vm->run = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, vm->vcpu, 0);
	if (vm->run == MAP_FAILED || ioctl(vm->vcpu, KVM_GET_SREGS, &sregs) < 0)
		return -1;
	sregs.cs = seg;			/* code: execute/read, 32-bit, 4 GiB */
	seg.type = 3;			/* data: read/write */
	seg.selector = 2 << 3;
	sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = seg;
	sregs.cr0 |= 1;			/* PE; paging stays off: linear = physical */
	if (ioctl(vm->vcpu, KVM_SET_SREGS, &sregs) < 0 || ioctl(vm->vcpu, KVM_SET_REGS, &regs) < 0)
		return -1;
	return 0;
}

/* Step 4: the RAM in slot 1, then the guest until hlt. Returns 0 when every byte is zero. */
static int vm_check_ram(struct vm *vm, void *ram, uint64_t len)
{
	struct kvm_userspace_memory_region slot1 = {
		.slot = 1, .guest_phys_addr = RAM_GPA, .memory_size = len,
		.userspace_addr = (uintptr_t)ram,
	};
	uint32_t out[4] = { 0 };	/* ports 0x10..0x13 */
	uint32_t base = RAM_GPA, dwords = (uint32_t)(len / 4);
	double t0, tsc_hz;
	uint64_t c0;

	memcpy(vm->code + 7, &base, 4);
	memcpy(vm->code + 12, &dwords, 4);
	if (ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &slot1) < 0)
		return -1;
	for (;;) {
		if (ioctl(vm->vcpu, KVM_RUN, 0) < 0)
			return -1;
		if (vm->run->exit_reason == KVM_EXIT_HLT)
			break;
		if (vm->run->exit_reason != KVM_EXIT_IO || vm->run->io.port < 0x10 ||
		    vm->run->io.port > 0x13) {
			fprintf(stderr, "guest: unexpected exit %u\n", vm->run->exit_reason);
			return -1;
		}
		memcpy(&out[vm->run->io.port - 0x10], (uint8_t *)vm->run + vm->run->io.data_offset, 4);
	}
	/* The guest's TSC runs at the host's rate: measure it for 20 ms. */
	t0 = now_ns();
	c0 = __rdtsc();
	usleep(20000);
	tsc_hz = (double)(__rdtsc() - c0) / ((now_ns() - t0) / 1e9);
	uint64_t cycles = out[1] | (uint64_t)out[2] << 32;
	printf("guest: %llu MiB checked in %.2f ms: %s", (unsigned long long)(len >> 20),
	       cycles / tsc_hz * 1e3, out[0] ? "NOT zero" : "all zero");
	if (out[0])
		printf(" (first non-zero dword at offset %#x)", out[3] - RAM_GPA);
	printf("\n");
	return out[0] ? 1 : 0;
}

static const char *path_text(int path)
{
	switch (path) {
	case PREALLOC_NOTIFY_URING_REGISTERED:
		return "io_uring (MSG_RING sent ringless by io_uring_register)";
	case PREALLOC_NOTIFY_URING_PRIVATE_RING:
		return "io_uring (MSG_RING from the library's private ring)";
	default:
		return "eventfd";
	}
}

/* Admission runs in prealloc_prepare_start, in this thread. */
static int start_prepare(struct prealloc_ctx *ctx, struct prealloc_prepare_opts *po,
			 bool grow_pools, struct prealloc_job **ret_job,
			 struct prealloc_prepare_info *info)
{
	int r = prealloc_prepare_start(ctx, po, ret_job, info);

	if (r < 0 && info->step == PREALLOC_STEP_ADMISSION && !grow_pools &&
	    info->page_size == PREALLOC_PAGE_2M) {
		/* The 2M pool is spoken for (promised to other runs): 4k instead, saying why. */
		printf("2M pages: %s: using 4k\n", info->message);
		po->page_size = PREALLOC_PAGE_4K;
		r = prealloc_prepare_start(ctx, po, ret_job, info);
	}
	return r;
}

/* Steps 2 and 3: start preparing, keep the loop live until the end event. */
static int prepare_ram(struct prealloc_ctx *ctx, bool grow_pools, uint64_t len, const char *dir,
		       void *ring, struct prealloc_prepare_info *info)
{
	struct prealloc_completion done = {
		.size = sizeof(done),
		.ring_fd = -1,
		.user_data_end = UD_READY,
		.user_data_progress = UD_PROGRESS,
		.progress_step = 64 << 20,
	};
	struct prealloc_prepare_opts po = {
		.size = sizeof(po),
		.flags = grow_pools ? PREALLOC_PREPARE_GROW_POOLS : 0,
		.page_size = PREALLOC_PAGE_AUTO,	/* 2M where the pool has them, else 4k */
		.length = len,			/* no nodes: those of the current policy */
		.dir = dir,			/* NULL: the 2M hugetlbfs mount, else /dev/shm */
		.completion = &done,
	};
	struct prealloc_report rep = { .size = sizeof(rep) };
	struct loop l = { 0 };
	struct prealloc_job *job;
	int64_t t0 = now_ns();
	int r;

#if HAVE_LIBURING
	if (ring)
		done.ring_fd = ((struct io_uring *)ring)->ring_fd;
#else
	(void)ring;	/* built without liburing: no ring, the eventfd */
#endif
	r = start_prepare(ctx, &po, grow_pools, &job, info);
	if (r < 0) {
		fprintf(stderr, "prepare: %s\n", info->message[0] ? info->message : strerror(-r));
		return r;
	}
	printf("prealloc_prepare_start: returned in %.3f ms\n", (now_ns() - t0) / 1e6);
	l.deadline = now_ns() + TICK_NS;	/* the loop's ticks start now */
#if HAVE_LIBURING
	if (ring)
		loop_uring(ring, job, &l);
	else
#endif
		loop_poll(job, &l);
	r = prealloc_job_wait(job);	/* returns at once: the end event came */
	prealloc_job_report(job, &rep);
	prealloc_prepare_info(job, info);
	prealloc_job_free(job);
	printf("ram: %llu MiB of %s pages in %s%s%s\n", (unsigned long long)(len >> 20),
	       prealloc_page_name(info->page_size), info->path, info->page_reason[0] ? ": " : "",
	       info->page_reason);
	printf("completion: %s%s%s, end res %d\n", path_text(rep.notify),
	       rep.notify_error ? ", io_uring not used: " : "",
	       rep.notify_error ? strerror(-rep.notify_error) : "", l.result);
	printf("event loop: %u ticks of 1 ms in %.1f ms of preparation, worst delay %.3f ms\n",
	       l.ticks, (now_ns() - t0) / 1e6, l.worst / 1e6);
	return r < 0 ? r : l.result;
}

int main(int argc, char **argv)
{
	bool grow_pools = argc > 1 && !strcmp(argv[1], "--grow-pools");
	uint64_t len = (argc > 1 + grow_pools ? strtoull(argv[1 + grow_pools], NULL, 10) : 64) << 20;
	const char *dir = argc > 2 + grow_pools ? argv[2 + grow_pools] : NULL;
	struct prealloc_prepare_info info = { .size = sizeof(info) };
	struct vm vm = { .kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC) };
	struct prealloc_ctx *ctx = NULL;
	void *ring = NULL, *ram;
	int r, fd, ret = 1;

	if (vm.kvm < 0 && (errno == ENOENT || errno == ENODEV || errno == ENXIO)) {
		printf("no KVM here: open /dev/kvm: %s\n", strerror(errno));
		return 77;
	}
	if (vm.kvm < 0 || ioctl(vm.kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION ||
	    len == 0 || len > (UINT64_C(2) << 30) || vm_create(&vm) < 0) {
		fprintf(stderr, "kvm: %s\n", strerror(errno));
		return 1;
	}
#if HAVE_LIBURING
	/* The VMM's one ring; DEFER_TASKRUN: completions run when this loop waits. */
	static struct io_uring uring;
	r = io_uring_queue_init(8, &uring, IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
	if (r == -EINVAL)
		r = io_uring_queue_init(8, &uring, 0);	/* kernels before 6.1 */
	if (r == 0)
		ring = &uring;
	else
		printf("io_uring_setup: %s: the loop runs on poll(2)\n", strerror(-r));
#endif
	if (prealloc_ctx_new(&ctx) < 0 || prepare_ram(ctx, grow_pools, len, dir, ring, &info) < 0)
		goto out;
	/* Step 4: the prepared file is the guest's RAM. */
	fd = open(info.path, O_RDWR | O_CLOEXEC);
	ram = fd < 0 ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (fd >= 0)
		close(fd);
	if (ram != MAP_FAILED) {
		ret = vm_check_ram(&vm, ram, len) == 0 ? 0 : 1;
		munmap(ram, len);
	}
	/* Step 5: the file and the pool growth go back. */
	r = prealloc_release(ctx, info.path, NULL);
	printf("released %s: %s\n", info.path, r < 0 ? strerror(-r) : "ok");
	if (r < 0)
		ret = 1;
out:
#if HAVE_LIBURING
	if (ring)
		io_uring_queue_exit(ring);
#endif
	prealloc_ctx_free(ctx);
	return ret;
}
