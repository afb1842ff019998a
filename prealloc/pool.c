/* SPDX-License-Identifier: MIT */
/*
 * Pools: each node's hugepage pool read and resized through sysfs, the
 * system-wide pool lock, and the ledger that records what prealloc added to
 * which pool for which owner, so concurrent runs never lose an update and
 * the growth is given back exactly once its pages are free again.
 *
 * The ledger is one text file, rewritten whole (temp + rename) under the
 * lock, so a crash leaves either the old or the new version. Readers that
 * only display it do not need the lock.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

#define NODE_SYSFS "/sys/devices/system/node"
#define HP_SYSFS "/sys/kernel/mm/hugepages"
#define LEDGER_HEADER "# prealloc ledger v1: state node page_size pages added base pid start dev ino id owner\n"

static const char *const state_names[] = {
	[PREALLOC_LEDGER_IN_FLIGHT] = "in-flight",
	[PREALLOC_LEDGER_HELD] = "held",
	[PREALLOC_LEDGER_ORPHAN] = "orphan",
};

int state_path(char *buf, size_t len, const char *leaf)
{
	const char *base = getenv("PREALLOC_STATE_DIR");	/* tests point this elsewhere */
	int n;

	if (base && *base)
		n = snprintf(buf, len, "%s/%s", base, leaf);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/prealloc/%s", leaf);
	else if ((base = getenv("XDG_RUNTIME_DIR")) && *base)
		n = snprintf(buf, len, "%s/prealloc/%s", base, leaf);
	else
		n = snprintf(buf, len, "/tmp/prealloc-%u/%s", (unsigned int)geteuid(), leaf);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The state directory must be ours alone: a directory (not a link), owned
 * by us, writable by nobody else. A /tmp fallback another user created
 * first could otherwise feed us a ledger or links to overwrite.
 */
static int state_dir_trusted(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

/* A new file for writing that follows no link and replaces nothing. */
static FILE *create_exclusive(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	FILE *f;

	if (fd < 0 && errno == EEXIST && unlink(path) == 0)	/* a crashed run's leftover */
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	f = fdopen(fd, "w");
	if (!f)
		close(fd);
	return f;
}

/* Creates the directory of path and its parents (mode 0700). */
static int mkdir_for(const char *path)
{
	char buf[PATH_MAX];
	char *slash;

	if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
		return -ENAMETOOLONG;
	slash = strrchr(buf, '/');
	if (!slash || slash == buf)
		return 0;
	*slash = '\0';
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return state_dir_trusted(buf);
}

int pool_lock(unsigned int timeout_ms, int *ret_fd)
{
	char path[PATH_MAX];
	double deadline = now_seconds() + timeout_ms / 1000.0;
	int fd, r;

	r = state_path(path, sizeof(path), "pool.lock");
	if (r < 0)
		return r;
	r = mkdir_for(path);
	if (r < 0)
		return r;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* Poll rather than block: callers such as a libvirt hook must stay bounded. */
	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		struct timespec ts = { .tv_nsec = 5 * 1000 * 1000 };

		if (errno != EWOULDBLOCK && errno != EINTR) {
			r = -errno;
			close(fd);
			return r;
		}
		if (now_seconds() >= deadline) {
			close(fd);
			return -ETIMEDOUT;
		}
		nanosleep(&ts, NULL);
	}
	*ret_fd = fd;
	return 0;
}

void pool_unlock(int fd)
{
	if (fd < 0)
		return;
	flock(fd, LOCK_UN);
	close(fd);
}

void ledger_free(struct ledger *l)
{
	free(l->e);
	l->e = NULL;
	l->nr = l->cap = 0;
}

int ledger_append(struct ledger *l, const struct ledger_entry *e)
{
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct ledger_entry *n = realloc(l->e, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		l->e = n;
		l->cap = cap;
	}
	l->e[l->nr++] = *e;
	return 0;
}

void ledger_remove(struct ledger *l, size_t i)
{
	if (i >= l->nr)
		return;
	memmove(&l->e[i], &l->e[i + 1], (l->nr - i - 1) * sizeof(*l->e));
	l->nr--;
}

static int state_from_name(const char *s)
{
	for (size_t i = 0; i < ARRAY_SIZE(state_names); i++)
		if (!strcmp(s, state_names[i]))
			return (int)i;
	return -1;
}

int ledger_load(struct ledger *l)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f;
	int r = 0;

	l->e = NULL;
	l->nr = l->cap = 0;
	r = state_path(path, sizeof(path), "ledger");
	if (r < 0)
		return r;
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while ((n = getline(&line, &cap, f)) > 0) {
		struct ledger_entry e = { 0 };
		unsigned long long ps, pages, added, base, start, dev, ino, id;
		char state[16];
		int off = 0;

		if (line[0] == '#')
			continue;
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		if (sscanf(line, "%15s %d %llu %llu %llu %llu %d %llu %llu %llu %llx %n", state, &e.node,
			   &ps, &pages, &added, &base, &e.pid, &start, &dev, &ino, &id, &off) < 11 ||
		    off <= 0 || (e.state = state_from_name(state)) < 0) {
			/* A line we cannot read is skipped, never guessed at. */
			continue;
		}
		e.page_size = ps;
		e.pages = pages;
		e.added = added;
		e.base = base;
		e.start_time = start;
		e.dev = dev;
		e.ino = ino;
		e.id = id;
		if ((size_t)snprintf(e.owner, sizeof(e.owner), "%s", line + off) >= sizeof(e.owner))
			continue;
		r = ledger_append(l, &e);
		if (r < 0)
			break;
	}
	free(line);
	fclose(f);
	if (r < 0)
		ledger_free(l);
	return r;
}

int ledger_save(const struct ledger *l)
{
	char path[PATH_MAX], tmp[PATH_MAX + 32];
	FILE *f;
	int r;

	r = state_path(path, sizeof(path), "ledger");
	if (r < 0)
		return r;
	r = mkdir_for(path);
	if (r < 0)
		return r;
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = create_exclusive(tmp);
	if (!f)
		return -errno;
	fputs(LEDGER_HEADER, f);
	for (size_t i = 0; i < l->nr; i++) {
		const struct ledger_entry *e = &l->e[i];

		fprintf(f, "%s %d %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %" PRIu64
			   " %" PRIu64 " %" PRIu64 " %016" PRIx64 " %s\n",
			state_names[e->state], e->node, e->page_size, e->pages, e->added, e->base,
			e->pid, e->start_time, e->dev, e->ino, e->id, e->owner[0] ? e->owner : "-");
	}
	/* Whole or not at all: flush to the file system before the rename. */
	if (fflush(f) != 0 || fsync(fileno(f)) < 0) {
		r = -errno;
		fclose(f);
		unlink(tmp);
		return r;
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		r = -errno;
		unlink(tmp);
		return r;
	}
	return 0;
}

uint64_t process_start_time(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file_str(path, buf, sizeof(buf)) < 0)
		return 0;
	/* The command name may hold spaces and parens: fields resume after the last ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* After ") ": state is field 3; starttime is field 22, 19 fields further. */
	p++;
	for (int field = 2; field < 21 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1)
		return 0;
	return start;
}

bool ledger_entry_live(const struct ledger_entry *e)
{
	if (e->state != PREALLOC_LEDGER_IN_FLIGHT)
		return false;
	return e->start_time && process_start_time(e->pid) == e->start_time;
}

int owner_present(const struct ledger_entry *e)
{
	struct stat st;

	if (e->owner[0] != '/' || !e->ino)
		return 0;
	if (stat(e->owner, &st) < 0)
		return 0;
	return (uint64_t)st.st_dev == e->dev && (uint64_t)st.st_ino == e->ino;
}

uint64_t ledger_outstanding(const struct ledger *l, size_t i)
{
	const struct ledger_entry *e = &l->e[i];
	uint64_t total = 0, resident;
	struct stat st;

	if (!ledger_entry_live(e))
		return 0;
	if (!owner_present(e) || stat(e->owner, &st) < 0)
		return e->pages;
	/*
	 * hugetlbfs counts a file's pages in st_blocks as they are faulted.
	 * Workers fill all nodes at once, so each node's entry is credited
	 * its share of what the file gained since it was named.
	 */
	for (size_t k = 0; k < l->nr; k++)
		if (l->e[k].id == e->id)
			total += l->e[k].pages;
	resident = (uint64_t)st.st_blocks * 512 / e->page_size;
	resident = resident > e->base ? resident - e->base : 0;
	if (!total)
		return 0;
	resident = (uint64_t)((double)resident * (double)e->pages / (double)total);
	return resident >= e->pages ? 0 : e->pages - resident;
}

uint64_t ledger_node_outstanding(const struct ledger *l, int node, uint64_t page_size,
				 uint64_t skip_id)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < l->nr; i++)
		if (l->e[i].node == node && l->e[i].page_size == page_size && l->e[i].id != skip_id)
			sum += ledger_outstanding(l, i);
	return sum;
}

/* sysfs file of node's pool, or the system-wide one where nodes are not exposed. */
static int pool_path(char *buf, size_t len, int node, uint64_t page_size, const char *leaf)
{
	unsigned long long kb = page_size >> 10;
	int n;

	if (access(NODE_SYSFS, F_OK) == 0)
		n = snprintf(buf, len, NODE_SYSFS "/node%d/hugepages/hugepages-%llukB/%s", node, kb,
			     leaf);
	else
		n = snprintf(buf, len, HP_SYSFS "/hugepages-%llukB/%s", kb, leaf);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int pool_read_one(int node, uint64_t page_size, const char *leaf, uint64_t *ret)
{
	char path[192];
	int r = pool_path(path, sizeof(path), node, page_size, leaf);

	return r < 0 ? r : read_file_u64(path, ret);
}

int pool_read(int node, uint64_t page_size, uint64_t *ret_total, uint64_t *ret_free,
	      uint64_t *ret_surplus)
{
	uint64_t total = 0, free_pages = 0, surplus = 0;
	int r;

	r = pool_read_one(node, page_size, "nr_hugepages", &total);
	if (r < 0)
		return r;
	r = pool_read_one(node, page_size, "free_hugepages", &free_pages);
	if (r < 0)
		return r;
	pool_read_one(node, page_size, "surplus_hugepages", &surplus);
	if (ret_total)
		*ret_total = total;
	if (ret_free)
		*ret_free = free_pages;
	if (ret_surplus)
		*ret_surplus = surplus;
	return 0;
}

int pool_global(uint64_t page_size, uint64_t *ret_free, uint64_t *ret_resv)
{
	char path[128];
	int r;

	snprintf(path, sizeof(path), HP_SYSFS "/hugepages-%llukB/free_hugepages",
		 (unsigned long long)(page_size >> 10));
	r = read_file_u64(path, ret_free);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), HP_SYSFS "/hugepages-%llukB/resv_hugepages",
		 (unsigned long long)(page_size >> 10));
	return read_file_u64(path, ret_resv);
}

/* Absolute write of nr_hugepages (never read-modify-write outside the lock). */
static int pool_write(int node, uint64_t page_size, uint64_t nr)
{
	char path[192], val[32];
	int fd, r, len;

	r = pool_path(path, sizeof(path), node, page_size, "nr_hugepages");
	if (r < 0)
		return r;
	len = snprintf(val, sizeof(val), "%" PRIu64 "\n", nr);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write(fd, val, (size_t)len) == len ? 0 : -errno;
	close(fd);
	return r;
}

/* Asks the kernel to compact node's memory so higher-order pages form. */
static void node_compact(int node)
{
	char path[96];
	int fd;

	snprintf(path, sizeof(path), NODE_SYSFS "/node%d/compact", node);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open("/proc/sys/vm/compact_memory", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (write(fd, "1", 1) < 0) {
		/* Compaction is a best effort; the read-back decides. */
	}
	close(fd);
}

int pool_grow(int node, uint64_t page_size, uint64_t pages, double deadline,
	      struct grow_result *ret)
{
	double start = now_seconds();
	uint64_t nr = 0;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = pool_read_one(node, page_size, "nr_hugepages", &ret->before);
	if (r < 0)
		return r;
	ret->requested = ret->before + pages;
	for (;;) {
		r = pool_write(node, page_size, ret->requested);
		if (r < 0 && r != -ENOMEM)
			goto undo;
		/* The kernel may allocate fewer than asked: believe only the read-back. */
		r = pool_read_one(node, page_size, "nr_hugepages", &nr);
		if (r < 0)
			goto undo;
		if (nr >= ret->requested || now_seconds() >= deadline)
			break;
		node_compact(node);
	}
	ret->got = nr;
	ret->seconds = now_seconds() - start;
	if (nr >= ret->requested) {
		ret->added = nr - ret->before;
		return 0;
	}
	r = -ENOMEM;
undo:
	/* All or nothing: a partial growth helps nobody and would leak. */
	pool_write(node, page_size, ret->before);
	ret->seconds = now_seconds() - start;
	return r;
}

int pool_shrink(int node, uint64_t page_size, uint64_t pages, uint64_t *ret_returned)
{
	uint64_t before, after;
	int r;

	*ret_returned = 0;
	if (!pages)
		return 0;
	r = pool_read_one(node, page_size, "nr_hugepages", &before);
	if (r < 0)
		return r;
	r = pool_write(node, page_size, before > pages ? before - pages : 0);
	if (r < 0)
		return r;
	r = pool_read_one(node, page_size, "nr_hugepages", &after);
	if (r < 0)
		return r;
	*ret_returned = before > after ? before - after : 0;
	return 0;
}

int ledger_return_growth(struct ledger *l, size_t i, uint64_t *ret_returned, uint64_t *ret_left)
{
	struct ledger_entry *e = &l->e[i];
	uint64_t free_pages = 0, others, give, returned = 0;
	int r;

	*ret_returned = 0;
	*ret_left = e->added;
	if (!e->added)
		return 0;
	r = pool_read(e->node, e->page_size, NULL, &free_pages, NULL);
	if (r < 0)
		return r;
	/* Never take pages another run was promised and has not faulted yet. */
	others = ledger_node_outstanding(l, e->node, e->page_size, e->id);
	give = free_pages > others ? MIN(e->added, free_pages - others) : 0;
	if (!give)
		return 0;
	/*
	 * Write ahead: record the pages as returned before returning them. A
	 * crash in between leaves growth in the pool (an administrator sees
	 * it) rather than a ledger that would shrink the pool a second time.
	 */
	e->added -= give;
	r = ledger_save(l);
	if (r < 0) {
		e->added += give;
		return r;
	}
	r = pool_shrink(e->node, e->page_size, give, &returned);
	returned = r < 0 ? 0 : MIN(returned, give);
	if (returned < give) {
		e->added += give - returned;	/* what the kernel kept is still ours */
		ledger_save(l);
	}
	*ret_returned = returned;
	*ret_left = e->added;
	return r < 0 ? r : 0;
}

/* ---- public: status, listing, release, gc ------------------------------ */

EXPORT int prealloc_pool_status(struct prealloc_ctx *ctx, int node, uint64_t page_size,
				struct prealloc_pool_status *ret_status)
{
	struct prealloc_pool_status st = { .size = sizeof(st) };
	struct ledger l;
	int r;

	if (!ctx || !ret_status || ret_status->size < sizeof(size_t))
		return -EINVAL;
	if (page_size != PREALLOC_PAGE_2M && page_size != PREALLOC_PAGE_1G)
		return -EINVAL;
	if (!topo_node(ctx, node))
		return -ENODEV;
	st.node = node;
	st.page_size = page_size;
	r = pool_read(node, page_size, &st.total, &st.free, &st.surplus);
	if (r < 0)
		return r;
	r = ledger_load(&l);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l.nr; i++) {
		if (l.e[i].node != node || l.e[i].page_size != page_size)
			continue;
		st.reserved += ledger_outstanding(&l, i);
		st.added += l.e[i].added;
		st.owners++;
	}
	ledger_free(&l);
	copy_sized_out(ret_status, &st, sizeof(st));
	return 0;
}

EXPORT int prealloc_ledger_entry(struct prealloc_ctx *ctx, unsigned int index,
				 struct prealloc_ledger_entry *ret_entry)
{
	struct prealloc_ledger_entry out = { .size = sizeof(out) };
	struct ledger l;
	int r;

	if (!ctx || !ret_entry || ret_entry->size < sizeof(size_t))
		return -EINVAL;
	r = ledger_load(&l);
	if (r < 0)
		return r;
	if (index >= l.nr) {
		ledger_free(&l);
		return -ENOENT;
	}
	out.state = l.e[index].state;
	/* A run that died is shown for what it is. */
	if (out.state == PREALLOC_LEDGER_IN_FLIGHT && !ledger_entry_live(&l.e[index]))
		out.state = PREALLOC_LEDGER_ORPHAN;
	out.node = l.e[index].node;
	out.page_size = l.e[index].page_size;
	out.pages = l.e[index].pages;
	out.added = l.e[index].added;
	out.outstanding = ledger_outstanding(&l, index);
	out.pid = l.e[index].pid;
	out.dev = l.e[index].dev;
	out.ino = l.e[index].ino;
	snprintf(out.owner, sizeof(out.owner), "%s", l.e[index].owner);
	ledger_free(&l);
	copy_sized_out(ret_entry, &out, sizeof(out));
	return 0;
}

/*
 * Gives back the growth of every entry select() accepts; entries fully
 * given back leave the ledger, the rest stay as ORPHAN for a later gc.
 */
static int release_matching(bool (*select)(const struct ledger_entry *e, const void *arg),
			    const void *arg, uint64_t *ret_returned, unsigned int *ret_entries)
{
	uint64_t total = 0;
	unsigned int matched = 0;
	struct ledger l = { 0 };
	int fd = -1, r;

	r = pool_lock(30000, &fd);
	if (r < 0)
		return r;
	r = ledger_load(&l);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < l.nr;) {
		uint64_t returned, left;

		if (!select(&l.e[i], arg)) {
			i++;
			continue;
		}
		matched++;
		r = ledger_return_growth(&l, i, &returned, &left);
		if (r < 0)
			goto out_save;
		total += returned;
		if (left) {
			l.e[i].state = PREALLOC_LEDGER_ORPHAN;
			i++;
		} else {
			ledger_remove(&l, i);
		}
	}
out_save:
	if (matched) {
		int s = ledger_save(&l);

		if (r == 0)
			r = s;
	}
out:
	ledger_free(&l);
	pool_unlock(fd);
	if (ret_returned)
		*ret_returned = total;
	if (ret_entries)
		*ret_entries = matched;
	return r;
}

struct release_arg {
	const char *owner;
	bool busy;
};

static bool select_owner(const struct ledger_entry *e, const void *arg)
{
	struct release_arg *a = (struct release_arg *)arg;

	if (strcmp(e->owner, a->owner) || ledger_entry_live(e))
		return false;
	if (owner_present(e)) {
		/* Still there: its pages are in use. */
		a->busy = true;
		return false;
	}
	return true;
}

EXPORT int prealloc_pool_release(struct prealloc_ctx *ctx, const char *owner,
				 uint64_t *ret_returned)
{
	struct release_arg a = { .owner = owner };
	unsigned int matched = 0;
	int r;

	if (ret_returned)
		*ret_returned = 0;
	if (!ctx || !owner || !*owner)
		return -EINVAL;
	r = release_matching(select_owner, &a, ret_returned, &matched);
	if (r < 0)
		return r;
	if (!matched)
		return a.busy ? -EBUSY : -ENOENT;
	return 0;
}

/* Dead runs, owners whose file is gone or replaced, and orphans. */
static bool select_stale(const struct ledger_entry *e, const void *arg)
{
	(void)arg;
	switch (e->state) {
	case PREALLOC_LEDGER_IN_FLIGHT:
		return !ledger_entry_live(e) && !owner_present(e);
	case PREALLOC_LEDGER_HELD:
		return e->owner[0] == '/' && !owner_present(e);
	default:
		return true;
	}
}

EXPORT int prealloc_pool_gc(struct prealloc_ctx *ctx, uint64_t *ret_returned,
			    unsigned int *ret_entries)
{
	struct ledger l = { 0 };
	bool changed = false;
	int fd = -1, r;

	if (!ctx)
		return -EINVAL;
	/* A run that died after its file was made: the file holds the pages now. */
	r = pool_lock(30000, &fd);
	if (r < 0)
		return r;
	r = ledger_load(&l);
	for (size_t i = 0; r == 0 && i < l.nr; i++) {
		if (l.e[i].state == PREALLOC_LEDGER_IN_FLIGHT && !ledger_entry_live(&l.e[i]) &&
		    owner_present(&l.e[i])) {
			l.e[i].state = PREALLOC_LEDGER_HELD;
			changed = true;
		}
	}
	if (r == 0 && changed)
		r = ledger_save(&l);
	ledger_free(&l);
	pool_unlock(fd);
	if (r < 0)
		return r;
	return release_matching(select_stale, NULL, ret_returned, ret_entries);
}
