/* SPDX-License-Identifier: MIT */
/*
 * The record store on disk, through the public API over a private state
 * directory and an injected sysfs/procfs (fakeroot.h): the version-1 pool
 * ledger and files/ registry are read as records and replaced by the store
 * at the first open under the lock, and never looked at again once a store
 * is there (even killed mid-way, the conversion leaves what a reader
 * accepts); a corrupt store (bad checksum, cut short, unknown version, a
 * line nobody wrote) is refused with -EBADMSG and left exactly as it was.
 */
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/wait.h>

#include "engine.h"
#include "state.h"
#include "fakeroot.h"
#include "tap.h"

#define MB2 PREALLOC_PAGE_2M

static struct fakeroot fr;

static bool exists(const char *dir, const char *leaf)
{
	char path[1024];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, leaf);
	return lstat(path, &st) == 0;
}

static char *slurp(const char *path, size_t *ret_len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0, len = 0, n;

	if (!f)
		return NULL;
	do {
		char *nb = realloc(buf, cap += 65536);

		if (!nb)
			break;
		buf = nb;
		n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	fclose(f);
	if (buf)
		buf[len] = '\0';
	*ret_len = len;
	return buf;
}

/* FNV-1a 64, written here again so the test does not trust the library's. */
static uint64_t fnv(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ULL;
	return h;
}

/* A store text of body (lines after the header), with a correct end line. */
static void framed(const char *header, const char *body, char *buf, size_t len)
{
	size_t lines = 1, n;

	n = (size_t)snprintf(buf, len, "%s\n%s", header, body);
	for (const char *p = body; *p; p++)
		lines += *p == '\n';
	snprintf(buf + n, len - n, "end %zu %016llx\n", lines, (unsigned long long)fnv(buf, n));
}

static void test_conversion(void)
{
	char file[400], text[8192], rel[128];
	struct prealloc_record_info info = { .size = sizeof(info) };
	struct prealloc_store_entry e = { .size = sizeof(e) };
	struct prealloc_ctx *ctx;
	struct stat st;
	unsigned int settled = 0;
	uint64_t returned = 0;
	int deadpid = (int)getpid() + 100003, r;

	/* A real file, as prealloc 0.1 made it; its pages came from grown pools. */
	snprintf(file, sizeof(file), "%s/guest mem", fr.dir);
	fr_write(fr.dir, "guest mem", "0123456789");
	stat(file, &st);
	fr_set_pool(&fr, 0, 600, 100);
	fr_set_pool(&fr, 1, 50, 50);
	mkdir(fr.state, 0700);
	/* held: the file's 2 nodes (one reservation id); in-flight: a run that died. */
	snprintf(text, sizeof(text),
		 "# prealloc ledger v1: state node page_size pages added base pid start dev ino id owner\n"
		 "held 0 2097152 300 250 0 0 0 %llu %llu 00000000000000aa %s\n"
		 "held 1 2097152 212 0 0 0 0 %llu %llu 00000000000000aa %s\n"
		 "in-flight 0 2097152 8 8 0 %d 999 0 0 00000000000000bb /dev/hugepages/vm2\n"
		 "in-flight 1 2097152 4 4 0 %d 999 0 0 00000000000000bb /dev/hugepages/vm2\n",
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, file,
		 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, file, deadpid, deadpid);
	fr_write(fr.state, "ledger", "%s", text);
	snprintf(rel, sizeof(rel), "files/%llx-%llx", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	fr_write(fr.state, rel, "path=%s\nsize=10\npage_size=2097152\nnodes=0-1\n", file);
	fr_write(fr.state, "files/ffff-ffff.tmp.77", "path=/x\n"); /* a crashed write's temp */

	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx over a 2-node fake tree"))
		return;
	r = prealloc_record(ctx, 0, &info);
	tap_ok(r == 0 && info.id == 0xaa && info.state == PREALLOC_RECORD_READY &&
		       info.owner == PREALLOC_OWNER_NONE && info.has_file && info.created &&
		       !strcmp(info.path, file) && info.file_size == 10 && info.page_size == MB2 &&
		       info.pages == 512 && info.added == 250,
	       "held + registry -> one READY created record: path, size 10, 512 pages, 250 added "
	       "(r %d id %llx state %d created %d size %llu pages %llu added %llu)",
	       r, (unsigned long long)info.id, info.state, info.created,
	       (unsigned long long)info.file_size, (unsigned long long)info.pages,
	       (unsigned long long)info.added);
	r = prealloc_record(ctx, 1, &info);
	tap_ok(r == 0 && info.id == 0xbb && info.state == PREALLOC_RECORD_PREPARING &&
		       info.owner == PREALLOC_OWNER_RUN && info.pid == deadpid && !info.alive &&
		       !info.has_file && !info.created && info.pages == 12 && info.added == 12,
	       "in-flight -> a PREPARING record of a dead run, 2 lines, 12 added (r %d)", r);
	tap_ok(prealloc_record(ctx, 2, &info) == -ENOENT, "two records, no more");
	r = prealloc_store_entry(ctx, 1, &e);
	tap_ok(r == 0 && e.state == PREALLOC_STORE_HELD && e.node == 1 && e.pages == 212 &&
		       e.added == 0 && e.dev == (uint64_t)st.st_dev && e.ino == (uint64_t)st.st_ino &&
		       !strcmp(e.owner, file),
	       "the held file's node-1 share keeps its dev/ino and path");
	tap_ok(!exists(fr.state, "store") && exists(fr.state, "ledger") && exists(fr.state, rel),
	       "reading converts nothing on disk");

	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && returned == 12 && fr_pool_nr(&fr, 0) == 592 &&
		       fr_pool_nr(&fr, 1) == 46,
	       "gc settles the dead run: 8 back on node 0, 4 on node 1 (r %d nr %llu %llu)", r,
	       (unsigned long long)fr_pool_nr(&fr, 0), (unsigned long long)fr_pool_nr(&fr, 1));
	tap_ok(exists(fr.state, "store") && !exists(fr.state, "ledger") &&
		       !exists(fr.state, "files"),
	       "the first write leaves the store alone: ledger and files/ are gone");
	r = prealloc_record(ctx, 0, &info);
	tap_ok(r == 0 && info.id == 0xaa && info.created && !strcmp(info.path, file) &&
		       info.added == 250 && prealloc_record(ctx, 1, &info) == -ENOENT,
	       "the store holds the converted file's record");
	/* The file goes: gc settles it, and the growth comes back as far as free. */
	unlink(file);
	fr_set_pool(&fr, 0, 592, 592);
	r = prealloc_store_gc(ctx, &returned, &settled);
	tap_ok(r == 0 && settled == 1 && fr_pool_nr(&fr, 0) == 342 && fr_pool_nr(&fr, 1) == 46 &&
		       prealloc_record(ctx, 0, &info) == -ENOENT,
	       "once its file is gone, its 250 go back (nr %llu)",
	       (unsigned long long)fr_pool_nr(&fr, 0));
	prealloc_ctx_free(ctx);
}

/* A state directory of its own for one test: fr.state names it from now on. */
static void fresh_state(const char *name)
{
	if (snprintf(fr.state, sizeof(fr.state), "%s/%s", fr.dir, name) < (int)sizeof(fr.state))
		mkdir(fr.state, 0700);
}

/* 0.1's files: a held share of reservation dd (no file) and one registry file. */
static void plant_v1(void)
{
	fr_write(fr.state, "ledger", "held 0 2097152 4 0 0 0 0 0 0 00000000000000dd -\n");
	fr_write(fr.state, "files/801-2a", "path=/x/v1 file\nsize=4096\npage_size=2097152\n");
	fr_write(fr.state, "pool.lock", "%s", "");
}

/* Events inotify saw on 0.1's files (opened, read, changed, removed): files_wd is files/. */
static unsigned int legacy_touches(int in, int files_wd)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	unsigned int n = 0;
	ssize_t len;

	while ((len = read(in, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			const struct inotify_event *e = (const struct inotify_event *)p;

			if (e->wd == files_wd ||
			    (e->len && (!strcmp(e->name, "ledger") || !strcmp(e->name, "files") ||
					!strcmp(e->name, "pool.lock"))))
				n++;
			p += sizeof(*e) + e->len;
		}
	}
	return n;
}

/* The store in fr.state: its record count, or a negative errno. */
static long store_count(struct prealloc_ctx *ctx)
{
	struct store s;
	long n;
	int r = store_load(ctx, &s);

	if (r < 0)
		return r;
	n = (long)s.nr;
	store_free(&s);
	return n;
}

/*
 * An open of a store that is there never touches 0.1's files, even when
 * some are planted beside it: not opened, read, changed or removed (inotify
 * watches them), not read into the store. Whoever runs the conversion on
 * every open (a store_read that looks for them first) fails this.
 */
static void test_current_store(void)
{
	const uint32_t mask = IN_OPEN | IN_ACCESS | IN_MODIFY | IN_ATTRIB | IN_DELETE | IN_CREATE |
			      IN_DELETE_SELF | IN_MOVED_FROM | IN_MOVED_TO;
	struct prealloc_record_info info = { .size = sizeof(info) };
	struct prealloc_ctx *ctx;
	char files[400];
	struct store s;
	int in, fwd, fd, a, b = -1, c, d;
	unsigned int settled = 9, touched;

	fresh_state("current");
	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx over a state directory of its own"))
		return;
	a = store_open(ctx, 1000, &s, &fd);
	if (a == 0 && store_add(&s, 0xc1)) {
		owner_holder(&s.r[0].owner, "vm-c1", NULL, 0);
		s.r[0].state = PREALLOC_RECORD_READY;
		a = store_save(ctx, &s);
	}
	if (a == 0)
		store_close(&s, fd);
	plant_v1();
	snprintf(files, sizeof(files), "%s/files", fr.state);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	fwd = inotify_add_watch(in, files, mask);
	inotify_add_watch(in, fr.state, mask);
	/* Every way in: open and save, read, the record list, gc (an open of its own). */
	b = store_open(ctx, 1000, &s, &fd);
	if (b == 0) {
		b = store_save(ctx, &s) ?: (int)s.nr;
		store_close(&s, fd);
	}
	c = prealloc_record(ctx, 0, &info);
	d = prealloc_store_gc(ctx, NULL, &settled);
	touched = legacy_touches(in, fwd);
	tap_ok(a == 0 && b == 1 && store_count(ctx) == 1 && c == 0 && info.id == 0xc1 &&
		       prealloc_record(ctx, 1, &info) == -ENOENT && d == 0 && settled == 0,
	       "a current store beside 0.1's files: its one record, theirs not read in (a %d b %d "
	       "c %d d %d)", a, b, c, d);
	tap_ok(touched == 0 && exists(fr.state, "ledger") && exists(fr.state, "files/801-2a") &&
		       exists(fr.state, "pool.lock"),
	       "an open of a current store never touches 0.1's files (%u events on them)",
	       touched);
	close(in);
	prealloc_ctx_free(ctx);
}

/*
 * 0.1's files and no store: the first open converts them (the store
 * written, they gone) before its caller saves anything; SIGKILLed at each
 * point of the conversion (PREALLOC_TEST_PAUSE stops it there), it leaves
 * what a reader accepts, the same two records, and the next open finishes:
 * a store, and whatever of 0.1's files is left never read again.
 */
static void test_convert_once(void)
{
	static const char *const points[] = { "", "store-convert-locked", "store-convert-written",
					      "store-convert-ledger-gone" };

	for (size_t i = 0; i < ARRAY_SIZE(points); i++) {
		struct prealloc_ctx *ctx;
		bool stopped = false, had_store;
		struct store s;
		char name[64];
		long before, after = -1;
		int st, fd, r = -1;
		pid_t pid;

		snprintf(name, sizeof(name), "convert%zu", i);
		fresh_state(name);
		plant_v1();
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			setenv("PREALLOC_TEST_PAUSE", points[i], 1);
			ctx = fakeroot_ctx(&fr);
			_exit(ctx && store_open(ctx, 1000, &s, &fd) == 0 && s.nr == 2 && !s.legacy ? 0 : 1);
		}
		waitpid(pid, &st, WUNTRACED);
		if (WIFSTOPPED(st)) {
			stopped = true;
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
		had_store = exists(fr.state, "store");
		ctx = fakeroot_ctx(&fr);
		before = ctx ? store_count(ctx) : -1;
		if (ctx && (r = store_open(ctx, 1000, &s, &fd)) == 0) {
			after = (long)s.nr;
			store_close(&s, fd);
		}
		if (!points[i][0])
			tap_ok(WIFEXITED(st) && WEXITSTATUS(st) == 0 && had_store &&
				       !exists(fr.state, "ledger") && !exists(fr.state, "files") &&
				       !exists(fr.state, "pool.lock") && after == 2,
			       "the first open converts 0.1's files: the store has both records, "
			       "they are gone (after %ld)", after);
		else
			tap_ok(stopped && before == 2 && r == 0 && after == 2 &&
				       exists(fr.state, "store") && had_store == (i > 1) &&
				       exists(fr.state, "files/801-2a") == (i > 0 && had_store),
			       "killed at %s: read as the same 2 records (%ld), the next open "
			       "has them in a store (%ld)", points[i], before, after);
		prealloc_ctx_free(ctx);
	}
}

/* prealloc_record and prealloc_store_gc refuse text with -EBADMSG; the file stays as it was. */
static void expect_corrupt(struct prealloc_ctx *ctx, const char *text, size_t len,
			   const char *what)
{
	struct prealloc_record_info info = { .size = sizeof(info) };
	struct prealloc_store_entry e = { .size = sizeof(e) };
	char path[400], *after;
	size_t after_len = 0;
	FILE *f;
	int a, b, c;

	snprintf(path, sizeof(path), "%s/store", fr.state);
	f = fopen(path, "w");
	fwrite(text, 1, len, f);
	fclose(f);
	a = prealloc_record(ctx, 0, &info);
	b = prealloc_store_gc(ctx, NULL, NULL);
	c = prealloc_store_entry(ctx, 0, &e);
	after = slurp(path, &after_len);
	tap_ok(a == -EBADMSG && b == -EBADMSG && c == -EBADMSG && after && after_len == len &&
		       !memcmp(after, text, len),
	       "%s: refused with -EBADMSG (%d %d %d), the store byte for byte as it was", what, a,
	       b, c);
	free(after);
}

static void test_corrupt(void)
{
	static const char body[] =
		"rec 00000000000000cc preparing run:4000000:1 fc 0 0 0.000000000 4194304 2097152 "
		"/mnt/vm%20one /mnt/.prealloc%2D00000000000000cc\n"
		"pool 0 2097152 2 2 0 -\n";
	struct prealloc_record_info info = { .size = sizeof(info) };
	char good[4096], bad[4096];
	struct prealloc_ctx *ctx;
	size_t len;
	int r;

	ctx = fakeroot_ctx(&fr);
	if (!tap_ok(ctx != NULL, "a ctx for the corrupt stores"))
		return;
	framed("prealloc-store 2", body, good, sizeof(good));
	len = strlen(good);
	/* First, that the text is good: the corruption is what is refused. */
	fr_write(fr.state, "store", "%s", good);
	r = prealloc_record(ctx, 0, &info);
	tap_ok(r == 0 && info.id == 0xcc && !strcmp(info.path, "/mnt/vm one") && info.pages == 2,
	       "the intact store reads (r %d, path '%s')", r, info.path);
	/* A ledger beside a corrupt store is never a fallback. */
	fr_write(fr.state, "ledger", "held 0 2097152 1 1 0 0 0 0 0 00000000000000dd -\n");

	memcpy(bad, good, len + 1);
	bad[len - 2] = bad[len - 2] == '0' ? '1' : '0';	/* the checksum's last digit */
	expect_corrupt(ctx, bad, len, "bad checksum");
	memcpy(bad, good, len + 1);
	bad[20] ^= 0x01;	/* a byte of the body */
	expect_corrupt(ctx, bad, len, "a flipped body byte");
	expect_corrupt(ctx, good, len - 1, "cut short by one byte");
	expect_corrupt(ctx, good, strlen("prealloc-store 2\n") + strlen(body) - 10,
		       "cut short mid-line");
	expect_corrupt(ctx, good, strlen("prealloc-store 2\n") + strlen(body),
		       "cut short before the end line");
	expect_corrupt(ctx, good, 0, "empty");
	framed("prealloc-store 6", body, bad, sizeof(bad));
	expect_corrupt(ctx, bad, strlen(bad), "unknown version 6 (checksum right)");
	framed("prealloc-store 2", "rec 00000000000000cc ready none f 1 2 0.000000000 4194304 "
				   "2097152 /mnt/a -\nwarm ready 0\n",
	       bad, sizeof(bad));
	expect_corrupt(ctx, bad, strlen(bad), "a warm line in a version 2 store");
	framed("prealloc-store 2", "rec 00000000000000cc preparing run:4000000:1 fc 0 0 0.000000000 4194304 "
				   "2097152 /mnt/a -\nbogus line\npool 0 2097152 2 2 0\n",
	       bad, sizeof(bad));
	expect_corrupt(ctx, bad, strlen(bad), "a garbage line (count and checksum right)");
	framed("prealloc-store 2", "pool 0 2097152 2 2 0 -\n", bad, sizeof(bad));
	expect_corrupt(ctx, bad, strlen(bad), "a pool line before any rec");
	framed("prealloc-store 2", "rec 00000000000000cc sleeping none - 0 0 0.000000000 0 0 - -\n", bad,
	       sizeof(bad));
	expect_corrupt(ctx, bad, strlen(bad), "an unknown state");
	memcpy(bad, good, strlen(good) + 1);
	strstr(bad, "\nend 3 ")[5] = '4';	/* the checksum still covers the body */
	expect_corrupt(ctx, bad, strlen(bad), "a wrong line count");
	/* A whole store, then a NUL and more: a C-string reader would see only the first part. */
	len = strlen(good);
	memcpy(bad, good, len);
	memcpy(bad + len, "\0rec junk\n", 11);
	expect_corrupt(ctx, bad, len + 11, "a NUL byte after a valid store");
	prealloc_ctx_free(ctx);
}

/*
 * A file's identity: dev and ino, and the birth time where the filesystem
 * keeps one. A new file on our inode number (ours deleted by hand) differs
 * in birth time; what a VMM does to ours (mtime, ctime, mode) does not
 * matter; a store written before kept an mtime, which still matches.
 */
static void test_identity(void)
{
	struct record r = { .id = 1 };
	struct statx ours = {
		.stx_mask = STATX_BASIC_STATS | STATX_BTIME, .stx_mode = S_IFREG | 0600,
		.stx_ino = 4242, .stx_dev_major = 0, .stx_dev_minor = 40,
		.stx_btime = { .tv_sec = 1700000000, .tv_nsec = 123456789 },
		.stx_mtime = { .tv_sec = 1700000000, .tv_nsec = 123456789 },
	};
	struct statx x = ours;

	record_set_identity(&r, &ours);
	tap_ok(r.ino == 4242 && r.tag_sec == 1700000000 && r.tag_nsec == 123456789,
	       "identity: dev, ino and the birth time recorded");
	x.stx_mtime.tv_sec = 978307200;
	x.stx_ctime.tv_sec = 978307200;
	x.stx_mode = S_IFREG | 0640;
	tap_ok(record_is_file(&r, &x), "identity: mtime, ctime and mode changed: still ours");
	x = ours;
	x.stx_btime.tv_nsec = 1;
	x.stx_mtime.tv_nsec = 2;
	tap_ok(!record_is_file(&r, &x), "identity: our inode number, another birth time: not ours");
	x = ours;
	x.stx_mode = S_IFLNK | 0777;
	tap_ok(!record_is_file(&r, &x), "identity: a link on our inode number: not ours");
	x = ours;
	x.stx_mask = STATX_BASIC_STATS;	/* hugetlbfs: no birth time */
	record_set_identity(&r, &x);
	x.stx_mtime.tv_sec = 1;
	tap_ok(r.tag_sec == 0 && r.tag_nsec == 0 && record_is_file(&r, &x),
	       "identity: no birth time (hugetlbfs): dev and ino alone");
	r.tag_sec = 1600000000;	/* a store of before: prealloc's mtime tag */
	r.tag_nsec = 777;
	x.stx_mtime = (struct statx_timestamp){ .tv_sec = 1600000000, .tv_nsec = 777 };
	tap_ok(record_is_file(&r, &x), "identity: an older store's mtime tag still matches");
	x.stx_mtime.tv_nsec = 778;
	tap_ok(!record_is_file(&r, &x), "identity: ... and only that mtime");
}

/*
 * Warm files in the store: every state and the node survive a save and a
 * load; a store with one is written as version 3, one without stays
 * version 2 (an older prealloc still reads it); a warm line that is
 * unknown, repeated, out of range or before any rec is refused.
 */
static void test_warm(void)
{
	static const char *const bad[][2] = {
		{ "warm ready 0\n", "a warm line before any rec" },
		{ "rec 0000000000000001 ready none f 1 2 0.000000000 4096 4096 /m/a -\n"
		  "warm lukewarm 0\n", "an unknown warm state" },
		{ "rec 0000000000000001 ready none f 1 2 0.000000000 4096 4096 /m/a -\n"
		  "warm ready 0\nwarm dirty 0\n", "two warm lines for one rec" },
		{ "rec 0000000000000001 ready none f 1 2 0.000000000 4096 4096 /m/a -\n"
		  "warm ready 1024\n", "a warm node out of range" },
		{ "rec 0000000000000001 ready none f 1 2 0.000000000 4096 4096 /m/a -\n"
		  "warm ready 0 x\n", "a warm line with a field too many" },
		{ "rec 0000000000000001 ready none f 1 2 0.000000000 4096 4096 /m/a -\n"
		  "warm none 0\n", "the warm state none, written out" },
	};
	struct store s = { 0 }, back = { 0 };
	char *text = NULL, framed_text[1024];
	size_t len;
	bool same = true;
	int r;

	for (int st = PREALLOC_WARM_POPULATING; st <= PREALLOC_WARM_QUARANTINED; st++) {
		struct record *rec = store_add(&s, (uint64_t)st);

		rec->state = PREALLOC_RECORD_READY;
		rec->has_file = rec->created = true;
		rec->warm = st;
		rec->warm_node = st * 7;	/* a node per state: no two alike */
		snprintf(rec->path, sizeof(rec->path), "/dev/hugepages/.prealloc/warm-%d", st);
	}
	store_add(&s, 99);	/* and one record that is no warm file */
	r = store_format(&s, &text, &len);
	tap_ok(r == 0 && !strncmp(text, "prealloc-store 3\n", 17),
	       "a store with warm files is written as version 3");
	r = r == 0 ? store_parse(text, &back) : r;
	for (size_t i = 0; r == 0 && i < s.nr; i++)
		same &= back.nr == s.nr && back.r[i].warm == s.r[i].warm &&
			back.r[i].warm_node == s.r[i].warm_node &&
			!strcmp(back.r[i].path, s.r[i].path);
	tap_ok(r == 0 && same, "every warm state and its node read back as written (r %d)", r);
	free(text);
	store_free(&back);
	store_free(&s);
	store_add(&s, 1)->state = PREALLOC_RECORD_READY;
	r = store_format(&s, &text, &len);
	tap_ok(r == 0 && !strncmp(text, "prealloc-store 2\n", 17) && !strstr(text, "warm"),
	       "a store without warm files stays version 2");
	free(text);
	store_free(&s);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		framed("prealloc-store 3", bad[i][0], framed_text, sizeof(framed_text));
		r = store_parse(framed_text, &back);
		tap_ok(r == -EBADMSG, "%s: refused (r %d)", bad[i][1], r);
		if (r == 0)
			store_free(&back);
	}
}

/*
 * Version 5: a warm file's move under way (busy), the uid a take gave it
 * to and the warm.conf that declared its in-place clear come back as
 * written; a store with none of them stays version 4 or 3; the lines are
 * refused in an older version, twice, before the warm line, or malformed.
 */
static bool same_record(const struct record *x, const struct record *y);

static void test_held(void)
{
#define REC "rec 0000000000000001 ready none f 1 2 0.000000000 4096 4096 /m/a -\n"
	static const char *const bad[][3] = {
		{ "4", REC "warm ready 0 -\nbusy 12 34\n", "a busy line in version 4" },
		{ "5", REC "busy 12 34\nwarm ready 0 -\n", "a busy line before the warm line" },
		{ "5", "rec 0000000000000001 ready none f 1 2 0.000000000 4096 4096 /m/a -\n"
		       "uid 1 2\n", "a uid line of a record that is no warm file" },
		{ "5", REC "warm ready 0 -\nbusy 12 34\nbusy 12 34\n", "two busy lines" },
		{ "5", REC "warm ready 0 -\nbusy 0 34\n", "a busy pid 0" },
		{ "5", REC "warm ready 0 -\nbusy 2147483648 34\n", "a busy pid past INT32_MAX" },
		{ "5", REC "warm ready 0 -\nuid 4294967296 0\n", "a uid past 32 bits" },
		{ "5", REC "warm ready 0 -\nuid 1 -2\n", "a negative gid" },
		{ "5", REC "warm ready 0 -\nuid 1 2 3\n", "a uid line with a field too many" },
		{ "5", REC "warm ready 0 -\ndeclared 00000000000000zz /etc/w\n", "a sum not hex" },
		{ "5", REC "warm ready 0 -\ndeclared 0123 /etc/w\n", "a short sum" },
		{ "5", REC "warm ready 0 -\ndeclared 0123456789abcdef etc\n", "a relative conf" },
		{ "5", REC "warm ready 0 -\ndeclared 0123456789abcdef -\n", "an empty conf path" },
		{ "5", REC "warm ready 0 -\ndeclared 0123456789abcdef /a\n"
		       "declared 0123456789abcdef /a\n", "two declared lines" },
		{ "5", REC "warm ready 0 -\nowner 1 2\n", "an unknown line" },
	};
	struct store s = { 0 }, back = { 0 };
	char *text = NULL, framed_text[1024], header[32];
	struct record *rec;
	size_t len;
	int r;

	rec = store_add(&s, 7);
	rec->warm = PREALLOC_WARM_HANDED;
	snprintf(rec->tenant, sizeof(rec->tenant), "acme");
	r = store_format(&s, &text, &len);
	tap_ok(r == 0 && !strncmp(text, "prealloc-store 4\n", 17),
	       "a tenant and no version-5 field: version 4 (r %d)", r);
	free(text);
	rec->busy_pid = 4242;
	rec->busy_start = 99;
	rec->has_uid = true;
	rec->uid = 64055;
	rec->gid = 0;
	snprintf(rec->declared, sizeof(rec->declared), "/etc/prealloc/warm conf");
	rec->declared_sum = 0xfedcba9876543210ULL;
	r = store_format(&s, &text, &len);
	tap_ok(r == 0 && !strncmp(text, "prealloc-store 5\n", 17) &&
	       strstr(text, "\nbusy 4242 99\nuid 64055 0\ndeclared fedcba9876543210 "
			    "/etc/prealloc/warm%20conf\n"),
	       "busy, uid and declared: version 5, after the warm line (r %d)", r);
	r = r == 0 ? store_parse(text, &back) : r;
	tap_ok(r == 0 && back.nr == 1 && same_record(&s.r[0], &back.r[0]),
	       "... and read back as written (r %d)", r);
	free(text);
	store_free(&back);
	store_free(&s);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(header, sizeof(header), "prealloc-store %s", bad[i][0]);
		framed(header, bad[i][1], framed_text, sizeof(framed_text));
		r = store_parse(framed_text, &back);
		tap_ok(r == -EBADMSG, "%s: refused (r %d)", bad[i][2], r);
		if (r == 0)
			store_free(&back);
	}
#undef REC
}

/* Every field the text carries, compared one by one (warm_node only where warm). */
static bool same_record(const struct record *x, const struct record *y)
{
	if (x->id != y->id || x->state != y->state || x->owner.kind != y->owner.kind ||
	    x->owner.pid != y->owner.pid || x->owner.start != y->owner.start ||
	    x->owner.expires != y->owner.expires || strcmp(x->owner.holder, y->owner.holder) ||
	    strcmp(x->owner.check, y->owner.check) || x->has_file != y->has_file ||
	    x->created != y->created || x->dev != y->dev || x->ino != y->ino ||
	    x->tag_sec != y->tag_sec || x->tag_nsec != y->tag_nsec || x->size != y->size ||
	    x->page_size != y->page_size || strcmp(x->path, y->path) || strcmp(x->tmp, y->tmp) ||
	    x->warm != y->warm || (x->warm && x->warm_node != y->warm_node) ||
	    (x->warm && strcmp(x->tenant, y->tenant)) || x->nr_pools != y->nr_pools)
		return false;
	if (x->warm && (x->busy_pid != y->busy_pid || x->busy_start != y->busy_start ||
			x->has_uid != y->has_uid || x->uid != y->uid || x->gid != y->gid ||
			strcmp(x->declared, y->declared) || x->declared_sum != y->declared_sum))
		return false;
	for (unsigned int k = 0; k < x->nr_pools; k++) {
		const struct rec_pool *p = &x->pools[k], *q = &y->pools[k];

		if (p->node != q->node || p->page_size != q->page_size || p->pages != q->pages ||
		    p->added != q->added || p->base != q->base || p->growing != q->growing ||
		    p->grow_from != q->grow_from)
			return false;
	}
	return true;
}

/* store_format, then store_parse: 0 when the same records come back, else why not. */
static int round_trip(const struct store *s, const char **ret_why)
{
	struct store back;
	char *text = NULL;
	size_t len;
	int r = store_format(s, &text, &len);

	*ret_why = "format refused it";
	if (r < 0)
		return r;
	*ret_why = "the text does not parse";
	r = strlen(text) == len ? store_parse(text, &back) : -EBADMSG;
	free(text);
	if (r < 0)
		return r;
	*ret_why = "other records came back";
	r = back.nr == s->nr ? 0 : -EIO;
	for (size_t i = 0; r == 0 && i < s->nr; i++)
		r = same_record(&s->r[i], &back.r[i]) ? 0 : -EIO;
	if (r == 0)
		*ret_why = "the same records";
	store_free(&back);
	return r;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

/* xorshift64: the same sequence every run, so a failure repeats. */
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Up to max - 1 bytes of 1-255, at least min; half the time only bytes the text escapes. */
static void rnd_str(char *buf, size_t max, size_t min)
{
	static const char esc[] = " %:-\t\n\x7f\xff\x01";
	size_t n = min + rnd() % (max - min);
	bool escapes = rnd() & 1;

	/* Lengths near the ends matter most: empty, and the whole array. */
	if (!(rnd() % 4))
		n = rnd() & 1 ? min : max - 1;
	for (size_t i = 0; i < n; i++)
		buf[i] = escapes ? esc[rnd() % (sizeof(esc) - 1)] : (char)(1 + rnd() % 255);
	buf[n] = '\0';
}

/* A record with every field drawn within what the store's text can carry. */
static void rnd_record(struct store *s, uint64_t id)
{
	static const uint64_t sizes[] = { PREALLOC_PAGE_4K, PREALLOC_PAGE_2M, PREALLOC_PAGE_1G };
	static const int64_t edges[] = { 0, 1, INT64_MAX, INT64_MIN };
	struct record *r = store_add(s, id);

	r->state = (int)(rnd() % 4);
	r->owner.kind = (int)(rnd() % 3);
	if (r->owner.kind == PREALLOC_OWNER_RUN) {
		r->owner.pid = rnd() & 1 ? INT32_MAX : 1 + (int)(rnd() % INT32_MAX);
		r->owner.start = rnd() & 1 ? UINT64_MAX : rnd();
	} else if (r->owner.kind == PREALLOC_OWNER_HOLDER) {
		rnd_str(r->owner.holder, sizeof(r->owner.holder), 1);
		rnd_str(r->owner.check, sizeof(r->owner.check), 0);
		r->owner.expires = rnd() & 1 ? (int64_t)(rnd() >> 1) : rnd() & 1 ? INT64_MAX : 0;
	}
	r->has_file = rnd() & 1;
	r->created = rnd() & 1;
	r->dev = rnd();
	r->ino = rnd() & 1 ? UINT64_MAX : rnd();
	r->tag_sec = rnd() & 1 ? (int64_t)rnd() : edges[rnd() % 4];
	r->tag_nsec = rnd() & 1 ? (long)(rnd() % 1000000000) : 999999999;
	r->size = rnd();
	r->page_size = rnd() & 1 ? sizes[rnd() % 3] : rnd();
	rnd_str(r->path, sizeof(r->path), 0);
	rnd_str(r->tmp, sizeof(r->tmp), 0);
	r->warm = (int)(rnd() % (PREALLOC_WARM_QUARANTINED + 1));
	r->warm_node = r->warm ? (int)(rnd() % PREALLOC_MAX_NODES) : 0;
	if (r->warm && rnd() & 1)
		rnd_str(r->tenant, sizeof(r->tenant), 1);
	if (r->warm && rnd() % 4 == 0) {
		r->busy_pid = rnd() & 1 ? INT32_MAX : 1 + (int)(rnd() % INT32_MAX);
		r->busy_start = rnd() & 1 ? UINT64_MAX : rnd();
	}
	if (r->warm && rnd() % 4 == 0) {
		r->has_uid = true;
		r->uid = rnd() & 1 ? UINT32_MAX : (uint32_t)rnd();
		r->gid = rnd() & 1 ? 0 : (uint32_t)rnd();
	}
	if (r->warm && rnd() % 4 == 0) {
		rnd_str(r->declared, sizeof(r->declared), 1);
		r->declared[0] = '/';
		r->declared_sum = rnd() & 1 ? UINT64_MAX : rnd();
	}
	for (unsigned int k = rnd() % 4; k; k--) {
		struct rec_pool p = {
			.node = rnd() & 1 ? PREALLOC_MAX_NODES - 1 : (int)(rnd() % PREALLOC_MAX_NODES),
			.page_size = sizes[rnd() % 3], .pages = rnd(), .added = rnd(), .base = rnd(),
			.growing = rnd() & 1,
		};

		p.grow_from = p.growing ? (rnd() & 1 ? UINT64_MAX : rnd()) : 0;
		record_add_pool(r, &p);
	}
}

/* Spoils r the i-th way its text could not be read back; returns what it did, NULL past the last. */
static const char *spoil(struct record *r, unsigned int i)
{
	switch (i) {
	case 0:
		r->owner.expires = -1;
		return "a holder expiring at -1";
	case 1:
		r->owner.expires = INT64_MIN;
		return "a holder expiring at INT64_MIN";
	case 2:
		r->owner.expires = (int64_t)((uint64_t)INT64_MAX + 1700000000);
		return "an overflowed --expires (INT64_MAX seconds from now)";
	case 3:
		r->owner.holder[0] = '\0';
		return "a holder with no name";
	case 4:
		r->owner = (struct rec_owner){ .kind = PREALLOC_OWNER_RUN, .pid = 0 };
		return "a run of pid 0";
	case 5:
		r->owner = (struct rec_owner){ .kind = PREALLOC_OWNER_RUN, .pid = -1 };
		return "a run of pid -1";
	case 6:
		r->owner.kind = 7;
		return "an owner kind nobody knows";
	case 7:
		r->state = PREALLOC_RECORD_ORPHAN + 1;
		return "a state past the last";
	case 8:
		r->state = -1;
		return "a negative state";
	case 9:
		r->tag_nsec = 1000000000;
		return "a tag of 10^9 nanoseconds";
	case 10:
		r->tag_nsec = -1;
		return "a tag of -1 nanoseconds";
	case 11:
		r->warm = PREALLOC_WARM_QUARANTINED + 1;
		return "a warm state past the last";
	case 12:
		r->warm_node = PREALLOC_MAX_NODES;
		return "a warm node of PREALLOC_MAX_NODES";
	case 13:
		r->warm_node = -1;
		return "a negative warm node";
	case 14:
		r->pools[0].node = PREALLOC_MAX_NODES;
		return "a pool node of PREALLOC_MAX_NODES";
	case 15:
		r->pools[0].node = -1;
		return "a negative pool node";
	case 16:
		r->pools[0].page_size = 8192;
		return "a pool of 8k pages";
	default:
		return NULL;
	}
}

/*
 * The store's text as a property: whatever records store_format takes,
 * store_parse gives back field for field (escapes, the longest strings,
 * INT64_MAX and 0 expiry); whatever it could not give back, store_format
 * refuses with -EINVAL and makes no text, so store_save never writes a
 * store its own reader calls corrupt.
 */
static void test_round_trip(void)
{
	unsigned int bad = 0, rounds = 300;
	const char *why = "";
	struct store s = { 0 };
	struct record *r;
	char *text;
	size_t len;
	int ret;

	/* The extremes by hand: the longest holder and paths, all of it escaped. */
	r = store_add(&s, UINT64_MAX);
	r->owner = (struct rec_owner){ .kind = PREALLOC_OWNER_HOLDER, .expires = INT64_MAX };
	memset(r->owner.holder, ':', sizeof(r->owner.holder) - 1);
	memset(r->owner.check, '%', sizeof(r->owner.check) - 1);
	memset(r->path, '-', sizeof(r->path) - 1);
	memset(r->tmp, '\xff', sizeof(r->tmp) - 1);
	r->tag_sec = INT64_MIN;
	r->tag_nsec = 999999999;
	r->warm = PREALLOC_WARM_HANDED;
	r->warm_node = PREALLOC_MAX_NODES - 1;
	memset(r->tenant, '%', sizeof(r->tenant) - 1);
	r = store_add(&s, 0);
	owner_holder(&r->owner, "-", NULL, 0);
	r = store_add(&s, 2);
	r->owner = (struct rec_owner){ .kind = PREALLOC_OWNER_RUN, .pid = INT32_MAX,
				       .start = UINT64_MAX };
	snprintf(r->path, sizeof(r->path), "/mnt/vm one/%%41:-\t\n\x7f\xc3\xa9");
	ret = round_trip(&s, &why);
	tap_ok(ret == 0, "round trip: expires INT64_MAX and 0, a 255-byte holder of ':', 4095-byte "
			 "paths of '%%', '-' and 0xff, a 63-byte tenant, pid INT32_MAX (r %d: %s)", ret, why);
	store_free(&s);

	/* Then many drawn at random, a few to a store. */
	for (unsigned int i = 0; i < rounds; i++) {
		for (unsigned int k = 1 + rnd() % 3; k; k--)
			rnd_record(&s, rnd() + k);
		ret = round_trip(&s, &why);
		if (ret < 0 && !bad++)
			tap_ok(0, "round trip of random store %u: %s (r %d)", i, why, ret);
		store_free(&s);
	}
	tap_ok(!bad, "round trip: %u random stores of every field read back as written (%u not)",
	       rounds, bad);

	for (unsigned int i = 0;; i++) {
		struct rec_pool p = { .node = 1, .page_size = PREALLOC_PAGE_2M, .pages = 1 };
		const char *what;

		store_add(&s, 1);
		r = store_add(&s, 2);
		owner_holder(&r->owner, "vm", NULL, 1700000000);
		r->warm = PREALLOC_WARM_READY;
		record_add_pool(r, &p);
		what = spoil(r, i);
		if (!what) {
			store_free(&s);
			break;
		}
		text = (char *)&s;	/* store_format must leave it alone */
		ret = store_format(&s, &text, &len);
		tap_ok(ret == -EINVAL && text == (char *)&s, "store_format refuses %s (r %d)", what,
		       ret);
		if (ret == 0)
			free(text);
		store_free(&s);
	}
	store_add(&s, 5);
	store_add(&s, 6);
	store_add(&s, 5);
	text = NULL;
	ret = store_format(&s, &text, &len);
	tap_ok(ret == -EINVAL && !text, "store_format refuses two records of one id (r %d)", ret);
	if (ret == 0)
		free(text);
	store_free(&s);
}

int main(void)
{
	char state[sizeof(fr.state)];

	if (fakeroot_make(&fr, 2) < 0) {
		tap_ok(0, "cannot build the fake tree in /tmp");
		return tap_done();
	}
	tap_remove_at_exit(fr.dir);
	test_conversion();
	memcpy(state, fr.state, sizeof(state));
	test_current_store();
	test_convert_once();
	memcpy(fr.state, state, sizeof(state));
	test_corrupt();
	test_identity();
	test_warm();
	test_held();
	test_round_trip();
	fakeroot_remove(&fr);
	return tap_done();
}
