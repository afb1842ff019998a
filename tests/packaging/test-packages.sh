#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The Debian packages as a user gets them (docs/packaging.md): built from a
# copy of the tree with dpkg-buildpackage (the package build's own tests
# left out: nocheck), lintian without errors, then installed into a fresh
# Debian 12 root (tests/packaging/make-root.sh, cached) with apt and their
# declared dependencies only, and run there: `prealloc --node 0 --page-size
# 4k 64M`, `warm fill/take/give`, `prealloc-domain --help`, the hook on a
# domain XML on stdin, a C program built with `pkg-config libprealloc`
# (gcc installed in the root for that step only, and removed after it);
# then an upgrade to a rebuilt .deb of a higher version (dpkg -i, the
# maintainer scripts run) that keeps the records, the warm files, warm.conf
# and /var/lib/prealloc; a remove whose prerm drains the warm pool (the
# READY file goes, the HANDED one stays); a purge that removes /etc/prealloc
# and /var/lib/prealloc and keeps /run/prealloc and the guest's file.
#
# Everything runs in a mount namespace of its own: the root is an overlay
# over the cached one, with its own /run, /tmp and /dev/shm (tmpfs), /proc,
# and /dev and /sys bound from the host; no hugepage pool and no record
# store of the host is touched (4k pages only), so no lock is needed, and
# every mount goes with the namespace, whatever ends the test.
#
# Usage: test-packages.sh SOURCE_ROOT [BUILD_ROOT]. Root. Prints TAP.
. "$(dirname "$0")/lib-packages.sh"
build_root=${2:-}

holder_pid=
cleanup() {
	# A holder of a file in the root's /dev/shm would keep it busy.
	[ -n "$holder_pid" ] && kill "$holder_pid" 2> /dev/null && wait "$holder_pid" 2> /dev/null
	# The namespace's mounts go with it; unmounted first all the same, so
	# that the removal below never descends into a bound /dev or /sys.
	mountpoint -q "$mnt" && umount -R "$mnt"
	mountpoint -q "$mnt" || rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# ---- the packages, from a copy of the tree ---------------------------------

start=$SECONDS
build_both

if out=$(lintian --fail-on error "$tmp"/v1/*.changes 2>&1); then
	ok "lintian: no error ($(grep -c '^W:' <<< "$out") warnings)"
else
	echo "$out" | diag
	fail "lintian: no error"
fi
mkdir -p "$tmp/ctl"
dpkg-deb -e "$tmp/v2/prealloc_${newer}_$(dpkg --print-architecture).deb" "$tmp/ctl"
check "postinst restarts prealloc-warm.service on upgrade only if it runs (try-restart)" \
	grep -q "deb-systemd-invoke try-restart 'prealloc-warm.service'" "$tmp/ctl/postinst"
# debhelper's start snippet sets _dh_action=start for a first install.
check "postinst never starts the service" \
	test -z "$(grep -E "_dh_action=start|deb-systemd-invoke (start|restart) |systemctl .*start" "$tmp/ctl/postinst")"

# ---- a fresh Debian 12 root --------------------------------------------------

lay_root
mount -t proc proc "$mnt/proc"
mount --rbind /sys "$mnt/sys"
mount --rbind /dev "$mnt/dev"
for d in run tmp dev/shm; do mount -t tmpfs -o mode=1777 "pkgtest-$d" "$mnt/$d"; done
# The downloaded .debs kept between runs (the root's own lists say which).
mount --bind "$cache/apt-archives" "$mnt/var/cache/apt/archives"
mkdir -p "$mnt/tmp/v1" "$mnt/tmp/v2"
cp "$tmp"/v1/*.deb "$mnt/tmp/v1/" && cp "$tmp"/v2/*.deb "$mnt/tmp/v2/"
ok "a fresh Debian 12 root: $base ($((SECONDS - start)) s)"

if ! apt_install "/tmp/v1/libprealloc0_${version}_$arch.deb" "/tmp/v1/prealloc_${version}_$arch.deb"; then
	tail -n 20 "$tmp/apt.log" | diag
	bail "apt installs libprealloc0 and prealloc with their dependencies"
fi
ok "apt installs libprealloc0 and prealloc: $(grep -c '^Setting up' "$tmp/apt.log") packages set up"
wants=$(find "$mnt/etc/systemd/system" -name prealloc-warm.service 2> /dev/null)
check "installing enabled nothing: no prealloc-warm.service under /etc/systemd/system" test -z "$wants" ||
	echo "$wants" | diag
check "prealloc pulls no libvirt0 (the hook and prealloc-domain are prealloc-libvirt's)" \
	test "$(in_root dpkg-query -W -f='${Status}' libvirt0 2> /dev/null)" != "install ok installed"
check "the shipped /etc/prealloc/warm.conf: a conffile, every line a comment" all_of \
	'in_root dpkg-query -W -f="\${Conffiles}" prealloc | grep -q "^ /etc/prealloc/warm.conf " &&
		! grep -qv "^#" "$mnt/etc/prealloc/warm.conf"'

# ---- the installed programs --------------------------------------------------

out=$(in_root prealloc --version 2>&1)
check "prealloc --version names $version" grep -q "${version%%+*}" <<< "$out" || echo "$out" | diag
out=$(in_root prealloc --node 0 --page-size 4k 64M 2>&1)
rc=$?
file=$(sed -n 's/^file: \(.*\)/\1/p' <<< "$out")
check "prealloc --node 0 --page-size 4k 64M: exit 0, a 64 MiB file in /dev/shm" \
	test "$rc" = 0 -a -n "$file" -a "$(stat -c %s "$mnt$file" 2> /dev/null)" = $((64 << 20)) ||
	echo "$out" | diag
file_ino=$(stat -c %i "$mnt$file" 2> /dev/null)

mkdir -p "$mnt/etc/prealloc" "$mnt/var/lib/prealloc"
echo "node0.4k = 4 x 16M" > "$mnt/etc/prealloc/warm.conf"
# What the package must leave alone: a calibration's place, by a marker.
echo "pkgtest $$" > "$mnt/var/lib/prealloc/pkgtest-marker"
out=$(in_root prealloc warm fill 2>&1)
check "warm fill: the four 16 MiB files of the target made" grep -q ", 4 created" <<< "$out" ||
	echo "$out" | diag
out=$(in_root prealloc warm take --node 0 --page-size 4k 16M --to /dev/shm/guest-a 2>&1)
check "warm take of 16M: exit 0, linked at /dev/shm/guest-a" test $? = 0 -a -f "$mnt/dev/shm/guest-a" ||
	echo "$out" | diag
out=$(in_root prealloc warm give /dev/shm/guest-a 2>&1)
check "warm give: it is back" grep -q "^1 warm file given back" <<< "$out" || echo "$out" | diag
out=$(in_root prealloc warm fill 2>&1)
check "warm fill: the file given back renewed" grep -q ", 1 renewed" <<< "$out" || echo "$out" | diag
out=$(in_root prealloc warm take --node 0 --page-size 4k 16M --to /dev/shm/guest-b 2>&1)
check "warm take: guest-b holds one (HANDED)" test -f "$mnt/dev/shm/guest-b" ||
	echo "$out" | diag
guest_ino=$(stat -c %i "$mnt/dev/shm/guest-b" 2> /dev/null)
out=$(in_root prealloc warm take --reserve --holder pkgtest-vm --expires 3600 --node 0 --page-size 4k 16M 2>&1)
check "warm take --reserve: one reserved for a guest about to start" test $? = 0 ||
	echo "$out" | diag
# guest-c given back while its holder (a QEMU not gone yet) keeps it open:
# DIRTY, its pages the holder's until it closes it.
in_root prealloc warm take --node 0 --page-size 4k 16M --to /dev/shm/guest-c > /dev/null 2>&1
dirty_ino=$(stat -c %i "$mnt/dev/shm/guest-c" 2> /dev/null)
chroot "$mnt" sh -c 'exec 3< /dev/shm/guest-c; exec sleep 600' &
holder_pid=$!
for _ in $(seq 50); do [ -e "/proc/$holder_pid/fd/3" ] && break; sleep 0.1; done
out=$(in_root prealloc warm give /dev/shm/guest-c 2>&1)
check "warm give of a file its holder still has open: back, 1 still in use (one READY left)" \
	grep -q "^1 warm file given back (1 still in use" <<< "$out" || echo "$out" | diag

if apt_install "/tmp/v1/prealloc-libvirt_${version}_$arch.deb"; then
	ok "apt installs prealloc-libvirt: libvirt0 with it ($(grep -c '^Setting up' "$tmp/apt.log") set up)"
else
	tail -n 20 "$tmp/apt.log" | diag
	fail "apt installs prealloc-libvirt"
fi
out=$(in_root prealloc-domain --help 2>&1)
check "prealloc-domain --help: exit 0, its usage" grep -q "^usage: prealloc-domain" <<< "$out" ||
	echo "$out" | diag
xml="<domain type='kvm'><name>pkgtest</name><uuid>6f1c3d2e-6b7a-4c1e-9a51-3d0c1f2b4a10</uuid>
<memory unit='MiB'>64</memory><vcpu>1</vcpu><os><type arch='x86_64'>hvm</type></os></domain>"
hook=/usr/libexec/prealloc/prealloc-libvirt-hook
out=$(in_root "$hook" pkgtest prepare begin - <<< "$xml" 2>&1)
check "the hook, prepare begin, a domain without hugepages on stdin: exit 0" test $? = 0 ||
	echo "$out" | diag
out=$(in_root "$hook" pkgtest prepare begin - <<< "<domain" 2>&1)
check "the hook, prepare begin, broken XML on stdin: refused (exit 1)" test $? = 1 ||
	echo "$out" | diag
enabled=/etc/libvirt/hooks/qemu.d/prealloc
out=$(in_root prealloc hook install 2>&1)
check "prealloc hook install: the packaged hook copied to $enabled" cmp -s "$mnt$hook" "$mnt$enabled" ||
	echo "$out" | diag
hook_ino=$(stat -c %i "$mnt$enabled" 2> /dev/null)

# ---- a C program against pkg-config libprealloc ------------------------------

cat > "$mnt/tmp/embed.c" <<'EOF'
#include <stdio.h>
#include <prealloc.h>

int main(void)
{
	struct prealloc_ctx *ctx;

	if (prealloc_ctx_new(&ctx) < 0)
		return 1;
	printf("libprealloc %s\n", prealloc_version());
	prealloc_ctx_free(ctx);
	return 0;
}
EOF
if apt_install "/tmp/v1/libprealloc-dev_${version}_$arch.deb" gcc pkg-config; then
	out=$(in_root sh -c 'gcc -o /tmp/embed /tmp/embed.c $(pkg-config --cflags --libs libprealloc) &&
		/tmp/embed' 2>&1)
	check "a C program built with pkg-config libprealloc runs: libprealloc ${version%%+*}" \
		grep -q "^libprealloc ${version%%+*}" <<< "$out" || echo "$out" | diag
	in_root apt-get purge -y -q --autoremove gcc pkg-config > "$tmp/apt-purge.log" 2>&1 ||
		tail -n 5 "$tmp/apt-purge.log" | diag
else
	tail -n 20 "$tmp/apt.log" | diag
	fail "apt installs libprealloc-dev, gcc and pkg-config"
fi

# ---- a meson install under /usr/local beside the packages -------------------

# local_install: the build tree's `meson install` (prefix /usr/local) laid
# into the root beside the packages, as a developer's host has it; `prealloc
# info` of each warns of the other; removed again after.
local_install() {
	local prefix dest=$tmp/local-dest local_path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	[ -n "$build_root" ] || { fail "a meson install beside the packages: no BUILD_ROOT given"; return; }
	prefix=$(meson introspect "$build_root" --buildoptions |
		python3 -c 'import json, sys; print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
	if [ "$prefix" != /usr/local ]; then
		skip "a meson install beside the packages: $build_root's prefix is $prefix, not /usr/local"
		return
	fi
	if ! meson install -C "$build_root" --destdir "$dest" --no-rebuild --quiet > "$tmp/install.log" 2>&1; then
		diag < "$tmp/install.log"
		fail "meson install --destdir of $build_root"
		return
	fi
	cp -a "$dest/usr/local/." "$mnt/usr/local/"
	out=$(in_root env PATH="$local_path" /usr/bin/prealloc info 2>&1)
	check "/usr/bin/prealloc info: names the package's library, warns of /usr/local's" all_of \
		'grep -q "^library: /usr/lib/.*/libprealloc.so.0" <<< "$out" &&
		grep -q "warning: another libprealloc on the loader.s search path: /usr/local/lib/.*libprealloc.so.0" <<< "$out" &&
		grep -q "warning: another prealloc on \$PATH: /usr/local/bin/prealloc" <<< "$out"' || echo "$out" | diag
	out=$(in_root env PATH="$local_path" prealloc info 2>&1)
	check "prealloc (/usr/local/bin first on PATH) info: names /usr/local's, warns of the package's" all_of \
		'grep -q "^binary: /usr/local/bin/prealloc" <<< "$out" &&
		grep -q "^library: /usr/local/lib/.*libprealloc.so.0" <<< "$out" &&
		grep -Eq "warning: another libprealloc .*: /(usr/)?lib/.*libprealloc.so.0 " <<< "$out"' || echo "$out" | diag
	(cd "$dest" && find . ! -type d -print0) | (cd "$mnt" && xargs -0 rm -f)
}

# ---- upgrade, remove, purge --------------------------------------------------

cp "$mnt/etc/prealloc/warm.conf" "$tmp/warm.conf.before"
# The older build's store: format 3 (warm lines, no tenant), read by the newer one below.
store_line=$(head -n 1 "$mnt/run/prealloc/store" 2> /dev/null)
check "before the upgrade: the store the installed build wrote is format 3 ($store_line)" \
	test "$store_line" = "prealloc-store 3"
status_before=$(in_root prealloc warm status --json 2>&1)
out=$(in_root dpkg -i "/tmp/v2/libprealloc0_${newer}_$arch.deb" "/tmp/v2/prealloc_${newer}_$arch.deb" \
	"/tmp/v2/libprealloc-dev_${newer}_$arch.deb" "/tmp/v2/prealloc-libvirt_${newer}_$arch.deb" 2>&1)
check "dpkg -i of $newer over $version" test "$(in_root dpkg-query -W -f='${Version}' prealloc)" = "$newer" ||
	echo "$out" | diag
check "after the upgrade: the created file and its record kept" \
	test "$(stat -c %i "$mnt$file" 2> /dev/null)" = "$file_ino" -a -d "$mnt/run/prealloc"
out=$(in_root prealloc pool --json 2>&1)
check "after the upgrade: the record store still lists the created file" grep -q "$(basename "$file")" <<< "$out" ||
	echo "$out" | diag
status_after=$(in_root prealloc warm status --json 2>&1)
check "after the upgrade: the warm pool as it was (one READY, two HANDED, one DIRTY)" \
	test "$status_after" = "$status_before" -a "$(stat -c %i "$mnt/dev/shm/guest-b" 2> /dev/null)" = "$guest_ino" ||
	{ echo "$status_before"; echo "$status_after"; } | diag
check "after the upgrade: /etc/prealloc/warm.conf and /var/lib/prealloc untouched" \
	all_of 'cmp -s "$tmp/warm.conf.before" "$mnt/etc/prealloc/warm.conf" &&
		grep -qx "pkgtest $$" "$mnt/var/lib/prealloc/pkgtest-marker"'

# The hook libvirt runs is the new package's: postinst refreshed the copy.
check "after the upgrade: the enabled hook refreshed, the same as the packaged one" all_of \
	'cmp -s "$mnt$hook" "$mnt$enabled" && [ "$(stat -c %i "$mnt$enabled")" != "$hook_ino" ]' ||
	echo "$out" | diag

local_install

out=$(in_root dpkg -r prealloc-libvirt 2>&1)
check "remove prealloc-libvirt: the enabled hook removed with it (its settings kept)" all_of \
	'[ ! -e "$mnt$enabled" ] && [ -f "$mnt/etc/prealloc/libvirt.conf" ]' || echo "$out" | diag
out=$(in_root dpkg -r prealloc 2>&1)
check "remove: prerm drained the warm pool (the READY and the DIRTY file given back)" \
	grep -q "warm drain: 2 warm files given back (32 MiB)" <<< "$out" || echo "$out" | diag
# Files by inode (a HANDED file has the pool's link and the holder's): the
# created file, guest-b's, the reserved one (in the staging directory only).
left_after_drain() {
	local left
	left=$(find "$mnt/dev/shm" -type f -printf '%i\n' | sort -u)
	[ "$(wc -l <<< "$left")" = 3 ] && grep -qx "$guest_ino" <<< "$left" &&
		grep -qx "$file_ino" <<< "$left"
}
check "remove: no warm file left but the HANDED and the RESERVED one, and the created file" \
	left_after_drain ||
	(cd "$mnt/dev/shm" && find . -type f -printf '%i %p\n') | diag
check "remove: guest-b's file is the one it was handed" \
	test "$(stat -c %i "$mnt/dev/shm/guest-b" 2> /dev/null)" = "$guest_ino"
check "remove: guest-c's holder still has its file, all 16 MiB" \
	test "$(stat -L -c %i:%s "/proc/$holder_pid/fd/3" 2> /dev/null)" = "$dirty_ino:$((16 << 20))"
check "remove: configuration and calibration kept" \
	test -f "$mnt/etc/prealloc/warm.conf" -a -f "$mnt/var/lib/prealloc/pkgtest-marker"

out=$(in_root dpkg --purge prealloc 2>&1)
check "purge: /etc/prealloc and /var/lib/prealloc removed" \
	test ! -e "$mnt/etc/prealloc" -a ! -e "$mnt/var/lib/prealloc" || echo "$out" | diag
check "purge: the record store and the guest's memory kept" \
	test -d "$mnt/run/prealloc" -a "$(stat -c %i "$mnt/dev/shm/guest-b" 2> /dev/null)" = "$guest_ino"
echo "# $((SECONDS - start)) s"
finish
