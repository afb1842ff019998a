/* SPDX-License-Identifier: MIT */
/*
 * Whether a file's single-tenant declaration stands (docs/warm.md, "In
 * place, only within one tenant"). A file cleared in place because its
 * target said single-tenant (WARM_TENANT_SINGLE) keeps the pages its last
 * holder may still reach by ways no lease sees (a pin, pipe pages): it may
 * go to any take only while warm.conf still declares every holder of its
 * target one tenant. The pass that cleared it recorded which warm.conf it
 * read (its absolute path, the FNV-1a 64 of its text, in the save that set
 * the label); a take and a find look at that file now: the same text
 * stands, another text stands only if it still declares the file's target
 * so. Anything else fails closed: the file is not handed out, and a take
 * moves it READY -> DIRTY, its label gone, for the next pass to renew; a
 * find treats it as not there. A file reserved for a holder while the
 * declaration stood is not linked for it once withdrawn: given back. Take
 * and find go by what the file
 * recorded, never by their own --conf or $PREALLOC_WARM_CONF. The pass
 * asks the same of its own conf before it clears in place: serve keeps the
 * conf it loaded until SIGHUP, and one withdrawn on disk meanwhile renews.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "warm.h"

/* The warm.conf a record names, as read now: loaded once for every record naming it. */
struct declared_conf {
	char path[PATH_MAX];	/* "": none loaded yet */
	int err;		/* its load: a negative errno, and then it declares nothing */
	struct warm_conf conf;
	uint64_t *devs;		/* each target's mount's device, 0 none */
};

void warm_declared_set(struct record *r, const struct warm_conf *conf)
{
	snprintf(r->declared, sizeof(r->declared), "%s", conf ? conf->path : "");
	r->declared_sum = conf ? conf->sum : 0;
}

static void declared_conf_free(struct declared_conf *dc)
{
	if (dc->path[0] && dc->err == 0)
		warm_conf_free(&dc->conf);
	free(dc->devs);
	dc->devs = NULL;
	dc->path[0] = '\0';
}

/* dc made the conf at path, as it is on disk now, with its targets' devices. */
static void declared_conf_load(struct prealloc_ctx *ctx, struct declared_conf *dc, const char *path)
{
	char why[512];

	declared_conf_free(dc);
	snprintf(dc->path, sizeof(dc->path), "%s", path);
	dc->err = warm_conf_load(path, &dc->conf, why, sizeof(why));
	if (dc->err < 0)
		return;
	dc->devs = calloc(dc->conf.nr + 1, sizeof(*dc->devs));
	if (!dc->devs) {
		dc->err = -ENOMEM;
		warm_conf_free(&dc->conf);
		return;
	}
	for (unsigned int i = 0; i < dc->conf.nr; i++) {
		const struct warm_target *t = &dc->conf.t[i];
		const char *mount = warm_mount(ctx, t->mount, t->page_size);
		struct stat ms;

		if (mount && stat(mount, &ms) == 0)
			dc->devs[i] = (uint64_t)ms.st_dev;
	}
}

/*
 * Whether r's declaration stands: the warm.conf it names is a regular file
 * that parses, and its text is the one the pass read, or declares r's
 * target (node, page size, mount) single-tenant still. No declaration
 * recorded (a store from before it), the file gone, unreadable, no regular
 * file, a bad line, or the declaration withdrawn: it does not.
 */
static bool declared_stands(struct prealloc_ctx *ctx, struct declared_conf *dc,
			    const struct record *r)
{
	if (!r->declared[0])
		return false;
	if (strcmp(dc->path, r->declared))
		declared_conf_load(ctx, dc, r->declared);
	if (dc->err < 0 || !dc->conf.found)
		return false;
	if (dc->conf.sum == r->declared_sum)
		return true;	/* the very text that declared it */
	return warm_single_tenant(&dc->conf, dc->devs, r);
}

bool warm_declared_stands(struct prealloc_ctx *ctx, const struct warm_conf *conf,
			  const struct record *r)
{
	struct declared_conf dc = { .path = "" };
	struct record as_declared = *r;		/* its pools are not ours: never freed here */
	bool stands;

	warm_declared_set(&as_declared, conf);
	stands = declared_stands(ctx, &dc, &as_declared);
	declared_conf_free(&dc);
	return stands;
}

int warm_declared_withdraw(const struct prealloc_ctx *ctx, struct store *s, struct record *r)
{
	/* The state first: a move refused leaves the record as it was, label and all. */
	int err = warm_move(ctx, NULL, r, PREALLOC_WARM_DIRTY);

	if (err < 0)
		return err;
	r->tenant[0] = '\0';
	warm_declared_set(r, NULL);
	return s ? store_save(ctx, s) : 0;
}

/*
 * A file reserved for its holder (RESERVE: HANDED, no path yet) while its
 * declaration stood, that declaration withdrawn since: never linked for
 * the holder that reserved it, given back instead (RETURNING, then DIRTY
 * or QUARANTINED as its check says), its label and declaration gone. s
 * NULL: in memory only (a find), where RETURNING alone keeps it unpicked.
 */
static int declared_unreserve(struct prealloc_ctx *ctx, struct store *s, struct record *r)
{
	int err = warm_move(ctx, NULL, r, PREALLOC_WARM_RETURNING);

	if (err < 0 || !s)
		return err;
	r->tenant[0] = '\0';
	warm_declared_set(r, NULL);
	warm_returned(ctx, s, r, warm_check(ctx, r));
	return store_save(ctx, s);
}

int warm_declared_check(struct prealloc_ctx *ctx, struct store *s,
			const struct prealloc_warm_take_opts *o, uint64_t dev, bool save)
{
	bool reserved_take = o->flags & PREALLOC_WARM_TAKE_RESERVED;
	struct declared_conf dc = { .path = "" };
	int err = 0;

	for (size_t i = 0; err == 0 && i < s->nr; i++) {
		struct record *r = &s->r[i];
		bool reserved = reserved_take && r->warm == PREALLOC_WARM_HANDED && !r->path[0];

		if (!warm_is(r, o->node, o->page_size, dev) ||
		    (r->warm != PREALLOC_WARM_READY && !reserved) ||
		    strcmp(r->tenant, WARM_TENANT_SINGLE) || declared_stands(ctx, &dc, r))
			continue;
		err = reserved ? declared_unreserve(ctx, save ? s : NULL, r)
			       : warm_declared_withdraw(ctx, save ? s : NULL, r);
	}
	declared_conf_free(&dc);
	return err;
}
