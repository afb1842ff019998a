#!/bin/bash
# SPDX-License-Identifier: MIT
#
# prealloc-warm.service under a real systemd as PID 1 (docs/testing.md,
# "The `systemd` test"): the packages built from a copy of the tree
# (lib-packages.sh, as test-packages.sh builds them), the packaging test's
# Debian 12 root under an overlay with systemd-sysv added, booted with
# `systemd-nspawn --boot`; in it, as an operator does it:
#  - apt installs libprealloc0 and prealloc: nothing enabled or started,
#    no /run/prealloc (a fresh host), warm.conf shipped with no target;
#  - warm.conf with a 4k target on /dev/shm (the container's own tmpfs:
#    its /sys is read-only, so no hugepage pool can grow there, and the
#    host's pools are other tests'), the metrics drop-in of
#    docs/operations.md, `systemctl enable --now prealloc-warm`: active,
#    /run/prealloc and /var/lib/prealloc made by systemd with their modes,
#    the pool filled to the target, the metrics file written;
#  - a broken warm.conf and `systemctl reload`: still active, the journal
#    says why, and the old target holds (a file given back is renewed, not
#    removed);
#  - a reboot of the container: active again on an empty /run, the pool
#    filled again;
#  - an upgrade to the higher version while it runs: restarted on the new
#    binary, the warm files (by inode) kept;
#  - `systemd-analyze security` of the running unit;
#  - stop, remove (the prerm's drain), purge: no warm file, no unit, no
#    link, no configuration, no state left; the record store in /run
#    names no file.
# Usage: test-systemd.sh SOURCE_ROOT. Root. Prints TAP.
. "$(dirname "$0")/lib-packages.sh"

nspawn_pid= pid=
cleanup() {
	if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2> /dev/null; then
		kill -TERM "$nspawn_pid" 2> /dev/null	# nspawn powers the container off
		for _ in $(seq 100); do kill -0 "$nspawn_pid" 2> /dev/null || break; sleep 0.1; done
		kill -KILL "$nspawn_pid" 2> /dev/null
		wait "$nspawn_pid" 2> /dev/null
	fi
	mountpoint -q "$mnt" && umount -R "$mnt"
	mountpoint -q "$mnt" || rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# The one proven cause to skip: no systemd-nspawn (systemd-container).
command -v systemd-nspawn > /dev/null ||
	{ echo "1..0 # SKIP systemd-nspawn is not installed (systemd-container; setup.sh installs it)"; exit 0; }

# boot: the container started, $pid its systemd (PID 1 inside), once it
# says running (or degraded: then the failed units are the test's to say).
boot() {
	local p c state
	pid=
	systemd-nspawn -q --register=no --keep-unit -D "$mnt" -b --console=pipe \
		--bind="$cache/apt-archives:/var/cache/apt/archives" \
		< /dev/null >> "$tmp/console.log" 2>&1 &
	nspawn_pid=$!
	for _ in $(seq 300); do
		for p in $(pgrep -P "$nspawn_pid"); do
			for c in "$p" $(pgrep -P "$p"); do
				grep -Eq '^NSpid:.*[[:space:]]1$' "/proc/$c/status" 2> /dev/null &&
					[ "$(cat "/proc/$c/comm" 2> /dev/null)" = systemd ] && pid=$c
			done
		done
		if [ -n "$pid" ]; then
			state=$(in_box systemctl is-system-running 2> /dev/null)
			[ "$state" = running ] || [ "$state" = degraded ] && return 0
		fi
		kill -0 "$nspawn_pid" 2> /dev/null || break
		sleep 0.1
	done
	tail -n 20 "$tmp/console.log" | diag
	return 1
}

# in_box CMD...: CMD in the booted container, a clean environment.
in_box() { nsenter -t "$pid" -a env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	DEBIAN_FRONTEND=noninteractive HOME=/root LC_ALL=C.UTF-8 "$@"; }

# halt VERB RC: `systemctl VERB` inside, and nspawn gone with RC (reboot:
# 133, poweroff: 0).
halt() {
	local rc
	in_box systemctl "$1" > /dev/null 2>&1
	wait "$nspawn_pid"
	rc=$?
	nspawn_pid=
	[ "$rc" = "$2" ] || { echo "nspawn exited $rc, not $2" | diag; return 1; }
}

# wait_for SECONDS CMD...: CMD until it succeeds, every 0.2 s.
wait_for() {
	local n=$(($1 * 5))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.2
	done
}

# ready_files: the warm files on the container's /dev/shm, "inode size" each.
ready_files() { in_box sh -c 'find /dev/shm/.prealloc* -type f -printf "%i %s\n" 2> /dev/null' | sort; }
# status_is BYTES: warm status says BYTES READY of a target of 32 MiB.
status_is() {
	in_box prealloc warm status --json 2> /dev/null | python3 -c '
import json, sys
e = [x for x in json.load(sys.stdin) if x["page_size"] == 4096 and x["node"] == 0]
sys.exit(not (e and e[0]["target_bytes"] == 32 << 20 and e[0]["ready_bytes"] == int(sys.argv[1])))' "$1"
}
journal() { in_box journalctl -q -u prealloc-warm --no-pager -o cat; }

start=$SECONDS
build_both
lay_root
mkdir -p "$mnt/var/tmp/debs"
cp "$tmp"/v1/*.deb "$tmp"/v2/*.deb "$mnt/var/tmp/debs/"
mount -t proc proc "$mnt/proc"
mount --bind "$cache/apt-archives" "$mnt/var/cache/apt/archives"
# An init to boot (in the test's root only).
apt_install systemd-sysv || { tail -n 20 "$tmp/apt.log" | diag; bail "apt installs systemd-sysv in the root"; }
umount "$mnt/var/cache/apt/archives" "$mnt/proc"
boot || bail "systemd-nspawn --boot: systemd as PID 1, running"
ok "booted: systemd $(in_box systemctl --version | sed -n '1s/systemd \([0-9]*\).*/\1/p') as PID 1, $(in_box systemctl is-system-running) ($((SECONDS - start)) s)"

# ---- installed as an operator does it ---------------------------------------

v1=(/var/tmp/debs/libprealloc0_"${version}"_"$arch".deb /var/tmp/debs/prealloc_"${version}"_"$arch".deb)
v2=(/var/tmp/debs/libprealloc0_"${newer}"_"$arch".deb /var/tmp/debs/prealloc_"${newer}"_"$arch".deb)
# apt-packages: (the built .debs, in the test's root only)
out=$(in_box apt-get install -y -q --no-install-recommends "${v1[@]}" 2>&1)
check "apt installs libprealloc0 and prealloc, with systemd running" \
	test "$(in_box dpkg-query -W -f='${Status}' prealloc)" = "install ok installed" ||
	tail -n 20 <<< "$out" | diag
check "installed: prealloc-warm disabled and inactive, no /run/prealloc yet" all_of \
	'[ "$(in_box systemctl is-enabled prealloc-warm)" = disabled ] &&
	! in_box systemctl -q is-active prealloc-warm && ! in_box test -e /run/prealloc'
check "/etc/prealloc/warm.conf shipped, every line a comment" \
	in_box sh -c '! grep -qv "^#" /etc/prealloc/warm.conf'

echo "node0.4k = 2 x 16M @ /dev/shm" > "$mnt/etc/prealloc/warm.conf"
mkdir -p "$mnt/etc/systemd/system/prealloc-warm.service.d" "$mnt/var/lib/prometheus/node-exporter"
prom=/var/lib/prometheus/node-exporter/prealloc.prom
# docs/operations.md's drop-in for node_exporter's textfile collector.
cat > "$mnt/etc/systemd/system/prealloc-warm.service.d/metrics.conf" <<EOF
[Service]
ExecStart=
ExecStart=/usr/bin/prealloc warm serve --metrics $prom
ReadWritePaths=/var/lib/prometheus/node-exporter
EOF
out=$(in_box systemctl enable --now prealloc-warm 2>&1)
check "systemctl enable --now prealloc-warm: active" in_box systemctl -q is-active prealloc-warm ||
	{ echo "$out"; in_box systemctl status --no-pager prealloc-warm; } 2>&1 | diag
modes=$(in_box stat -c '%n %a %U' /run/prealloc /var/lib/prealloc 2>&1 | paste -sd, -)
check "systemd made /run/prealloc 0700 and /var/lib/prealloc 0755, root's ($modes)" \
	test "$modes" = "/run/prealloc 700 root,/var/lib/prealloc 755 root"
check "the pool filled to warm.conf: two 16 MiB files READY" wait_for 30 status_is $((32 << 20)) ||
	in_box prealloc warm status 2>&1 | diag
prom_target() { grep -qs '^prealloc_warm_target_bytes{.*node="0".*} 33554432$' "$mnt$prom"; }
check "the metrics file written: the 32 MiB target in it" wait_for 10 prom_target ||
	head -n 20 "$mnt$prom" 2>&1 | diag

# ---- reload with a broken warm.conf ------------------------------------------

cp "$mnt/etc/prealloc/warm.conf" "$tmp/warm.conf.good"
# A guest holds one file (a target counts the files handed out too).
in_box prealloc warm take --node 0 --page-size 4k 16M --to /dev/shm/guest > /dev/null 2>&1
echo "node0.4k = 2 x sixteen" > "$mnt/etc/prealloc/warm.conf"
in_box systemctl reload prealloc-warm > "$tmp/reload.log" 2>&1
check "reload with a broken warm.conf: the journal says why, the targets stay" wait_for 10 \
	grep -q "warm.conf.*line 1.*the targets stay as they were" <(journal) || journal | tail -n 5 | diag
check "still active after the broken reload" in_box systemctl -q is-active prealloc-warm
# Given back, the file is renewed while a target wants it (removed were the
# targets gone): two READY again. The good file back on disk for status.
in_box prealloc warm give /dev/shm/guest > /dev/null 2>&1
cp "$tmp/warm.conf.good" "$mnt/etc/prealloc/warm.conf"
check "the old target still held: the file given back renewed, two READY again" \
	wait_for 30 status_is $((32 << 20)) || in_box prealloc warm status 2>&1 | diag
in_box systemctl reload prealloc-warm > "$tmp/reload.log" 2>&1

# ---- a reboot ------------------------------------------------------------------

in_box touch /run/prealloc/pkgtest-marker
halt reboot 133 && boot
check "after a reboot: active again, on an empty /run (/run/prealloc made anew)" all_of \
	'[ -n "$pid" ] && in_box systemctl -q is-active prealloc-warm &&
	in_box test -d /run/prealloc -a ! -e /run/prealloc/pkgtest-marker' ||
	in_box systemctl status --no-pager prealloc-warm 2>&1 | diag
check "after a reboot: the pool filled again" wait_for 30 status_is $((32 << 20))

# ---- an upgrade while it runs -------------------------------------------------

files_before=$(ready_files)
main_before=$(in_box systemctl show -P MainPID prealloc-warm)
# apt-packages: (the built .debs, as above)
out=$(in_box apt-get install -y -q --no-install-recommends "${v2[@]}" 2>&1)
check "apt upgrades to $newer while it runs" \
	test "$(in_box dpkg-query -W -f='${Version}' prealloc)" = "$newer" || tail -n 20 <<< "$out" | diag
main_after=$(in_box systemctl show -P MainPID prealloc-warm)
check "after the upgrade: active, restarted (pid $main_before, now $main_after)" all_of \
	'in_box systemctl -q is-active prealloc-warm && [ "$main_after" != "$main_before" ] &&
	[ "$main_after" != 0 ]'
files_after=$(ready_files)
check "after the upgrade: the warm files kept (the same two inodes)" \
	test -n "$files_before" -a "$files_after" = "$files_before" -a "$(wc -l <<< "$files_after")" = 2 ||
	{ echo "$files_before"; echo "--"; echo "$files_after"; } | diag

# ---- the running unit's exposure ------------------------------------------------

in_box systemd-analyze security --no-pager prealloc-warm.service > "$tmp/security" 2>&1
exposure=$(sed -n 's/.*Overall exposure level for prealloc-warm.service: \([0-9.]*\).*/\1/p' "$tmp/security")
check "systemd-analyze security, the running unit: ${exposure:-no figure} (5.0 or lower)" \
	awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 5.0) }' || tail -n 5 "$tmp/security" | diag

# ---- stop, remove, purge ---------------------------------------------------------

in_box systemctl stop prealloc-warm
check "stop: inactive, /run/prealloc kept (RuntimeDirectoryPreserve)" all_of \
	'! in_box systemctl -q is-active prealloc-warm && in_box test -f /run/prealloc/store'
out=$(in_box apt-get remove -y -q prealloc 2>&1)
check "remove: the prerm's drain gave the two warm files back, none left" all_of \
	'grep -q "warm drain: 2 warm files given back" <<< "$out" && [ -z "$(ready_files)" ]' ||
	tail -n 20 <<< "$out" | diag
out=$(in_box apt-get purge -y -q --autoremove prealloc libprealloc0 2>&1)
# The operator's own files stay theirs: the drop-in and the metrics file it asked for.
left=$(in_box sh -c 'find /etc /lib /usr /var -name "*prealloc*" 2> /dev/null' |
	grep -v -e '^/var/tmp/debs' -e '^/var/cache/apt' -e '^/var/lib/dpkg/info' \
		-e '^/etc/systemd/system/prealloc-warm.service.d' -e "^$prom\$" || true)
check "purge: no file of prealloc's left in /etc, /lib, /usr or /var (unit, links, conffile, state)" \
	test -z "$left" || { echo "$left"; tail -n 5 <<< "$out"; } | diag
check "purge: systemd knows no prealloc-warm.service" \
	test -z "$(in_box systemctl list-unit-files --no-legend 'prealloc*')"
check "purge: the record store in /run names no file" \
	in_box sh -c '! grep -q "^rec " /run/prealloc/store' || in_box cat /run/prealloc/store | diag
check "poweroff: nspawn exits 0" halt poweroff 0
echo "# $((SECONDS - start)) s"
finish
