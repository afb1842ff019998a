/* SPDX-License-Identifier: MIT */
/*
 * A hostile holder of a warm file (docs/warm.md, "Threat model"), for
 * test-warm-isolation.sh. It writes its own bytes into the file it was
 * handed, then keeps a way to the file's pages that neither /proc/PID/fd
 * nor /proc/PID/maps shows, closes its descriptor and unmaps:
 *
 *   scm       its fd sent over an AF_UNIX socketpair to itself, never received
 *   splice    64 KiB of the file spliced into a pipe (tmpfs; hugetlbfs has none)
 *   vmsplice  64 KiB of a shared mapping of the file vmspliced into a pipe
 *   fd        a plain open fd (seen by /proc only with CAP_SYS_PTRACE)
 *   map       the mapping kept (a VMM that gives its file back early)
 *
 * or does to its own file what test-warm-holder.sh checks the warm pool
 * against, keeping only an O_PATH descriptor (no lease sees it) where it
 * keeps anything:
 *
 *   grow      the file grown to 8 times its size, every page faulted
 *   keep      8 MiB past its end allocated, its size kept (FALLOC_FL_KEEP_SIZE)
 *   mappast   a writable shared mapping 8 MiB past its end, never faulted
 *             there (hugetlbfs: reserved, and its size follows the mapping)
 *   mapro     the same read-only: reserved past the end, its size unchanged
 *   late      its fd kept (the give finds it in use) until a first line on
 *             stdin; then grown as grow, its fd closed, "grown" printed
 *   link=PATH a hard link at PATH, its own; then it exits (no verdict)
 *   lease     a read lease (F_SETLEASE F_RDLCK) on an fd it keeps, SIGIO
 *             ignored: every open for writing waits fs.lease-break-time
 *
 * It prints "ready" once it holds the reference, waits for a line on stdin,
 * then reads through the reference and prints one verdict line:
 *   "leak"   the marker (argv[3]) is there: another holder's bytes reached it
 *   "own"    its own bytes, nothing else
 *   "zero"   zeroes only (its pages were released)
 *   "intact" (map) every byte of its mapping is still its own pattern
 *   "lost"   (map) its mapping changed under it
 *
 *   warm-attacker hold PATH MARKER MODE
 *   warm-attacker write PATH TEXT      (through a shared mapping, at offset 0)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define WINDOW (64u << 10)
#define OWN 0xa5

static void die(const char *what)
{
	fprintf(stderr, "warm-attacker: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void *map_file(int fd, size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		die("mmap");
	return p;
}

/* What buf holds: the marker, its own pattern only, or zeroes only. */
static const char *verdict(const unsigned char *buf, size_t len, const char *marker)
{
	bool own = false, zero = true;

	if (memmem(buf, len, marker, strlen(marker)))
		return "leak";
	for (size_t i = 0; i < len; i++) {
		own |= buf[i] == OWN;
		zero &= buf[i] == 0;
	}
	return zero ? "zero" : own ? "own" : "other";
}

static int send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 'x';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1 || !(c = CMSG_FIRSTHDR(&msg)) || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

#define PAST (8u << 20)

/* What a holder does to its own file: grow, keep, mappast, mapro, lease. */
static int own_file(int fd, size_t len, const char *mode)
{
	bool ro = !strcmp(mode, "mapro");
	unsigned char *p;

	if (!strcmp(mode, "grow")) {
		if (ftruncate(fd, (off_t)len * 8) < 0)
			die("ftruncate");
		p = map_file(fd, len * 8);
		memset(p + len, OWN, len * 7);
		munmap(p, len * 8);
	} else if (!strcmp(mode, "keep")) {
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)len, PAST) < 0)
			die("fallocate");
	} else if (ro || !strcmp(mode, "mappast")) {
		p = mmap(NULL, len + PAST, ro ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED,
			 fd, 0);
		if (p == MAP_FAILED)
			die("mmap past the end");
		munmap(p, len + PAST);
	} else {
		return -1;
	}
	return 0;
}

/* "ready", then a line on stdin: 0, or -1 at its end. */
static int wait_go(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	return fgets(line, sizeof(line), stdin) ? 0 : -1;
}

/* A read lease on a fresh read-only fd of path, kept; its breaks ignored. */
static void take_lease(const char *path)
{
	int fd = open(path, O_RDONLY);

	signal(SIGIO, SIG_IGN);
	if (fd < 0 || fcntl(fd, F_SETLEASE, F_RDLCK) < 0)
		die("F_SETLEASE F_RDLCK");
}

static int hold(const char *path, const char *marker, const char *mode)
{
	static unsigned char buf[WINDOW];
	int fd = open(path, O_RDWR), sv[2] = { -1, -1 }, pipefd[2] = { -1, -1 };
	unsigned char *map;
	struct stat st;
	size_t len;
	char line[64];

	if (fd < 0)
		die("open");
	if (fstat(fd, &st) < 0)
		die("fstat");
	len = (size_t)st.st_size;
	map = map_file(fd, len);
	memset(map, OWN, len);	/* its own bytes, everywhere */
	if (!strcmp(mode, "scm")) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0 || send_fd(sv[0], fd) < 0)
			die("SCM_RIGHTS");
	} else if (!strcmp(mode, "splice") || !strcmp(mode, "vmsplice")) {
		struct iovec iov = { .iov_base = map, .iov_len = WINDOW };
		loff_t off = 0;
		ssize_t n;

		if (pipe(pipefd) < 0 || fcntl(pipefd[1], F_SETPIPE_SZ, 2 * WINDOW) < 0)
			die("pipe");
		n = !strcmp(mode, "splice") ? splice(fd, &off, pipefd[1], NULL, WINDOW, 0)
					    : vmsplice(pipefd[1], &iov, 1, 0);
		if (n != (ssize_t)WINDOW)
			die(mode);
	} else if (!strncmp(mode, "link=", 5)) {
		if (link(path, mode + 5) < 0)
			die("link");
		printf("ready\n");
		return 0;
	} else if (!strcmp(mode, "lease")) {
		munmap(map, len);
		close(fd);
		take_lease(path);
		return wait_go() ? 2 : (printf("own\n"), 0);
	} else if (!strcmp(mode, "late")) {
		/* The O_PATH fd first: the give removes the path. */
		munmap(map, len);
		if (open(path, O_PATH) < 0 || wait_go() < 0 || own_file(fd, len, "grow") < 0)
			die("late growth");
		close(fd);
		printf("grown\n");
		fflush(stdout);
		return wait_go() ? 2 : (printf("own\n"), 0);
	} else if (own_file(fd, len, mode) == 0) {
		/* Only the file kept, by a way no lease sees: never its pages. */
		munmap(map, len);
		if (open(path, O_PATH) < 0)
			die("O_PATH");
		close(fd);
		return wait_go() ? 2 : (printf("own\n"), 0);
	} else if (strcmp(mode, "fd") && strcmp(mode, "map")) {
		fprintf(stderr, "warm-attacker: unknown mode %s\n", mode);
		return 2;
	}
	if (strcmp(mode, "map"))
		munmap(map, len);
	if (strcmp(mode, "fd"))
		close(fd);
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 2;
	if (!strcmp(mode, "map")) {
		for (size_t i = 0; i < len; i++)
			if (map[i] != OWN) {
				printf("lost\n");
				return 0;
			}
		printf("intact\n");
		return 0;
	}
	if (!strcmp(mode, "scm") && (fd = recv_fd(sv[1])) < 0)
		die("recvmsg");
	if (pipefd[0] >= 0) {
		size_t got = 0;
		ssize_t n;

		while (got < WINDOW && (n = read(pipefd[0], buf + got, WINDOW - got)) > 0)
			got += (size_t)n;
		len = got;
	} else {
		/* Through the fd: the whole file, a window at a time (hugetlbfs reads too). */
		const char *v = "zero";

		for (off_t off = 0; off < st.st_size; off += WINDOW) {
			ssize_t n = pread(fd, buf, WINDOW, off);
			const char *w;

			if (n <= 0)
				break;
			w = verdict(buf, (size_t)n, marker);
			if (!strcmp(w, "leak") || (!strcmp(w, "own") && strcmp(v, "leak")) ||
			    (!strcmp(w, "other") && !strcmp(v, "zero")))
				v = w;
		}
		printf("%s\n", v);
		return 0;
	}
	printf("%s\n", verdict(buf, len, marker));
	return 0;
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_RDWR);
	struct stat st;
	char *map;

	if (fd < 0 || fstat(fd, &st) < 0)
		die("open");
	map = map_file(fd, (size_t)st.st_size);
	memcpy(map, text, strlen(text));
	munmap(map, (size_t)st.st_size);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "hold"))
		return hold(argv[2], argv[3], argv[4]);
	if (argc == 4 && !strcmp(argv[1], "write"))
		return write_text(argv[2], argv[3]);
	fprintf(stderr, "usage: warm-attacker hold PATH MARKER MODE | write PATH TEXT\n");
	return 2;
}
