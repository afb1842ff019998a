/* SPDX-License-Identifier: MIT */
/* Which prealloc runs, and the other installs beside it (installs.c). */
#ifndef PREALLOC_CLI_INSTALLS_H
#define PREALLOC_CLI_INSTALLS_H

#include <json-c/json.h>

#define INSTALLS_MAX 8
#define INSTALLS_PATH 512

struct installs {
	char binary[INSTALLS_PATH];	/* this program, resolved */
	char library[INSTALLS_PATH];	/* the libprealloc it loaded, resolved; "" linked in */
	unsigned int nr_libs, nr_bins;
	char libs[INSTALLS_MAX][INSTALLS_PATH];	/* other libprealloc.so.0 on the search path */
	char bins[INSTALLS_MAX][INSTALLS_PATH];	/* other prealloc on $PATH */
};

/*
 * Fills ret for a program at self that loaded lib ("" none), under root
 * ("" the machine; a test's fake tree), with ld_path and path the values
 * of LD_LIBRARY_PATH and PATH (NULL: unset). Paths are reported as seen
 * under root.
 */
void installs_find(const char *root, const char *self, const char *lib, const char *ld_path,
		   const char *path, struct installs *ret);
/* installs_find for this process. */
void installs_here(struct installs *ret);
json_object *installs_json(const struct installs *in);
/* Human lines on stdout; each other install as a warning on stderr. */
void installs_print(const struct installs *in);
void installs_warn(const struct installs *in);

#endif
