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
# Usage: test-packages.sh SOURCE_ROOT. Root. Prints TAP.
set -u
export LC_ALL=C

# A session of its own under a forwarder, as tests/integration/lib.sh does:
# meson's SIGTERM reaches the test, which still gets to clean up.
if [ -z "${PKGTEST_SESSION:-}" ]; then
	PKGTEST_SESSION=$$ setsid unshare --mount --propagation private "$BASH" "$0" "$@" &
	test_pid=$!
	trap 'kill -TERM -- "-$test_pid" 2> /dev/null' TERM INT HUP
	while :; do
		wait "$test_pid"
		rc=$?
		kill -0 "$test_pid" 2> /dev/null || exit "$rc"
	done
fi

src=${1:?usage: test-packages.sh SOURCE_ROOT}
here=$(cd "$(dirname "$0")" && pwd)
count=0 fails=0
ok() { count=$((count + 1)); echo "ok $count - $*"; }
fail() { count=$((count + 1)); fails=$((fails + 1)); echo "not ok $count - $*"; }
# check DESC CMD...: ok or not ok, and the verdict.
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; return 1; fi; }
diag() { sed 's/^/# /'; }
all_of() { eval "$1"; }
finish() { echo "1..$count"; [ "$fails" = 0 ]; exit $?; }
bail() { fail "$*"; finish; }

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (dpkg-buildpackage, debootstrap, chroot)"; exit 0; }

tmp=$(mktemp -d /tmp/prealloc-packaging.XXXXXX) || exit 1
mnt=$tmp/root
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

# in_root CMD...: CMD in the root, apt without questions.
in_root() { chroot "$mnt" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
	HOME=/root LC_ALL=C.UTF-8 "$@"; }

# ---- the packages, from a copy of the tree ---------------------------------

# copy_tree DIR: the tree's files (git's view where there is one: tracked and
# untracked, not ignored; build directories never).
copy_tree() {
	mkdir -p "$1"
	if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
		(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$1" -xf -
	else
		# A scratch copy (the mutation harness's): its build directories left out.
		local d excludes=(--exclude=./obj-*)
		for d in "$src"/*/; do
			[ -d "$d/meson-private" ] && excludes+=("--exclude=./$(basename "$d")")
		done
		tar -C "$src" "${excludes[@]}" -cf - . | tar -C "$1" -xf -
	fi
}

# build DIR: dpkg-buildpackage, its log kept; the .debs land in DIR/..
build() {
	(cd "$1" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
		dpkg-buildpackage -us -uc -b > ../build.log 2>&1)
}

start=$SECONDS
mkdir -p "$tmp/v1" "$tmp/v2"
copy_tree "$tmp/v1/src"
version=$(cd "$tmp/v1/src" && dpkg-parsechangelog -S Version)
if ! deps=$(cd "$tmp/v1/src" && dpkg-checkbuilddeps 2>&1); then
	echo "$deps" | diag
	bail "the build dependencies are installed (apt-get build-dep ./; setup.sh installs them)"
fi
build "$tmp/v1/src" || { tail -n 30 "$tmp/v1/build.log" | diag; bail "dpkg-buildpackage -us -uc -b"; }
debs=$(cd "$tmp/v1" && find . -maxdepth 1 -name '*.deb' ! -name '*-dbgsym_*' -printf '%f ' | sort)
ok "dpkg-buildpackage -us -uc -b from a copy of the tree: $debs($((SECONDS - start)) s)"

# The same tree at a higher version, for the upgrade.
copy_tree "$tmp/v2/src"
newer=$version+pkgtest1
{ printf 'prealloc (%s) UNRELEASED; urgency=medium\n\n  * The packaging test'"'"'s upgrade.\n\n -- %s  %s\n\n' \
	"$newer" "$(cd "$tmp/v2/src" && dpkg-parsechangelog -S Maintainer)" "$(date -R)"
  cat "$tmp/v2/src/debian/changelog"; } > "$tmp/v2/changelog" && mv "$tmp/v2/changelog" "$tmp/v2/src/debian/changelog"
build "$tmp/v2/src" || { tail -n 30 "$tmp/v2/build.log" | diag; bail "dpkg-buildpackage of $newer"; }
ok "rebuilt at $newer ($((SECONDS - start)) s)"

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

base=$("$here/make-root.sh") || bail "a fresh Debian 12 root (make-root.sh)"
cache=$(dirname "$base")
mkdir -p "$mnt" "$tmp/upper" "$tmp/work" "$cache/apt-archives/partial"
mount -t overlay overlay -o "lowerdir=$base,upperdir=$tmp/upper,workdir=$tmp/work" "$mnt" ||
	bail "overlay over $base"
mount -t proc proc "$mnt/proc"
mount --rbind /sys "$mnt/sys"
mount --rbind /dev "$mnt/dev"
for d in run tmp dev/shm; do mount -t tmpfs -o mode=1777 "pkgtest-$d" "$mnt/$d"; done
# The downloaded .debs kept between runs (the root's own lists say which).
mount --bind "$cache/apt-archives" "$mnt/var/cache/apt/archives"
cp /etc/resolv.conf "$mnt/etc/resolv.conf"
mkdir -p "$mnt/tmp/v1" "$mnt/tmp/v2"
cp "$tmp"/v1/*.deb "$mnt/tmp/v1/" && cp "$tmp"/v2/*.deb "$mnt/tmp/v2/"
arch=$(dpkg --print-architecture)
ok "a fresh Debian 12 root: $base ($((SECONDS - start)) s)"

# apt_install ARGS...: apt-get install in the root (the built .debs and
# their dependencies; gcc and pkg-config for the C program, removed after
# it); the lists fetched again once if stale.
apt_install() {
	# apt-packages: gcc pkg-config (and the built .debs, in the test's root only)
	in_root apt-get install -y -q --no-install-recommends "$@" > "$tmp/apt.log" 2>&1 && return 0
	in_root apt-get update -qq >> "$tmp/apt.log" 2>&1 &&
		# apt-packages: gcc pkg-config (as above)
		in_root apt-get install -y -q --no-install-recommends "$@" >> "$tmp/apt.log" 2>&1
}

if ! apt_install "/tmp/v1/libprealloc0_${version}_$arch.deb" "/tmp/v1/prealloc_${version}_$arch.deb"; then
	tail -n 20 "$tmp/apt.log" | diag
	bail "apt installs libprealloc0 and prealloc with their dependencies"
fi
ok "apt installs libprealloc0 and prealloc: $(grep -c '^Setting up' "$tmp/apt.log") packages set up"
wants=$(find "$mnt/etc/systemd/system" -name prealloc-warm.service 2> /dev/null)
check "installing enabled nothing: no prealloc-warm.service under /etc/systemd/system" test -z "$wants" ||
	echo "$wants" | diag

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

# ---- upgrade, remove, purge --------------------------------------------------

cp "$mnt/etc/prealloc/warm.conf" "$tmp/warm.conf.before"
# The older build's store: format 3 (warm lines, no tenant), read by the newer one below.
store_line=$(head -n 1 "$mnt/run/prealloc/store" 2> /dev/null)
check "before the upgrade: the store the installed build wrote is format 3 ($store_line)" \
	test "$store_line" = "prealloc-store 3"
status_before=$(in_root prealloc warm status --json 2>&1)
out=$(in_root dpkg -i "/tmp/v2/libprealloc0_${newer}_$arch.deb" "/tmp/v2/prealloc_${newer}_$arch.deb" \
	"/tmp/v2/libprealloc-dev_${newer}_$arch.deb" 2>&1)
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
