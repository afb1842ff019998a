/* SPDX-License-Identifier: MIT */
/*
 * The store in memory: records added, found and deleted, their pools, new
 * ids. Its text format, on disk, is records.c's; 0.1's files are read into
 * one by store_v1.c.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "state.h"

void store_free(struct store *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->r[i].pools);
	free(s->r);
	s->r = NULL;
	s->nr = s->cap = 0;
	free(s->notes);		/* never logged: store_close logs them first */
	s->notes = NULL;
	s->nr_notes = 0;
}

struct record *store_add(struct store *s, uint64_t id)
{
	if (s->nr == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 4;
		struct record *n = realloc(s->r, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->r = n;
		s->cap = cap;
	}
	memset(&s->r[s->nr], 0, sizeof(s->r[0]));
	s->r[s->nr].id = id;
	return &s->r[s->nr++];
}

void store_del(struct store *s, size_t i)
{
	if (i >= s->nr)
		return;
	free(s->r[i].pools);
	memmove(&s->r[i], &s->r[i + 1], (s->nr - i - 1) * sizeof(*s->r));
	s->nr--;
}

long store_find(const struct store *s, uint64_t id)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->r[i].id == id)
			return (long)i;
	return -1;
}

int record_add_pool(struct record *r, const struct rec_pool *p)
{
	struct rec_pool *n = realloc(r->pools, (r->nr_pools + 1) * sizeof(*n));

	if (!n)
		return -ENOMEM;
	r->pools = n;
	r->pools[r->nr_pools++] = *p;
	return 0;
}

uint64_t record_new_id(void)
{
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		id = ((uint64_t)getpid() << 32) ^ (uint64_t)(now_seconds() * 1e6);
	return id ? id : 1;
}

int store_version(const struct store *s)
{
	int v = STORE_VERSION;

	for (size_t i = 0; i < s->nr; i++) {
		const struct record *r = &s->r[i];

		if (r->warm == WARM_NONE)
			continue;
		if (r->busy_pid || r->has_uid || r->declared[0])
			return STORE_VERSION_HELD;
		if (r->tenant[0])
			v = STORE_VERSION_TENANT;
		else if (v < STORE_VERSION_WARM)
			v = STORE_VERSION_WARM;
	}
	return v;
}
