/* SPDX-License-Identifier: MIT */
/* `prealloc info`: topology, pools per node and size, mounts, CPU identity. */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <string.h>
#include <sys/utsname.h>

#include "cli.h"
#include "installs.h"

static const struct {
	uint64_t bit;
	const char *name;
} cpu_features[] = {
	{ PREALLOC_CPU_SSE2, "sse2" },	   { PREALLOC_CPU_ERMS, "erms" },
	{ PREALLOC_CPU_FSRM, "fsrm" },	   { PREALLOC_CPU_AVX2, "avx2" },
	{ PREALLOC_CPU_AVX512F, "avx512f" }, { PREALLOC_CPU_CLZERO, "clzero" },
	{ PREALLOC_CPU_MOVDIR64B, "movdir64b" }, { PREALLOC_CPU_DCZVA, "dczva" },
	{ PREALLOC_CPU_MOPS, "mops" },
};

/* The bracketed choice of a sysfs mode file: "always [madvise] never" -> madvise. */
static const char *sysfs_mode(const char *path, char *buf, size_t len)
{
	char line[256], *a, *b;

	if (read_sysfs_line(path, line, sizeof(line)) < 0)
		return "unavailable";
	a = strchr(line, '[');
	b = a ? strchr(a, ']') : NULL;
	if (a && b) {
		*b = '\0';
		memmove(line, a + 1, strlen(a + 1) + 1);
	}
	if ((size_t)snprintf(buf, len, "%s", line) >= len)
		return "unknown";
	return buf;
}

/* One automatic clear-kernel choice: bytes per worker, workers, kernel, why. */
static json_object *clear_choice_json(struct prealloc_ctx *ctx, uint64_t size, unsigned int threads)
{
	json_object *o = json_object_new_object();
	const char *name = "?";
	char why[160] = "";

	prealloc_clear_choose(ctx, size, threads, &name, why, sizeof(why));
	json_object_object_add(o, "bytes_per_worker", json_object_new_uint64(size));
	json_object_object_add(o, "threads", json_object_new_int((int)threads));
	json_object_object_add(o, "kernel", json_object_new_string(name));
	json_object_object_add(o, "why", json_object_new_string(why));
	return o;
}

/*
 * Clear kernels usable here, the calibration in force, and what `auto`
 * picks for a large clear on a node's every CPU and for a cache-sized one.
 */
static json_object *clear_json(struct prealloc_ctx *ctx)
{
	struct prealloc_cpu_info ci = { .size = sizeof(ci) };
	json_object *o = json_object_new_object(), *names = json_object_new_array();
	json_object *cal = json_object_new_object();
	const char *list[16];
	unsigned int threads = 1;
	uint64_t small;
	int nodes[PREALLOC_MAX_NODES], nr, n, r;
	char path[4096] = "";

	n = prealloc_clear_kernels(ctx, list, 16);
	for (int i = 0; i < n && i < 16; i++)
		json_object_array_add(names, json_object_new_string(list[i]));
	json_object_object_add(o, "kernels", names);
	prealloc_calibration_path(path, sizeof(path));
	r = prealloc_calibration_load(ctx, NULL, NULL);
	json_object_object_add(cal, "path", path[0] ? json_object_new_string(path) : NULL);
	json_object_object_add(cal, "state",
			       json_object_new_string(r == 0		 ? "active"
						      : r == -ENOENT ? "none"
						      : r == -ESTALE ? "foreign"
								     : "invalid"));
	json_object_object_add(o, "calibration", cal);
	nr = prealloc_nodes(ctx, nodes, PREALLOC_MAX_NODES);
	for (int i = 0; i < nr && i < PREALLOC_MAX_NODES; i++) {
		struct prealloc_node_info ni = { .size = sizeof(ni) };

		if (prealloc_node_info(ctx, nodes[i], &ni) == 0 && ni.nr_cpus > threads)
			threads = ni.nr_cpus;
	}
	prealloc_cpu_info(ctx, &ci);
	json_object_object_add(o, "large", clear_choice_json(ctx, UINT64_C(1) << 30, threads));
	/* A cache-sized clear: a quarter of the LLC, at most 4 MiB (under every cached limit). */
	small = (ci.llc_bytes ? ci.llc_bytes : UINT64_C(32) << 20) / 4;
	json_object_object_add(o, "small",
			       clear_choice_json(ctx, small < (4u << 20) ? small : 4u << 20, 1));
	return o;
}

/* The CPU's identity, last-level cache and the features the clear kernels use. */
static json_object *cpu_json(struct prealloc_ctx *ctx)
{
	json_object *cpu = json_object_new_object(), *feat = json_object_new_array();
	struct prealloc_cpu_info ci = { .size = sizeof(ci) };

	prealloc_cpu_info(ctx, &ci);
	json_object_object_add(cpu, "vendor", json_object_new_string(ci.vendor));
	json_object_object_add(cpu, "model_name", json_object_new_string(ci.model_name));
	json_object_object_add(cpu, "family", json_object_new_int((int)ci.family));
	json_object_object_add(cpu, "model", json_object_new_int((int)ci.model));
	json_object_object_add(cpu, "stepping", json_object_new_int((int)ci.stepping));
	json_object_object_add(cpu, "llc_bytes", json_object_new_uint64(ci.llc_bytes));
	json_object_object_add(cpu, "llc_source", json_object_new_string(ci.llc_source));
	for (size_t i = 0; i < sizeof(cpu_features) / sizeof(cpu_features[0]); i++)
		if (ci.features & cpu_features[i].bit)
			json_object_array_add(feat, json_object_new_string(cpu_features[i].name));
	json_object_object_add(cpu, "features", feat);
	return cpu;
}

/* The transparent hugepage modes, for anonymous memory and for shmem. */
static json_object *thp_json(void)
{
	json_object *thp = json_object_new_object();
	char buf[64];

	json_object_object_add(thp, "enabled",
			       json_object_new_string(sysfs_mode(
				       "/sys/kernel/mm/transparent_hugepage/enabled", buf,
				       sizeof(buf))));
	json_object_object_add(thp, "shmem_enabled",
			       json_object_new_string(sysfs_mode(
				       "/sys/kernel/mm/transparent_hugepage/shmem_enabled", buf,
				       sizeof(buf))));
	return thp;
}

/* One node: its CPUs, memory, and 2M and 1G pools. */
static json_object *node_json(struct prealloc_ctx *ctx, int node)
{
	struct prealloc_node_info ni = { .size = sizeof(ni) };
	json_object *n = json_object_new_object(), *cpus = json_object_new_array();
	json_object *hp = json_object_new_object(), *p2 = json_object_new_object();
	json_object *p1 = json_object_new_object();
	int c[PREALLOC_MAX_CPUS], nc;

	prealloc_node_info(ctx, node, &ni);
	json_object_object_add(n, "node", json_object_new_int(ni.node));
	json_object_object_add(n, "cpu_node", json_object_new_int(ni.cpu_node));
	nc = prealloc_node_cpus(ctx, node, c, PREALLOC_MAX_CPUS);
	for (int k = 0; k < nc && k < PREALLOC_MAX_CPUS; k++)
		json_object_array_add(cpus, json_object_new_int(c[k]));
	json_object_object_add(n, "cpus", cpus);
	json_object_object_add(n, "mem_total", json_object_new_uint64(ni.mem_total));
	json_object_object_add(n, "mem_free", json_object_new_uint64(ni.mem_free));
	json_object_object_add(p2, "total", json_object_new_uint64(ni.hp2m_total));
	json_object_object_add(p2, "free", json_object_new_uint64(ni.hp2m_free));
	json_object_object_add(p1, "total", json_object_new_uint64(ni.hp1g_total));
	json_object_object_add(p1, "free", json_object_new_uint64(ni.hp1g_free));
	json_object_object_add(hp, "2M", p2);
	json_object_object_add(hp, "1G", p1);
	json_object_object_add(n, "hugepages", hp);
	return n;
}

static json_object *info_json(struct prealloc_ctx *ctx)
{
	json_object *o = json_object_new_object(), *nodes = json_object_new_array();
	json_object *mounts = json_object_new_object();
	int list[PREALLOC_MAX_NODES], nr;
	struct utsname u;

	json_object_object_add(o, "version", json_object_new_string(prealloc_version()));
	if (uname(&u) == 0)
		json_object_object_add(o, "kernel", json_object_new_string(u.release));
	json_object_object_add(o, "cpu", cpu_json(ctx));
	json_object_object_add(o, "thp", thp_json());
	const char *m2 = prealloc_hugetlbfs_mount(ctx, PREALLOC_PAGE_2M);
	const char *m1 = prealloc_hugetlbfs_mount(ctx, PREALLOC_PAGE_1G);
	json_object_object_add(mounts, "2M", m2 ? json_object_new_string(m2) : NULL);
	json_object_object_add(mounts, "1G", m1 ? json_object_new_string(m1) : NULL);
	json_object_object_add(o, "hugetlbfs", mounts);

	nr = prealloc_nodes(ctx, list, PREALLOC_MAX_NODES);
	for (int i = 0; i < nr && i < PREALLOC_MAX_NODES; i++)
		json_object_array_add(nodes, node_json(ctx, list[i]));
	json_object_object_add(o, "nodes", nodes);
	json_object_object_add(o, "clear", clear_json(ctx));
	return o;
}

static void print_clear(json_object *o)
{
	json_object *clear = json_object_object_get(o, "clear");
	json_object *names = json_object_object_get(clear, "kernels");
	json_object *cal = json_object_object_get(clear, "calibration");
	const char *state = json_object_get_string(json_object_object_get(cal, "state"));
	char s[32];

	printf("clear kernels:");
	for (size_t i = 0; i < json_object_array_length(names); i++)
		printf(" %s", json_object_get_string(json_object_array_get_idx(names, i)));
	printf("\n");
	printf("clear calibration: %s%s%s\n", state, strcmp(state, "none") ? " " : "",
	       strcmp(state, "none") ? json_object_get_string(json_object_object_get(cal, "path"))
				     : " (built-in rules; 'prealloc bench --save' measures)");
	for (int i = 0; i < 2; i++) {
		json_object *c = json_object_object_get(clear, i ? "small" : "large");

		printf("clear auto, %s per worker x %d: %s (%s)\n",
		       prealloc_format_size(json_object_get_uint64(json_object_object_get(c, "bytes_per_worker")),
				   s, sizeof(s)),
		       json_object_get_int(json_object_object_get(c, "threads")),
		       json_object_get_string(json_object_object_get(c, "kernel")),
		       json_object_get_string(json_object_object_get(c, "why")));
	}
}

static void print_cpu(json_object *cpu)
{
	json_object *feat = json_object_object_get(cpu, "features");
	char s[32];

	printf("cpu: %s (%s family 0x%x model 0x%x stepping %d), LLC %s (%s)\n",
	       json_object_get_string(json_object_object_get(cpu, "model_name")),
	       json_object_get_string(json_object_object_get(cpu, "vendor")),
	       json_object_get_int(json_object_object_get(cpu, "family")),
	       json_object_get_int(json_object_object_get(cpu, "model")),
	       json_object_get_int(json_object_object_get(cpu, "stepping")),
	       prealloc_format_size(json_object_get_uint64(json_object_object_get(cpu, "llc_bytes")), s,
			   sizeof(s)),
	       json_object_get_string(json_object_object_get(cpu, "llc_source")));
	printf("cpu features:");
	for (size_t i = 0; i < json_object_array_length(feat); i++)
		printf(" %s", json_object_get_string(json_object_array_get_idx(feat, i)));
	printf("\n");
}

/* The nodes' table: CPUs, memory, and each pool as total/free. */
static void print_nodes(json_object *nodes)
{
	char s1[32], s2[32];

	printf("%-5s %-9s %-14s %12s %12s %14s %14s\n", "node", "cpu node", "cpus", "memory",
	       "free", "2M total/free", "1G total/free");
	for (size_t i = 0; i < json_object_array_length(nodes); i++) {
		json_object *n = json_object_array_get_idx(nodes, i);
		json_object *cpus = json_object_object_get(n, "cpus");
		json_object *hp = json_object_object_get(n, "hugepages");
		json_object *p2 = json_object_object_get(hp, "2M"), *p1 = json_object_object_get(hp, "1G");
		int c[PREALLOC_MAX_CPUS];
		unsigned int nc = 0;
		char cl[64], h2[32], h1[32];

		for (size_t k = 0; k < json_object_array_length(cpus) && nc < PREALLOC_MAX_CPUS; k++)
			c[nc++] = json_object_get_int(json_object_array_get_idx(cpus, k));
		prealloc_format_list(c, nc, cl, sizeof(cl));
		snprintf(h2, sizeof(h2), "%llu/%llu",
			 (unsigned long long)json_object_get_uint64(json_object_object_get(p2, "total")),
			 (unsigned long long)json_object_get_uint64(json_object_object_get(p2, "free")));
		snprintf(h1, sizeof(h1), "%llu/%llu",
			 (unsigned long long)json_object_get_uint64(json_object_object_get(p1, "total")),
			 (unsigned long long)json_object_get_uint64(json_object_object_get(p1, "free")));
		printf("%-5d %-9d %-14s %12s %12s %14s %14s\n",
		       json_object_get_int(json_object_object_get(n, "node")),
		       json_object_get_int(json_object_object_get(n, "cpu_node")), cl[0] ? cl : "-",
		       prealloc_format_size(json_object_get_uint64(json_object_object_get(n, "mem_total")), s1,
				   sizeof(s1)),
		       prealloc_format_size(json_object_get_uint64(json_object_object_get(n, "mem_free")), s2,
				   sizeof(s2)),
		       h2, h1);
	}
}

static void print_human(json_object *o)
{
	json_object *thp = json_object_object_get(o, "thp");
	json_object *mounts = json_object_object_get(o, "hugetlbfs");

	printf("prealloc %s on Linux %s\n", json_object_get_string(json_object_object_get(o, "version")),
	       json_object_get_string(json_object_object_get(o, "kernel")));
	print_cpu(json_object_object_get(o, "cpu"));
	printf("thp: anonymous %s, shmem %s%s\n",
	       json_object_get_string(json_object_object_get(thp, "enabled")),
	       json_object_get_string(json_object_object_get(thp, "shmem_enabled")),
	       !strcmp(json_object_get_string(json_object_object_get(thp, "shmem_enabled")), "never")
		       ? " (files on /dev/shm get 4k pages; thp there is not possible)"
		       : "");
	for (int i = 0; i < 2; i++) {
		const char *size = i ? "1G" : "2M";
		json_object *m = json_object_object_get(mounts, size);

		printf("hugetlbfs %s: %s\n", size, m ? json_object_get_string(m) : "not mounted");
	}
	print_nodes(json_object_object_get(o, "nodes"));
	print_clear(o);
}

int cmd_info(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	static const char short_opts[] = "h";
	struct prealloc_ctx *ctx;
	struct installs in;
	bool json = false;
	json_object *o;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, short_opts, opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			printf("Usage: prealloc info [--json]\n"
			       "Show nodes, their CPUs, memory and hugepage pools, hugetlbfs mounts,\n"
			       "the CPU's identity and features, and the binary and libprealloc that\n"
			       "run (a warning for each other one on the search paths).\n");
			return EXIT_OK;
		default:
			return option_error("info", argv, short_opts, opts);
		}
	}
	if (cli_extra_arg("info", argc, argv, NULL))
		return EXIT_USAGE;
	ctx = cli_context();
	if (!ctx)
		return EXIT_FAILURE_RUN;
	o = info_json(ctx);
	installs_here(&in);
	json_object_object_add(o, "installs", installs_json(&in));
	if (json) {
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
								       JSON_C_TO_STRING_NOSLASHESCAPE));
	} else {
		print_human(o);
		installs_print(&in);
	}
	installs_warn(&in);
	json_object_put(o);
	prealloc_ctx_free(ctx);
	return EXIT_OK;
}
