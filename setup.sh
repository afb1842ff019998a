#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One entry point for a fresh Debian 12 machine (run as root):
#   ./setup.sh demo   install what is missing, build, and create 1 GiB of
#                     guest memory on node 0 (verified), then print the report
#   ./setup.sh test   install what is missing, build, and run the whole
#                     default test suite (also what .ci/run calls)
#   ./setup.sh build  install and build only
#
# Every cache the scripts keep (the cross tools, the arm64 rig's files, the
# rig kernel and its source) lies under $PREALLOC_CACHE_ROOT, /var/cache
# unless set; .ci/run points it at an empty directory (docs/testing.md).
set -euo pipefail

# Absolute before the cd, so the scripts this runs all see the same place.
PREALLOC_CACHE_ROOT=$(realpath -m -- "${PREALLOC_CACHE_ROOT:-/var/cache}")
export PREALLOC_CACHE_ROOT
cd "$(dirname "$0")"
ROOT=$PWD

PACKAGES=(meson ninja-build pkg-config gcc clang libc6-dev libnuma-dev libjson-c-dev python3
	liburing-dev qemu-system-x86 linux-image-amd64 busybox-static kmod cpio gzip
	libxml2-dev libvirt-dev libvirt-daemon libvirt-daemon-driver-qemu libvirt-daemon-system
	libvirt-clients scdoc strace systemd prometheus
	build-essential dpkg-dev debhelper chrpath lintian debootstrap systemd-container)

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
	# Installed, never started: promtool is what the tests use of prometheus.
	local policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		policy=1
	fi
	if [[ " ${missing[*]} " == *" prometheus "* ]] && [ ! -e /etc/systemd/system/prometheus.service ]; then
		ln -s /dev/null /etc/systemd/system/prometheus.service	# systemctl mask, offline
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
	[ -n "$policy" ] && rm -f /usr/sbin/policy-rc.d
	return 0
}

# The arm64 cross build's tools (tests/cross/install.sh prints where they come from).
CROSS_CACHE=$PREALLOC_CACHE_ROOT/prealloc-cross

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

# Every test run so far as "SHARE<tab>LINE": its duration over its timeout,
# and a line saying so. meson 1.0's testlog.json has each test's duration but
# not its timeout, which `meson introspect --tests` gives (0: none); a name
# in the log is "project:suite[+suite...] / name".
DURATIONS=()
note_durations() {
	local dir=$1 log=$1/meson-logs/$2.json where=$1
	[ -f "$log" ] || return 0
	[ "$2" = testlog ] || where="$1, ${2#testlog-}"
	mapfile -t -O "${#DURATIONS[@]}" DURATIONS < <(meson introspect "$dir" --tests |
		python3 -c '
import json, sys
timeouts = {}
for t in json.load(sys.stdin):
	suites = "+".join(s.split(":", 1)[-1] for s in t["suite"])
	timeouts[(suites, t["name"])] = timeouts[("", t["name"])] = t["timeout"] or 0
for line in open(sys.argv[1]):
	r = json.loads(line)
	suites, _, name = r["name"].rpartition(" / ")
	suites = suites.split(":", 1)[-1]
	t = timeouts.get((suites, name), timeouts.get(("", name), 0))
	share = r["duration"] / t if t > 0 else 0
	took = "%.1f s of %d s (%.0f%%)" % (r["duration"], t, 100 * share) if t > 0 else \
		"%.1f s (no timeout)" % r["duration"]
	print("%.6f\tslowest: %s %s [%s]" % (share, (suites + " / " if suites else "") + name,
	      took, sys.argv[2]))
' "$log" "$where" || true)
}

# The five tests nearest their timeout, over every build dir and run above:
# one that takes a third of its timeout or more is a CI failure waiting for
# a slow machine (docs/testing.md, "Timeouts").
print_slowest() {
	[ ${#DURATIONS[@]} -gt 0 ] || return 0
	echo
	echo "the five tests nearest their timeout (duration of timeout):"
	printf '%s\n' "${DURATIONS[@]}" | LC_ALL=C sort -t $'\t' -k1,1gr |
		awk -F '\t' 'NR <= 5 { print $2 }'
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

# The suites' own processes, for the leftovers check: this shell moves into a
# cgroup of its own (the pids hierarchy of a v1 or hybrid host, else the
# unified one), which every process a test starts inherits, at any depth and
# whatever session it makes; another program's processes on the host are in
# none of it, so they are never counted (tests/leftovers.sh).
SUITE_CGROUP=
suite_cgroup() {
	local root=/sys/fs/cgroup/pids
	[ -d "$root" ] || root=/sys/fs/cgroup
	[ -w "$root" ] || return 0
	SUITE_CGROUP=$root/prealloc-suite.$$
	if mkdir -p "$SUITE_CGROUP" && echo $$ > "$SUITE_CGROUP/cgroup.procs"; then
		export PREALLOC_SUITE_CGROUP=$SUITE_CGROUP PREALLOC_SUITE_PID=$$
	else
		rmdir "$SUITE_CGROUP" 2> /dev/null
		SUITE_CGROUP=
	fi
}
# Back to where it came from; the cgroup goes if nothing is left in it.
suite_cgroup_end() {
	[ -n "$SUITE_CGROUP" ] || return 0
	echo $$ > "$(dirname "$SUITE_CGROUP")/cgroup.procs"
	rmdir "$SUITE_CGROUP" 2> /dev/null || true
}

# run_tests DIR [meson test options...]; failures are counted, not fatal.
# LOGBASE names the log (meson's testlog by default), for a build run twice.
run_tests() {
	local dir=$1
	shift
	meson test -C "$dir" --print-errorlogs --logbase "${LOGBASE:-testlog}" "$@" || true
	count_results "$dir" "${LOGBASE:-testlog}"
	note_durations "$dir" "${LOGBASE:-testlog}"
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
	AMD64=0 CROSS=0
	if [ "$(dpkg --print-architecture)" = amd64 ]; then AMD64=1; fi
	# The arm64 cross build's tools and what the aarch64 rig boots (vm suite).
	if [ $AMD64 = 1 ]; then
		if tests/cross/install.sh --rig; then
			CROSS=1
		else
			echo "setup.sh: tests/cross/install.sh failed: the arm64 build is not run (counted as a failure)"
			FAILED=$((FAILED + 1))
		fi
	fi
	# The rig kernel with iommufd (the vm suite boots it): built once, then cached.
	if [ $AMD64 = 1 ] && ! tests/vm/build-kernel.sh > /dev/null; then
		echo "setup.sh: the rig kernel did not build: the vm suite's two-node-rig-kernel fails"
	fi
	# The main build runs every default suite.
	build build
	suite_cgroup
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
	if [ $CROSS = 1 ]; then
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
	suite_cgroup_end
	print_slowest
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
