/* SPDX-License-Identifier: MIT */
/*
 * The context: made once per caller, it holds what every call reads (the
 * topology, the CPU, where state lives, the sysfs and procfs roots, the log
 * and holder callbacks) and what calls keep between them (the active
 * calibration, prealloc_record's copy of the store).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu.h"
#include "internal.h"

/*
 * Where state lives: the caller's choice, $PREALLOC_STATE_DIR, /run/prealloc
 * for root, else under $XDG_RUNTIME_DIR or /tmp (statedir.c checks it is ours
 * before anything is read or written there).
 */
static int state_dir_resolve(const char *given, char *buf, size_t len)
{
	const char *base = given && *given ? given : getenv("PREALLOC_STATE_DIR");
	int n;

	if (base && *base)
		n = snprintf(buf, len, "%s", base);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/prealloc");
	else if ((base = getenv("XDG_RUNTIME_DIR")) && *base)
		n = snprintf(buf, len, "%s/prealloc", base);
	else
		n = snprintf(buf, len, "/tmp/prealloc-%u", (unsigned int)geteuid());
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

EXPORT int prealloc_ctx_new(struct prealloc_ctx **ret_ctx)
{
	return prealloc_ctx_new_opts(NULL, ret_ctx);
}

/* A root without its trailing slashes ("" for "/"), so paths join as root + "/rel". */
static int set_root(char *dst, size_t len, const char *given)
{
	size_t n;

	if (!given)
		given = "";
	n = strlen(given);
	while (n && given[n - 1] == '/')
		n--;
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(dst, given, n);
	dst[n] = '\0';
	return 0;
}

EXPORT int prealloc_ctx_new_opts(const struct prealloc_ctx_opts *opts,
				 struct prealloc_ctx **ret_ctx)
{
	struct prealloc_ctx_opts o = { .size = sizeof(o) };
	struct prealloc_ctx *ctx;
	int r;

	if (!ret_ctx)
		return -EINVAL;
	if (opts && (r = copy_sized_in(&o, sizeof(o), opts)) < 0)
		return r;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	pthread_mutex_init(&ctx->records_lock, NULL);
	r = state_dir_resolve(o.state_dir, ctx->state_dir, sizeof(ctx->state_dir));
	if (r == 0)
		r = set_root(ctx->sys_root, sizeof(ctx->sys_root),
			     o.sys_root ? o.sys_root : HOST_SYS_ROOT);
	if (r == 0)
		r = set_root(ctx->proc_root, sizeof(ctx->proc_root),
			     o.proc_root ? o.proc_root : HOST_PROC_ROOT);
	if (r == 0)
		r = topology_read(ctx);
	if (r < 0) {
		prealloc_ctx_free(ctx);
		return r;
	}
	cpu_read(ctx, &ctx->cpu);
	*ret_ctx = ctx;
	return 0;
}

EXPORT void prealloc_ctx_free(struct prealloc_ctx *ctx)
{
	if (!ctx)
		return;
	if (ctx->records_drop)
		ctx->records_drop(ctx);
	pthread_mutex_destroy(&ctx->records_lock);
	free(ctx->clear);	/* the clear layer's, plain memory */
	free(ctx->nodes);
	free(ctx);
}

EXPORT const char *prealloc_ctx_state_dir(struct prealloc_ctx *ctx)
{
	return ctx ? ctx->state_dir : NULL;
}

EXPORT void prealloc_ctx_set_holder_alive(struct prealloc_ctx *ctx, prealloc_holder_fn fn,
					  void *userdata)
{
	if (!ctx)
		return;
	ctx->holder_fn = fn;
	ctx->holder_userdata = userdata;
}

EXPORT void prealloc_ctx_set_log(struct prealloc_ctx *ctx, prealloc_log_fn fn, void *userdata)
{
	if (!ctx)
		return;
	ctx->log_fn = fn;
	ctx->log_userdata = userdata;
}

/* 0.1's name, still exported at PREALLOC_0.1 (docs/abi.md). */
#undef prealloc_ctx_set_holder_check
EXPORT_ALIAS(prealloc_ctx_set_holder_check, prealloc_ctx_set_holder_alive);
