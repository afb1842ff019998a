#!/bin/bash
# SPDX-License-Identifier: MIT
# SIGINT (then SIGTERM) in the middle of a multi-GiB --grow-pools run: the job
# is cancelled at chunk granularity and rolled back; exit 130 (143), no
# file, the pool at its baseline, the store empty, within a bounded time.
# A second signal right after the first must not skip the rollback.
. "$(dirname "$0")/lib-admit.sh"

MIN_MB=${MIN_MB:-6144}	# multi-GiB, so that the signal lands mid-run
BOUND=${BOUND:-20}	# seconds from the first signal to exit

private_hugetlbfs 2M
M=$MNT
base_nr=$(hp nr 2048)
base_free=$(hp free 2048)
# More pages than are free, so that --grow-pools must grow the pool.
need=$((base_free + 64))
[ $need -ge $((MIN_MB / 2)) ] || need=$((MIN_MB / 2))
SIZE_MB=$((need * 2))
echo "# baseline: node 0 2M pool $base_nr, free $base_free; runs of $SIZE_MB MiB ($need pages)"

interrupt() {	# interrupt SIGNAL EXPECTED_EXIT
	local sig=$1 want=$2 pid rc t0 t1 blocks=0 i grown
	"$PREALLOC" -q --node 0 --threads 1 --file "$M/vm" --grow-pools ${SIZE_MB}M 2> "$TMP/err" &
	pid=$!
	on_exit "kill -9 $pid"
	# Wait until population is under way: the file exists and has pages.
	for ((i = 0; i < 2000; i++)); do
		blocks=$(prepared_blocks "$M/vm")
		[ "$blocks" -gt 0 ] && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.01
	done
	grown=$(hp nr 2048)	# admission grew the pool before population began
	t0=$(date +%s.%N)
	kill -s "$sig" $pid
	kill -s "$sig" $pid 2>/dev/null	# the second signal
	wait $pid
	rc=$?
	t1=$(date +%s.%N)
	cat "$TMP/err"
	echo "# $sig after $((blocks / 4096)) of $((SIZE_MB / 2)) pages; exit after $(awk "BEGIN { print $t1 - $t0 }") s"
	check "$sig: signalled mid-run" [ "$blocks" -gt 0 -a "$blocks" -lt $((SIZE_MB * 2048)) ]
	check "$sig: --grow-pools grew the pool for the run ($base_nr -> $grown, $need needed)" \
		[ "$grown" -ge $((base_nr + need - base_free)) ]
	check "$sig: exit $want (got $rc)" [ $rc -eq "$want" ]
	check "$sig: exited within $BOUND s" awk "BEGIN { exit !($t1 - $t0 < $BOUND) }"
	check "$sig: message says so" grep -q "interrupted by $sig" "$TMP/err"
	check "$sig: no file left" [ -z "$(leftovers "$M")" ]
	check "$sig: pool at baseline (total $(hp nr 2048), free $(hp free 2048))" \
		[ "$(hp nr 2048)" -eq "$base_nr" -a "$(hp free 2048)" -eq "$base_free" ]
	check "$sig: store empty" [ "$(store_records)" -eq 0 ]
}

interrupt SIGINT 130
interrupt SIGTERM 143
finish
