/* SPDX-License-Identifier: MIT */
/*
 * `prealloc info`'s document and table (docs/json.md, "Info") as info.c
 * renders them, from a library that answers with a distinct value in every
 * field: the functions info.c calls are defined here (the real library is
 * not linked, beyond its size parser), so each key and column can be held
 * to the field it comes from. info.c keeps its rendering static, so it is
 * included here whole.
 */
#include "cli/info.c"

#include "json-check.h"

#define MiB (UINT64_C(1) << 20)
#define GiB (UINT64_C(1) << 30)

/* ---- the library and the CLI's helpers, as info.c sees them -------------- */

static const struct prealloc_node_info fake_nodes[] = {
	{ .node = 1, .cpu_node = 1, .nr_cpus = 3, .mem_total = 16 * GiB, .mem_free = 9 * GiB,
	  .hp2m_total = 100, .hp2m_free = 37, .hp1g_total = 6, .hp1g_free = 5 },
	/* Borrows node 2's CPUs: cpu_node is not node. */
	{ .node = 3, .cpu_node = 2, .nr_cpus = 2, .mem_total = 32 * GiB, .mem_free = 12 * GiB,
	  .hp2m_total = 300, .hp2m_free = 211, .hp1g_total = 4, .hp1g_free = 3 },
};
static const int fake_cpus[2][3] = { { 4, 5, 6 }, { 9, 11 } };
static const char *const fake_kernels[] = { "avx512_nt", "movnti", "c" };
static const char *mount_1g = "/mnt/huge-1g";
static int calibration_state;	/* what prealloc_calibration_load returns */

int prealloc_cpu_info(struct prealloc_ctx *ctx, struct prealloc_cpu_info *ret)
{
	(void)ctx;
	*ret = (struct prealloc_cpu_info){ .size = sizeof(*ret), .vendor = "HygonGenuine",
					   .model_name = "Fake CPU 12", .family = 24, .model = 49,
					   .stepping = 7, .llc_bytes = 12 * MiB,
					   .llc_source = "family 0x18's per-CCX L3",
					   .features = PREALLOC_CPU_ERMS | PREALLOC_CPU_AVX2 |
						       PREALLOC_CPU_CLZERO };
	return 0;
}

const char *prealloc_hugetlbfs_mount(struct prealloc_ctx *ctx, uint64_t page_size)
{
	(void)ctx;
	return page_size == PREALLOC_PAGE_2M ? "/mnt/huge-2m" : mount_1g;
}

int prealloc_nodes(struct prealloc_ctx *ctx, int *ret, unsigned int max)
{
	(void)ctx;
	for (unsigned int i = 0; i < 2 && i < max; i++)
		ret[i] = fake_nodes[i].node;
	return 2;
}

int prealloc_node_info(struct prealloc_ctx *ctx, int node, struct prealloc_node_info *ret)
{
	(void)ctx;
	for (unsigned int i = 0; i < 2; i++)
		if (fake_nodes[i].node == node) {
			*ret = fake_nodes[i];
			ret->size = sizeof(*ret);
			return 0;
		}
	return -ENODEV;
}

int prealloc_node_cpus(struct prealloc_ctx *ctx, int node, int *ret, unsigned int max)
{
	unsigned int i = node == 1 ? 0 : 1, n = i == 0 ? 3 : 2;

	(void)ctx;
	for (unsigned int k = 0; k < n && k < max; k++)
		ret[k] = fake_cpus[i][k];
	return (int)n;
}

int prealloc_clear_kernels(struct prealloc_ctx *ctx, const char **ret, unsigned int max)
{
	(void)ctx;
	for (unsigned int i = 0; i < 3 && i < max; i++)
		ret[i] = fake_kernels[i];
	return 3;
}

int prealloc_calibration_path(char *ret, size_t len)
{
	snprintf(ret, len, "/var/lib/prealloc/calibration-x");
	return 0;
}

int prealloc_calibration_load(struct prealloc_ctx *ctx, const char *path,
			      struct prealloc_calibration *ret)
{
	(void)ctx, (void)path, (void)ret;
	return calibration_state;
}

/* A large clear gets one kernel and reason, a small one another. */
int prealloc_clear_choose(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads,
			  const char **ret_name, char *why, size_t why_len)
{
	(void)ctx, (void)threads;
	*ret_name = size >= GiB ? "avx512_nt" : "c/movnti";
	snprintf(why, why_len, "%s", size >= GiB ? "the large reason" : "the small reason");
	return 0;
}

void prealloc_ctx_free(struct prealloc_ctx *ctx)
{
	(void)ctx;
}

int read_sysfs_line(const char *path, char *buf, size_t len)
{
	snprintf(buf, len, "%s", strstr(path, "shmem") ? "always within_size advise [never] deny"
						       : "always [madvise] never");
	return 0;
}

struct prealloc_ctx *cli_context(void)
{
	return NULL;
}

void cli_error(const char *fmt, ...)
{
	(void)fmt;
}

void cli_warn(const char *fmt, ...)
{
	(void)fmt;
}

int option_error(const char *cmd, char *const argv[], const char *optstring,
		 const struct option *longopts)
{
	(void)cmd, (void)argv, (void)optstring, (void)longopts;
	return EXIT_USAGE;
}

/* ---- the checks ---------------------------------------------------------- */

static void ints_are(json_object *arr, const int *want, unsigned int nr, const char *what)
{
	bool same = arr && json_object_is_type(arr, json_type_array) &&
		    json_object_array_length(arr) == nr;

	for (unsigned int i = 0; same && i < nr; i++)
		same = json_object_get_int(json_object_array_get_idx(arr, i)) == want[i];
	tap_ok(same, "%s: as the library listed them", what);
}

static void strings_are(json_object *arr, const char *const *want, unsigned int nr,
			const char *what)
{
	bool same = arr && json_object_is_type(arr, json_type_array) &&
		    json_object_array_length(arr) == nr;

	for (unsigned int i = 0; same && i < nr; i++)
		same = !strcmp(json_object_get_string(json_object_array_get_idx(arr, i)), want[i]);
	tap_ok(same, "%s: as listed", what);
}

static void test_json(void)
{
	static const char *const keys[] = { "version", "kernel", "cpu", "thp", "hugetlbfs",
		"nodes", "clear", NULL };
	static const char *const cpu_keys[] = { "vendor", "model_name", "family", "model",
		"stepping", "llc_bytes", "llc_source", "features", NULL };
	static const char *const node_keys[] = { "node", "cpu_node", "cpus", "mem_total",
		"mem_free", "hugepages", NULL };
	static const char *const features[] = { "erms", "avx2", "clzero" };
	json_object *o = info_json(NULL), *back, *j, *nodes;
	struct utsname u;
	const char *w = "info";

	back = json_tokener_parse(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								      JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	if (!tap_ok(back != NULL, "info: the document parses"))
		return;
	has_keys(back, w, keys);
	is_string(back, w, "version", prealloc_version());
	if (uname(&u) == 0)
		is_string(back, w, "kernel", u.release);
	j = json_object_object_get(back, "cpu");
	has_keys(j, "info cpu", cpu_keys);
	is_string(j, "info cpu", "vendor", "HygonGenuine");
	is_string(j, "info cpu", "model_name", "Fake CPU 12");
	is_int(j, "info cpu", "family", 24);
	is_int(j, "info cpu", "model", 49);
	is_int(j, "info cpu", "stepping", 7);
	is_u64(j, "info cpu", "llc_bytes", 12 * MiB);
	is_string(j, "info cpu", "llc_source", "family 0x18's per-CCX L3");
	strings_are(json_object_object_get(j, "features"), features, 3, "info cpu features");
	j = json_object_object_get(back, "thp");
	is_string(j, "info thp", "enabled", "madvise");
	is_string(j, "info thp", "shmem_enabled", "never");
	j = json_object_object_get(back, "hugetlbfs");
	is_string(j, "info hugetlbfs", "2M", "/mnt/huge-2m");
	is_string(j, "info hugetlbfs", "1G", "/mnt/huge-1g");
	nodes = json_object_object_get(back, "nodes");
	if (tap_ok(nodes && json_object_array_length(nodes) == 2, "info: two nodes")) {
		for (unsigned int i = 0; i < 2; i++) {
			const struct prealloc_node_info *f = &fake_nodes[i];
			json_object *n = json_object_array_get_idx(nodes, i);
			json_object *hp = json_object_object_get(n, "hugepages");
			json_object *p2 = json_object_object_get(hp, "2M");
			json_object *p1 = json_object_object_get(hp, "1G");
			char what[32];

			snprintf(what, sizeof(what), "info node %d", f->node);
			has_keys(n, what, node_keys);
			is_int(n, what, "node", f->node);
			is_int(n, what, "cpu_node", f->cpu_node);
			ints_are(json_object_object_get(n, "cpus"), fake_cpus[i], i ? 2 : 3, what);
			is_u64(n, what, "mem_total", f->mem_total);
			is_u64(n, what, "mem_free", f->mem_free);
			is_u64(p2, what, "total", f->hp2m_total);
			is_u64(p2, what, "free", f->hp2m_free);
			is_u64(p1, what, "total", f->hp1g_total);
			is_u64(p1, what, "free", f->hp1g_free);
		}
	}
	j = json_object_object_get(back, "clear");
	strings_are(json_object_object_get(j, "kernels"), fake_kernels, 3, "info clear kernels");
	is_string(json_object_object_get(j, "calibration"), "info calibration", "path",
		  "/var/lib/prealloc/calibration-x");
	is_string(json_object_object_get(j, "calibration"), "info calibration", "state", "active");
	/* Large: 1 GiB per worker on the most CPUs a node has; small: a quarter of the LLC. */
	is_u64(json_object_object_get(j, "large"), "info large", "bytes_per_worker", GiB);
	is_int(json_object_object_get(j, "large"), "info large", "threads", 3);
	is_string(json_object_object_get(j, "large"), "info large", "kernel", "avx512_nt");
	is_string(json_object_object_get(j, "large"), "info large", "why", "the large reason");
	is_u64(json_object_object_get(j, "small"), "info small", "bytes_per_worker", 3 * MiB);
	is_int(json_object_object_get(j, "small"), "info small", "threads", 1);
	is_string(json_object_object_get(j, "small"), "info small", "kernel", "c/movnti");
	is_string(json_object_object_get(j, "small"), "info small", "why", "the small reason");
	json_object_put(back);
}

/* The calibration's state for each answer of the load, and a missing 1G mount. */
static void test_states(void)
{
	static const struct {
		int r;
		const char *state;
	} rows[] = { { 0, "active" }, { -ENOENT, "none" }, { -ESTALE, "foreign" },
		     { -EINVAL, "invalid" } };

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_object *o, *cal;

		calibration_state = rows[i].r;
		o = info_json(NULL);
		cal = json_object_object_get(json_object_object_get(o, "clear"), "calibration");
		is_string(cal, "info calibration", "state", rows[i].state);
		json_object_put(o);
	}
	calibration_state = 0;
	mount_1g = NULL;
	json_object *o = info_json(NULL);

	is_null(json_object_object_get(o, "hugetlbfs"), "info no 1G mount", "1G");
	is_string(json_object_object_get(o, "hugetlbfs"), "info no 1G mount", "2M", "/mnt/huge-2m");
	json_object_put(o);
	mount_1g = "/mnt/huge-1g";
}

/* line, its runs of spaces made one, is want. */
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
	char want[256], buf[512], *text;
	struct capture c;
	struct utsname u;
	json_object *o;

	calibration_state = -ESTALE;
	o = info_json(NULL);
	capture_begin(&c);
	print_human(o);
	text = capture_end(&c);
	json_object_put(o);
	if (!tap_ok(text != NULL, "info: the table renders"))
		return;
	if (uname(&u) == 0) {
		snprintf(want, sizeof(want), "prealloc %s on Linux %s", prealloc_version(), u.release);
		is_line(text, 0, want);
	}
	is_line(text, 1, "cpu: Fake CPU 12 (HygonGenuine family 0x18 model 0x31 stepping 7), "
			 "LLC 12 MiB (family 0x18's per-CCX L3)");
	is_line(text, 2, "cpu features: erms avx2 clzero");
	is_line(text, 3, "thp: anonymous madvise, shmem never (files on /dev/shm get 4k pages; "
			 "thp there is not possible)");
	is_line(text, 4, "hugetlbfs 2M: /mnt/huge-2m");
	is_line(text, 5, "hugetlbfs 1G: /mnt/huge-1g");
	is_words(line_of(text, 6, buf, sizeof(buf)),
		 "node cpu node cpus memory free 2M total/free 1G total/free");
	is_words(line_of(text, 7, buf, sizeof(buf)), "1 1 4-6 16 GiB 9 GiB 100/37 6/5");
	is_words(line_of(text, 8, buf, sizeof(buf)), "3 2 9,11 32 GiB 12 GiB 300/211 4/3");
	is_line(text, 9, "clear kernels: avx512_nt movnti c");
	is_line(text, 10, "clear calibration: foreign /var/lib/prealloc/calibration-x");
	is_line(text, 11, "clear auto, 1 GiB per worker x 3: avx512_nt (the large reason)");
	is_line(text, 12, "clear auto, 3 MiB per worker x 1: c/movnti (the small reason)");
	calibration_state = 0;
	free(text);
}

int main(void)
{
	test_json();
	test_states();
	test_human();
	return tap_done();
}
