/* SPDX-License-Identifier: MIT */
/*
 * prealloc_warm_fill, and the pass it runs once and serve runs on events
 * (docs/warm.md): files
 * back from their holders checked (warm_returns), files over a target's
 * limit given back, DIRTY first (a dirty one saves its clear), then READY;
 * DIRTY files cleared and verified (warm_clears); targets grown to their
 * limits. And the shrink under memory pressure. docs/warm.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "warm.h"

/* The device of target t's mount (-ENOENT: none), its path in *ret_mount. */
static int target_dev(struct prealloc_ctx *ctx, const struct warm_target *t, uint64_t *ret_dev,
		      const char **ret_mount)
{
	const char *mount = warm_mount(ctx, t->mount, t->page_size);
	struct stat ms;

	if (!mount || stat(mount, &ms) < 0)
		return -ENOENT;
	*ret_dev = (uint64_t)ms.st_dev;
	*ret_mount = mount;
	return 0;
}

/* Under the lock: file i removed, its pages (and the pool's growth for it) given back. */
static int drop_one(struct prealloc_ctx *ctx, struct store *s, long i,
		    struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };

	info->dropped++;
	info->dropped_bytes += s->r[i].size;
	test_pause("warm-drop");
	return record_settle(ctx, s, (size_t)i, true, &rel);
}

/*
 * Files over each target's limit given back, DIRTY first, then READY; with
 * drop_untargeted, those of no target too. Files handed out, returning or
 * being cleared count but stay: they go once they are DIRTY or READY.
 */
static int fill_trims(struct prealloc_ctx *ctx, const struct warm_pass *p, const uint64_t *devs,
		      struct prealloc_warm_fill_info *info)
{
	const struct warm_policy *policy = warm_policy_of(ctx);
	struct store s;
	int lock, err;

	err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	/*
	 * A file cleared in place under a single-tenant declaration that the
	 * conf no longer makes: renewed, never handed to another tenant as it is.
	 */
	for (size_t i = 0; err == 0 && i < s.nr; i++)
		if (s.r[i].warm == PREALLOC_WARM_READY &&
		    !strcmp(s.r[i].tenant, WARM_TENANT_SINGLE) &&
		    !warm_single_tenant(p->conf, devs, &s.r[i]))
			err = warm_declared_withdraw(ctx, &s, &s.r[i]);
	for (long want = p->drop_untargeted ? -1 : 0; err == 0 && want < (long)p->conf->nr;
	     want++) {
		uint64_t limit = want < 0 ? 0 : p->limit[want];
		long i;

		if (want >= 0 && !devs[want])
			continue;
		for (size_t before = SIZE_MAX; err == 0 && s.nr < before &&
					       warm_target_held(&s, p->conf, devs, want) > limit &&
					       (i = policy->drop(&s, p->conf, devs, want, 0)) >= 0;) {
			before = s.nr;	/* a file that stays (still in use) ends the loop */
			err = drop_one(ctx, &s, i, info);
		}
	}
	store_close(&s, lock);
	return err;
}

/*
 * Target i, one step: 1 when a file was made, 2 when a file of another size
 * was given back to make room for one of the target's size (look again), 0
 * when it holds what its limit allows, a negative errno. Without the
 * second, a file cut for a small guest would keep its target's room for
 * good, and the warm pool would hold small files where warm.conf asks for big.
 */
static int target_grow(struct prealloc_ctx *ctx, const struct warm_pass *p, unsigned int i,
		       const uint64_t *devs, struct prealloc_warm_fill_info *info)
{
	const struct warm_policy *policy = warm_policy_of(ctx);
	const struct warm_target *t = &p->conf->t[i];
	const char *mount = warm_mount(ctx, t->mount, t->page_size);
	char why[512];
	struct store s;
	uint64_t held, next;
	int lock, err;

	if (!t->file_bytes || warm_stop_asked(p->pace.stop_fd))
		return 0;
	err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err < 0)
		return err;
	held = warm_target_held(&s, p->conf, devs, i);
	next = policy->refill(t, held, p->limit[i]);
	if (!next) {
		long m = policy->drop(&s, p->conf, devs, i, t->file_bytes);
		size_t before = s.nr;

		/*
		 * Only where giving back the files of other sizes makes the room,
		 * one now and the rest in the next steps (two 2M files cut from
		 * 4M ones in a pool of 3 x 4M: neither alone makes it); else
		 * usable files are lost for nothing.
		 */
		if (m >= 0 && held - warm_target_other_size(&s, p->conf, devs, i, t->file_bytes) +
				      t->file_bytes > p->limit[i])
			m = -1;
		err = m >= 0 ? drop_one(ctx, &s, m, info) : 0;
		err = err < 0 ? err : m >= 0 && s.nr < before ? 2 : 0;
		store_close(&s, lock);
		return err;
	}
	store_close(&s, lock);
	err = warm_create(ctx, t->node, t->page_size, mount, next, &p->pace, why, sizeof(why),
			  NULL, info);
	if (err < 0) {
		warm_note(info, "node%d.%s: %s", t->node, prealloc_page_name(t->page_size), why);
		return err;
	}
	info->created++;
	info->created_bytes += next;
	return 1;
}

void warm_limits(struct prealloc_ctx *ctx, const struct warm_conf *conf, const uint64_t *cut,
		 uint64_t *ret_limit)
{
	uint64_t share = warm_setting(conf->set.max_share, WARM_MAX_SHARE);

	for (unsigned int i = 0; i < conf->nr; i++) {
		const struct warm_target *t = &conf->t[i];
		struct prealloc_node_info ni = { .size = sizeof(ni) };
		uint64_t cap = UINT64_MAX, before = 0;

		/* The node's share, less what the targets before this one on it take. */
		if (prealloc_node_info(ctx, t->node, &ni) == 0 && ni.mem_total)
			cap = ALIGN_DOWN(ni.mem_total / 100 * share, t->page_size);
		for (unsigned int j = 0; j < i; j++)
			if (conf->t[j].node == t->node)
				before += ret_limit[j];
		ret_limit[i] = MIN(t->bytes, cap > before ? cap - before : 0);
	}
	/* The cuts last: a target cut under pressure gives no room to the next one. */
	for (unsigned int i = 0; cut && i < conf->nr; i++)
		ret_limit[i] = ret_limit[i] > cut[i] ? ret_limit[i] - cut[i] : 0;
}

/*
 * Target i's share of its node cannot hold what it asks (limit: its bytes
 * within max_share, no cut): the bytes short in whole files, said once in
 * info (the first one).
 */
static uint64_t target_unmet(struct prealloc_ctx *ctx, const struct warm_conf *conf, unsigned int i,
			     uint64_t limit, struct prealloc_warm_fill_info *info)
{
	const struct warm_target *t = &conf->t[i];
	struct prealloc_node_info ni = { .size = sizeof(ni) };
	uint64_t whole = t->file_bytes ? MIN(t->files, limit / t->file_bytes) * t->file_bytes
				       : t->bytes, unmet = t->bytes - MIN(whole, t->bytes);
	char f[32], h[32], m[32];

	if (!unmet)
		return 0;
	info->unmet++;
	info->unmet_bytes += unmet;
	if (info->unmet_message[0])
		return unmet;
	prealloc_node_info(ctx, t->node, &ni);
	snprintf(info->unmet_message, sizeof(info->unmet_message),
		 "node%d.%s (line %u) cannot be met: %u x %s asked, node %d's share (max_share "
		 "%llu%% of %s, less the targets before it on the node: %s) holds %llu of them",
		 t->node, prealloc_page_name(t->page_size), t->line, t->files,
		 prealloc_format_size(t->file_bytes, f, sizeof(f)), t->node,
		 (unsigned long long)warm_setting(conf->set.max_share, WARM_MAX_SHARE),
		 prealloc_format_size(ni.mem_total, m, sizeof(m)),
		 prealloc_format_size(limit, h, sizeof(h)),
		 (unsigned long long)(t->file_bytes ? whole / t->file_bytes : 0));
	return unmet;
}

/*
 * The pass's end, per target with a mount: the bytes it cannot have
 * (COUNTER_UNMET) and, when its growth ended without failure (result 0)
 * and the pass did, the time (COUNTER_LAST_PASS).
 */
static void pass_outcome(struct prealloc_ctx *ctx, const struct warm_pass *p,
			 const uint64_t *devs, const int *result, int err,
			 struct prealloc_warm_fill_info *info)
{
	uint64_t *limit = calloc(p->conf->nr + 1, sizeof(*limit));

	if (!limit)
		return;
	warm_limits(ctx, p->conf, NULL, limit);
	for (unsigned int i = 0; i < p->conf->nr; i++) {
		const struct warm_target *t = &p->conf->t[i];
		struct counter_change c[] = {
			{ COUNTER_UNMET, target_unmet(ctx, p->conf, i, limit[i], info), true },
			{ COUNTER_LAST_PASS, (uint64_t)time(NULL), true },
		};

		if (devs[i])
			counter_change_all(ctx, devs[i], t->node, t->page_size, c,
					   err == 0 && result[i] == 0 ? 2 : 1);
	}
	free(limit);
}

/*
 * Files back from their holders (the holders' side with no lock held),
 * then under the lock what dead fills and runs left and quarantined files,
 * then growth whose file has no name left, once no process holds it.
 */
static int pass_returns(struct prealloc_ctx *ctx, const struct warm_pass *p,
			struct prealloc_warm_fill_info *info)
{
	struct prealloc_release_info rel = { .size = sizeof(rel) };
	struct store s;
	int lock, err;

	err = warm_returns_pass(ctx, p->lock_timeout_ms, info);
	if (err == 0)
		err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err == 0) {
		err = warm_returns(ctx, &s, info);
		store_close(&s, lock);
	}
	if (err == 0)
		err = settle_orphans(ctx, p->lock_timeout_ms, &rel);
	return err;
}

int warm_pass_run(struct prealloc_ctx *ctx, const struct warm_pass *p,
		  struct prealloc_warm_fill_info *info)
{
	uint64_t *devs = calloc(p->conf->nr + 1, sizeof(*devs));
	int *result = calloc(p->conf->nr + 1, sizeof(*result));
	const char *mount;
	int err, first = 0;

	if (!devs || !result) {
		free(devs);
		free(result);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < p->conf->nr; i++) {
		const struct warm_target *t = &p->conf->t[i];

		if (target_dev(ctx, t, &devs[i], &mount) < 0) {
			warm_note(info, "no mount for node%d.%s (line %u)", t->node,
				  prealloc_page_name(t->page_size), t->line);
			first = -ENOENT;	/* the other targets still get theirs */
		}
		/*
		 * Two lines of one node and page size naming one mount by two names
		 * (none and /dev/shm, a trailing /): the first counts, the later is
		 * ignored, else each pass would make files for one and drop them
		 * for the other.
		 */
		for (unsigned int j = 0; devs[i] && j < i; j++)
			if (devs[j] == devs[i] && p->conf->t[j].node == t->node &&
			    p->conf->t[j].page_size == t->page_size) {
				warm_note(info, "node%d.%s on line %u names the mount of line %u: "
					  "ignored", t->node, prealloc_page_name(t->page_size),
					  t->line, p->conf->t[j].line);
				devs[i] = 0;
			}
	}
	err = pass_returns(ctx, p, info);
	/* Before the clears: a file over its target is not cleared to be dropped. */
	if (err == 0)
		err = fill_trims(ctx, p, devs, info);
	if (err == 0)
		err = warm_clears(ctx, p, devs, info);
	for (unsigned int i = 0; err == 0 && i < p->conf->nr; i++) {
		int r = 0;

		/* Bounded: files made by the target's count; files given back by the store. */
		for (unsigned int n = 0; devs[i] && n <= p->conf->t[i].files &&
					 (r = target_grow(ctx, p, i, devs, info)) > 0;
		     n += r == 1)
			;
		result[i] = r < 0 ? r : warm_stop_asked(p->pace.stop_fd) ? -ECANCELED : 0;
		if (r < 0 && !first)
			first = r;
	}
	if (!warm_stop_asked(p->pace.stop_fd))
		pass_outcome(ctx, p, devs, result, err, info);
	free(result);
	free(devs);
	return err < 0 ? err : first;
}

int warm_pass_shrink(struct prealloc_ctx *ctx, const struct warm_pass *p, uint64_t bytes,
		     uint64_t *cut, struct prealloc_warm_fill_info *info)
{
	uint64_t *devs = calloc(p->conf->nr + 1, sizeof(*devs)), done = 0, size;
	const struct warm_policy *policy = warm_policy_of(ctx);
	struct record_key gone;
	const char *mount;
	struct store s;
	size_t before;
	int lock, err;

	if (!devs)
		return -ENOMEM;
	for (unsigned int i = 0; i < p->conf->nr; i++)
		target_dev(ctx, &p->conf->t[i], &devs[i], &mount);
	err = store_open(ctx, p->lock_timeout_ms, &s, &lock);
	if (err < 0) {
		free(devs);
		return err;
	}
	while (err == 0 && done < bytes) {
		long from, i = policy->pressure_pick(&s, p->conf, devs, p->drop_untargeted, &from);

		if (i < 0)
			break;	/* nothing can go now: handed out, returning or being cleared */
		size = s.r[i].size;
		gone = (struct record_key){ s.r[i].dev, s.r[i].page_size, s.r[i].warm_node };
		before = s.nr;
		err = drop_one(ctx, &s, i, info);
		if (s.nr == before)
			break;	/* it stayed (still in use): not given back */
		done += size;
		counter_pressure(ctx, gone.dev, gone.node, gone.page_size, size);
		if (from >= 0)
			cut[from] += size;
	}
	store_close(&s, lock);
	free(devs);
	return err;
}

EXPORT int prealloc_warm_fill(struct prealloc_ctx *ctx, const struct prealloc_warm_fill_opts *opts,
			      struct prealloc_warm_fill_info *ret_info)
{
	struct prealloc_warm_fill_info info = { .size = sizeof(info) };
	struct prealloc_warm_fill_opts o = { .size = sizeof(o) };
	struct warm_conf conf = { 0 };
	struct warm_pass p = { .conf = &conf };
	uint64_t *limit = NULL;
	int err;

	if (!ctx || (ret_info && ret_info->size < sizeof(size_t)))
		return -EINVAL;
	err = opts ? copy_sized_in(&o, sizeof(o), opts) : 0;
	if (err == 0)
		err = warm_conf_load(o.conf_path, &conf, info.message, sizeof(info.message));
	if (err == 0) {
		/* A one-shot pass runs as fast as it may, unless told (options, then warm.conf). */
		p.pace = (struct warm_pace){
			.threads = o.threads ? o.threads
					     : (unsigned int)warm_setting(conf.set.clear_threads, 0),
			.max_rate = o.clear_rate ? o.clear_rate : warm_setting(conf.set.clear_rate, 0),
			.idle = o.flags & PREALLOC_WARM_FILL_IDLE,
			.stop_fd = -1, .progress = o.progress, .userdata = o.userdata,
		};
		p.lock_timeout_ms = o.lock_timeout_ms ? o.lock_timeout_ms : ADMIT_LOCK_TIMEOUT_MS;
		p.drop_untargeted = conf.found;
		p.limit = limit = calloc(conf.nr + 1, sizeof(*limit));
		err = limit ? 0 : -ENOMEM;
	}
	if (err == 0) {
		warm_limits(ctx, &conf, NULL, limit);
		err = warm_pass_run(ctx, &p, &info);
	}
	free(limit);
	warm_conf_free(&conf);
	if (ret_info)
		copy_sized_out(ret_info, &info, sizeof(info));
	return err;
}
