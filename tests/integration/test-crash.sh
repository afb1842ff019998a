#!/bin/bash
# SPDX-License-Identifier: MIT
# SIGKILL a `prealloc --grow-pools` run anywhere: at each named point of the
# prepare flow (PREALLOC_TEST_PAUSE stops it there), during populate, and at
# 24 moments spread over a run. Whatever the moment, `prealloc gc`
# (or `prealloc rm FILE`) must leave node 0's 2M pool as it was, no file in
# the mount (final or hidden) and no record; unless the record had turned
# READY, when the file stays through gc and `rm` returns everything. `rm`
# of a file whose run is alive (stopped) is refused, naming the pid. A run
# killed while it waits for the lock to record its new file's identity
# leaves a file known only by its staged name: gc and rm remove it.
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
# A few free pages to start with (so that giving back more than was added
# would show), fewer than a run needs (so that --grow-pools must grow the pool).
START_FREE=${START_FREE:-16}
f=$(hp free 2048)
if [ "$f" -lt "$START_FREE" ]; then
	nr0=$NODE_SYSFS/node0/hugepages/hugepages-2048kB/nr_hugepages
	[ -e "$nr0" ] || nr0=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	echo $(($(hp nr 2048) + START_FREE - f)) > "$nr0"
fi
base_nr=$(hp nr 2048)
base_free=$(hp free 2048)
K=$MNT/k

# timed_run: one uninterrupted run of $SIZE_MB MiB and its rm; T its seconds.
timed_run() {
	local t0 t1 rc
	t0=$(date +%s.%N)
	"$PREALLOC" -q --grow-pools --node 0 --page-size 2M --threads 1 --file "$K" ${SIZE_MB}M
	rc=$?
	t1=$(date +%s.%N)
	T=$(awk "BEGIN { print $t1 - $t0 }")
	[ $rc -eq 0 -a -f "$K" ] || bail "an uninterrupted run of $SIZE_MB MiB failed (exit $rc)"
	"$PREALLOC" rm "$K" || bail "cannot rm the uninterrupted run's file"
}


PID=
start_run() {	# start_run [PAUSE_POINT]
	PREALLOC_TEST_PAUSE=${1:-} "$PREALLOC" -q --grow-pools --node 0 --page-size 2M --threads 1 \
		--file "$K" ${SIZE_MB}M 2> "$TMP/run.err" &
	PID=$!
	on_exit "kill -9 $PID"
}

kill_run() { kill -9 "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; }

# The run's file while it is staged (the mount's private .prealloc directory).
hidden_files() { ls -A "$MNT/.prealloc" 2> /dev/null | grep -c .; }
hidden_blocks() { stat -c %b "$MNT"/.prealloc/* 2>/dev/null | head -1; }
ready_records() { grep -c '^rec [0-9a-f]* ready ' "$PREALLOC_STATE_DIR/store" 2>/dev/null || true; }

# expect_clean LABEL: pool as at the start, the mount empty, no record.
expect_clean() {
	local nr free files recs
	nr=$(hp nr 2048) free=$(hp free 2048) files=$(leftovers "$MNT") recs=$(store_records)
	check "$1: pool back at $base_nr/$base_free (now $nr/$free)" \
		[ "$nr" -eq "$base_nr" -a "$free" -eq "$base_free" ]
	check "$1: no file in the mount (${files:-none})" [ -z "$files" ]
	check "$1: no record ($recs)" [ "$recs" -eq 0 ]
	[ "$recs" -eq 0 ] || sed 's/^/# store: /' "$PREALLOC_STATE_DIR/store"
}

# settle_gc LABEL: gc after a kill before READY, then clean.
settle_gc() {
	"$PREALLOC" gc > "$TMP/gc.out" 2>&1
	check "$1: gc exits 0" [ $? -eq 0 ]
	expect_clean "$1"
}

# settle_rm LABEL: `rm FILE` of a run killed before commit: exit 0, then clean.
settle_rm() {
	local rc
	"$PREALLOC" rm "$K" 2> "$TMP/rm.err"
	rc=$?
	check "$1: rm of the dead run's file exits 0 (got $rc: $(head -1 "$TMP/rm.err"))" [ $rc -eq 0 ]
	expect_clean "$1"
}

# settle_ready LABEL: the record is READY: gc keeps the file, rm returns it all.
settle_ready() {
	local rc
	check "$1: READY, the file is at its final name" [ -f "$K" ]
	"$PREALLOC" gc > "$TMP/gc.out" 2>&1
	check "$1: gc keeps the ready file and its record" \
		[ -f "$K" -a "$(ready_records)" -eq 1 -a "$(hidden_files)" -eq 0 ]
	"$PREALLOC" rm "$K" 2> "$TMP/rm.err"
	rc=$?
	check "$1: rm exits 0 (got $rc)" [ $rc -eq 0 ]
	expect_clean "$1"
}

# rm_refused LABEL: the run is alive (stopped): rm says exit 4 with its pid, changes nothing.
rm_refused() {
	local rc
	"$PREALLOC" rm "$K" 2> "$TMP/rm.err"
	rc=$?
	check "$1: rm while pid $PID prepares it exits 4 (got $rc)" [ $rc -eq 4 ]
	check "$1: ... naming pid $PID ($(head -1 "$TMP/rm.err"))" grep -q "pid $PID\b" "$TMP/rm.err"
	check "$1: ... and the record stays" [ "$(store_records)" -eq 1 ]
}

# Runs of 1-2 s, so that kills spread over one land in every phase: start
# at 1 GiB and scale up (at most 8 GiB, at most half the memory available).
need=$((base_free + 64))
[ $need -ge 512 ] || need=512
SIZE_MB=$((need * 2))
timed_run
avail_pages=$(($(awk '/^MemAvailable/ {print $2}' /proc/meminfo) / 4096))
scale=$(awk "BEGIN { s = int(1.5 / $T); print s < 1 ? 1 : s }")
need=$((need * scale))
[ $need -le 4096 ] || need=4096
[ $need -le $avail_pages ] || need=$avail_pages
SIZE_MB=$((need * 2))
FULL_BLOCKS=$((SIZE_MB * 2048))
timed_run
check "an uninterrupted run of $SIZE_MB MiB takes $T s" awk "BEGIN { exit !($T > 0) }"
expect_clean "uninterrupted run"
echo "# node 0 2M pool: $base_nr pages, $base_free free; runs of $SIZE_MB MiB ($need pages), $T s"

# ---- (a) each named point, settled by gc ---------------------------------
for point in before-pool-write after-pool-write after-admission after-create before-commit after-commit; do
	start_run $point
	if ! wait_stopped $PID; then
		fail "$point: the run never stopped there ($(cat "$TMP/run.err"))"
		kill_run
		continue
	fi
	case $point in
	before-pool-write)
		check "$point: the record names the growth, the pool has not grown yet" \
			[ "$(hp nr 2048)" -eq "$base_nr" -a "$(store_records)" -eq 1 ] ;;
	after-pool-write)
		check "$point: the pool grew before the kill ($base_nr -> $(hp nr 2048))" \
			[ "$(hp nr 2048)" -ge $((base_nr + need - base_free)) ] ;;
	after-admission)
		check "$point: PREPARING record, no file yet" \
			[ "$(store_records)" -eq 1 -a -z "$(leftovers "$MNT")" ]
		rm_refused "$point" ;;
	after-create)
		check "$point: only the hidden file exists" [ "$(hidden_files)" -eq 1 -a ! -e "$K" ]
		rm_refused "$point" ;;
	before-commit)
		check "$point: the hidden file is populated ($(hidden_blocks) blocks)" \
			[ "$(hidden_blocks)" -eq $FULL_BLOCKS -a ! -e "$K" ] ;;
	esac
	kill_run
	if [ $point = after-commit ]; then
		settle_ready "$point"
	else
		settle_gc "$point"
	fi
done

# ---- the same points, settled by `rm FILE` -------------------------------
for point in before-pool-write after-pool-write after-admission after-create before-commit; do
	start_run $point
	wait_stopped $PID || fail "rm/$point: the run never stopped there"
	kill_run
	settle_rm "rm/$point"
done

# ---- (b) during populate: the hidden file part-filled --------------------
populate_kill() {	# populate_kill LABEL
	local i b=0
	start_run
	for ((i = 0; i < 2000; i++)); do
		b=$(hidden_blocks)
		[ "${b:-0}" -gt 0 ] && break
		kill -0 $PID 2>/dev/null || break
		sleep 0.005
	done
	kill_run
	b=$(hidden_blocks)
	check "$1: killed mid-populate ($((${b:-0} / 4096)) of $need pages)" \
		[ "${b:-0}" -gt 0 -a "${b:-0}" -lt $FULL_BLOCKS -a ! -e "$K" ]
}
populate_kill populate
settle_gc populate
populate_kill rm/populate
settle_rm rm/populate

# ---- (d) killed while it waits for the lock to record its file's identity ---
# The file exists (staged, its hugepages reserved by its mapping) but the
# record knows it only by the staged name: gc and rm must remove it by that
# name, never drop the record and leave the file (and HugePages_Rsvd) behind.
rsvd() { awk '/^HugePages_Rsvd/ {print $2}' /proc/meminfo; }
for how in gc rm; do
	rsvd0=$(rsvd)
	start_run after-admission
	wait_stopped $PID || fail "identity/$how: the run never stopped after admission"
	hold_lock "$PREALLOC_STATE_DIR/lock" || bail "identity/$how: cannot hold the store's lock"
	L=$HOLDER
	kill -CONT $PID
	for ((i = 0; i < 500; i++)); do
		[ "$(hidden_files)" -eq 1 ] && break
		sleep 0.01
	done
	sleep 0.2	# past the creation, into the wait for the lock
	check "identity/$how: the staged file exists, its identity (dev ino) not recorded yet" \
		[ "$(hidden_files)" -eq 1 -a \
		  "$(awk '$1 == "rec" && $6 == 0 && $7 == 0' "$PREALLOC_STATE_DIR/store" | wc -l)" -eq 1 ]
	kill_run
	kill $L; wait $L 2> /dev/null
	if [ $how = gc ]; then settle_gc "identity/gc"; else settle_rm "identity/rm"; fi
	check "identity/$how: HugePages_Rsvd back at $rsvd0 (now $(rsvd))" [ "$(rsvd)" -eq "$rsvd0" ]
done

# ---- (c) 24 kills spread over a run --------------------------------------
landed_ready=0
for ((i = 0; i < 24; i++)); do
	start_run
	sleep "$(awk "BEGIN { print $i * $T / 20 }")"
	kill_run
	if [ "$(ready_records)" -gt 0 ]; then
		landed_ready=$((landed_ready + 1))
		settle_ready "kill $i at $i/20 T"
	else
		settle_gc "kill $i at $i/20 T"
	fi
done
echo "# $landed_ready of 24 kills landed after the record turned READY"
finish
