#!/bin/bash
# SPDX-License-Identifier: MIT
# examples/kvm-vmm, the VMM a reader meets first, run for real: guest RAM
# prepared by libprealloc while the VMM's io_uring loop ticks, then checked
# zero by guest code on KVM; with io_uring (when built in), under a seccomp
# filter that denies io_uring from the start, under
# kernel.io_uring_disabled=2 (restored after), and with 2M pages reserved
# on a private hugetlbfs mount. Exit 77 only where /dev/kvm is absent.
TAP=1	# meson reads this script's output as TAP: a skip is TAP's own
. "$(dirname "$0")/../integration/lib-admit.sh"
VMM=${KVM_VMM:?set KVM_VMM to examples/kvm-vmm}
SECCOMP_EXEC=${SECCOMP_EXEC:?set SECCOMP_EXEC}
MIB=16	# 4k pages in /dev/shm (not a hugetlbfs mount another test may own); each first
	# guest touch of a page is an EPT fault, slow when KVM is nested

# run NAME [launcher...]: runs the example, its output in $TMP/NAME.
run() {
	local name=$1
	shift
	"$@" "$VMM" $VMM_ARGS > "$TMP/$name" 2>&1
	rc=$?
	sed "s/^/# $name: /" "$TMP/$name"
}

VMM_ARGS="$MIB /dev/shm" run plain
[ $rc -eq 77 ] && skip "$(head -1 "$TMP/plain")"
check "plain: exit 0 (got $rc)" [ $rc -eq 0 ]
check "plain: the guest saw only zeroes" grep -q "^guest: $MIB MiB checked in .*: all zero$" "$TMP/plain"
if [ "${HAVE_URING:-1}" = 1 ]; then
	check "plain: completion came through io_uring" grep -q "^completion: io_uring" "$TMP/plain"
else
	check "plain: built without liburing: the eventfd" \
		grep -q "^completion: eventfd, end res 0" "$TMP/plain"
fi
check "plain: the loop ticked during preparation" grep -Eq "^event loop: [1-9][0-9]* ticks" "$TMP/plain"
check "plain: the RAM file was released" grep -q "^released .*: ok$" "$TMP/plain"

VMM_ARGS="$MIB /dev/shm" run seccomp "$SECCOMP_EXEC"
check "seccomp: exit 0 (got $rc)" [ $rc -eq 0 ]
check "seccomp: the guest saw only zeroes" grep -q ": all zero$" "$TMP/seccomp"
check "seccomp: completion came through the eventfd" grep -q "^completion: eventfd, end res 0" "$TMP/seccomp"
if [ "${HAVE_URING:-1}" = 1 ]; then
	check "seccomp: the VMM's own io_uring_setup was denied" \
		grep -q "^io_uring_setup: Operation not permitted" "$TMP/seccomp"
fi

SYSCTL=/proc/sys/kernel/io_uring_disabled
if [ ! -e $SYSCTL ]; then
	ok "# SKIP sysctl: $SYSCTL does not exist on this kernel (added in 6.6)"
elif [ "$(id -u)" -ne 0 ]; then
	ok "# SKIP sysctl: not root"
else
	old=$(cat $SYSCTL)
	on_exit "echo $old > $SYSCTL"
	echo 2 > $SYSCTL
	VMM_ARGS="$MIB /dev/shm" run sysctl
	echo "$old" > $SYSCTL
	check "sysctl: exit 0 (got $rc)" [ $rc -eq 0 ]
	check "sysctl: completion came through the eventfd" \
		grep -q "^completion: eventfd, end res 0" "$TMP/sysctl"
	check "sysctl: kernel.io_uring_disabled restored to $old" [ "$(cat $SYSCTL)" = "$old" ]
fi

if [ "$(id -u)" -eq 0 ] && [ -d /sys/kernel/mm/hugepages/hugepages-2048kB ]; then
	private_hugetlbfs 2M
	VMM_ARGS="--grow-pools 64 $MNT" run hugetlb
	check "2M: exit 0 (got $rc)" [ $rc -eq 0 ]
	check "2M: RAM in 2M pages on the private mount" grep -q "^ram: 64 MiB of 2M pages in $MNT/" "$TMP/hugetlb"
	check "2M: the guest saw only zeroes" grep -q "^guest: 64 MiB checked in .*: all zero$" "$TMP/hugetlb"
	check "2M: mount empty after release" [ -z "$(leftovers "$MNT")" ]
	check "2M: no record left" [ "$(store_records)" -eq 0 ]
else
	ok "# SKIP 2M: not root, or no 2M hugepages in this kernel"
fi
finish
