/* SPDX-License-Identifier: MIT */
/*
 * The ranking's file (clear/rank.c measures what it holds): a small text
 * file beside the calibration (its path + ".ranking"), one per CPU model
 * and microcode, good only on the CPU and microcode it names:
 *
 *   version 3
 *   vendor GenuineIntel
 *   family 6
 *   model 167
 *   model_name Intel(R) Xeon(R) Processor
 *   microcode 0x1
 *   buffer 16777216 rounds 7 seconds 0.082 level 1
 *   kernel avx2_nt 26.88
 *   kernel avx512_nt 26.75
 *   crossover avx2_nt seconds 0.061 fault 0.000
 *   at 8388608 rounds 5 c 13.10 avx2_nt 10.05 ratio 0.77
 *   up 16777216 rounds 5 c 11.80 avx2_nt 14.20 ratio 1.20
 *
 * Formatted and parsed here, with the small file helpers the calibration
 * shares, and the microcode revision it is matched by.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clear.h"

/*
 * 2: the crossover's lines; 3: its points above the cached limit ("up")
 * and the fault-in time. An older file is measured again.
 */
#define RANK_VERSION 3

void cpu_microcode(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "re");

	snprintf(buf, len, "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ':');

		if (strncmp(line, "microcode", 9) || !v)
			continue;
		v += strspn(v + 1, " \t") + 1;
		v[strcspn(v, " \t\n")] = '\0';
		snprintf(buf, len, "%s", v);
		break;
	}
	if (f)
		fclose(f);
}

bool clear_rank_matches(const struct clear_rank *rank, const struct cpu_id *cpu)
{
	char mc[24];

	cpu_microcode(mc, sizeof(mc));
	return !strcmp(rank->vendor, cpu->vendor) && rank->family == cpu->family &&
	       rank->model == cpu->model && !strcmp(rank->model_name, cpu->model_name) &&
	       !strcmp(rank->microcode, mc);
}

int clear_rank_format(const struct clear_rank *rank, const struct clear_crossover *x, char *buf,
		      size_t len)
{
	size_t off;
	int n = snprintf(buf, len,
			 "# prealloc: the clear kernels ranked for large clears, measured here\n"
			 "version %u\nvendor %s\nfamily %u\nmodel %u\nmodel_name %s\nmicrocode %s\n"
			 "buffer %" PRIu64 " rounds %u seconds %.3f level %d\n",
			 RANK_VERSION, rank->vendor, rank->family, rank->model, rank->model_name,
			 rank->microcode, rank->buffer_bytes, rank->rounds, rank->seconds,
			 rank->level);

	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	off = (size_t)n;
	for (unsigned int i = 0; i < rank->nr; i++) {
		n = snprintf(buf + off, len - off, "kernel %s %.2f\n", rank->k[i].kernel,
			     rank->k[i].gbps);
		if (n < 0 || (size_t)n >= len - off)
			return -ENOSPC;
		off += (size_t)n;
	}
	if (!x || !x->nr)
		return (int)off;
	n = snprintf(buf + off, len - off, "crossover %s seconds %.3f fault %.3f\n", x->nt,
		     x->seconds, x->fault_seconds);
	for (unsigned int i = 0; i < x->nr + x->nr_up && n >= 0 && (size_t)n < len - off; i++) {
		const struct clear_cross_point *a = i < x->nr ? &x->at[i] : &x->up[i - x->nr];

		off += (size_t)n;
		n = snprintf(buf + off, len - off, "%s %" PRIu64 " rounds %u c %.2f %s %.2f ratio %.3f\n",
			     i < x->nr ? "at" : "up", a->bytes, a->rounds, a->cached_gbps, x->nt,
			     a->nt_gbps, a->nt_over_cached);
	}
	if (n < 0 || (size_t)n >= len - off)
		return -ENOSPC;
	return (int)(off + (size_t)n);
}

/*
 * A crossover line ("crossover ...", "at ..." from the cached limit down,
 * "up ..." from it up, after them) into x: 1 taken, 0 not one, -EINVAL malformed.
 */
static int cross_line(const char *line, struct clear_crossover *x)
{
	char name[CLEAR_KERNEL_NAME_MAX + 8];
	struct clear_cross_point a;
	bool up = !strncmp(line, "up ", 3);

	if (!strncmp(line, "crossover ", 10)) {
		if (sscanf(line, "crossover %31s seconds %lf fault %lf", name, &x->seconds,
			   &x->fault_seconds) != 3 ||
		    strlen(name) >= sizeof(x->nt) || !clear_kernel_find(name))
			return -EINVAL;
		memcpy(x->nt, name, strlen(name) + 1);
		return 1;
	}
	if (strncmp(line, "at ", 3) && !up)
		return 0;
	if (sscanf(line + 3, "%" SCNu64 " rounds %u c %lf %31s %lf ratio %lf", &a.bytes, &a.rounds,
		   &a.cached_gbps, name, &a.nt_gbps, &a.nt_over_cached) != 6 ||
	    !x->nt[0] || strcmp(name, x->nt) || !(a.nt_over_cached > 0))
		return -EINVAL;
	if (up) {
		/* Ascending, each above every point below the limit. */
		if (x->nr_up >= CLEAR_CROSS_UP_SIZES || !x->nr || a.bytes <= x->at[0].bytes ||
		    (x->nr_up && a.bytes <= x->up[x->nr_up - 1].bytes))
			return -EINVAL;
		x->up[x->nr_up++] = a;
		return 1;
	}
	if (x->nr >= CLEAR_CROSS_SIZES || x->nr_up || (x->nr && a.bytes >= x->at[x->nr - 1].bytes))
		return -EINVAL;
	x->at[x->nr++] = a;
	return 1;
}

/* One line of the file into r or x; -EINVAL for anything else. */
static int rank_line(char *line, struct clear_rank *r, struct clear_crossover *x,
		     unsigned int *version)
{
	char name[CLEAR_KERNEL_NAME_MAX + 8];
	int level = 0, taken;
	double g;

	if (line[0] == '#' || line[0] == '\0')
		return 0;
	taken = cross_line(line, x);
	if (taken)
		return taken < 0 ? taken : 0;
	if (sscanf(line, "version %u", version) == 1 || sscanf(line, "family %u", &r->family) == 1 ||
	    sscanf(line, "model %u", &r->model) == 1)
		return 0;
	if (!strncmp(line, "vendor ", 7))
		return snprintf(r->vendor, sizeof(r->vendor), "%s", line + 7) < 0 ? -EINVAL : 0;
	if (!strncmp(line, "model_name ", 11))
		return snprintf(r->model_name, sizeof(r->model_name), "%s", line + 11) < 0 ? -EINVAL
											  : 0;
	if (!strncmp(line, "microcode ", 10))
		return snprintf(r->microcode, sizeof(r->microcode), "%s", line + 10) < 0 ? -EINVAL
											 : 0;
	if (sscanf(line, "buffer %" SCNu64 " rounds %u seconds %lf level %d", &r->buffer_bytes,
		   &r->rounds, &r->seconds, &level) == 4) {
		r->level = level;
		return 0;
	}
	if (sscanf(line, "kernel %31s %lf", name, &g) != 2 || r->nr >= CLEAR_RANK_MAX ||
	    strlen(name) >= sizeof(r->k[0].kernel) || !clear_kernel_find(name) || !(g > 0))
		return -EINVAL;
	memcpy(r->k[r->nr].kernel, name, strlen(name) + 1);
	r->k[r->nr++].gbps = g;
	return 0;
}

int clear_rank_parse(const char *text, struct clear_rank *ret, struct clear_crossover *ret_cross)
{
	struct clear_rank r = { 0 };
	struct clear_crossover x = { 0 };
	unsigned int version = 0;
	char line[256];

	while (*text) {
		size_t n = strcspn(text, "\n");

		if (n >= sizeof(line))
			return -EINVAL;
		memcpy(line, text, n);
		line[n] = '\0';
		text += n + (text[n] == '\n');
		if (rank_line(line, &r, &x, &version) < 0)
			return -EINVAL;
	}
	if (version != RANK_VERSION || !r.vendor[0] || !r.nr || (x.nt[0] && !x.nr))
		return -EINVAL;
	*ret = r;
	if (ret_cross)
		*ret_cross = x;
	return 0;
}

int small_file_read(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	/* These files are a few hundred bytes; a full buffer is not one of them. */
	return r < 0 ? r : got + 1 == len ? -EINVAL : 0;
}

int small_file_write(const char *path, const char *text, size_t len)
{
	char *tmp;
	int fd, r = 0;

	if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		return r;
	}
	/* Readable by all: it names kernels, nothing secret. */
	if (fchmod(fd, 0644) < 0 || (r = fd_write_all(fd, text, len)) < 0 || fsync(fd) < 0)
		r = r < 0 ? r : -errno;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	free(tmp);
	return r;
}
