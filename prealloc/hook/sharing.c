/* SPDX-License-Identifier: MIT */
/*
 * start begin: guests that share a uid (docs/warm.md, threat model;
 * docs/libvirt.md, "Guests of one uid"). Under libvirt's default DAC every
 * guest's QEMU runs as one uid, and a warm file handed to a guest is that
 * uid's, mode 0600: another guest's QEMU of the uid opens it by path, no
 * hidden reference needed, unless MAC confinement (sVirt: a dynamic
 * SELinux or AppArmor label per domain) keeps it out. The hook cannot part
 * them: it says so in its log, and the start goes on.
 */
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "run.h"

bool sharing_unconfined(const struct domain *d)
{
	return d->has_dac && !d->mac_dynamic;
}

bool sharing_warning(const struct domain *d, const struct prealloc_warm_shared_info *si,
		     char *buf, size_t len)
{
	if (!sharing_unconfined(d) || !si->files)
		return false;
	snprintf(buf, len, "domain %.255s: no dynamic MAC label, and its QEMU's uid %u owns %u warm "
		 "file(s) of other guests (%.511s%s): each may open the other's memory by path. "
		 "Give each guest a uid of its own, or confine it (sVirt: security_driver "
		 "selinux or apparmor in qemu.conf; docs/libvirt.md)", d->name, d->uid, si->files,
		 si->with, si->files > 1 ? ", ..." : "");
	return true;
}

void run_sharing_check(struct hook_run *run)
{
	struct prealloc_warm_shared_info si = { .size = sizeof(si) };
	char msg[1536];
	int r;

	if (!sharing_unconfined(&run->dom))
		return;	/* no uid to compare, or confined apart */
	r = prealloc_warm_shared_uid(run->g.ctx, run->dom.uid, run->g.holder,
				     run->g.tenant[0] ? run->g.tenant : NULL, &si);
	if (r < 0)
		guest_log(&run->g, LOG_INFO, "%s: whether other guests' warm files are uid %u's: %s",
			  run->g.name, run->dom.uid, strerror(-r));
	else if (sharing_warning(&run->dom, &si, msg, sizeof(msg)))
		guest_log(&run->g, LOG_WARNING, "%s", msg);
}
