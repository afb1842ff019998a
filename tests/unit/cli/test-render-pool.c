/* SPDX-License-Identifier: MIT */
/*
 * `prealloc pool`'s document and table (docs/json.md, "Pool") as pool.c
 * renders them, from a library that answers with a distinct value in every
 * field: the functions pool.c calls are defined here, so each key and
 * column can be held to the field it comes from; and the exit status of
 * `pool`, `pool --gc` and `gc` for each error the store can give. pool.c keeps
 * its rendering static, so it is included here whole.
 */
#include "cli/pool.c"

#include "json-check.h"

/* ---- the library and the CLI's helpers, as pool.c sees them -------------- */

static const struct prealloc_pool_status fake_pools[] = {
	{ .node = 0, .page_size = PREALLOC_PAGE_2M, .total = 512, .free = 130, .surplus = 3,
	  .promised = 44, .added = 96, .owners = 1 },
	/* Node 0 has no 1G pool. */
	{ .node = 2, .page_size = PREALLOC_PAGE_2M, .total = 700, .free = 611, .surplus = 5,
	  .promised = 0, .added = 12, .owners = 1 },
	{ .node = 2, .page_size = PREALLOC_PAGE_1G, .total = 9, .free = 4, .surplus = 1,
	  .promised = 2, .added = 6, .owners = 1 },
};
static const struct prealloc_store_entry fake_entries[] = {
	{ .state = PREALLOC_STORE_IN_FLIGHT, .node = 0, .page_size = PREALLOC_PAGE_2M,
	  .pages = 128, .added = 80, .outstanding = 57, .pid = 4321, .tag = "/dev/hugepages/a" },
	{ .state = PREALLOC_STORE_HELD, .node = 2, .page_size = PREALLOC_PAGE_1G, .pages = 7,
	  .added = 6, .outstanding = 0, .pid = 0, .tag = "/dev/hugepages-1G/b" },
	{ .state = PREALLOC_STORE_ORPHAN, .node = 2, .page_size = PREALLOC_PAGE_2M, .pages = 24,
	  .added = 11, .outstanding = 0, .tag = "libvirt:0f1e" },
};
static const struct prealloc_record_info fake_records[] = {
	{ .id = 1, .state = PREALLOC_RECORD_PREPARING, .owner = PREALLOC_OWNER_RUN, .alive = 1,
	  .pid = 4321, .has_file = 1, .created = 1, .file_size = 268435456,
	  .page_size = PREALLOC_PAGE_2M, .pages = 128, .added = 80, .outstanding = 57,
	  .path = "/dev/hugepages/a" },
	{ .id = 2, .state = PREALLOC_RECORD_READY, .owner = PREALLOC_OWNER_NONE, .alive = 0,
	  .has_file = 1, .created = 0, .file_size = 7516192768, .page_size = PREALLOC_PAGE_1G,
	  .pages = 7, .added = 6, .outstanding = 0, .path = "/dev/hugepages-1G/b" },
	{ .id = 3, .state = PREALLOC_RECORD_READY, .owner = PREALLOC_OWNER_HOLDER, .alive = 1,
	  .holder = "libvirt:0f1e", .has_file = 0, .page_size = PREALLOC_PAGE_2M, .pages = 24,
	  .added = 11, .outstanding = 0, .path = "" },
	{ .id = 4, .state = PREALLOC_RECORD_PREPARING, .owner = PREALLOC_OWNER_RUN, .alive = 0,
	  .pid = 999, .has_file = 1, .created = 1, .file_size = 4096 * 3, .added = 13,
	  .outstanding = 8, .path = "/dev/shm/c" },
};
static int status_error, record_error, gc_error;	/* what the store says, 0: fine */

int prealloc_nodes(struct prealloc_ctx *ctx, int *ret, unsigned int max)
{
	(void)ctx;
	if (max >= 2) {
		ret[0] = 0;
		ret[1] = 2;
	}
	return 2;
}

int prealloc_pool_status(struct prealloc_ctx *ctx, int node, uint64_t page_size,
			 struct prealloc_pool_status *ret)
{
	(void)ctx;
	if (status_error)
		return status_error;
	for (size_t i = 0; i < sizeof(fake_pools) / sizeof(fake_pools[0]); i++)
		if (fake_pools[i].node == node && fake_pools[i].page_size == page_size) {
			*ret = fake_pools[i];
			ret->size = sizeof(*ret);
			return 0;
		}
	return -ENOENT;
}

int prealloc_store_entry(struct prealloc_ctx *ctx, unsigned int index,
			 struct prealloc_store_entry *ret)
{
	(void)ctx;
	if (index >= sizeof(fake_entries) / sizeof(fake_entries[0]))
		return -ENOENT;
	*ret = fake_entries[index];
	ret->size = sizeof(*ret);
	return 0;
}

int prealloc_record(struct prealloc_ctx *ctx, unsigned int index, struct prealloc_record_info *ret)
{
	(void)ctx;
	if (record_error)
		return record_error;
	if (index >= sizeof(fake_records) / sizeof(fake_records[0]))
		return -ENOENT;
	*ret = fake_records[index];
	ret->size = sizeof(*ret);
	return 0;
}

int prealloc_store_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned, unsigned int *ret_entries)
{
	(void)ctx;
	*ret_returned = 0;
	*ret_entries = 0;
	return gc_error;
}

const char *prealloc_ctx_state_dir(struct prealloc_ctx *ctx)
{
	(void)ctx;
	return "/run/prealloc-test";
}

void prealloc_ctx_free(struct prealloc_ctx *ctx)
{
	(void)ctx;
}

/* Any pointer will do: every call that takes it is defined above. */
struct prealloc_ctx *cli_context(void)
{
	static char fake;

	return (struct prealloc_ctx *)&fake;
}

void cli_error(const char *fmt, ...)
{
	(void)fmt;
}

const char *store_hint(int err)
{
	(void)err;
	return "";
}

int option_error(const char *cmd, char *const argv[], const char *optstring,
		 const struct option *longopts)
{
	(void)cmd, (void)argv, (void)optstring, (void)longopts;
	return EXIT_USAGE;
}

/* ---- the checks ---------------------------------------------------------- */

/* The pool's document as `pool --json` prints it, parsed; and the exit status. */
static json_object *pool_document(int *ret_status)
{
	struct capture c;
	char *text;
	json_object *o;

	capture_begin(&c);
	*ret_status = pool_show(cli_context(), true);
	text = capture_end(&c);
	o = text && text[0] ? json_tokener_parse(text) : NULL;
	free(text);
	return o;
}

static void owner_matches(json_object *j, const struct prealloc_store_entry *e)
{
	/* "owner": the tag's key before "tag", still there (docs/json.md). */
	static const char *const keys[] = { "owner", "tag", "state", "pages", "added",
		"outstanding", NULL };
	static const char *const run_keys[] = { "owner", "tag", "state", "pages", "added",
		"outstanding", "pid", NULL };
	static const char *const states[] = { "in-flight", "held", "orphan" };

	has_keys(j, e->tag, e->state == PREALLOC_STORE_IN_FLIGHT ? run_keys : keys);
	is_string(j, e->tag, "tag", e->tag);
	is_string(j, e->tag, "owner", e->tag);
	is_string(j, e->tag, "state", states[e->state]);
	is_u64(j, e->tag, "pages", e->pages);
	is_u64(j, e->tag, "added", e->added);
	is_u64(j, e->tag, "outstanding", e->outstanding);
	if (e->state == PREALLOC_STORE_IN_FLIGHT)
		is_int(j, e->tag, "pid", e->pid);
}

static void record_matches(json_object *j, const struct prealloc_record_info *r, const char *state)
{
	const char *keys[12] = { "path", "state", "created", "size", "added", "outstanding" };
	unsigned int n = 6;
	char what[64];

	snprintf(what, sizeof(what), "record %llu", (unsigned long long)r->id);
	if (r->owner == PREALLOC_OWNER_RUN)
		keys[n++] = "pid";
	if (r->owner == PREALLOC_OWNER_HOLDER)
		keys[n++] = "holder";
	keys[n++] = "alive";
	has_keys(j, what, keys);
	is_string(j, what, "path", r->path);
	is_string(j, what, "state", state);
	is_bool(j, what, "created", r->created);
	is_u64(j, what, "size", r->file_size);
	is_u64(j, what, "added", r->added);
	is_u64(j, what, "outstanding", r->outstanding);
	if (r->owner == PREALLOC_OWNER_RUN)
		is_int(j, what, "pid", r->pid);
	if (r->owner == PREALLOC_OWNER_HOLDER)
		is_string(j, what, "holder", r->holder);
	is_bool(j, what, "alive", r->alive);
}

static void test_json(void)
{
	static const char *const keys[] = { "pools", "records", NULL };
	static const char *const pool_keys[] = { "node", "page_size", "total", "free", "surplus",
		"reserved", "promised", "added", "owners", NULL };
	static const char *const states[] = { "preparing", "ready", "ready",
		"preparing (run died)" };
	json_object *o, *arr;
	int status;

	o = pool_document(&status);
	tap_ok(status == EXIT_OK, "pool: exit 0");
	if (!tap_ok(o != NULL, "pool: the document parses"))
		return;
	has_keys(o, "pool", keys);
	arr = json_object_object_get(o, "pools");
	if (tap_ok(arr && json_object_array_length(arr) == 3, "pool: three pools, node 0 no 1G")) {
		for (unsigned int i = 0; i < 3; i++) {
			const struct prealloc_pool_status *p = &fake_pools[i];
			json_object *j = json_object_array_get_idx(arr, i), *owners;
			char what[48];

			snprintf(what, sizeof(what), "pool node %d %s", p->node,
				 p->page_size == PREALLOC_PAGE_1G ? "1G" : "2M");
			has_keys(j, what, pool_keys);
			is_int(j, what, "node", p->node);
			is_u64(j, what, "page_size", p->page_size);
			is_u64(j, what, "total", p->total);
			is_u64(j, what, "free", p->free);
			is_u64(j, what, "surplus", p->surplus);
			is_u64(j, what, "promised", p->promised);
			/* "reserved": the key before "promised", still there (docs/json.md). */
			is_u64(j, what, "reserved", p->promised);
			is_u64(j, what, "added", p->added);
			/* Each entry under the pool of its node and size. */
			owners = json_object_object_get(j, "owners");
			if (tap_ok(owners && json_object_array_length(owners) == 1,
				   "%s: its one owner", what))
				owner_matches(json_object_array_get_idx(owners, 0),
					      &fake_entries[i == 0 ? 0 : i == 1 ? 2 : 1]);
		}
	}
	arr = json_object_object_get(o, "records");
	if (tap_ok(arr && json_object_array_length(arr) == 4, "pool: every record"))
		for (unsigned int i = 0; i < 4; i++)
			record_matches(json_object_array_get_idx(arr, i), &fake_records[i], states[i]);
	json_object_put(o);
}

static void is_words(const char *line, const char *want)
{
	char got[512];
	size_t n = 0;

	for (const char *p = line; *p && n + 1 < sizeof(got); p++)
		if (*p != ' ' || (n && got[n - 1] != ' '))
			got[n++] = *p;
	while (n && got[n - 1] == ' ')
		n--;
	got[n] = '\0';
	tap_ok(!strcmp(got, want), "words '%s' (got '%s')", want, got);
}

static void test_human(void)
{
	struct capture c;
	char buf[512], *text;
	int status;

	capture_begin(&c);
	status = pool_show(cli_context(), false);
	text = capture_end(&c);
	tap_ok(status == EXIT_OK, "pool table: exit 0");
	if (!tap_ok(text != NULL, "pool: the table renders"))
		return;
	is_words(line_of(text, 0, buf, sizeof(buf)),
		 "node size total free surplus promised added owners");
	is_words(line_of(text, 1, buf, sizeof(buf)), "0 2M 512 130 3 44 96 1");
	is_line(text, 2, "    /dev/hugepages/a: in-flight, 128 pages, added 80, 57 to fault, pid 4321");
	is_words(line_of(text, 3, buf, sizeof(buf)), "2 2M 700 611 5 0 12 1");
	is_line(text, 4, "    libvirt:0f1e: orphan, 24 pages, added 11");
	is_words(line_of(text, 5, buf, sizeof(buf)), "2 1G 9 4 1 2 6 1");
	is_line(text, 6, "    /dev/hugepages-1G/b: held, 7 pages, added 6");
	is_line(text, 7, "records in /run/prealloc-test:");
	is_line(text, 8, "  /dev/hugepages/a: preparing, 80 hugepages added, pid 4321");
	is_line(text, 9, "  /dev/hugepages-1G/b: ready, adopted, 6 hugepages added");
	is_line(text, 10, "  libvirt:0f1e: ready, 11 hugepages added, held by libvirt:0f1e");
	is_line(text, 11, "  /dev/shm/c: preparing (run died), 13 hugepages added, pid 999");
	free(text);
}

/* Exit status of `pool`, `pool --gc` and `gc` for what the store says (docs/prealloc.1.md). */
static void test_exit(void)
{
	static const struct {
		int *where, err, want;
		bool gc;
		const char *why;
	} rows[] = {
		{ &status_error, -EPERM, 4, false, "a state dir not ours alone" },
		{ &status_error, -EACCES, 4, false, "a store not readable" },
		{ &status_error, -EBADMSG, 4, false, "a corrupt store" },
		{ &record_error, -EBADMSG, 4, false, "a corrupt store, read for its records" },
		{ &record_error, -EACCES, 4, false, "a store not readable, for its records" },
		{ &gc_error, -EACCES, 4, true, "--gc: a pool or the store not writable" },
		{ &gc_error, -EPERM, 4, true, "--gc: not root" },
		{ &gc_error, -ETIMEDOUT, 4, true, "--gc: the lock not obtained in time" },
		{ &gc_error, -EIO, 1, true, "--gc: anything else" },
		{ &gc_error, 0, 0, true, "--gc that succeeds" },
	};
	struct capture c;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *argv[] = { "pool", "--json", rows[i].gc ? "--gc" : NULL, NULL };
		int got;

		*rows[i].where = rows[i].err;
		capture_begin(&c);
		got = cmd_pool(rows[i].gc ? 3 : 2, argv);
		free(capture_end(&c));
		*rows[i].where = 0;
		tap_ok(got == rows[i].want, "pool exit: %s: %d (got %d)", rows[i].why, rows[i].want,
		       got);
		if (!rows[i].gc)
			continue;
		/* `prealloc gc`, the store's gc by its name: the same exit status. */
		*rows[i].where = rows[i].err;
		capture_begin(&c);
		got = cmd_gc(1, (char *[]){ "gc", NULL });
		free(capture_end(&c));
		*rows[i].where = 0;
		tap_ok(got == rows[i].want, "gc exit: %s: %d (got %d)", rows[i].why, rows[i].want,
		       got);
	}
}

int main(void)
{
	test_json();
	test_human();
	test_exit();
	return tap_done();
}
