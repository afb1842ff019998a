#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One entry point for a fresh Debian 12 machine (run as root):
#   ./setup.sh demo   install what is missing, build, and create 1 GiB of
#                     guest memory on node 0 (verified), then print the report
#   ./setup.sh test   install what is missing, build, and run the whole
#                     default test suite (also what .ci/run calls)
#   ./setup.sh build  install and build only
set -euo pipefail

cd "$(dirname "$0")"
ROOT=$PWD

PACKAGES=(meson ninja-build pkg-config gcc clang libc6-dev libnuma-dev libjson-c-dev python3
	liburing-dev qemu-system-x86 linux-image-amd64 busybox-static kmod cpio gzip
	libxml2-dev libvirt-dev libvirt-daemon libvirt-daemon-driver-qemu libvirt-daemon-system
	libvirt-clients scdoc strace systemd)

install_packages() {
	local missing=()

	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup.sh: missing packages (${missing[*]}); run as root to install them" >&2
		exit 1
	fi
	echo "setup.sh: installing ${missing[*]}"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# The arm64 cross build's tools (an amd64 host only): gcc-aarch64-linux-gnu
# and the -dev:arm64 packages through dpkg multiarch; and QEMU 10's static
# qemu-aarch64 from bookworm-backports (it emulates FEAT_MOPS, which
# bookworm's 7.2 does not), unpacked under CROSS_CACHE with an apt state of
# its own: never installed, the host's sources untouched.
CROSS_PACKAGES=(gcc-aarch64-linux-gnu libc6-dev:arm64 libnuma-dev:arm64 liburing-dev:arm64
	libjson-c-dev:arm64)
CROSS_CACHE=/var/cache/prealloc-cross
QEMU_AARCH64=$CROSS_CACHE/bin/qemu-aarch64-static

install_cross() {
	local missing=() apt_dir=$CROSS_CACHE/apt deb
	local -a apt_opts=(-o Dir::Etc::SourceList=/dev/null
		-o "Dir::Etc::SourceParts=$apt_dir/sources.list.d"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
		-o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$apt_dir/none"
		-o APT::Sandbox::User=root)

	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		echo "setup.sh: adding dpkg architecture arm64 (the cross build's -dev:arm64 packages)"
		dpkg --add-architecture arm64
	fi
	for p in "${CROSS_PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "setup.sh: installing ${missing[*]}"
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
			"${missing[@]}" >/dev/null
	fi
	[ -x "$QEMU_AARCH64" ] && return 0
	echo "setup.sh: fetching qemu-user from bookworm-backports into $CROSS_CACHE"
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

# build DIR [meson options...]
build() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" -Dwerror=true "$@" > "$dir.setup.log" 2>&1 ||
			{ cat "$dir.setup.log"; echo "setup.sh: meson setup $dir failed" >&2; exit 1; }
	fi
	ninja -C "$dir" > "$dir.build.log" 2>&1 ||
		{ cat "$dir.build.log"; echo "setup.sh: building $dir failed" >&2; exit 1; }
}

# Adds one build's meson test results to the totals.
PASSED=0 FAILED=0 SKIPPED=0
count_results() {
	local log=$1/meson-logs/${2:-testlog}.json p f s
	[ -f "$log" ] || return 0
	p=$(grep -c '"result": "OK"' "$log" || true)
	f=$(grep -cE '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
	s=$(grep -c '"result": "SKIP"' "$log" || true)
	PASSED=$((PASSED + p)) FAILED=$((FAILED + f)) SKIPPED=$((SKIPPED + s))
}

# interrupted_run DIR: the integration suite stopped halfway by SIGTERM to
# its whole process group, as a CI timeout or ^C does; its tests must still
# clean up after themselves (the leftovers check below says whether they did).
interrupted_run() {
	local pid i
	setsid meson test -C "$1" --no-rebuild --suite integration > "$1.interrupted.log" 2>&1 &
	pid=$!
	sleep 8
	kill -TERM -- "-$pid" 2> /dev/null
	wait "$pid" || true	# 143, or whatever meson makes of it
	# The tests' own cleanup (in a session of its own, lib.sh) may outlive meson.
	for ((i = 0; i < 600; i++)); do
		pgrep -f "$ROOT/tests/" > /dev/null || break
		sleep 0.2
	done
}

# run_tests DIR [meson test options...]; failures are counted, not fatal.
# LOGBASE names the log (meson's testlog by default), for a build run twice.
run_tests() {
	local dir=$1
	shift
	meson test -C "$dir" --print-errorlogs --logbase "${LOGBASE:-testlog}" "$@" || true
	count_results "$dir" "${LOGBASE:-testlog}"
}

case "${1:-}" in
demo)
	install_packages
	build build
	# The main job on a sensible default: 1 GiB on node 0, checked page by page.
	build/prealloc/cli/prealloc --node 0 --verify 1G
	echo "(release it with: build/prealloc/cli/prealloc rm FILE)"
	;;
test)
	install_packages
	# The main build runs every default suite.
	build build
	tests/leftovers.sh snapshot build/leftovers.before
	run_tests build
	# Sanitizers over the suites that exercise the library without a VM.
	build build-asan -Db_sanitize=address,undefined -Db_lundef=false
	run_tests build-asan --suite unit --suite kernels
	# The portable kernels alone must pass the same kernel tests.
	build build-novec -Dvector_kernels=false
	run_tests build-novec --suite unit --suite kernels
	# Without liburing every job completes through its eventfd: the same suites pass.
	build build-nouring -Dliburing=disabled
	run_tests build-nouring --suite unit --suite kernels --suite uring
	# arm64: a static cross build, its unit and kernels suites under qemu-user at
	# two CPU models: Cortex-A72 (DC ZVA, no MOPS) and QEMU's max (MOPS too).
	if [ "$(dpkg --print-architecture)" = amd64 ]; then
		install_cross
		PATH=$CROSS_CACHE/bin:$PATH build build-arm64 \
			--cross-file tests/cross/aarch64-linux-gnu.ini -Dlibvirt_hook=disabled \
			-Dlibvirt_domain=disabled -Dman=disabled
		PATH=$CROSS_CACHE/bin:$PATH QEMU_CPU=cortex-a72 LOGBASE=testlog-a72 \
			PREALLOC_TEST_EXPECT_KERNELS=dc_zva,stnp,c \
			run_tests build-arm64 --suite unit --suite kernels
		PATH=$CROSS_CACHE/bin:$PATH QEMU_CPU=max LOGBASE=testlog-max \
			PREALLOC_TEST_EXPECT_KERNELS=dc_zva,mops,stnp,c \
			run_tests build-arm64 --suite unit --suite kernels
	fi
	# The parsers under libFuzzer for a bounded time (needs clang).
	CC=clang build build-fuzz
	run_tests build-fuzz --suite fuzz
	# Nothing left behind by any of it, a run stopped halfway included.
	interrupted_run build
	if tests/leftovers.sh check build/leftovers.before; then
		PASSED=$((PASSED + 1))
	else
		FAILED=$((FAILED + 1))
	fi
	echo
	echo "$PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ "$FAILED" -eq 0 ]
	;;
build)
	install_packages
	build build
	;;
*)
	echo "usage: $0 demo|test|build" >&2
	exit 2
	;;
esac
