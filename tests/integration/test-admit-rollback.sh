#!/bin/bash
# SPDX-License-Identifier: MIT
# Population failing midway rolls back cleanly. A hugetlb cgroup (v2) limit
# set by the test lets the first pages fault and fails the rest: admission
# must refuse the request up front (naming the limit); with admission
# bypassed by the test-only --test-skip-admission, MADV_POPULATE_WRITE and
# then the SIGBUS-guarded touch fallback (--touch) meet the limit midway,
# and each run must report node and offset, exit 3, leave no file and leave
# the pool as it found it. No SIGBUS may reach the shell (exit 135).
. "$(dirname "$0")/lib-admit.sh"

PAGES=64	# the request
LIMIT=16	# pages the cgroup allows

private_hugetlbfs 2M
M=$MNT

CG=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
[ -n "$CG" ] || skip "no cgroup v2 hierarchy is mounted"
grep -qw hugetlb "$CG/cgroup.controllers" ||
	skip "the hugetlb controller is not available in cgroup v2 ($CG/cgroup.controllers)"
if ! grep -qw hugetlb "$CG/cgroup.subtree_control"; then
	echo +hugetlb > "$CG/cgroup.subtree_control" || fail "cannot enable hugetlb in $CG"
	on_exit "echo -hugetlb > $CG/cgroup.subtree_control"
fi
G=$CG/prealloc-admit-$$
mkdir "$G" || { fail "cannot create cgroup $G"; finish; exit; }
on_exit "rmdir $G"
echo $((LIMIT * 2 * 1024 * 1024)) > "$G/hugetlb.2MB.max"

# The kernel must be able to reserve the whole file at mmap: make room.
pool=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
[ -e $pool ] || pool=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
echo $(($(hp nr 2048) + PAGES)) > $pool
base_nr=$(hp nr 2048)
base_free=$(hp free 2048)
[ "$base_free" -ge $PAGES ] || { fail "could not make $PAGES pages free ($base_free)"; finish; exit; }
echo "# node 0 2M pool $base_nr, free $base_free; cgroup limit $LIMIT pages, request $PAGES"

in_cgroup() {	# runs the CLI inside the limited cgroup
	( echo $BASHPID > "$G/cgroup.procs" && exec "$PREALLOC" "$@" )
}

settled() {	# settled LABEL: no file, pool as found, store empty, cgroup uncharged
	check "$1: no file left" [ ! -e "$M/vm" ]
	check "$1: pool as found (total $(hp nr 2048), free $(hp free 2048))" \
		[ "$(hp nr 2048)" -eq "$base_nr" -a "$(hp free 2048)" -eq "$base_free" ]
	check "$1: store empty" [ "$(store_records)" -eq 0 ]
	check "$1: cgroup uncharged" [ "$(cat "$G/hugetlb.2MB.current")" -eq 0 ]
}

in_cgroup --node 0 --file "$M/vm" $((PAGES * 2))M 2> "$TMP/err"
rc=$?
cat "$TMP/err"
check "admission: refused with exit 3 (got $rc)" [ $rc -eq 3 ]
check "admission: names the cgroup limit and the pages" \
	grep -q "hugetlb.2MB.max leaves room for $LIMIT 2M hugepages, $PAGES needed" "$TMP/err"
settled admission

for mode in populate touch; do
	extra=
	[ $mode = touch ] && extra=--touch
	in_cgroup -q --test-skip-admission $extra --node 0 --threads 2 --file "$M/vm" \
		$((PAGES * 2))M 2> "$TMP/err"
	rc=$?
	cat "$TMP/err"
	check "$mode: exit 3, no SIGBUS (got $rc)" [ $rc -eq 3 ]
	check "$mode: first error reported with node and offset" \
		grep -q "populating $M/vm failed on node 0 at offset .*: Bad address" "$TMP/err"
	settled $mode
done
finish
