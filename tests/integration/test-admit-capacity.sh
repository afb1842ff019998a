#!/bin/bash
# SPDX-License-Identifier: MIT
# An absurd --grow-pools is refused at once, before any pool write: 64T on
# node 0 exits 3 within a second naming the estimate and the margin, the
# pool untouched. A large growth goes in steps (test point grow-step stops
# the run between two of them), and SIGINT there gives the growth back:
# exit 130, the pool at its baseline, no record, no file.
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
M=$MNT

# --- 64T: refused at once -------------------------------------------------
base_nr=$(hp nr 2048)
t0=$(date +%s.%N)
"$PREALLOC" --node 0 --page-size 2M --grow-pools --file "$M/big" 64T 2> "$TMP/err"
rc=$?
t1=$(date +%s.%N)
cat "$TMP/err"
secs=$(awk "BEGIN { print $t1 - $t0 }")
check "64T: exit 3 (got $rc)" [ $rc -eq 3 ]
check "64T: refused within 1 s ($secs s)" awk "BEGIN { exit !($secs < 1) }"
check "64T: the message names node, pages, estimate and margin" \
	grep -q "node 0 cannot supply 33554432 2M hugepages (64 TiB): it has an estimated .* and .* must stay free for the host" "$TMP/err"
check "64T: nr_hugepages untouched ($base_nr -> $(hp nr 2048))" [ "$(hp nr 2048)" -eq "$base_nr" ]
check "64T: no file" [ -z "$(leftovers "$M")" ]
check "64T: no record" [ "$(store_records)" -eq 0 ]

# --- SIGINT between growth steps ------------------------------------------
# A step is max(1 GiB, 5% of the node); grow by three of them.
total_kb=$(awk '/MemTotal/ { print $4 }' "$NODE_SYSFS/node0/meminfo" 2>/dev/null ||
	awk '/^MemTotal/ { print $2 }' /proc/meminfo)
step_kb=$((total_kb / 20 > 1048576 ? total_kb / 20 : 1048576))
step=$((step_kb / 2048))
base_nr=$(hp nr 2048)
base_free=$(hp free 2048)
need=$((base_free + 3 * step))
echo "# baseline: node 0 2M pool $base_nr, free $base_free; step $step pages; asking $need"
PREALLOC_TEST_PAUSE=grow-step "$PREALLOC" -q --node 0 --grow-pools --grow-timeout 30 \
	--file "$M/vm" $((need * 2))M 2> "$TMP/err" &
pid=$!
on_exit "kill -9 $pid 2>/dev/null"
state=
for ((i = 0; i < 3000; i++)); do
	state=$(awk '{ print $3 }' /proc/$pid/stat 2>/dev/null)
	[ "$state" = T ] || [ -z "$state" ] && break
	sleep 0.01
done
grown=$(hp nr 2048)
check "the run stopped between two growth steps (state '$state')" [ "$state" = T ]
check "the first step grew the pool by a step, not by all ($base_nr -> $grown)" \
	[ "$grown" -ge $((base_nr + step)) -a "$grown" -lt $((base_nr + 3 * step)) ]
kill -INT $pid
kill -CONT $pid
t0=$(date +%s.%N)
# Cancelled, it exits at once; a growth that goes on stops at the next step.
for ((i = 0; i < 1000; i++)); do
	state=$(awk '{ print $3 }' /proc/$pid/stat 2>/dev/null)
	[ -z "$state" ] || [ "$state" = Z ] || [ "$state" = T ] && break
	sleep 0.01
done
check "SIGINT stopped the growth (it did not go on to the next step: state '$state')" \
	[ "$state" != T ]
[ "$state" = T ] && { kill -9 $pid; kill -CONT $pid; }
wait $pid
rc=$?
t1=$(date +%s.%N)
cat "$TMP/err"
echo "# exit after $(awk "BEGIN { print $t1 - $t0 }") s"
check "SIGINT during growth: exit 130 (got $rc)" [ $rc -eq 130 ]
check "SIGINT during growth: message says so" grep -q "interrupted by SIGINT" "$TMP/err"
check "SIGINT during growth: pool at baseline (total $(hp nr 2048), was $base_nr)" \
	[ "$(hp nr 2048)" -eq "$base_nr" ]
check "SIGINT during growth: no file" [ -z "$(leftovers "$M")" ]
check "SIGINT during growth: no record" [ "$(store_records)" -eq 0 ]
finish
