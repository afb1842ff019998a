#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Installs what the arm64 cross build and its tests need, on an amd64 Debian
# 12 host as root (./setup.sh test and tests/vm/run-vm.sh call it):
# gcc-aarch64-linux-gnu and the -dev:arm64 packages through dpkg multiarch;
# QEMU 10's static qemu-aarch64 from bookworm-backports (it emulates
# FEAT_MOPS, which bookworm's 7.2 does not), unpacked as
# $CROSS_CACHE/bin/qemu-aarch64-static with an apt state of its own: never
# installed, the host's sources untouched. With --rig, also what the
# aarch64 VM rig boots (tests/vm/run-vm.sh --variant arm64-two-node):
# qemu-system-arm installed, and Debian's arm64 kernel and busybox-static
# fetched with apt-get download and unpacked (never installed) as
# $CROSS_CACHE/rig/vmlinuz and $CROSS_CACHE/rig/busybox. Idempotent; prints
# what it does. CROSS_CACHE is $PREALLOC_CACHE_ROOT/prealloc-cross, the root
# /var/cache unless set (docs/testing.md, "Caches").
set -euo pipefail

CROSS_PACKAGES=(gcc-aarch64-linux-gnu libc6-dev:arm64 libnuma-dev:arm64 liburing-dev:arm64
	libjson-c-dev:arm64)
CROSS_CACHE=$(realpath -m -- "${PREALLOC_CACHE_ROOT:-/var/cache}")/prealloc-cross
QEMU_AARCH64=$CROSS_CACHE/bin/qemu-aarch64-static

install_cross() {
	local missing=() apt_dir=$CROSS_CACHE/apt deb
	local -a apt_opts=(-o Dir::Etc::SourceList=/dev/null
		-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$apt_dir/none"
		-o APT::Sandbox::User=root)

	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		echo "cross/install.sh: adding dpkg architecture arm64 (the cross build's -dev:arm64 packages)"
		dpkg --add-architecture arm64
	fi
	for p in "${CROSS_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "cross/install.sh: installing ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			"${missing[@]}" >/dev/null
	fi
	[ -x "$QEMU_AARCH64" ] && return 0
	echo "cross/install.sh: fetching qemu-user from bookworm-backports into $CROSS_CACHE"
	mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/none" \
		"$apt_dir/cache/archives/partial" "$CROSS_CACHE/bin"
	printf '%s\n' "Types: deb" "URIs: http://deb.debian.org/debian" "Suites: bookworm-backports" \
		"Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" \
		> "$apt_dir/sources.list.d/backports.sources"
	apt-get "${apt_opts[@]}" update -qq
	(cd "$apt_dir" && rm -f qemu-user_*.deb && apt-get "${apt_opts[@]}" download qemu-user -qq)
	deb=$(ls "$apt_dir"/qemu-user_*.deb)
	rm -rf "$apt_dir/x"
	dpkg-deb -x "$deb" "$apt_dir/x"
	install -m 0755 "$apt_dir/x/usr/bin/qemu-aarch64" "$QEMU_AARCH64.new"
	mv "$QEMU_AARCH64.new" "$QEMU_AARCH64"
	rm -rf "$apt_dir/x" "$deb"
}

# The newest arm64 kernel image package the archive has (what linux-image-arm64 names).
arm64_kernel_package() {
	apt-cache depends linux-image-arm64:arm64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-/ { sub(/:arm64$/, "", $2); print $2; exit }'
}

# The rig's download directory while it exists: global, since the EXIT trap
# that removes it runs after install_rig has returned (a local would be
# unset there, and `set -u` would fail the script after its work was done).
rig_fetch=
trap 'rm -rf "$rig_fetch"' EXIT

install_rig() {
	local rig=$CROSS_CACHE/rig kpkg

	if ! command -v qemu-system-aarch64 >/dev/null; then
		echo "cross/install.sh: installing qemu-system-arm"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			qemu-system-arm >/dev/null
	fi
	# (apt-cache exits 100 where the arm64 lists are missing: then update and ask again)
	kpkg=$(arm64_kernel_package || true)
	if [ -z "$kpkg" ]; then
		apt-get update -qq
		kpkg=$(arm64_kernel_package || true)
	fi
	[ -n "$kpkg" ] || { echo "cross/install.sh: the archive names no arm64 kernel" >&2; exit 1; }
	if [ -x "$rig/busybox" ] && [ "$(cat "$rig/kernel-package" 2>/dev/null)" = "$kpkg" ]; then
		return 0
	fi
	echo "cross/install.sh: fetching $kpkg and busybox-static (arm64) into $rig"
	mkdir -p "$rig"
	rig_fetch=$(mktemp -d "$rig/fetch.XXXXXX")
	# apt-packages: linux-image-*-arm64:arm64 (the kernel linux-image-arm64 names)
	(cd "$rig_fetch" && apt-get -o APT::Sandbox::User=root download -qq "$kpkg:arm64" \
		busybox-static:arm64)
	for deb in "$rig_fetch"/*.deb; do dpkg-deb -x "$deb" "$rig_fetch/x"; done
	install -m 0644 "$rig_fetch"/x/boot/vmlinuz-* "$rig/vmlinuz"
	install -m 0755 "$rig_fetch/x/bin/busybox" "$rig/busybox"
	echo "$kpkg" >"$rig/kernel-package"
	rm -rf "$rig_fetch"
	rig_fetch=
}

if [ "$(id -u)" != 0 ]; then
	echo "cross/install.sh: run as root: it adds dpkg's arm64 architecture and installs packages" >&2
	exit 1
fi
install_cross
[ "${1:-}" = --rig ] && install_rig
exit 0
