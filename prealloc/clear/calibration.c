/* SPDX-License-Identifier: MIT */
/*
 * Calibration: per size class, the clear kernel that `prealloc bench`
 * measured fastest on this machine, persisted as a small text file:
 *
 *   version 1
 *   vendor AuthenticAMD
 *   family 25
 *   model 17
 *   model_name AMD EPYC 9554 64-Core Processor
 *   class 33554432 rep_stosb 41.20
 *   class 18446744073709551615 clzero 30.10
 *
 * It lives in $PREALLOC_CALIBRATION if set (none: no file), else /var/lib/prealloc/calibration
 * for root, else in the user's cache directory. Each ctx has its own: the
 * first automatic choice on a ctx loads the default file, unless the
 * caller loaded, saved or unloaded one first. A file measured on another
 * CPU (vendor, family, model or model name differ) is foreign, never used,
 * and said once through the ctx's log.
 *
 * This file builds on clear/select.c (the kernel table and the pure
 * clear_select) and makes the choices that need a ctx's calibration;
 * clear/select.c calls nothing here.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clear.h"

#define CAL_VERSION 1
#define CAL_MAX_TEXT 8192
#define CAL_ROOT_DIR "/var/lib/prealloc"

/* Guards every ctx's cal_* fields: a ctx is calloc'd, so it has no lock of its own. */
static pthread_mutex_t cal_lock = PTHREAD_MUTEX_INITIALIZER;
/* Guards ctx->clear while it is made. */
static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;

struct clear_ctx *ctx_clear_get(struct prealloc_ctx *ctx)
{
	struct clear_ctx *st;

	pthread_mutex_lock(&state_lock);
	if (!ctx->clear)
		ctx->clear = calloc(1, sizeof(*ctx->clear));
	st = ctx->clear;
	pthread_mutex_unlock(&state_lock);
	return st;
}

/* Directory holding the default file; creates nothing. */
static int calibration_dir(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (geteuid() == 0)
		n = snprintf(buf, len, "%s", CAL_ROOT_DIR);
	else if (xdg && xdg[0] == '/')	/* the spec says relative values are invalid */
		n = snprintf(buf, len, "%s/prealloc", xdg);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/prealloc", home);
	else
		return -ENOENT;
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int calibration_default_path(char *buf, size_t len)
{
	const char *env = getenv("PREALLOC_CALIBRATION");
	char dir[4096];
	int r, n;

	if (env && !strcmp(env, "none"))
		return -ENOENT;	/* the built-in rules alone: no file, no measurement */
	if (env && env[0] == '/') {
		n = snprintf(buf, len, "%s", env);
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	r = calibration_dir(dir, sizeof(dir));
	if (r < 0)
		return r;
	n = snprintf(buf, len, "%s/calibration", dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Classes ascend by max_bytes and name kernels (or probes' pairs) this library knows. */
static int calibration_check(const struct clear_calibration *cal)
{
	struct clear_choice c;

	if (!cal->nr_classes || cal->nr_classes > CLEAR_CAL_CLASSES)
		return -EINVAL;
	for (unsigned int i = 0; i < cal->nr_classes; i++) {
		if (clear_choice_find(cal->classes[i].kernel, UINT64_MAX, &c) == -ENOENT)
			return -EINVAL;
		if (i && cal->classes[i].max_bytes <= cal->classes[i - 1].max_bytes)
			return -EINVAL;
	}
	return 0;
}

int calibration_parse(const char *text, struct clear_calibration *ret)
{
	struct clear_calibration cal = { 0 };
	unsigned int version = 0;
	const char *line = text;

	while (*line) {
		const char *eol = strchrnul(line, '\n');
		char buf[256], kernel[CLEAR_KERNEL_NAME_MAX + 1];
		size_t n = (size_t)(eol - line);
		unsigned long long max;
		double gbps;

		if (n >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, line, n);
		buf[n] = '\0';
		line = *eol ? eol + 1 : eol;

		if (!buf[0] || buf[0] == '#')
			continue;
		if (sscanf(buf, "version %u", &version) == 1) {
			if (version != CAL_VERSION)
				return -EINVAL;
		} else if (!strncmp(buf, "vendor ", 7)) {
			/* Too long for the field: not written by us. */
			if ((size_t)snprintf(cal.vendor, sizeof(cal.vendor), "%s", buf + 7) >=
			    sizeof(cal.vendor))
				return -EINVAL;
		} else if (!strncmp(buf, "model_name ", 11)) {
			if ((size_t)snprintf(cal.model_name, sizeof(cal.model_name), "%s", buf + 11) >=
			    sizeof(cal.model_name))
				return -EINVAL;
		} else if (sscanf(buf, "family %u", &cal.family) == 1 ||
			   sscanf(buf, "model %u", &cal.model) == 1) {
			continue;
		} else if (sscanf(buf, "class %llu %24s %lf", &max, kernel, &gbps) == 3) {
			struct clear_cal_class *c;

			if (cal.nr_classes == CLEAR_CAL_CLASSES || strlen(kernel) >= CLEAR_KERNEL_NAME_MAX)
				return -EINVAL;
			c = &cal.classes[cal.nr_classes++];
			c->max_bytes = max;
			c->gbps = gbps;
			memcpy(c->kernel, kernel, strlen(kernel) + 1);
		}
		/* Other keys are a newer writer's additions: ignored. */
	}
	if (version != CAL_VERSION || !cal.vendor[0] || calibration_check(&cal) < 0)
		return -EINVAL;
	*ret = cal;
	return 0;
}

int calibration_format(const struct clear_calibration *cal, char *buf, size_t len)
{
	size_t off = 0;
	int n;

	n = snprintf(buf, len,
		     "# prealloc calibration: fastest clear kernel, or probe, per size class\n"
		     "# (prealloc bench --save)\n"
		     "version %u\nvendor %s\nfamily %u\nmodel %u\nmodel_name %s\n",
		     CAL_VERSION, cal->vendor, cal->family, cal->model, cal->model_name);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	off = (size_t)n;
	for (unsigned int i = 0; i < cal->nr_classes; i++) {
		n = snprintf(buf + off, len - off, "class %" PRIu64 " %s %.2f\n",
			     cal->classes[i].max_bytes, cal->classes[i].kernel, cal->classes[i].gbps);
		if (n < 0 || (size_t)n >= len - off)
			return -ENOSPC;
		off += (size_t)n;
	}
	return (int)off;
}

int calibration_read(const char *path, struct clear_calibration *ret)
{
	char *text = malloc(CAL_MAX_TEXT + 1);
	int r;

	if (!text)
		return -ENOMEM;
	r = small_file_read(path, text, CAL_MAX_TEXT + 1);
	if (r == 0)
		r = calibration_parse(text, ret);
	free(text);
	return r;
}

/* Writes a temporary file beside path and renames it over: readers see old or new. */
int calibration_write(const char *path, const struct clear_calibration *cal)
{
	char text[2048];
	int len, r;

	r = calibration_check(cal);
	if (r < 0)
		return r;
	len = calibration_format(cal, text, sizeof(text));
	return len < 0 ? len : small_file_write(path, text, (size_t)len);
}

/* Creates the default directory (and a missing cache root) for the default file. */
int calibration_mkdir(void)
{
	char dir[4096], *slash;
	mode_t mode = geteuid() == 0 ? 0755 : 0700;
	int r;

	r = calibration_dir(dir, sizeof(dir));
	if (r < 0)
		return r;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		*slash = '/';
	}
	if (mkdir(dir, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Makes cal (NULL: none) the ctx's calibration; settles the default-file load. */
static int ctx_calibration_set(struct prealloc_ctx *ctx, const struct clear_calibration *cal)
{
	struct clear_ctx *st = ctx_clear_get(ctx);

	if (!st)
		return -ENOMEM;
	pthread_mutex_lock(&cal_lock);
	st->cal_settled = true;
	st->cal_active = cal != NULL;
	if (cal)
		st->cal = *cal;
	pthread_mutex_unlock(&cal_lock);
	return 0;
}

/* The default file, read once per ctx; returns why it was not used (0: it was). */
static int ctx_calibration_load_default(struct prealloc_ctx *ctx, struct clear_ctx *st,
					char *path, size_t len)
{
	struct clear_calibration cal;
	int r;

	r = calibration_default_path(path, len);
	if (r == 0)
		r = calibration_read(path, &cal);
	if (r == 0 && !clear_calibration_matches(&cal, &ctx->cpu))
		r = -ESTALE;
	if (r == 0) {
		st->cal = cal;
		st->cal_active = true;
	}
	return r;
}

bool ctx_calibration(struct prealloc_ctx *ctx, struct clear_calibration *ret)
{
	struct clear_ctx *st = ctx_clear_get(ctx);
	char path[4096] = "";
	bool first, have;
	int r = 0;

	if (!st)
		return false;	/* no memory for it: the built-in rules */
	pthread_mutex_lock(&cal_lock);
	first = !st->cal_settled;
	if (first) {
		st->cal_settled = true;
		r = ctx_calibration_load_default(ctx, st, path, sizeof(path));
	}
	have = st->cal_active;
	if (have)
		*ret = st->cal;
	pthread_mutex_unlock(&cal_lock);
	/* Said outside the lock: the callback may call back into the library. */
	if (r == -ESTALE)
		ctx_log(ctx, PREALLOC_LOG_INFO,
			"calibration %s was measured on another CPU; ignored, using the built-in "
			"rules ('prealloc bench --save' measures this one)", path);
	else if (r < 0 && r != -ENOENT)
		ctx_log(ctx, PREALLOC_LOG_INFO, "calibration %s not used: %s", path[0] ? path : "(no path)",
			strerror(-r));
	return have;
}

/* ---- public API ---------------------------------------------------------- */

static void calibration_to_public(const struct clear_calibration *cal,
				  struct prealloc_calibration *pub)
{
	memset(pub, 0, sizeof(*pub));
	pub->size = sizeof(*pub);
	pub->nr_classes = cal->nr_classes;
	for (unsigned int i = 0; i < cal->nr_classes; i++) {
		pub->classes[i].max_bytes = cal->classes[i].max_bytes;
		pub->classes[i].gbps = cal->classes[i].gbps;
		snprintf(pub->classes[i].kernel, sizeof(pub->classes[i].kernel), "%s",
			 cal->classes[i].kernel);
	}
}

EXPORT int prealloc_calibration_path(char *ret_path, size_t len)
{
	if (!ret_path || !len)
		return -EINVAL;
	return calibration_default_path(ret_path, len);
}

EXPORT int prealloc_calibration_load(struct prealloc_ctx *ctx, const char *path,
				     struct prealloc_calibration *ret_cal)
{
	struct prealloc_calibration pub;
	struct clear_calibration cal;
	char def[4096];
	int r;

	if (!ctx || (ret_cal && ret_cal->size < sizeof(size_t)))
		return -EINVAL;
	if (!path) {
		r = calibration_default_path(def, sizeof(def));
		if (r < 0)
			return r;
		path = def;
	}
	r = calibration_read(path, &cal);
	if (r < 0)
		return r;
	if (!clear_calibration_matches(&cal, &ctx->cpu))
		return -ESTALE;
	r = ctx_calibration_set(ctx, &cal);
	if (r < 0)
		return r;
	if (ret_cal) {
		calibration_to_public(&cal, &pub);
		copy_sized_out(ret_cal, &pub, sizeof(pub));
	}
	return 0;
}

EXPORT int prealloc_calibration_save(struct prealloc_ctx *ctx,
				     const struct prealloc_calibration *cal, const char *path)
{
	struct prealloc_calibration pub;
	struct clear_calibration mine = { 0 };
	char def[4096];
	int r;

	if (!ctx || !cal)
		return -EINVAL;
	r = copy_sized_in(&pub, sizeof(pub), cal);
	if (r < 0)
		return r;
	if (!pub.nr_classes || pub.nr_classes > PREALLOC_CALIBRATION_CLASSES ||
	    pub.nr_classes > CLEAR_CAL_CLASSES)
		return -EINVAL;
	snprintf(mine.vendor, sizeof(mine.vendor), "%s", ctx->cpu.vendor);
	snprintf(mine.model_name, sizeof(mine.model_name), "%s", ctx->cpu.model_name);
	mine.family = ctx->cpu.family;
	mine.model = ctx->cpu.model;
	mine.nr_classes = pub.nr_classes;
	for (unsigned int i = 0; i < pub.nr_classes; i++) {
		const struct prealloc_calibration_class *c = &pub.classes[i];

		if (!memchr(c->kernel, '\0', sizeof(c->kernel)) ||
		    strlen(c->kernel) >= CLEAR_KERNEL_NAME_MAX)
			return -EINVAL;
		mine.classes[i].max_bytes = c->max_bytes;
		mine.classes[i].gbps = c->gbps;
		strcpy(mine.classes[i].kernel, c->kernel);
	}
	r = calibration_check(&mine);
	if (r < 0)
		return r;
	if (!path) {
		r = calibration_default_path(def, sizeof(def));
		if (r < 0)
			return r;
		r = calibration_mkdir();
		if (r < 0)
			return r;
		path = def;
	}
	r = calibration_write(path, &mine);
	if (r < 0)
		return r;
	return ctx_calibration_set(ctx, &mine);
}

EXPORT int prealloc_calibration_unload(struct prealloc_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	return ctx_calibration_set(ctx, NULL);
}
