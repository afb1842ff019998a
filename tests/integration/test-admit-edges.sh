#!/bin/bash
# SPDX-License-Identifier: MIT
# Admission's edges and the records around them (issue 13's blind spots):
#  1. another program's hugetlbfs mapping, made MAP_SHARED and never faulted
#     (a VMM that mapped its guest RAM), holds pages that are still free: a
#     request that only fits if they are counted free is refused by
#     admission (exit 3), and with --grow-pools the pool grows around them;
#  2. a 4k request larger than the machine's memory is refused (exit 3);
#  3. a run admitted but not yet faulted (stopped at after-admission) keeps
#     its pages when another run's growth is given back meanwhile (its file
#     deleted, gc): it populates and exits 0;
#  4. `rm` of a file of ours whose size changed (mtime put back) refuses.
# Pools, mounts, processes, files and records are restored at exit.
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
SHM=$TMP/shm
mkdir -p "$SHM"
mem_kb=$(awk '/^MemTotal/ {print $2}' /proc/meminfo)
mount -t tmpfs -o size=$((mem_kb * 3))k none "$SHM" || bail "cannot mount a tmpfs on $SHM"
track_mount "$SHM"
nr0=$NODE_SYSFS/node0/hugepages/hugepages-2048kB/nr_hugepages
[ -e "$nr0" ] || nr0=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
nodes=$(ls -d "$NODE_SYSFS"/node[0-9]* 2>/dev/null | wc -l)

# set_free N: node 0's pool sized so that exactly N 2M pages are free.
set_free() {
	echo $(($(hp nr 2048) - $(hp free 2048) + $1)) > "$nr0"
	[ "$(hp free 2048)" -eq "$1" ]
}

# ---- 1. a third party's unfaulted hugetlbfs mapping ----------------------
if [ "$nodes" -le 1 ]; then
	set_free 16 || bail "cannot make exactly 16 2M pages free on node 0"
	python3 - "$MNT/foreign" <<'PY' > "$TMP/mapper.out" &
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 24 << 20)
m = mmap.mmap(fd, 24 << 20)		# MAP_SHARED, never touched: 12 pages reserved
print("mapped", flush=True)
time.sleep(60)
PY
	MP=$!
	on_exit "kill $MP"
	for ((i = 0; i < 300; i++)); do grep -q mapped "$TMP/mapper.out" && break; sleep 0.02; done
	rsvd=$(awk '/^HugePages_Rsvd/ {print $2}' /proc/meminfo)
	check "foreign: the mapping reserved 12 pages, all 16 still free (rsvd $rsvd, free $(hp free 2048))" \
		[ "$rsvd" -ge 12 -a "$(hp free 2048)" -eq 16 ]
	"$PREALLOC" -q --node 0 --page-size 2M --file "$MNT/x" 16M 2> "$TMP/err"
	rc=$?
	check "foreign: 8 pages when 16 are free but 12 promised to a mapping: exit 3 (got $rc)" \
		[ $rc -eq 3 ]
	check "foreign: refused by admission, before any mapping ($(head -1 "$TMP/err"))" \
		grep -q "free 2M hugepages" "$TMP/err"
	check "foreign: no file, no record" [ ! -e "$MNT/x" -a "$(store_records)" -eq 0 ]
	# With --grow-pools the pool must grow past the mapping's share, not fail
	# at the mmap the kernel refuses for want of unreserved pages.
	"$PREALLOC" -q --grow-pools --node 0 --page-size 2M --file "$MNT/x" 16M 2> "$TMP/err"
	rc=$?
	check "foreign: with --grow-pools the pool grows around the mapping: exit 0 (got $rc: $(head -1 "$TMP/err"))" \
		[ $rc -eq 0 -a "$(stat -c %b "$MNT/x" 2>/dev/null || echo 0)" -eq $((16 * 2048)) ]
	"$PREALLOC" rm "$MNT/x" 2>/dev/null
	kill $MP; wait $MP 2>/dev/null
	rm -f "$MNT/foreign"
	"$PREALLOC" -q --node 0 --page-size 2M --file "$MNT/x" 16M 2> "$TMP/err"
	check "foreign: the same request once the mapping is gone succeeds ($(head -1 "$TMP/err"))" \
		[ $? -eq 0 -a -f "$MNT/x" ]
	"$PREALLOC" rm "$MNT/x"
else
	echo "# $nodes nodes: resv_hugepages is system-wide, so admission counts it on one-node machines only (docs/admission.md)"
fi

# ---- 2. a 4k request larger than memory ----------------------------------
"$PREALLOC" -q --page-size 4k --file "$SHM/big" $((mem_kb * 2 / 1024))M 2> "$TMP/err"
rc=$?
check "4k: twice MemTotal on a tmpfs big enough refused with exit 3 (got $rc)" [ $rc -eq 3 ]
check "4k: no file, no record" [ ! -e "$SHM/big" -a "$(store_records)" -eq 0 ]

# ---- 3. give-back vs an admitted, unfaulted run --------------------------
set_free 0 || bail "cannot empty node 0's free 2M pages"
nr_empty=$(hp nr 2048)
"$PREALLOC" -q --grow-pools --node 0 --page-size 2M --file "$MNT/a" 32M ||
	bail "--grow-pools of 32M from an empty pool failed"
check "promise: A grew the pool by 16" [ "$(hp nr 2048)" -eq $((nr_empty + 16)) ]
rm -f "$MNT/a"	# deleted behind prealloc's back: its 16 pages free, its growth recorded
PREALLOC_TEST_PAUSE=after-admission "$PREALLOC" -q --node 0 --page-size 2M --threads 1 \
	--file "$MNT/b" 32M 2> "$TMP/b.err" &
B=$!
on_exit "kill -9 $B"
wait_stopped $B || bail "run B never stopped after its admission ($(cat "$TMP/b.err"))"
"$PREALLOC" gc > "$TMP/gc.out" 2>&1
check "promise: gc gives back none of A's growth while B is promised it (nr $(hp nr 2048))" \
	[ "$(hp nr 2048)" -eq $((nr_empty + 16)) ]
kill -CONT $B
wait $B
rc=$?
check "promise: B populates after all (exit $rc: $(head -1 "$TMP/b.err"))" \
	[ $rc -eq 0 -a "$(stat -c %b "$MNT/b" 2>/dev/null || echo 0)" -eq $((32 * 2048)) ]
"$PREALLOC" rm "$MNT/b"
"$PREALLOC" gc > /dev/null 2>&1
check "promise: with B gone, A's growth goes back (nr $(hp nr 2048), was $nr_empty)" \
	[ "$(hp nr 2048)" -eq "$nr_empty" -a "$(store_records)" -eq 0 ]

# ---- 4. rm of a file whose size changed ----------------------------------
"$PREALLOC" -q --page-size 4k --file "$SHM/s" 16M || bail "cannot make $SHM/s"
touch -r "$SHM/s" "$TMP/stamp"
truncate -s 32M "$SHM/s"
touch -r "$TMP/stamp" "$SHM/s"	# the tag (mtime) as it was: only the size tells
"$PREALLOC" rm "$SHM/s" 2> "$TMP/err"
rc=$?
check "size: rm of a file of ours grown to 32M refuses with exit 4 (got $rc: $(head -1 "$TMP/err"))" \
	[ $rc -eq 4 ]
check "size: the file is still there" [ -f "$SHM/s" ]
rm -f "$SHM/s"
"$PREALLOC" gc > /dev/null 2>&1
check "size: gc settles its record once the file is gone" [ "$(store_records)" -eq 0 ]
finish
