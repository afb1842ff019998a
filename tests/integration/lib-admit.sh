# SPDX-License-Identifier: MIT
# Shared by the admission tests (test-admit-*.sh). Sourced, not run.
# Each test gets a private state dir (ledger, lock, registry) and private
# hugetlbfs mounts; every node's pools (both sizes) are recorded at start and
# written back at exit, whatever happened, along with anything else the test
# registered with on_exit (cgroups, background processes).

set -u
PREALLOC=${PREALLOC:?set PREALLOC to the CLI binary}
NODE_SYSFS=/sys/devices/system/node
TMP=$(mktemp -d /tmp/prealloc-admit.XXXXXX)
export PREALLOC_STATE_DIR=$TMP/state
MOUNTS=()
EXIT_CMDS=()
POOL_FILES=()
POOL_VALUES=()
FAILS=0
COUNT=0

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "not ok $((COUNT += 1)) - $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok $((COUNT += 1)) - $*"; }
check() {	# check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
on_exit() { EXIT_CMDS+=("$*"); }
# bail REASON: a failure that ends the test (exit 1) with the reason.
bail() { fail "$*"; finish; exit 1; }

# Pool sysfs files: per node where nodes are exposed, else the global one.
pool_files() {	# pool_files KB
	if [ -d "$NODE_SYSFS/node0" ]; then
		ls "$NODE_SYSFS"/node*/hugepages/hugepages-"$1"kB/nr_hugepages 2>/dev/null
	else
		ls /sys/kernel/mm/hugepages/hugepages-"$1"kB/nr_hugepages 2>/dev/null
	fi
}

save_pools() {
	local f
	for f in $(pool_files 2048) $(pool_files 1048576); do
		POOL_FILES+=("$f")
		POOL_VALUES+=("$(cat "$f")")
	done
}

restore_pools() {
	local i
	for i in "${!POOL_FILES[@]}"; do
		echo "${POOL_VALUES[$i]}" > "${POOL_FILES[$i]}" 2>/dev/null
	done
}

cleanup() {
	local rc=$? m i
	trap - EXIT INT TERM
	for ((i = ${#EXIT_CMDS[@]} - 1; i >= 0; i--)); do
		eval "${EXIT_CMDS[$i]}" 2>/dev/null
	done
	for m in "${MOUNTS[@]}"; do
		rm -f "$m"/* 2>/dev/null
		umount "$m" 2>/dev/null && rmdir "$m"
	done
	restore_pools
	rm -rf "$TMP"
	exit $rc
}

[ "$(id -u)" -eq 0 ] || skip "needs root to change hugepage pools and mount hugetlbfs"
trap cleanup EXIT
trap 'exit 1' INT TERM
save_pools

# mount_hugetlbfs SIZE (2M or 1G): a private hugetlbfs mount of page SIZE in
# $M, unmounted at exit. Skips, saying why, only where the kernel provably
# lacks hugetlbfs or the SIZE hstate; a mount that fails anyway fails the test.
mount_hugetlbfs() {
	local kb
	case $1 in
	2M) kb=2048 ;;
	1G) kb=1048576 ;;
	*) bail "mount_hugetlbfs: unknown page size $1" ;;
	esac
	grep -qw hugetlbfs /proc/filesystems ||
		skip "this kernel has no hugetlbfs (not in /proc/filesystems)"
	[ -d "/sys/kernel/mm/hugepages/hugepages-${kb}kB" ] ||
		skip "this kernel has no $1 hugepages (no /sys/kernel/mm/hugepages/hugepages-${kb}kB)"
	M=$(mktemp -d /tmp/prealloc-admit-mnt.XXXXXX) || bail "cannot create a mount point in /tmp"
	if ! mount -t hugetlbfs -o pagesize="$1" none "$M"; then
		rmdir "$M"
		bail "cannot mount hugetlbfs with $1 pages on $M, though the kernel has both"
	fi
	MOUNTS+=("$M")
}

# Node 0 pool counters: hp NAME KB (NAME: nr, free, surplus).
hp() {
	local dir
	if [ -d "$NODE_SYSFS/node0" ]; then
		dir=$NODE_SYSFS/node0/hugepages/hugepages-$2kB
	else
		dir=/sys/kernel/mm/hugepages/hugepages-$2kB
	fi
	cat "$dir/$1_hugepages"
}

# Ledger lines (entries), 0 when there is no ledger.
ledger_entries() {
	local n
	n=$(grep -vc '^#' "$PREALLOC_STATE_DIR/ledger" 2>/dev/null)
	echo "${n:-0}"
}

# Ends the test: the plan line, exit 0 or 1.
finish() {
	echo "1..$COUNT"
	[ "$FAILS" -eq 0 ]
}
