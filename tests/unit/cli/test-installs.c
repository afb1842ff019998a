/* SPDX-License-Identifier: MIT */
/*
 * `prealloc info`'s installs (prealloc/cli/installs.c) in a fake tree: the
 * other libprealloc.so.0 found through LD_LIBRARY_PATH, ld.so.conf and its
 * includes (absolute, relative to /etc, a loop), and the multiarch system
 * directory of the loaded one, each once, in the loader's order; a link to
 * the loaded library is no other; other prealloc on $PATH (not a link to
 * this one, not a file without x); the JSON keys and the warnings.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "installs.h"
#include "tap.h"

static char warnings[4096];

void cli_warn(const char *fmt, ...)
{
	size_t n = strlen(warnings);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(warnings + n, sizeof(warnings) - n, fmt, ap);
	va_end(ap);
	n = strlen(warnings);
	snprintf(warnings + n, sizeof(warnings) - n, "\n");
}

static char root[64];

/* root/path with its parents, text in it (NULL: a link to target instead). */
static void plant(const char *path, const char *text, const char *target, mode_t mode)
{
	char full[512], cmd[600];
	FILE *f;

	snprintf(full, sizeof(full), "%s%s", root, path);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", full);
	if (system(cmd))
		exit(1);
	if (target) {
		if (symlink(target, full))
			exit(1);
		return;
	}
	f = fopen(full, "w");
	if (!f)
		exit(1);
	fputs(text, f);
	fclose(f);
	chmod(full, mode);
}

static void plant_tree(void)
{
	plant("/etc/ld.so.conf", "# the loader's\ninclude /etc/ld.so.conf.d/*.conf\n", NULL, 0644);
	plant("/etc/ld.so.conf.d/a.conf", "/usr/local/lib/x86_64-linux-gnu\n", NULL, 0644);
	plant("/etc/ld.so.conf.d/b.conf", "  /opt/p/lib   # a comment\ninclude more/*.conf\n",
	      NULL, 0644);
	plant("/etc/more/c.conf", "/opt/q\ninclude /etc/ld.so.conf\n", NULL, 0644);
	plant("/usr/lib/x86_64-linux-gnu/libprealloc.so.0.1.0", "loaded", NULL, 0644);
	plant("/usr/lib/x86_64-linux-gnu/libprealloc.so.0", NULL, "libprealloc.so.0.1.0", 0);
	plant("/usr/local/lib/x86_64-linux-gnu/libprealloc.so.0.2.0", "local", NULL, 0644);
	plant("/usr/local/lib/x86_64-linux-gnu/libprealloc.so.0", NULL, "libprealloc.so.0.2.0", 0);
	plant("/opt/p/lib/libprealloc.so.0", "p", NULL, 0644);
	plant("/opt/q/libprealloc.so.0", NULL,
	      "../../usr/lib/x86_64-linux-gnu/libprealloc.so.0.1.0", 0);
	plant("/env/libprealloc.so.0", "env", NULL, 0644);
	plant("/usr/bin/prealloc", "self", NULL, 0755);
	plant("/bin", NULL, "usr/bin", 0);
	plant("/usr/local/bin/prealloc", "local", NULL, 0755);
	plant("/noexec/prealloc", "not a program", NULL, 0644);
}

static void list_is(char list[][INSTALLS_PATH], unsigned int nr, const char *const *want,
		    unsigned int nr_want, const char *what)
{
	unsigned int same = nr == nr_want;

	for (unsigned int i = 0; same && i < nr; i++)
		same = !strcmp(list[i], want[i]);
	tap_ok(same, "%s: %u as listed (got %u, first '%s')", what, nr_want, nr,
	       nr ? list[0] : "");
}

static void test_found(struct installs *in)
{
	static const char *const libs[] = { "/env/libprealloc.so.0",
		"/usr/local/lib/x86_64-linux-gnu/libprealloc.so.0", "/opt/p/lib/libprealloc.so.0" };
	static const char *const bins[] = { "/usr/local/bin/prealloc" };

	installs_find(root, "/usr/bin/prealloc", "/usr/lib/x86_64-linux-gnu/libprealloc.so.0.1.0",
		      "/env:/nonexistent:", "/usr/local/bin:/usr/bin:/bin:/noexec", in);
	tap_ok(!strcmp(in->binary, "/usr/bin/prealloc"), "the binary named (%s)", in->binary);
	tap_ok(!strcmp(in->library, "/usr/lib/x86_64-linux-gnu/libprealloc.so.0.1.0"),
	       "the library named (%s)", in->library);
	list_is(in->libs, in->nr_libs, libs, 3,
		"other libraries: LD_LIBRARY_PATH, ld.so.conf's includes, each once, not the loaded one");
	list_is(in->bins, in->nr_bins, bins, 1,
		"other binaries: not a link to this one, not a file without x");
}

static void test_render(const struct installs *in)
{
	json_object *o = installs_json(in);
	json_object *libs = json_object_object_get(o, "other_libraries");
	json_object *bins = json_object_object_get(o, "other_binaries");

	tap_ok(!strcmp(json_object_get_string(json_object_object_get(o, "binary")),
		       "/usr/bin/prealloc") &&
		       !strcmp(json_object_get_string(json_object_object_get(o, "library")),
			       in->library) &&
		       json_object_array_length(libs) == 3 && json_object_array_length(bins) == 1 &&
		       json_object_object_length(o) == 4,
	       "JSON: binary, library, other_libraries, other_binaries");
	json_object_put(o);
	warnings[0] = '\0';
	installs_warn(in);
	tap_ok(strstr(warnings, "another libprealloc on the loader's search path: "
				"/usr/local/lib/x86_64-linux-gnu/libprealloc.so.0 (this program runs "
				"/usr/lib/x86_64-linux-gnu/libprealloc.so.0.1.0") &&
		       strstr(warnings, "another prealloc on $PATH: /usr/local/bin/prealloc"),
	       "a warning for each other install, naming the one that runs");
}

/* A static build: no library of its own, and every libprealloc is another. */
static void test_static(struct installs *in)
{
	json_object *o;

	installs_find(root, "/usr/bin/prealloc", "", NULL, NULL, in);
	o = installs_json(in);
	tap_ok(json_object_object_get_ex(o, "library", NULL) &&
		       !json_object_object_get(o, "library"),
	       "linked in: library null");
	/* /usr/local's, /opt/p's, and /opt/q's link to the one a dynamic build loaded. */
	tap_ok(in->nr_libs == 3 && in->nr_bins == 0,
	       "linked in: every library ld.so.conf names is another (3, got %u), no PATH: no binary",
	       in->nr_libs);
	json_object_put(o);
}

int main(void)
{
	struct installs *in = calloc(1, sizeof(*in));
	char cmd[128];

	snprintf(root, sizeof(root), "/tmp/prealloc-installs.XXXXXX");
	if (!in || !mkdtemp(root))
		return 1;
	tap_remove_at_exit(root);
	plant_tree();
	test_found(in);
	test_render(in);
	test_static(in);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		tap_ok(0, "removing %s", root);
	free(in);
	return tap_done();
}
