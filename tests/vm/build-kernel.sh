#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Builds the VM rig's kernel: Debian's linux-source-6.12 (bookworm-security)
# configured from tinyconfig + kvm_guest.config + tests/vm/rig-kernel.config,
# everything built in, with IOMMUFD and VFIO_DEVICE_CDEV (Debian's own 6.1
# and 6.12 kernels have neither). Prints the bzImage's path on stdout.
#
# The result is cached outside the checkout, keyed by the source version, the
# fragment and this script: $PREALLOC_CACHE_ROOT/prealloc-rig/bzImage-<key>
# (the root is /var/cache unless set); a second run prints it at once.
# Installs what is missing (root, Debian). Exit 0 built or cached, 1 failed.
#
# --fetch: only what the build takes from outside: the packages installed and
# the source unpacked into the cache; prints the source directory, builds
# nothing (tests/cross/test-install.sh runs it from an empty cache).
set -euo pipefail

fetch_only=0
case "${1:-}" in
"") ;;
--fetch) fetch_only=1 ;;
*) echo "usage: $0 [--fetch]" >&2; exit 2 ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
cache=$(realpath -m -- "${PREALLOC_CACHE_ROOT:-/var/cache}")/prealloc-rig
fragment=$here/rig-kernel.config
log() { echo "build-kernel.sh: $*" >&2; }
die() { log "$*"; exit 1; }

packages=(linux-source-6.12 bc bison flex libelf-dev make gcc xz-utils)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "needs ${missing[*]} (run as root to install them)"
	log "installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
fi

version=$(dpkg-query -W -f='${Version}' linux-source-6.12)
key=$( { echo "$version"; cat "$fragment" "$0"; } | sha256sum | cut -c1-16)
image=$cache/bzImage-$key
if [ "$fetch_only" = 0 ] && [ -s "$image" ]; then
	echo "$image"
	exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9
[ "$fetch_only" = 0 ] && [ -s "$image" ] && { echo "$image"; exit 0; }
src=$cache/linux-source-6.12-$version
if [ ! -f "$src/Makefile" ]; then
	log "unpacking linux-source-6.12 $version"
	rm -rf "$src" "$cache/linux-source-6.12"
	tar -C "$cache" -xf /usr/src/linux-source-6.12.tar.xz
	mv "$cache/linux-source-6.12" "$src"
fi
[ "$fetch_only" = 1 ] && { echo "$src"; exit 0; }
obj=$cache/build-$key
rm -rf "$obj"
mkdir -p "$obj"
start=$SECONDS
make -s -C "$src" O="$obj" ARCH=x86_64 tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" \
	"$src/kernel/configs/kvm_guest.config" "$fragment" >/dev/null
make -s -C "$src" O="$obj" ARCH=x86_64 olddefconfig >/dev/null
# Every line of the fragment must have survived the dependency resolution.
bad=
while IFS= read -r line; do
	case $line in
	CONFIG_*=*) grep -qx "$line" "$obj/.config" || bad="$bad ${line%%=*}" ;;
	"# CONFIG_"*" is not set") opt=${line#\# }; opt=${opt%% *}
		grep -q "^$opt=" "$obj/.config" && bad="$bad $opt(set)" ;;
	esac
done < "$fragment"
[ -z "$bad" ] || die "the configuration dropped:$bad (a dependency is missing in $fragment)"
log "building in $obj ($(nproc) jobs)"
make -s -C "$src" O="$obj" ARCH=x86_64 -j"$(nproc)" bzImage >"$obj/build.log" 2>&1 ||
	{ tail -30 "$obj/build.log" >&2; die "make bzImage failed ($obj/build.log)"; }
cp "$obj/arch/x86/boot/bzImage" "$image.new"
mv "$image.new" "$image"
log "built $image in $((SECONDS - start)) s"
rm -rf "$obj"
echo "$image"
