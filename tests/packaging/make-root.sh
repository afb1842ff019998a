#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A fresh Debian 12 root for the packaging test (test-packages.sh):
# `debootstrap --variant=minbase bookworm` from the Debian archive mirror
# the host's apt uses, with the host's apt sources copied in and their
# lists fetched, nothing else installed. Prints its path on stdout.
#
# Cached outside the checkout like the rig kernel (tests/vm/build-kernel.sh):
# $PREALLOC_CACHE_ROOT/prealloc-debroot/root-<key> (/var/cache unless set),
# keyed by debootstrap's version, the mirror, the suite and this script; a
# second run prints it at once, and roots of other keys are removed. The
# root is never changed after it is made: the test runs on an overlay.
# Root only. Exit 0 made or cached, 1 failed.
set -euo pipefail

suite=bookworm
cache=$(realpath -m -- "${PREALLOC_CACHE_ROOT:-/var/cache}")/prealloc-debroot
log() { echo "make-root.sh: $*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root"
command -v debootstrap > /dev/null || die "debootstrap is not installed (setup.sh installs it)"

# The Debian archive the host's apt uses: the first URI of a source (one-line
# or deb822 format) that is not the security archive.
host_mirror() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		sed -n -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([a-z]\+:\/\/[^[:space:]]*\).*/\2/p' \
			-e 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' "$f"
	done | grep -v -e security -e '^$' | head -n 1
}

mirror=$(host_mirror)
[ -n "$mirror" ] || die "no Debian archive in /etc/apt/sources.list*"
key=$( { debootstrap --version; echo "$mirror $suite"; cat "$0"; } | sha256sum | cut -c1-16)
root=$cache/root-$key
if [ -f "$root/.complete" ]; then
	echo "$root"
	exit 0
fi

mkdir -p "$cache"
exec 9> "$cache/lock"
flock 9
[ -f "$root/.complete" ] && { echo "$root"; exit 0; }
# Roots of other keys (an older script or mirror) and a half-made one go.
find "$cache" -mindepth 1 -maxdepth 1 -name 'root-*' -exec rm -rf {} +
start=$SECONDS
log "debootstrap $suite from $mirror into $root"
tmp=$root.tmp
rm -rf "$tmp"
if ! debootstrap --variant=minbase "$suite" "$tmp" "$mirror" > "$cache/debootstrap.log" 2>&1; then
	tail -n 20 "$cache/debootstrap.log" >&2
	rm -rf "$tmp"
	die "debootstrap failed (log: $cache/debootstrap.log)"
fi
# apt inside the root takes the packages from the host's sources.
rm -f "$tmp/etc/apt/sources.list"
cp -a /etc/apt/sources.list* "$tmp/etc/apt/" 2> /dev/null || true
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$tmp/etc/apt/sources.list"
cp /etc/resolv.conf "$tmp/etc/resolv.conf"
if ! chroot "$tmp" apt-get update -qq > "$cache/apt-update.log" 2>&1; then
	cat "$cache/apt-update.log" >&2
	rm -rf "$tmp"
	die "apt-get update in the new root failed"
fi
chroot "$tmp" apt-get clean
touch "$tmp/.complete"
mv "$tmp" "$root"
log "made in $((SECONDS - start)) s"
echo "$root"
