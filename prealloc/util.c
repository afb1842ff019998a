/* SPDX-License-Identifier: MIT */
/* Small helpers: logging, sized-struct ABI, sysfs reads, size parsing. */
#include <ctype.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "config.h"

EXPORT const char *prealloc_version(void)
{
	return PREALLOC_VERSION;
}

void ctx_log(struct prealloc_ctx *ctx, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!ctx || !ctx->log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ctx->log_fn(ctx->log_userdata, level, msg);
}

int copy_sized_in(void *dst, size_t dst_size, const void *src)
{
	size_t src_size = *(const size_t *)src;

	if (src_size < sizeof(size_t))
		return -EINVAL;
	if (src_size > dst_size) {
		const uint8_t *tail = (const uint8_t *)src + dst_size;

		for (size_t i = 0; i < src_size - dst_size; i++)
			if (tail[i])
				return -E2BIG;
		src_size = dst_size;
	}
	memset(dst, 0, dst_size);
	memcpy(dst, src, src_size);
	*(size_t *)dst = dst_size;
	return 0;
}

void copy_sized_out(void *dst, const void *src, size_t src_size)
{
	size_t dst_size = *(size_t *)dst;

	if (dst_size < sizeof(size_t))
		return;
	memcpy((uint8_t *)dst + sizeof(size_t), (const uint8_t *)src + sizeof(size_t),
	       MIN(dst_size, src_size) - sizeof(size_t));
}

int fd_write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int open_no_lease_wait(int dir_fd, const char *path, int flags)
{
	int fd = openat(dir_fd, path, flags | O_NONBLOCK), fl;

	if (fd < 0)
		return -errno;
	/* O_NONBLOCK was for the open alone. */
	fl = fcntl(fd, F_GETFL);
	if (!(flags & O_NONBLOCK) && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
		fl = -errno;
		close(fd);
		return fl;
	}
	return fd;
}

int read_file_str(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	return (int)n;
}

int read_file_u64(const char *path, uint64_t *ret)
{
	char buf[64], *end;
	int r;

	r = read_file_str(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	if (errno || end == buf)
		return -EINVAL;
	return 0;
}

int parse_cpulist(const char *s, cpu_set_t *ret)
{
	CPU_ZERO(ret);
	while (*s) {
		char *end;
		long a, b;

		while (*s == ',' || isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		a = strtol(s, &end, 10);
		if (end == s || a < 0)
			return -EINVAL;
		b = a;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a)
				return -EINVAL;
			s = end;
		}
		for (long c = a; c <= b && c < CPU_SETSIZE; c++)
			CPU_SET(c, ret);
	}
	return 0;
}

EXPORT const char *prealloc_page_name(uint64_t page)
{
	switch (page) {
	case PREALLOC_PAGE_THP:
		return "thp";
	case PREALLOC_PAGE_4K:
		return "4k";
	case PREALLOC_PAGE_2M:
		return "2M";
	case PREALLOC_PAGE_1G:
		return "1G";
	case PREALLOC_PAGE_AUTO:
		return "auto";
	default:
		return "?";
	}
}

/*
 * The fraction of "1.5G" at p ('.'): its first 18 digits into *ret_frac,
 * their count into *ret_digits, and whether a later digit is not 0
 * (*ret_more: rounded up); p moved past them. -EINVAL with no digit.
 */
static int parse_fraction(const char **p, uint64_t *ret_frac, unsigned int *ret_digits,
			  bool *ret_more)
{
	const char *q = *p + 1;
	uint64_t f = 0;
	unsigned int n = 0;

	*ret_more = false;
	for (; isdigit((unsigned char)*q); q++, n++)
		if (n < 18)
			f = f * 10 + (uint64_t)(*q - '0');
		else if (*q != '0')
			*ret_more = true;
	if (!n)
		return -EINVAL;
	*ret_frac = f;
	*ret_digits = MIN(n, 18u);
	*p = q;
	return 0;
}

/* K, M, G, T (each with B or iB, all binary), B alone, or nothing: its multiple, or 0. */
static uint64_t parse_unit(const char *p)
{
	static const char units[] = "KMGT";
	const char *u = *p ? strchr(units, toupper((unsigned char)*p)) : NULL;

	if (!*p)
		return 1;
	if (toupper((unsigned char)*p) == 'B')
		return p[1] ? 0 : 1;
	if (!u)
		return 0;
	p++;
	if (*p && strcasecmp(p, "ib") && strcasecmp(p, "b"))
		return 0;
	return UINT64_C(1) << (10 * (u - units + 1));
}

EXPORT int prealloc_parse_size(const char *s, uint64_t *ret_bytes)
{
	uint64_t value = 0, mult, frac = 0, scale = 1, part;
	unsigned int digits = 0;
	bool more = false;
	const char *p = s;

	if (!s || !ret_bytes)
		return -EINVAL;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned int d = *p - '0';

		if (value > (UINT64_MAX - d) / 10)
			return -ERANGE;
		value = value * 10 + d;
	}
	if (*p == '.' && parse_fraction(&p, &frac, &digits, &more) < 0)
		return -EINVAL;
	mult = parse_unit(p);
	/* A fraction needs a unit of K or more: bytes are whole. */
	if (!mult || (digits && mult < 1024))
		return -EINVAL;
	if (value > UINT64_MAX / mult)
		return -ERANGE;
	while (digits--)
		scale *= 10;
	/* frac/scale of mult, rounded up to a whole byte: 128-bit, as 10^18 x 2^40 needs. */
	part = (uint64_t)(((unsigned __int128)frac * mult + scale - 1 + more) / scale);
	if (value * mult > UINT64_MAX - part)
		return -ERANGE;
	*ret_bytes = value * mult + part;
	return 0;
}

static int root_path(const char *root, char *buf, size_t len, const char *fmt, va_list ap)
{
	int n = snprintf(buf, len, "%s", root), m;

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	return m < 0 || (size_t)m >= len - (size_t)n ? -ENAMETOOLONG : 0;
}

int sys_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = root_path(ctx ? ctx->sys_root : HOST_SYS_ROOT, buf, len, fmt, ap);
	va_end(ap);
	return r;
}

int proc_path(const struct prealloc_ctx *ctx, char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = root_path(ctx ? ctx->proc_root : HOST_PROC_ROOT, buf, len, fmt, ap);
	va_end(ap);
	return r;
}

void test_pause(const char *point)
{
	const char *want = getenv("PREALLOC_TEST_PAUSE");

	/* Tests stop the run here (SIGSTOP) so that a SIGKILL lands at this point for sure. */
	if (want && !strcmp(want, point))
		raise(SIGSTOP);
}

EXPORT const char *prealloc_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	double v = (double)bytes;
	unsigned int u = 0;

	while (v >= 1024 && u + 1 < ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0 || v == (double)(uint64_t)v)
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.2f %s", v, units[u]);
	return buf;
}

EXPORT const char *prealloc_format_list(const int *v, unsigned int nr, char *buf, size_t len)
{
	bool seen[PREALLOC_MAX_NODES] = { false };
	size_t off = 0;

	if (!buf || !len)
		return buf;
	buf[0] = '\0';
	for (unsigned int i = 0; v && i < nr; i++)
		if (v[i] >= 0 && v[i] < PREALLOC_MAX_NODES)
			seen[v[i]] = true;
	for (int n = 0; n < PREALLOC_MAX_NODES; n++) {
		int end = n;

		if (!seen[n])
			continue;
		while (end + 1 < PREALLOC_MAX_NODES && seen[end + 1])
			end++;
		if (end == n)
			off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%d",
						off ? "," : "", n);
		else
			off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%d-%d",
						off ? "," : "", n, end);
		n = end;
	}
	return buf;
}
