# SPDX-License-Identifier: MIT
# Shared by the integration scripts: pools, mounts and cleanup done right.
# Sourced, not run. Each test gets a private state dir and hugetlbfs mount.

PREALLOC=${PREALLOC:?set PREALLOC to the CLI binary}
CHECK_FILE=${CHECK_FILE:-}
NODE_HP2M=/sys/devices/system/node/node0/hugepages/hugepages-2048kB
TMP=$(mktemp -d /tmp/prealloc-test.XXXXXX)
export PREALLOC_STATE_DIR=$TMP/state
MNT=
POOL_SAVED=
FAILS=0
COUNT=0

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "not ok - $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok - $*"; }
check() {	# check DESCRIPTION COMMAND...
	local what=$1
	shift
	COUNT=$((COUNT + 1))
	if "$@"; then ok "$what"; else fail "$what"; fi
}

cleanup() {
	local rc=$?
	[ -n "$MNT" ] && { rm -f "$MNT"/* 2>/dev/null; umount "$MNT" 2>/dev/null; rmdir "$MNT"; }
	[ -n "$POOL_SAVED" ] && echo "$POOL_SAVED" > /proc/sys/vm/nr_hugepages
	rm -rf "$TMP"
	exit $rc
}
trap cleanup EXIT

need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root to reserve hugepages and mount hugetlbfs"; }

# mount_hugetlbfs SIZE: a private hugetlbfs mount in $MNT.
mount_hugetlbfs() {
	MNT=$(mktemp -d /tmp/prealloc-hugetlbfs.XXXXXX)
	mount -t hugetlbfs -o pagesize="$1" none "$MNT" || { rmdir "$MNT"; MNT=; return 1; }
}

# reserve_2m N: make N more 2M pages free (restored at exit).
reserve_2m() {
	local want=$1 cur
	[ -n "$POOL_SAVED" ] || POOL_SAVED=$(cat /proc/sys/vm/nr_hugepages)
	cur=$(cat /proc/sys/vm/nr_hugepages)
	echo $((cur + want)) > /proc/sys/vm/nr_hugepages
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge $((cur + want)) ]
}

hp_free() { awk '/^HugePages_Free/ {print $2}' /proc/meminfo; }
hp_total() { awk '/^HugePages_Total/ {print $2}' /proc/meminfo; }

# json_get FILE EXPR: a value from the CLI's JSON via python3 (in Debian's base).
json_get() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

finish() {
	echo "1..$COUNT ($FAILS failed)"
	[ "$FAILS" -eq 0 ]
}
