#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The download and install steps from nothing, as on a fresh machine: each
# runs with PREALLOC_CACHE_ROOT an empty directory of its own, must exit 0
# and leave what its caller then uses:
#   tests/cross/install.sh          setup.sh's arm64 build: the cross compiler
#                                   and -dev:arm64 libraries (a static program
#                                   using all three is built) and QEMU 10's
#                                   qemu-aarch64-static, which runs it
#   tests/cross/install.sh --rig    run-vm.sh's aarch64 rig: the above, and
#                                   qemu-system-aarch64, the arm64 kernel and a
#                                   static arm64 busybox in the rig cache; a
#                                   second run over that cache fetches nothing
#   tests/vm/build-kernel.sh --fetch  the rig kernel's build: its packages and
#                                   the source unpacked in the cache (the build
#                                   itself is left to CI's run, too slow here)
# None of them may write into the default or the caller's caches instead.
# Root on an amd64 Debian host (what the scripts install for): skips
# elsewhere, saying why. TAP.
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=../lib/tap.sh
. "$src/tests/lib/tap.sh"

work=
# shellcheck disable=SC2317 # called by the trap
cleanup() { [ -z "$work" ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP the scripts install packages and add dpkg's arm64 architecture: needs root"
	exit 0
fi
if ! command -v dpkg >/dev/null || [ "$(dpkg --print-architecture)" != amd64 ]; then
	echo "1..0 # SKIP the scripts fetch for an amd64 Debian host, and this is not one"
	exit 0
fi
work=$(mktemp -d /var/tmp/prealloc-test-install.XXXXXX) || exit 1
touch "$work/start"

# run NAME ROOT CMD...: CMD with PREALLOC_CACHE_ROOT=ROOT (made empty), its
# output in $work/NAME.log; a point for its exit status, the log's tail as the
# diagnostics of a failure. Returns CMD's status.
run() {
	local name=$1 root=$2 rc t0=$SECONDS log
	shift 2
	log=$work/${name//[^a-z.-]/_}.log
	mkdir "$root" || return 1
	PREALLOC_CACHE_ROOT=$root "$@" >"$log" 2>&1
	rc=$?
	if [ "$rc" = 0 ]; then
		point 1 "$name from an empty cache exits 0 ($((SECONDS - t0)) s)"
	else
		local -a tail=()
		mapfile -t tail < <(tail -n 15 "$log")
		point 0 "$name from an empty cache exits 0 (exit $rc)" "${tail[@]}"
	fi
	return "$rc"
}

# check DESC CMD...: a point for CMD's success.
check() {
	local desc=$1
	shift
	if "$@" >/dev/null 2>&1; then point 1 "$desc"; else point 0 "$desc" "failed: $*"; fi
}

# on_path CMD...: every CMD is on PATH (`command -v A B` is content with one).
on_path() {
	local c
	for c in "$@"; do command -v "$c" || return 1; done
}

# aarch64 ELF, linked statically (no program interpreter).
static_arm64() {
	readelf -h "$1" | grep -q 'Machine:.*AArch64' &&
		! readelf -l "$1" | grep -q 'program interpreter'
}

# What the cross build links (meson.build's numa, json-c, liburing), built
# -static for arm64 and run under the fetched QEMU.
cross_program_runs() {
	local qemu=$1 pc=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig flags
	flags=$(PKG_CONFIG_LIBDIR=$pc pkg-config --static --cflags --libs numa json-c liburing) ||
		return 1
	cat >"$work/probe.c" <<-'EOF'
	#include <liburing.h>
	#include <json-c/json.h>
	#include <numa.h>
	#include <stdio.h>
	int main(void)
	{
		struct json_object *o = json_object_new_int(42);

		/* liburing linked in; qemu-user need not run io_uring */
		int (*init)(unsigned int, struct io_uring *, unsigned int) = io_uring_queue_init;

		printf("%s %d %d\n", json_object_to_json_string(o), numa_max_possible_node() >= 0,
		       init != NULL);
		return 0;
	}
	EOF
	# shellcheck disable=SC2086 # pkg-config's flags
	aarch64-linux-gnu-gcc -static -o "$work/probe" "$work/probe.c" $flags &&
		static_arm64 "$work/probe" &&
		[ "$("$qemu" -cpu max "$work/probe")" = "42 1 1" ]
}

# QEMU 8.2 or later: the first to emulate FEAT_MOPS, which the arm64 kernels use.
qemu_has_mops() {
	local v
	v=$("$1" --version | sed -n '1s/.* version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
	# shellcheck disable=SC2086 # two numbers
	[ -n "$v" ] && set -- $v && { [ "$1" -gt 8 ] || { [ "$1" = 8 ] && [ "$2" -ge 2 ]; }; }
}

# ---- install.sh: the cross build ------------------------------------------
root=$work/cross
if run install.sh "$root" "$src/tests/cross/install.sh"; then
	qemu=$root/prealloc-cross/bin/qemu-aarch64-static
	check "install.sh: $qemu is executable" test -x "$qemu"
	check "install.sh: its QEMU emulates FEAT_MOPS (8.2 or later)" qemu_has_mops "$qemu"
	check "install.sh: the cross file's tools are on PATH" on_path aarch64-linux-gnu-gcc \
		aarch64-linux-gnu-gcc-ar aarch64-linux-gnu-strip pkg-config
	check "install.sh: a static arm64 program using numa, json-c and liburing builds and runs" \
		cross_program_runs "$qemu"
	check "install.sh: no download left in the cache" \
		test -z "$(find "$root" -name '*.deb' -o -path '*/apt/x' | head -n1)"
fi

# ---- install.sh --rig: the aarch64 rig --------------------------------------
root=$work/rig
if run "install.sh --rig" "$root" "$src/tests/cross/install.sh" --rig; then
	rig=$root/prealloc-cross/rig
	check "--rig: qemu-system-aarch64 is on PATH" on_path qemu-system-aarch64
	check "--rig: $rig/vmlinuz is not empty" test -s "$rig/vmlinuz"
	check "--rig: $rig/kernel-package names a linux-image" \
		grep -qx 'linux-image-.*-arm64' "$rig/kernel-package"
	check "--rig: $rig/busybox is a static arm64 program" static_arm64 "$rig/busybox"
	check "--rig: that busybox runs" \
		"$root/prealloc-cross/bin/qemu-aarch64-static" "$rig/busybox" true
	check "--rig: no download directory left in the rig cache" \
		test -z "$(find "$rig" -mindepth 1 -name 'fetch.*' | head -n1)"
	out=$(PREALLOC_CACHE_ROOT=$root "$src/tests/cross/install.sh" --rig 2>&1)
	rc=$?
	if [ "$rc" = 0 ] && ! grep -q fetching <<<"$out"; then
		point 1 "--rig again over the filled cache: exits 0 and fetches nothing"
	else
		point 0 "--rig again over the filled cache: exits 0 and fetches nothing" \
			"exit $rc" "$out"
	fi
fi

# ---- build-kernel.sh --fetch: the rig kernel's packages and source -----------
root=$work/kernel
if run "build-kernel.sh --fetch" "$root" "$src/tests/vm/build-kernel.sh" --fetch; then
	dir=$(tail -n 1 "$work/build-kernel.sh_--fetch.log")
	check "build-kernel.sh --fetch: the source it names is in the cache ($dir)" \
		test "${dir#"$root"/prealloc-rig/linux-source-6.12-}" != "$dir"
	check "build-kernel.sh --fetch: the source has what the build uses" \
		test -f "$dir/Makefile" -a -x "$dir/scripts/kconfig/merge_config.sh" \
		-a -f "$dir/kernel/configs/kvm_guest.config"
	check "build-kernel.sh --fetch: the build's tools are on PATH" \
		on_path make gcc bc bison flex xz
	check "build-kernel.sh --fetch: libelf's headers are installed" test -f /usr/include/gelf.h
fi

# ---- nothing went to another cache -------------------------------------------
strays=()
for d in /var/cache/prealloc-cross /var/cache/prealloc-rig \
	${PREALLOC_CACHE_ROOT:+"$PREALLOC_CACHE_ROOT/prealloc-cross"} \
	${PREALLOC_CACHE_ROOT:+"$PREALLOC_CACHE_ROOT/prealloc-rig"}; do
	[ -d "$d" ] && mapfile -t -O "${#strays[@]}" strays < <(find "$d" -newer "$work/start" |
		head -n 3)
done
point "$(none "${strays[*]}")" "no script wrote into the default or the caller's caches" \
	"${strays[@]/#/written meanwhile: }"

echo "1..$tap_n"
[ "$tap_fails" = 0 ]
