# SPDX-License-Identifier: MIT
# Shared by the admission tests (test-admit-*.sh), on top of lib.sh (private
# state dir, mounts, pools and on_exit cleanup). Sourced, not run.

set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
need_root

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

# Records in the record store (each run's or file's), 0 when there is no store.
store_records() {
	local n
	n=$(grep -c '^rec ' "$PREALLOC_STATE_DIR/store" 2>/dev/null)
	echo "${n:-0}"
}

# Blocks of a file being prepared: in the mount's staging directory until it is ready.
prepared_blocks() {	# prepared_blocks FILE
	local f=$1 b
	b=$(stat -c %b "$f" 2>/dev/null) && { echo "$b"; return; }
	b=$(stat -c %b "$(dirname "$f")"/.prealloc/* 2>/dev/null | head -1)
	echo "${b:-0}"
}

