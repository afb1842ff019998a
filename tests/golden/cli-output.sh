#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The CLI's output on a fixed set of command lines, masked where a run
# differs from the next (times, rates, ids, inodes, pids, random names), so
# that a refactor can show its output unchanged:
#
#   tests/golden/cli-output.sh BUILD_DIR OUT_FILE
#   diff -u before.txt after.txt
#
# Runs as root (hugepages, hugetlbfs), in a temporary state directory and
# mounts of its own; gives back every hugepage it reserves. Root tests
# share hugepage pools: run it under the suite's lock
# (flock /var/tmp/prealloc-suite.lock tests/golden/cli-output.sh ...). Each command's
# stdout, stderr and exit code are written, one block per command line.
set -u -o pipefail
build=$(cd "$1" && pwd)
out=$2
P=$build/prealloc/cli/prealloc
TMP=$(mktemp -d /tmp/prealloc-golden.XXXXXX)
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
hp_was=$(cat "$hp")
cleanup() {
	umount "$TMP/huge" "$TMP/shm" 2>/dev/null
	echo "$hp_was" > "$hp"
	rm -rf "$TMP"
}
trap cleanup EXIT
export PREALLOC_STATE_DIR=$TMP/state PREALLOC_WARM_CONF=$TMP/warm.conf
export PREALLOC_CALIBRATION=$TMP/calibration LC_ALL=C
mkdir -p "$TMP/huge" "$TMP/shm"
mount -t hugetlbfs -o pagesize=2M none "$TMP/huge"
mount -t tmpfs -o size=512M none "$TMP/shm"
echo $((hp_was + 64)) > "$hp"

mask() {
	sed -E -e "s|$TMP|TMP|g" -e "s|${TMP//\//\\\\/}|TMP|g" -e "s|$build/|BUILD/|g" \
		-e 's/[0-9]+\.[0-9]+/N.N/g' \
		-e 's/(prealloc-[a-z0-9-]*-)[a-z0-9]{7}\b/\1RAND/g' \
		-e 's/("(inode|pid|id|ino|dev|started|updated|expires|prepared_at|time|ts)": *)[0-9]+/\1N/g' \
		-e 's/\b(inode|pid|ino|dev) [0-9]+/\1 N/g' \
		-e 's/^(  [0-9]+ +[0-9]+ [KMGT]iB .* )[0-9][0-9,-]*$/\1CPUS/' \
		-e 's/^(clear auto, [^:]*: ).*/\1MEASURED/' \
		-e 's/(probed: ).* by /\1SIZE by /' \
		-e 's/(_per_second\{[^}]*\}) .*/\1 RATE/' \
		-e 's/[0-9]{9,}/BIG/g' |
		perl -0pe 's/"cpus":\[[^\]]*\]/"cpus":[CPUS]/g'
}
run() {
	local rc
	{
		printf '$ %s\n' "$*"
		"$@" > "$TMP/o" 2> "$TMP/e"
		rc=$?
		cat "$TMP/o"
		sed 's/^/stderr: /' "$TMP/e"
		printf 'exit %d\n\n' "$rc"
	} | mask >> "$out"
}
: > "$out"
for c in "" info pool gc rm clear bench vfio-map "warm take" "warm give" "warm fill" \
	 "warm serve" "warm status" "warm drain"; do
	# shellcheck disable=SC2086 # the command's words
	run "$P" $c --help
done
run "$P" --version
run "$P" info
run "$P" --bogus
run "$P" --node 0 --page-size 4k
run "$P" --node 0 --page-size 3k 8M
run "$P" --node 9 --page-size 4k 8M
run "$P" --node 0 --page-size 4k -q -f "$TMP/shm/a" 64M
run "$P" --node 0 --page-size 4k --json -f "$TMP/shm/b" 8M
run "$P" --node 0 --page-size 4k -f "$TMP/shm/b" 8M
run "$P" --node 0 --page-size 2M --verify -q -f "$TMP/huge/c" 32M
run "$P" --node 0 --page-size 2M --json -f "$TMP/huge/d" 16M
run "$P" pool
run "$P" pool --json
run "$P" clear "$TMP/huge/c"
run "$P" clear "$TMP/nonexistent"
run "$P" rm "$TMP/huge/d"
run "$P" rm "$TMP/huge/d"
run "$P" rm "$TMP/shm/b" "$TMP/huge/c" "$TMP/shm/a"
run "$P" pool --json
cat > "$TMP/warm.conf" <<CONF
node0.2M = 3 x 8M @ $TMP/huge
node0.4k = 4M @ $TMP/shm
CONF
run "$P" warm status
run "$P" warm fill
run "$P" warm status
run "$P" warm status --json
run "$P" warm status --format=prometheus
run "$P" warm take --node 0 --page-size 2M 8M --to "$TMP/huge/vm1"
run "$P" warm take --node 0 --page-size 2M 8M --to "$TMP/huge/vm2" --json
run "$P" warm take --node 0 --page-size 2M 64G --to "$TMP/huge/vm3"
run "$P" warm give "$TMP/huge/vm1"
run "$P" warm give "$TMP/huge/vm1"
run "$P" warm give --json "$TMP/huge/vm2"
run "$P" warm take --node 0 --page-size 4k 4M --mount "$TMP/shm" --to "$TMP/shm/vm4" --json
run "$P" warm give "$TMP/shm/vm4"
run "$P" warm status
run "$P" warm fill
run "$P" warm drain
run "$P" warm status --json
run "$P" vfio-map --bogus
run "$P" pool --gc
run "$P" gc
