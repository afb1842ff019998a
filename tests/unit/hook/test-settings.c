/* SPDX-License-Identifier: MIT */
/*
 * The hook's settings file (settings.c): grow_pools, and reserve, the key's
 * name before it, still read, so that a libvirt.conf written for 0.1 keeps
 * meaning what it said; prefault_pinned, on unless the host says no; a bad
 * value refuses, naming the line.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "settings.h"
#include "tap.h"

/* settings_load over text in a file of its own; the result, or -errno. */
static int load(const char *text, struct hook_settings *s, char *why, size_t len)
{
	char path[] = "/tmp/prealloc-settings-XXXXXX";
	int fd = mkstemp(path), r;
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	fclose(f);
	r = settings_load(path, s, why, len);
	unlink(path);
	return r;
}

int main(void)
{
	struct hook_settings s;
	char why[256] = "";

	tap_ok(load("# nothing\n", &s, why, sizeof(why)) == 0 && s.grow_pools,
	       "no key: pools grow (the default)");
	tap_ok(load("grow_pools = no\n", &s, why, sizeof(why)) == 0 && !s.grow_pools,
	       "grow_pools = no");
	tap_ok(load("reserve = no\n", &s, why, sizeof(why)) == 0 && !s.grow_pools,
	       "reserve = no, grow_pools's name before, still read");
	tap_ok(load("reserve = no\ngrow_pools = yes\n", &s, why, sizeof(why)) == 0 &&
		       s.grow_pools,
	       "both: the later line wins");
	why[0] = '\0';
	tap_ok(load("grow_pools = maybe\n", &s, why, sizeof(why)) == -EINVAL && why[0],
	       "grow_pools = maybe: refused, the line named (%s)", why);
	/* A guest pinned at start is pre-faulted unless the host says no. */
	tap_ok(load("# nothing\n", &s, why, sizeof(why)) == 0 && s.prefault_pinned && !s.prefault,
	       "no key: prefault_pinned yes, prefault no (the defaults)");
	tap_ok(load("prefault_pinned = no\n", &s, why, sizeof(why)) == 0 && !s.prefault_pinned,
	       "prefault_pinned = no");
	why[0] = '\0';
	tap_ok(load("prefault_pinned = sometimes\n", &s, why, sizeof(why)) == -EINVAL && why[0],
	       "prefault_pinned = sometimes: refused, the line named (%s)", why);
	return tap_done();
}
