/* SPDX-License-Identifier: MIT */
/*
 * The hook's word on guests that share a uid (prealloc/hook/sharing.c,
 * docs/libvirt.md): at start begin, a domain with no dynamic MAC label
 * whose DAC uid other guests' warm files were given gets a warning in the
 * log; one confined by sVirt (a dynamic SELinux or AppArmor label) gets
 * none, and neither does one whose uid no other guest's file has. The
 * domains are the XML libvirt 9 passes at start begin (its seclabels
 * filled in, shared/notes/libvirt-hooks.md); the warm pool's answer and
 * the log are the test's own, so that what the hook asks (uid, holder,
 * tenant) and what it logs at which level are held to account.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "run.h"
#include "tap.h"

#define UUID "11111111-2222-3333-4444-555555555555"
#define HEAD "<domain type='kvm' id='7'><name>guest-b</name><uuid>" UUID "</uuid>" \
	     "<memory unit='MiB'>128</memory>"
#define DAC "<seclabel type='dynamic' model='dac' relabel='yes'>" \
	    "<label>+64055:+994</label><imagelabel>+64055:+994</imagelabel></seclabel>"
#define TENANT "<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' tenant='acme'/></metadata>"

/* ---- the warm pool's answer and the log, as sharing.c sees them ---------- */

static unsigned int answer_files;	/* files of other holders of the uid */
static unsigned int asked, asked_uid;
static char asked_holder[128], asked_tenant[128];
static int logged_level;
static char logged[2048];

int prealloc_warm_shared_uid(struct prealloc_ctx *ctx, unsigned int uid, const char *holder,
			     const char *tenant, struct prealloc_warm_shared_info *ret_info)
{
	(void)ctx;
	asked++;
	asked_uid = uid;
	snprintf(asked_holder, sizeof(asked_holder), "%s", holder ? holder : "(null)");
	snprintf(asked_tenant, sizeof(asked_tenant), "%s", tenant ? tenant : "(null)");
	ret_info->files = answer_files;
	snprintf(ret_info->with, sizeof(ret_info->with), "%s", answer_files ? "libvirt:aaaa" : "");
	return 0;
}

void guest_log(const struct guest *g, int level, const char *fmt, ...)
{
	va_list ap;

	(void)g;
	va_start(ap, fmt);
	logged_level = level;
	vsnprintf(logged, sizeof(logged), fmt, ap);
	va_end(ap);
}

/* ---- the cases ------------------------------------------------------------ */

static const struct scase {
	const char *what;
	const char *xml;
	unsigned int others;	/* the warm pool's answer: files of other guests of the uid */
	bool mac, warns;	/* the domain's dynamic MAC label; a warning is logged */
} cases[] = {
	{ "DAC only (security_driver none), another guest's file of its uid: warned",
	  HEAD DAC "</domain>", 1, false, true },
	{ "DAC only, two files of other guests: warned",
	  HEAD DAC TENANT "</domain>", 2, false, true },
	{ "DAC only, no other guest's file of its uid: nothing said",
	  HEAD DAC "</domain>", 0, false, false },
	{ "a dynamic AppArmor label (Debian's sVirt), another guest's file of its uid: none",
	  HEAD "<seclabel type='dynamic' model='apparmor' relabel='yes'><label>libvirt-" UUID
	  "</label><imagelabel>libvirt-" UUID "</imagelabel></seclabel>" DAC "</domain>",
	  1, true, false },
	{ "a dynamic SELinux label (sVirt's MCS pair), another guest's file: none",
	  HEAD "<seclabel type='dynamic' model='selinux' relabel='yes'>"
	  "<label>system_u:system_r:svirt_t:s0:c12,c345</label>"
	  "<imagelabel>system_u:object_r:svirt_image_t:s0:c12,c345</imagelabel></seclabel>"
	  DAC "</domain>", 1, true, false },
	{ "a static SELinux label (one the admin may give several guests): warned",
	  HEAD "<seclabel type='static' model='selinux' relabel='yes'>"
	  "<label>system_u:system_r:svirt_t:s0:c1,c2</label></seclabel>" DAC "</domain>",
	  1, false, true },
	{ "sVirt turned off for the domain (type='none'): warned",
	  HEAD "<seclabel type='none' model='apparmor'/>" DAC "</domain>", 1, false, true },
	{ "prepare begin (no seclabel yet, no uid known): nothing asked or said",
	  HEAD "</domain>", 1, false, false },
};

static void test_case(const struct scase *c)
{
	struct hook_run run = { 0 };
	char why[256];
	int r = domain_parse(c->xml, strlen(c->xml), &run.dom, why, sizeof(why));

	if (!tap_ok(r == 0, "%s: parses (%s)", c->what, why))
		return;
	tap_ok(run.dom.mac_dynamic == c->mac, "%s: dynamic MAC label %d (want %d)", c->what,
	       run.dom.mac_dynamic, c->mac);
	snprintf(run.g.name, sizeof(run.g.name), "%s", run.dom.name);
	snprintf(run.g.holder, sizeof(run.g.holder), HOLDER_PREFIX "%s", run.dom.uuid);
	snprintf(run.g.tenant, sizeof(run.g.tenant), "%s", run.dom.tenant);
	answer_files = c->others;
	asked = 0;
	logged[0] = '\0';
	logged_level = -1;
	run_sharing_check(&run);
	if (c->warns) {
		tap_ok(asked == 1 && asked_uid == 64055 && !strcmp(asked_holder, "libvirt:" UUID) &&
			       !strcmp(asked_tenant, run.dom.tenant[0] ? "acme" : "(null)"),
		       "%s: the warm pool asked for uid 64055 (got %u), holder libvirt:<uuid> (got "
		       "%s), its tenant (got %s)", c->what, asked_uid, asked_holder, asked_tenant);
		tap_ok(logged_level == LOG_WARNING && strstr(logged, "domain guest-b: no dynamic "
			       "MAC label, and its QEMU's uid 64055 owns") &&
			       strstr(logged, "libvirt:aaaa") && strstr(logged, "sVirt"),
		       "%s: a warning (level %d): '%s'", c->what, logged_level, logged);
	} else {
		tap_ok(!logged[0], "%s: nothing logged (got level %d '%s')", c->what, logged_level,
		       logged);
	}
}

int main(void)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		test_case(&cases[i]);
	return tap_done();
}
