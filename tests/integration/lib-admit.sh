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

# Ledger lines (entries), 0 when there is no ledger.
ledger_entries() {
	local n
	n=$(grep -vc '^#' "$PREALLOC_STATE_DIR/ledger" 2>/dev/null)
	echo "${n:-0}"
}
