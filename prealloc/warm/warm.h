/* SPDX-License-Identifier: MIT */
/*
 * The warm pool, private to the library (docs/warm.md): its counters
 * (counters.c), its targets (conf.c, conf_parse.c), what its files share (file.c), which file a
 * take gets (pick.c), take and give (handover.c), whether a single-tenant
 * declaration stands (declared.c), the pass that fill and
 * serve run (fill.c, clear.c, serve.c), status (status.c). A flow over
 * the state, engine and memory layers and prepare's flow (a new warm file
 * is prepared: flows/prepare.c); admission's use of READY files stays in
 * the state layer (state/admit_warm.c), below it.
 * Never installed.
 */
#ifndef PREALLOC_WARM_H
#define PREALLOC_WARM_H

#include "flows.h"

/* ---- the counters (counters.c) ------------------------------------------ */

/*
 * The warm pool's counters (counters.c): takes by what they found, pressure
 * give-backs, renewals, quarantines, what holders added past their records,
 * the last fill's rate, kept in the state directory
 * by mount device, node and page size, so that every process that takes or
 * gives adds to them and a one-shot status reads them. They reset when the
 * state directory does (/run: at boot).
 */
/* What a counter is kept by: the mount's device, the page size, the node. */
struct record_key {
	uint64_t dev, page_size;
	int node;
};

#define COUNTERS_LEAF "warm-counters"

/* The names a counters line may carry; status reads them by these. */
#define COUNTER_TAKE_MISS "take_miss"		/* no READY file: refused, nothing touched */
#define COUNTER_TAKE_REFUSED "take_refused"	/* a file found, the take refused (growth, ...) */
#define COUNTER_RENEWALS "renewals"
#define COUNTER_PRESSURE_FILES "pressure_files"
#define COUNTER_PRESSURE_BYTES "pressure_bytes"
#define COUNTER_FILL_RATE "fill_bytes_per_second"	/* a gauge: the last fill's */
#define COUNTER_QUARANTINES "quarantines"	/* files quarantined, once each */
#define COUNTER_TRIMMED "trimmed_bytes"		/* cut past a record as its file came back */

#define COUNTER_GIVES "gives"		/* files given back by their holders */
#define COUNTER_CREATED "created"		/* new files made, populated and verified */
#define COUNTER_CLEARS "inplace_clears"		/* files cleared in place for their tenant */
#define COUNTER_TAKE_SECONDS_US "take_us"	/* the histogram's sum, in microseconds */
#define COUNTER_LAST_PASS "last_pass"		/* a gauge: a target's last pass without failure */
#define COUNTER_UNMET "unmet_bytes"		/* a gauge: a target's bytes its node's share cannot hold */
/* The take histogram's buckets, by PREALLOC_WARM_TAKE_BOUNDS, then over the last. */
#define COUNTER_TAKE_BUCKETS \
	"take_le_0.001", "take_le_0.005", "take_le_0.01", "take_le_0.05", "take_le_0.1", \
	"take_le_0.5", "take_le_1", "take_le_5", "take_le_30", "take_le_inf"
#define COUNTER_TAKE_BOUNDS PREALLOC_WARM_TAKE_BOUNDS

/* "take_full", "take_cut", "take_partial", "take_cold" by enum prealloc_warm_hit; NULL past. */
const char *counter_take_name(int hit);
/* The i-th bucket's name (0 to PREALLOC_WARM_TAKE_BUCKETS - 1). */
const char *counter_take_bucket_name(unsigned int i);

/* One change of counter_change_all: n added to name's counter, or (set) put in its place. */
struct counter_change {
	const char *name;
	uint64_t n;
	bool set;
};
#define COUNTER_CHANGES_MAX 8
/*
 * c[0..n) applied to the counters of (dev, node, page_size) in one
 * rewrite of the file, under the counters' own lock; best effort, as below.
 */
int counter_change_all(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		       const struct counter_change *c, size_t n);

/*
 * Adds n to name's counter of (dev, node, page_size) (set: replaces it), under
 * the counters' own lock; best effort: 0 or a negative errno that no caller
 * needs to act on (a count lost is never a take refused).
 */
int counter_add(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t n);
int counter_set(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		const char *name, uint64_t v);
/*
 * A take's end: its hit kind counted and its seconds observed in the
 * histogram, or a miss (-ENOENT), or a refusal (other errors).
 */
void counter_take(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size, int r,
		  int hit, double seconds);
/* A file of bytes given back under memory pressure. */
void counter_pressure(struct prealloc_ctx *ctx, uint64_t dev, int node, uint64_t page_size,
		      uint64_t bytes);
/* The same, by the mount's path (its device from stat). */
int counter_set_at(struct prealloc_ctx *ctx, const char *mount, int node, uint64_t page_size,
		   const char *name, uint64_t v);
/* name's value for (dev, node, page_size) in text (counters_read's); 0 when absent. */
uint64_t counter_get(const char *text, uint64_t dev, int node, uint64_t page_size,
		     const char *name);
/* The whole counters file, NUL-terminated (*ret_text to free; NULL when there is none). */
int counters_read(struct prealloc_ctx *ctx, char **ret_text);
/* The last clear's rate of r's node, page size and mount (GB/s), for status. */
void counter_clear_rate(struct prealloc_ctx *ctx, const struct record *r, double gbps);
#define CLEARS_LEAF "warm-clears"	/* those rates: "<dev> <node> <page size> <GB/s>" lines */

/* How a warm file's job runs: in the background, or as fast as it goes. */
struct warm_pace {
	unsigned int threads;	/* per node; 0: every allowed CPU of the node */
	uint64_t max_rate;	/* bytes per second per node; 0: no cap */
	bool idle;		/* workers SCHED_IDLE */
	int stop_fd;		/* -1, or readable: stop (a clear is cancelled, the file DIRTY again) */
	/* NULL, or told of the job about every 100 ms (prealloc_warm_fill_opts'). */
	void (*progress)(void *userdata, struct prealloc_job *job);
	void *userdata;
};

/* ---- the targets (conf.c, conf_parse.c) ------------------------------------- */

/* One target of /etc/prealloc/warm.conf: bytes of warm files to keep. */
struct warm_target {
	int node;
	uint64_t page_size;	/* 4K, 2M or 1G */
	uint64_t bytes;		/* files x file_bytes */
	uint64_t file_bytes;
	unsigned int files;
	char mount[PATH_MAX];	/* "": the mount prealloc picks for page_size */
	unsigned int line;	/* where it was set */
	/* Declared so: every holder of its files is one tenant (cleared in place, never renewed). */
	bool single_tenant;
};
/*
 * The settings of warm.conf (docs/warm.md), for serve and fill. A value
 * of WARM_UNSET was not given: each user picks its own default.
 */
#define WARM_UNSET UINT64_MAX
struct warm_settings {
	uint64_t clear_threads;		/* per node */
	uint64_t clear_rate;		/* bytes per second per node; 0: no cap */
	uint64_t max_share;		/* percent of a node's memory the warm pool may hold */
	uint64_t psi_stall_us;		/* pressure = some STALL WINDOW; 0: off */
	uint64_t psi_window_us;
	uint64_t psi_full;		/* 1: "full", 0: "some" */
	uint64_t pressure_step;		/* bytes given back per pressure event */
	uint64_t available_floor;	/* without PSI: MemAvailable below it is pressure */
	uint64_t pressure_quiet_s;	/* no pressure this long: the targets hold again */
	uint64_t check_interval_s;	/* how often serve looks for holders gone */
};

struct warm_conf {
	struct warm_target *t;		/* in the file's order */
	unsigned int nr;
	struct warm_settings set;
	bool found;			/* a file was read (else: no targets, no settings) */
	/*
	 * What was read, as an in-place clear under a single-tenant
	 * declaration records it (declared.c): the file's absolute path, as
	 * named (a link in it is followed again by whoever reads it next; ""
	 * for text parsed alone), and the FNV-1a 64 of the text parsed.
	 */
	char path[PATH_MAX];
	uint64_t sum;
};
/*
 * The targets and settings in text (a warm.conf), its sum, no path.
 * -EINVAL with err saying which line and why: nothing is returned of a
 * file with a bad line.
 */
int warm_conf_parse(const char *text, struct warm_conf *ret, char *err, size_t err_len);
/*
 * The conf at path (NULL: $PREALLOC_WARM_CONF, else /etc/prealloc/warm.conf),
 * its absolute path and sum; empty if absent (found false, sum 0).
 */
int warm_conf_load(const char *path, struct warm_conf *ret, char *err, size_t err_len);
void warm_conf_free(struct warm_conf *conf);
/* A setting, or def when unset. */
static inline uint64_t warm_setting(uint64_t value, uint64_t def)
{
	return value == WARM_UNSET ? def : value;
}

/* ---- the files (file.c; handover.c, fill.c, status.c) -------------------- */

/* The latest holder expiry a take accepts: 9999-12-31T23:59:59Z. */
#define WARM_EXPIRES_MAX INT64_C(253402300799)

/*
 * A caller's tenant label: 1 to TENANT_MAX - 1 printable ASCII bytes, not
 * starting with '@', which the warm pool keeps for its own labels.
 */
static inline bool tenant_valid(const char *t)
{
	size_t n = 0;

	for (; t[n]; n++)
		if (t[n] <= ' ' || t[n] > '~')
			return false;
	return n > 0 && n < TENANT_MAX && t[0] != '@';
}
/*
 * The label of a file cleared in place because its target says
 * single-tenant: any take may have it while the target still says so;
 * fill renews it once it does not (a reload withdrew the declaration).
 */
#define WARM_TENANT_SINGLE "@single-tenant"

/* The mount of warm files of page_size: mount, else prealloc's pick (NULL: none). */
const char *warm_mount(struct prealloc_ctx *ctx, const char *mount, uint64_t page_size);
/* Whether r is a warm file of node and page_size on device dev. */
bool warm_is(const struct record *r, int node, uint64_t page_size, uint64_t dev);
/* A warm file's mount: its warm pool link is <mount root>/<staging directory>/<name>. */
void warm_record_mount(const struct record *r, char *buf, size_t len);
/* The target of warm file r, or -1: none wants it. devs: each target's mount, 0 none. */
long warm_target_of(const struct warm_conf *conf, const uint64_t *devs, const struct record *r);
/* Whether r's target is declared single-tenant. */
bool warm_single_tenant(const struct warm_conf *conf, const uint64_t *devs, const struct record *r);
/* The warm pool's link of r opened O_RDWR and checked to be r's file; -ESTALE if not. */
int warm_open(const struct record *r, struct stat *ret_st);
/*
 * Removes the holder's link at r->path if it is still r's file (must: or
 * fail, e.g. -ESTALE when another file is there; else 0 then).
 */
int warm_unlink_path(const struct record *r, bool must);
/*
 * Whether r's file (fd: the warm pool's link, this process's only descriptor
 * of it) may be open elsewhere: a write lease refused, or not to be had
 * (fail closed; never a /proc walk).
 */
bool warm_in_use(struct prealloc_ctx *ctx, const struct record *r, int fd);
/* r's file made root's, mode 0600, by its name in the staging directory. */
void warm_seize(const struct record *r);
/*
 * A given-back file made root's (0600), then: 0 free, -EBUSY open or
 * mapped elsewhere (or not provably not), -EMLINK it has a link besides
 * the warm pool's.
 */
int warm_check(struct prealloc_ctx *ctx, struct record *r);
/* r's file at length as a region bound to its node (EXISTING: -EEXIST if resized). */
int warm_region(struct prealloc_ctx *ctx, const struct record *r, uint64_t length,
		struct prealloc_region **ret);
/*
 * Grows r's file (fd) to length, the new pages populated on its node and
 * the whole verified; r->size follows. On failure the file is cut back.
 */
int warm_grow(struct prealloc_ctx *ctx, struct record *r, int fd, uint64_t length);
/*
 * job to its end; a readable pace->stop_fd (-1: none) cancels it first
 * (-ECANCELED); pace->progress told of it meanwhile.
 */
int warm_job_finish(struct prealloc_job *job, const struct warm_pace *pace);
/*
 * r's state after warm_check said check: DIRTY, or QUARANTINED
 * (warm_quarantine, s the store r is of); no holder, no path.
 */
void warm_returned(struct prealloc_ctx *ctx, struct store *s, struct record *r, int check);

/* ---- what a holder did to its own file (holder.c) ---------------------------- */

/*
 * Whatever of r's file (fd, open for writing) lies past its record's size
 * (or its own, when shorter) cut: pages, and on hugetlbfs the reservations
 * a mapping past the end made. The bytes that went (best effort for
 * reservations), counted (COUNTER_TRIMMED).
 */
uint64_t warm_trim(struct prealloc_ctx *ctx, const struct record *r, int fd);
/*
 * c's file emptied (truncated to 0: its pages and reservations, past its
 * end too) when a write lease proves no open file of it is left; else
 * nothing is touched: whatever still maps it keeps its bytes.
 */
void warm_release_if_sole(const struct record *c);
/* Whether r's file still has a link besides the warm pool's (a quarantine kept). */
bool warm_linked_elsewhere(const struct record *r);
/* The memory r's file holds now (its blocks); 0 when it has none or is gone. */
uint64_t warm_held_bytes(const struct record *r);
/*
 * r (of s) QUARANTINED for why, unless it is: counted once per file
 * (COUNTER_QUARANTINES) and logged once s's lock is dropped. The caller saves.
 */
void warm_quarantine(struct prealloc_ctx *ctx, struct store *s, struct record *r, const char *why);
/* What warm_check's verdict check says, in words. */
const char *warm_check_why(int check);
/*
 * pick.c: the one pick of a take and a find. The request o checked,
 * its mount's device in *ret_dev, and (ret_dir not NULL: a take) the
 * directory of o->path opened in *ret_dir (-1: RESERVE, no path); on
 * failure why in msg.
 */
int warm_take_check(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o, char *msg,
		    size_t len, uint64_t *ret_dev, int *ret_dir);
/*
 * The index in s of the file a take with o gets on the mount of device
 * dev, or -1: exactly its size, else the smallest larger one (cut), else
 * (unless NO_GROW) the largest smaller one (grown); RESERVED: the one its
 * holder reserved. ret_files (NULL: not wanted): how many it chose among.
 */
long warm_pick(const struct store *s, const struct prealloc_warm_take_opts *o, uint64_t dev,
	       unsigned int *ret_files);
/* A pick that found none: -ENOENT, why in msg. */
int warm_pick_miss(const struct prealloc_warm_take_opts *o, char *msg, size_t len);
/*
 * sharing.c: HANDED files linked at a path and given uid, of a holder but
 * holder and of no tenant the caller shares (tenant, self's, holder's
 * files'); self: the caller's own file's index (-1 none); the first one's
 * holder, else its path, in with.
 */
unsigned int warm_shared_uid(const struct store *s, uint32_t uid, const char *holder,
			     const char *tenant, long self, char *with, size_t len);
/* sharing.c: a CHOWN take's shared_uid_files and _with, its file taken (info->id). */
void warm_take_shared(struct prealloc_ctx *ctx, const struct prealloc_warm_take_opts *o,
		      struct prealloc_warm_take_info *info);
/* The enum prealloc_warm_hit of a file of file_bytes handed over as length. */
int warm_hit_of(uint64_t file_bytes, uint64_t length);
/* err, with fmt's text in msg. */
__attribute__((format(printf, 4, 5))) int warm_fail(char *msg, size_t len, int err,
						    const char *fmt, ...);
/*
 * A new warm file of length on node and mount, populated, verified zero
 * and on its node, recorded READY (synchronous; prepare's flow, warm);
 * where its time went added to phases' *_seconds (NULL: not counted).
 */
int warm_create(struct prealloc_ctx *ctx, int node, uint64_t page_size, const char *mount,
		uint64_t length, const struct warm_pace *pace, char *why, size_t why_len,
		uint64_t *ret_id, struct prealloc_warm_fill_info *phases);


/* ---- a file coming back from its holder (give.c) --------------------------- */

struct warm_returned_count {
	unsigned int files;		/* DIRTY or QUARANTINED now */
	unsigned int in_use;		/* of them, still open or mapped elsewhere */
	unsigned int dirty, quarantined;
};
/*
 * Records c[0..n) (copies, no pools), each RETURNING and busy by this
 * process in the store, finished with the store's lock dropped: each
 * holder's link at its path removed while it is still the file's (must:
 * a failure to is returned, and the record stays RETURNING for the next
 * pass), test point pause (NULL: none), the file seized and checked; then
 * under the lock (timeout_ms) DIRTY or QUARANTINED, busy cleared. Adds to
 * count.
 */
int warm_returns_finish(struct prealloc_ctx *ctx, unsigned int timeout_ms, const struct record *c,
			size_t n, bool must, const char *pause, struct warm_returned_count *count);
/*
 * The pass's returns: files whose holder is gone (a named holder's check
 * failed; no holder: its path gone and nothing opens or maps it), and
 * those a take or a give left when its run died (busy, the process gone),
 * given back as give does. Who is gone is decided on a snapshot with no
 * lock held. Adds the files made DIRTY to info->returned.
 */
int warm_returns_pass(struct prealloc_ctx *ctx, unsigned int timeout_ms,
		      struct prealloc_warm_fill_info *info);

/* ---- whether a single-tenant declaration stands (declared.c) -------------- */

/* r's declaration: the conf an in-place clear under single-tenant read (NULL: none). */
void warm_declared_set(struct record *r, const struct warm_conf *conf);
/*
 * Whether conf (a pass's, held since it was loaded) may clear r in place
 * under single-tenant now: the file it came from still declares r's target
 * so on disk (its text unchanged, or parsed again).
 */
bool warm_declared_stands(struct prealloc_ctx *ctx, const struct warm_conf *conf,
			  const struct record *r);
/*
 * r (READY) goes to DIRTY, its WARM_TENANT_SINGLE label and declaration
 * gone, for the next pass to renew: the table's "a single-tenant
 * declaration withdrawn". s NULL: in memory only; else saved.
 */
int warm_declared_withdraw(const struct prealloc_ctx *ctx, struct store *s, struct record *r);
/*
 * Before a take's pick (save: under the lock) or a find's (not saved):
 * every READY WARM_TENANT_SINGLE file of o's node and page size on device
 * dev whose declaration does not stand, as its recorded warm.conf says
 * now, withdrawn; for a RESERVED take, such a file reserved (HANDED, no
 * path) given back. 0, or the save's failure.
 */
int warm_declared_check(struct prealloc_ctx *ctx, struct store *s,
			const struct prealloc_warm_take_opts *o, uint64_t dev, bool save);

/* ---- a pass over the warm pool (fill.c, leftovers.c, clear.c, renew.c) -- */

#define WARM_MAX_SHARE 50	/* percent of a node's memory, when warm.conf sets none */

struct warm_pass {
	const struct warm_conf *conf;
	const uint64_t *limit;		/* per target: the bytes it may hold now */
	struct warm_pace pace;		/* clears and new files */
	unsigned int lock_timeout_ms;
	bool drop_untargeted;		/* files no target wants are given back */
};
/*
 * Each target's limit now: its bytes, within max_share of its node's memory
 * (the targets before it on the node first), less cut (NULL: none).
 */
void warm_limits(struct prealloc_ctx *ctx, const struct warm_conf *conf, const uint64_t *cut,
		 uint64_t *ret_limit);
/*
 * One pass: returns checked, files over a limit given back (DIRTY first,
 * then READY), DIRTY files cleared, targets grown to their limits. Stops
 * early (0) once pace.stop_fd is readable.
 */
int warm_pass_run(struct prealloc_ctx *ctx, const struct warm_pass *p,
		  struct prealloc_warm_fill_info *info);
/* file.c, for the pass: the first failure into info->message. */
__attribute__((format(printf, 2, 3))) void warm_note(struct prealloc_warm_fill_info *info,
						     const char *fmt, ...);
/* Whether fd (-1: none) is readable now: serve was asked to stop. */
bool warm_stop_asked(int fd);
/*
 * leftovers.c, under the lock: dead fills' and runs' leftovers settled,
 * quarantined files removed (files back from holders: warm_returns_pass,
 * before it).
 */
int warm_returns(struct prealloc_ctx *ctx, struct store *s, struct prealloc_warm_fill_info *info);
/* clear.c: every DIRTY file: CLEARING, cleared and verified, then READY (or renewed,
 * removed, or DIRTY if stopped). */
int warm_clears(struct prealloc_ctx *ctx, const struct warm_pass *p, const uint64_t *devs,
		struct prealloc_warm_fill_info *info);
/*
 * renew.c: c (CLEARING, this pass's) leaves the warm pool and a new file of
 * its node, page size, mount and size takes its place; 0, -ECANCELED
 * (stopped: c is DIRTY again for clear.c to write), or the failure (c
 * retired all the same).
 */
int warm_renew(struct prealloc_ctx *ctx, const struct warm_pass *p, const struct record *c,
	       struct prealloc_warm_fill_info *info);

/*
 * Memory pressure: warm files given back until bytes are (or none can go
 * now): files no target wants, then DIRTY ones, then READY ones of the
 * fullest target. What each target gave is added to cut[target].
 */
int warm_pass_shrink(struct prealloc_ctx *ctx, const struct warm_pass *p, uint64_t bytes,
		     uint64_t *cut, struct prealloc_warm_fill_info *info);

/* ---- the policy (policy.c) ------------------------------------------------- */

/*
 * The warm pool's choices, asked by its mechanism (take and find, the pass,
 * serve) through this struct only; warm_policy_of() says which policy a
 * ctx's warm pool runs (today: the default, the warm pool's policy as it has been).
 */
struct warm_policy {
	const char *name;
	/* Which file a take with o gets, as warm_pick (its contract). */
	long (*pick)(const struct store *s, const struct prealloc_warm_take_opts *o, uint64_t dev,
		     unsigned int *ret_files);
	/*
	 * The file of target want (-1: of none) to give back first when it
	 * holds more than its limit, files of keep_size staying (0: none
	 * stays); -1: none can go now (handed out, returning, being cleared).
	 */
	long (*drop)(const struct store *s, const struct warm_conf *conf, const uint64_t *devs,
		     long want, uint64_t keep_size);
	/*
	 * Under memory pressure: the next file to give back (-1: none can go
	 * now), its target in *ret_from (-1: of none, its limit not cut).
	 * untargeted: files of no target may go.
	 */
	long (*pressure_pick)(const struct store *s, const struct warm_conf *conf,
			      const uint64_t *devs, bool untargeted, long *ret_from);
	/* Bytes a pressure event gives back. */
	uint64_t (*pressure_step)(const struct warm_conf *conf);
	/* The size of target t's next file, holding held of limit; 0: none now. */
	uint64_t (*refill)(const struct warm_target *t, uint64_t held, uint64_t limit);
};

const struct warm_policy *warm_policy_of(const struct prealloc_ctx *ctx);
/*
 * Bytes of warm files of target want (-1: of none): not quarantined, and
 * not a file being renewed (CLEARING with no tenant: the new file that
 * takes its place counts, POPULATING, then READY).
 */
uint64_t warm_target_held(const struct store *s, const struct warm_conf *conf,
			  const uint64_t *devs, long want);
/*
 * Bytes of target want's files that the pass may give back to make room
 * (READY or DIRTY) and that are not of size keep_size: what files of another
 * size (cut for smaller guests) keep of the room for files of keep_size.
 */
uint64_t warm_target_other_size(const struct store *s, const struct warm_conf *conf,
				const uint64_t *devs, long want, uint64_t keep_size);

#endif
