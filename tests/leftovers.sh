#!/bin/bash
# SPDX-License-Identifier: MIT
# What the test suites leave behind, for ./setup.sh test:
#
#   tests/leftovers.sh snapshot FILE   the machine's state before the suites
#   tests/leftovers.sh check FILE      the same state now; exit 1, naming
#                                      each difference, if anything is left
#
# The state: directories and files a test makes under /tmp (prealloc-*) and
# /dev/shm, mounts of hugetlbfs, tmpfs and overlays made for tests, every
# node's hugepage pools, the default record store's records, the sysctls tests
# flip (io_uring_disabled, lease-break-time, leases-enable), the libvirt hook and settings files, and processes a test
# starts and leaves running: those in setup.sh's cgroup (any kind, never
# another program's), else processes of the kinds tests start (libvirtd,
# virtlogd, qemu, prealloc, sleep). A test that fails half-way, or is stopped
# by SIGTERM, must still undo all of it.
set -u

state() {
	echo "# /tmp"
	find /tmp -maxdepth 1 \( -name 'prealloc-*' -o -name 'test-*' \) -printf '%f\n' 2> /dev/null | sort
	echo "# /dev/shm (an empty staging directory is prealloc's own and stays)"
	find /dev/shm -mindepth 1 \! \( -type d -name '.prealloc*' -empty \) -printf '%P\n' \
		2> /dev/null | sort
	echo "# mounts"
	awk '$2 ~ /^\/tmp\/prealloc/ || $3 == "hugetlbfs" || $3 == "overlay" { print $2, $3 }' \
		/proc/mounts | sort
	echo "# hugepage pools"
	for f in /sys/devices/system/node/node*/hugepages/hugepages-*/nr_hugepages \
		/proc/sys/vm/nr_hugepages; do
		[ -e "$f" ] && echo "$f $(cat "$f")"
	done
	echo "# records in /run/prealloc"
	n=$(grep -c '^rec ' /run/prealloc/store 2> /dev/null)
	echo "${n:-0}"
	echo "# sysctl"
	[ -e /proc/sys/kernel/io_uring_disabled ] &&
		echo "kernel.io_uring_disabled $(cat /proc/sys/kernel/io_uring_disabled)"
	echo "fs.lease-break-time $(cat /proc/sys/fs/lease-break-time)"
	echo "fs.leases-enable $(cat /proc/sys/fs/leases-enable)"
	echo "# libvirt hook and settings"
	for f in /etc/libvirt/hooks/qemu.d/prealloc /etc/prealloc/libvirt.conf /etc/libvirt/qemu.conf; do
		[ -e "$f" ] && echo "$f $(md5sum < "$f" | cut -c1-12)"
	done
	ls /etc/libvirt/hooks/qemu.d 2> /dev/null | grep -v '^prealloc$' | sed 's/^/qemu.d: /'
	echo "# processes"
	suite_processes | sort | uniq -c
}

# The name of each process the suites started and left running: those of
# setup.sh's cgroup ($PREALLOC_SUITE_CGROUP) but setup.sh itself and this
# script (read with builtins: no child of ours is listed). Without one (run
# by hand, or no cgroup to be had), processes of the kinds tests start,
# machine-wide: another program's count as well there.
suite_processes() {
	local p c pids=()
	if [ -n "${PREALLOC_SUITE_CGROUP:-}" ] && [ -r "$PREALLOC_SUITE_CGROUP/cgroup.procs" ]; then
		mapfile -t pids < "$PREALLOC_SUITE_CGROUP/cgroup.procs"
		for p in "${pids[@]}"; do
			[ "$p" = $$ ] || [ "$p" = "${PREALLOC_SUITE_PID:-}" ] && continue
			read -r c < "/proc/$p/comm" 2> /dev/null && echo "$c"
		done
		return
	fi
	ps -eo comm= | grep -xE 'libvirtd|virtlogd|qemu-system-x86|qemu-system-x86_64|prealloc|sleep'
}

case "${1:-}" in
snapshot)
	state > "${2:?snapshot FILE}"
	;;
check)
	# A process of a counted kind that was running before and is gone now
	# (someone's sleep that ended meanwhile) was not left behind: only the
	# processes that are more than before count.
	state > "${2:?check FILE}.now"
	{
		diff -u <(sed '/^# processes/,$d' "$2") <(sed '/^# processes/,$d' "$2.now")
		# kind: before -> now, where now is more
		awk 'FNR == 1 { f++; p = 0 } /^# processes/ { p = 1; next } !p { next }
			f == 1 { was[$2] = $1 } f == 2 && $1 > was[$2] + 0 {
				printf "+ %s: %d before, %d now\n", $2, was[$2], $1 }' "$2" "$2.now"
	} > "$2.diff"
	if ! grep -q '^[-+][^-+]' "$2.diff"; then
		echo "leftovers: none (temporary files, mounts, pools, records, sysctls, libvirt files, processes as before)"
		exit 0
	fi
	echo "leftovers: the suites left these behind (- before, + now):"
	grep '^[-+][^-+]' "$2.diff"
	# Which processes, with their parents and states (T: stopped), to find the test.
	echo "processes counted, now:"
	if [ -n "${PREALLOC_SUITE_CGROUP:-}" ] && [ -r "$PREALLOC_SUITE_CGROUP/cgroup.procs" ]; then
		ps -o pid=,ppid=,stat=,etime=,args= -p "$(paste -sd, "$PREALLOC_SUITE_CGROUP/cgroup.procs")" |
			awk -v me=$$ -v suite="${PREALLOC_SUITE_PID:-}" '$1 != me && $1 != suite && $2 != me'
	else
		ps -eo pid=,ppid=,stat=,etime=,args= |
			awk '{ n = $5; sub(".*/", "", n) } n ~ /^(libvirtd|virtlogd|qemu-system-x86(_64)?|prealloc|sleep)$/'
	fi
	exit 1
	;;
*)
	echo "usage: $0 snapshot|check FILE" >&2
	exit 2
	;;
esac
