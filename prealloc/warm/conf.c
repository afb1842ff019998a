/* SPDX-License-Identifier: MIT */
/*
 * warm.conf as a file (docs/warm.md): which one (the caller's path, else
 * $PREALLOC_WARM_CONF, else /etc/prealloc/warm.conf), read whole and
 * parsed (conf_parse.c). No file is no targets; a file that is no regular
 * one, is over WARM_CONF_MAX_FILE or holds a NUL byte (text read as a C
 * string would end there, and the lines after it be lost) is refused.
 * Every error names the file.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "warm.h"

/* The largest warm.conf read: far past any real one, never a whole disk's file in memory. */
#define WARM_CONF_MAX_FILE (1u << 20)

void warm_conf_free(struct warm_conf *conf)
{
	free(conf->t);
	conf->t = NULL;
	conf->nr = 0;
}

/*
 * All of the regular file fd into *ret_text (NUL-terminated) and *ret_len;
 * -EINVAL with why in err for a file that is no regular one or too large.
 */
static int conf_read(int fd, char **ret_text, size_t *ret_len, char *err, size_t err_len)
{
	struct stat st;
	size_t len = 0;
	char *text;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, err_len, "%s",
			 S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file");
		return -EINVAL;
	}
	/* Reading up to one byte past the limit tells a file over it from one that fits. */
	text = malloc(WARM_CONF_MAX_FILE + 2);
	if (!text)
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(fd, text + len, WARM_CONF_MAX_FILE + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			free(text);
			return r;
		}
		if (n == 0 || (len += (size_t)n) > WARM_CONF_MAX_FILE)
			break;
	}
	if (len > WARM_CONF_MAX_FILE) {
		free(text);
		snprintf(err, err_len, "larger than %u KiB", WARM_CONF_MAX_FILE >> 10);
		return -EINVAL;
	}
	text[len] = '\0';
	*ret_text = text;
	*ret_len = len;
	return 0;
}

/*
 * path made absolute into buf (the working directory before a relative
 * one), nothing resolved: whoever reads it later follows its links anew.
 */
static int conf_absolute(const char *path, char *buf, size_t len)
{
	char cwd[PATH_MAX];
	int n;

	if (path[0] == '/')
		n = snprintf(buf, len, "%s", path);
	else if (getcwd(cwd, sizeof(cwd)))
		n = snprintf(buf, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", path);
	else
		return -errno;
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int warm_conf_load(const char *path, struct warm_conf *ret, char *err, size_t err_len)
{
	const char *env = getenv("PREALLOC_WARM_CONF");
	char *text = NULL, *nul, why[512] = "", abs[PATH_MAX];
	size_t len = 0;
	int fd, r;

	if (!path)
		path = env && *env ? env : "/etc/prealloc/warm.conf";
	r = conf_absolute(path, abs, sizeof(abs));
	/* O_NONBLOCK: a FIFO under the name is refused below, not waited on. */
	fd = r < 0 ? -1 : open(abs, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (r == 0 && fd < 0 && errno == ENOENT) {
		/* No file: no targets, every setting unset, as an empty text says. */
		r = warm_conf_parse("", ret, err, err_len);
		ret->found = false;
		ret->sum = 0;
		snprintf(ret->path, sizeof(ret->path), "%s", abs);
		return r;
	}
	if (r == 0)
		r = fd < 0 ? -errno : conf_read(fd, &text, &len, why, sizeof(why));
	if (fd >= 0)
		close(fd);
	nul = r == 0 ? memchr(text, '\0', len) : NULL;
	if (nul) {
		unsigned int line = 1;

		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		snprintf(why, sizeof(why), "line %u: a NUL byte (warm.conf is text)", line);
		r = -EINVAL;
	}
	if (r == 0)
		r = warm_conf_parse(text, ret, why, sizeof(why));
	if (r == 0)
		snprintf(ret->path, sizeof(ret->path), "%s", abs);
	/* Every error names the file: the parser's line and reason, else the errno's. */
	if (r < 0)
		snprintf(err, err_len, "%s: %s", path, why[0] ? why : strerror(-r));
	free(text);
	return r;
}
