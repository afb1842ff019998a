/* SPDX-License-Identifier: MIT */
/*
 * Holders that share a uid (docs/warm.md, threat model). A take gives its
 * file the holder's uid, mode 0600: that keeps every other uid out, and
 * no process of the same uid. Two holders given one uid (qemu's, under
 * libvirt's default DAC) open each other's files by path, no hidden
 * reference needed, and nothing the warm pool does can part them: only
 * distinct uids or MAC confinement (sVirt) do. So the warm pool says so:
 * a take returns how many files of other holders its uid owns, and a
 * front end asks the same before a start (prealloc_warm_shared_uid).
 */
#include <stdio.h>
#include <string.h>

#include "warm.h"

/* Whether r is a file holder (NULL: none) holds. */
static bool held_by(const struct record *r, const char *holder)
{
	return holder && r->warm == PREALLOC_WARM_HANDED && r->owner.kind == PREALLOC_OWNER_HOLDER &&
	       !strcmp(r->owner.holder, holder);
}

/*
 * Whether tenant t is one the caller is of: its own (tenant), that of
 * its file (self: its index in s, -1 none) or of any file holder holds (a
 * single-tenant target's label among them). One label is one tenant by
 * the caller's word: its holders trust each other (docs/warm.md).
 */
static bool tenant_shared(const struct store *s, const char *t, const char *holder,
			  const char *tenant, long self)
{
	if ((tenant && !strcmp(t, tenant)) || (self >= 0 && !strcmp(t, s->r[self].tenant)))
		return true;
	for (size_t i = 0; holder && i < s->nr; i++)
		if (held_by(&s->r[i], holder) && !strcmp(s->r[i].tenant, t))
			return true;
	return false;
}

unsigned int warm_shared_uid(const struct store *s, uint32_t uid, const char *holder,
			     const char *tenant, long self, char *with, size_t len)
{
	unsigned int n = 0;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		/* Linked at a path of its holder's, given uid: reserved files have no path yet. */
		if ((long)i == self || r->warm != PREALLOC_WARM_HANDED || !r->has_uid ||
		    r->uid != uid || !r->path[0] || held_by(r, holder))
			continue;
		if (r->tenant[0] && tenant_shared(s, r->tenant, holder, tenant, self))
			continue;
		if (n++ == 0)
			snprintf(with, len, "%s",
				 r->owner.kind == PREALLOC_OWNER_HOLDER ? r->owner.holder : r->path);
	}
	return n;
}

void warm_take_shared(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o,
		      struct prealloc_warm_take_info *info)
{
	struct store s;

	if (!(o->flags & PREALLOC_WARM_TAKE_CHOWN) || (o->flags & PREALLOC_WARM_TAKE_RESERVE) ||
	    store_load(ctx, &s) < 0)
		return;
	info->shared_uid_files = warm_shared_uid(&s, o->uid, o->holder, o->tenant,
						 store_find(&s, info->id), info->shared_uid_with,
						 sizeof(info->shared_uid_with));
	store_free(&s);
}

EXPORT int prealloc_warm_shared_uid(struct prealloc_ctx *ctx, unsigned int uid,
				    const char *holder, const char *tenant,
				    struct prealloc_warm_shared_info *ret_info)
{
	struct prealloc_warm_shared_info info = { .size = sizeof(info) };
	struct store s;
	int r;

	if (!ctx || !ret_info || ret_info->size < sizeof(size_t) ||
	    (tenant && !tenant_valid(tenant)))
		return -EINVAL;
	r = store_load(ctx, &s);
	if (r == 0) {
		info.files = warm_shared_uid(&s, uid, holder, tenant, -1, info.with,
					     sizeof(info.with));
		store_free(&s);
	}
	copy_sized_out(ret_info, &info, sizeof(info));
	return r;
}
