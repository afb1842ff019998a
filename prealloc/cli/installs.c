/* SPDX-License-Identifier: MIT */
/*
 * Which prealloc runs, and which others the machine has (`prealloc info`):
 * the binary (/proc/self/exe), the libprealloc it loaded (dladdr of one of
 * the library's functions), every other libprealloc.so.0 on the loader's
 * search path (LD_LIBRARY_PATH, /etc/ld.so.conf and what it includes, the
 * system directories) and every other prealloc on $PATH. A meson install
 * under /usr/local beside the package is the usual case: which library a
 * program then loads is decided by its RUNPATH and the loader's order, not
 * by which was installed last (README, "Packages and meson installs").
 */
#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <prealloc.h>

#include "cli.h"
#include "installs.h"

#define LIB_NAME "libprealloc.so.0"

/* The resolved path of root + path into buf; 0, or -1 where none is. */
static int resolve(const char *root, const char *path, char *buf)
{
	char full[PATH_MAX];

	if ((size_t)snprintf(full, sizeof(full), "%s%s", root, path) >= sizeof(full))
		return -1;
	return realpath(full, buf) ? 0 : -1;
}

/* path added to list (seen[]: the resolved ones) unless its file is listed or is mine. */
static void add_other(char list[][INSTALLS_PATH], unsigned int *nr, char seen[][PATH_MAX],
		      const char *mine, const char *resolved, const char *path)
{
	if (!strcmp(resolved, mine) || *nr >= INSTALLS_MAX)
		return;
	for (unsigned int i = 0; i < *nr; i++)
		if (!strcmp(seen[i], resolved))
			return;
	snprintf(seen[*nr], PATH_MAX, "%s", resolved);
	snprintf(list[(*nr)++], INSTALLS_PATH, "%s", path);
}

struct search {
	const char *root;
	char lib_real[PATH_MAX];		/* the loaded library under root */
	char self_real[PATH_MAX];		/* this program under root */
	char seen[INSTALLS_MAX][PATH_MAX];	/* the other libraries, resolved */
	char seen_bins[INSTALLS_MAX][PATH_MAX];	/* the other programs, resolved */
	struct installs *in;
};

/* dir/libprealloc.so.0, when it is there and not the loaded one. */
static void look_dir(struct search *s, const char *dir)
{
	char path[PATH_MAX], real[PATH_MAX];

	if (!dir[0] || (size_t)snprintf(path, sizeof(path), "%s/%s", dir, LIB_NAME) >= sizeof(path))
		return;
	if (resolve(s->root, path, real) == 0)
		add_other(s->in->libs, &s->in->nr_libs, s->seen, s->lib_real, real, path);
}

/* look(s, dir) for each directory of a colon-separated list (NULL: none). */
static void look_list(struct search *s, const char *list,
		      void (*look)(struct search *s, const char *dir))
{
	char *copy = list ? strdup(list) : NULL, *save = NULL;

	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save))
		look(s, d);
	free(copy);
}

static void read_ld_conf(struct search *s, const char *file, int depth);

/* An `include PATTERN` line of ld.so.conf: a relative pattern is /etc's. */
static void ld_conf_include(struct search *s, const char *pattern, int depth)
{
	char full[PATH_MAX];
	size_t skip = strlen(s->root);
	glob_t g;

	if ((size_t)snprintf(full, sizeof(full), "%s%s%s", s->root, pattern[0] == '/' ? "" : "/etc/",
			     pattern) >= sizeof(full) || glob(full, 0, NULL, &g))
		return;
	for (size_t i = 0; i < g.gl_pathc; i++)
		read_ld_conf(s, g.gl_pathv[i] + skip, depth + 1);
	globfree(&g);
}

/* The directories an ld.so.conf names (ldconfig(8)), includes followed 4 deep. */
static void read_ld_conf(struct search *s, const char *file, int depth)
{
	char full[PATH_MAX], line[PATH_MAX];
	FILE *f;

	if (depth > 4 || (size_t)snprintf(full, sizeof(full), "%s%s", s->root, file) >= sizeof(full))
		return;
	f = fopen(full, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " \t"), *end;

		p[strcspn(p, "#\n")] = '\0';
		for (end = p + strlen(p); end > p && (end[-1] == ' ' || end[-1] == '\t'); end--)
			end[-1] = '\0';
		if (!strncmp(p, "include", 7) && (p[7] == ' ' || p[7] == '\t'))
			ld_conf_include(s, p + 8 + strspn(p + 8, " \t"), depth);
		else if (p[0] == '/')
			look_dir(s, p);
	}
	fclose(f);
}

/* The loader's own directories, with the multiarch one the loaded library names. */
static void look_system(struct search *s, const char *lib)
{
	static const char *const dirs[] = { "/lib", "/usr/lib", "/lib64", "/usr/lib64",
					    "/usr/local/lib" };
	static const char *const bases[] = { "/lib", "/usr/lib", "/usr/local/lib" };
	char parent[INSTALLS_PATH], dir[PATH_MAX], *slash;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		look_dir(s, dirs[i]);
	snprintf(parent, sizeof(parent), "%s", lib);
	slash = strrchr(parent, '/');
	if (!slash)
		return;
	*slash = '\0';
	slash = strrchr(parent, '/');
	if (!slash || !strstr(slash, "-linux-"))
		return;
	for (size_t i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		snprintf(dir, sizeof(dir), "%s%s", bases[i], slash);
		look_dir(s, dir);
	}
}

/* dir/prealloc, when it is there, runs, and is not this program. */
static void look_bin(struct search *s, const char *dir)
{
	char file[PATH_MAX], real[PATH_MAX], full[PATH_MAX];

	if ((size_t)snprintf(file, sizeof(file), "%s/prealloc", dir) >= sizeof(file) ||
	    resolve(s->root, file, real) < 0)
		return;
	snprintf(full, sizeof(full), "%s%s", s->root, file);
	if (access(full, X_OK) == 0)
		add_other(s->in->bins, &s->in->nr_bins, s->seen_bins, s->self_real, real, file);
}

void installs_find(const char *root, const char *self, const char *lib, const char *ld_path,
		   const char *path, struct installs *ret)
{
	struct search *s = calloc(1, sizeof(*s));

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->binary, sizeof(ret->binary), "%s", self);
	snprintf(ret->library, sizeof(ret->library), "%s", lib);
	if (!s)
		return;
	s->root = root;
	s->in = ret;
	if (!lib[0] || resolve(root, lib, s->lib_real) < 0)
		snprintf(s->lib_real, sizeof(s->lib_real), "%s", lib);
	if (resolve(root, self, s->self_real) < 0)
		snprintf(s->self_real, sizeof(s->self_real), "%s", self);
	look_list(s, ld_path, look_dir);
	read_ld_conf(s, "/etc/ld.so.conf", 0);
	look_system(s, lib);
	look_list(s, path, look_bin);
	free(s);
}

void installs_here(struct installs *ret)
{
	char self[PATH_MAX] = "", lib[PATH_MAX] = "", exe[PATH_MAX] = "";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	Dl_info info;

	self[n > 0 ? n : 0] = '\0';
	/* A static build's "library" is the program itself: linked in. */
	if (dladdr((void *)prealloc_version, &info) && info.dli_fname &&
	    realpath(info.dli_fname, lib) && realpath(self, exe) && !strcmp(lib, exe))
		lib[0] = '\0';
	installs_find("", self, lib, getenv("LD_LIBRARY_PATH"), getenv("PATH"), ret);
}

json_object *installs_json(const struct installs *in)
{
	json_object *o = json_object_new_object(), *libs = json_object_new_array();
	json_object *bins = json_object_new_array();

	json_object_object_add(o, "binary", json_object_new_string(in->binary));
	json_object_object_add(o, "library",
			       in->library[0] ? json_object_new_string(in->library) : NULL);
	for (unsigned int i = 0; i < in->nr_libs; i++)
		json_object_array_add(libs, json_object_new_string(in->libs[i]));
	for (unsigned int i = 0; i < in->nr_bins; i++)
		json_object_array_add(bins, json_object_new_string(in->bins[i]));
	json_object_object_add(o, "other_libraries", libs);
	json_object_object_add(o, "other_binaries", bins);
	return o;
}

void installs_print(const struct installs *in)
{
	printf("binary: %s\n", in->binary);
	printf("library: %s\n", in->library[0] ? in->library : "linked into the binary");
}

void installs_warn(const struct installs *in)
{
	for (unsigned int i = 0; i < in->nr_libs; i++)
		cli_warn("another libprealloc on the loader's search path: %s (this program "
			 "runs %s; which one a program loads is its RUNPATH's, then the "
			 "loader's first: README, \"Packages and meson installs\")",
			 in->libs[i], in->library[0] ? in->library : "its own, linked in");
	for (unsigned int i = 0; i < in->nr_bins; i++)
		cli_warn("another prealloc on $PATH: %s (this one is %s)", in->bins[i], in->binary);
}
