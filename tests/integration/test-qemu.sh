#!/bin/bash
# SPDX-License-Identifier: MIT
# `prealloc qemu` (docs/prealloc.1.md): plain QEMU's front end, over the
# front-end layer the libvirt hook uses. A real QEMU (TCG, stopped at its
# first instruction with -S, no disk or kernel) runs on a private 2M
# hugetlbfs mount: on prepared memory and on a warm file of the pool.
# While it runs, its /proc/PID/maps and numa_maps name the file at the
# exact path --print gave, whole, shared and bound to node 0, and the file
# is ready (check-file: every page allocated, on node 0, zero); after it quits (through QMP), fails, or this command gets
# SIGTERM (passed on to QEMU), the file is gone, the records are as
# before and the hugepages are free again; a warm file goes back to the
# pool instead (handed no more, READY again after a fill). A --dir with a
# symbolic link on the way (into another guest's directory) or of another
# user, and a warm take --to through that link, are refused (exit 4, the
# step named) before anything is claimed; the warm run's holder is the
# run by pid and start time (qemu:PID:START), alive.
TAP=1
. "$(dirname "$0")/lib-admit.sh"

QEMU_BIN=${QEMU_BIN:-qemu-system-x86_64}
command -v "$QEMU_BIN" > /dev/null || skip "no $QEMU_BIN installed"
private_hugetlbfs 2M
reserve_2m 40 || bail "cannot make 40 more 2M pages free"
export PREALLOC_WARM_CONF=$TMP/warm.conf
SZ=32M
SZB=33554432
PAGES=16
QMP=$TMP/qmp.sock
GUEST=("$QEMU_BIN" -machine q35 -accel tcg -display none -nodefaults -S
	-qmp "unix:$QMP,server=on,wait=off")

records() { store_records; }
warm_bytes() {	# warm_bytes FIELD: FIELD of the pool's entry for node 0, 2M, $MNT (0: none)
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> "$TMP/st.err" || { echo -1; return; }
	json_get "$TMP/st.json" "([e['$1'] for e in d if e['page_size'] == 2097152 and e['mount'] == '$MNT'] + [0])[0]"
}
# qmp CMD: one QMP command (after the capabilities handshake) to the guest's socket.
qmp() {
	python3 - "$QMP" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rw')
f.readline()
for cmd in ('qmp_capabilities', sys.argv[2]):
    f.write(json.dumps({'execute': cmd}) + '\n'); f.flush()
    while 'return' not in json.loads(f.readline()): pass
PY
}
# start ARGS...: `prealloc qemu ARGS... 32M -- GUEST` in the background (PID),
# its QEMU in QPID once the QMP socket answers; false if either never comes.
start() {
	rm -f "$QMP"
	"$PREALLOC" qemu "$@" $SZ -- "${GUEST[@]}" > "$TMP/out" 2> "$TMP/err" &
	PID=$!
	on_exit "kill -9 $PID 2> /dev/null"
	wait_for 60 test -S "$QMP" || return 1
	QPID=$(pgrep -P "$PID" | head -1)
	on_exit "kill -9 $QPID 2> /dev/null"
	wait_for 10 qmp query-status
}
finish_run() {	# finish_run: PID's exit status in RC, QEMU gone
	wait "$PID"
	RC=$?
}
# mapped FILE: QEMU maps FILE whole (shared, on hugetlbfs, bound to node 0),
# and FILE is ready: every page allocated, on node 0, zero (check-file).
mapped() {
	local range start end numa
	range=$(awk -v f="$1" '$6 == f { print $1 " " $2; exit }' "/proc/$QPID/maps")
	[ -n "$range" ] || { echo "# $1 not in QEMU's maps"; return 1; }
	start=$((16#${range%%-*})) end=${range#*-} end=$((16#${end%% *}))
	numa=$(grep " file=$1 " "/proc/$QPID/numa_maps")
	echo "# maps: $range; numa_maps: $numa"
	[ $((end - start)) -eq $SZB ] && [ "${range#* }" = rw-s ] && [[ " $numa " == *" bind:0 "* ]] &&
		[[ " $numa " == *" huge "* ]] && "$CHECK_FILE" "$1" 0 2097152 | sed 's/^/# /' &&
		[ "${PIPESTATUS[0]}" -eq 0 ]
}
# want_line ID: the command line --print and --dry-run give for backend ID.
want_line() {
	echo "${GUEST[*]} -object memory-backend-file,id=$1,mem-path=$MNT/$1,size=$SZB,share=on,prealloc=off,host-nodes=0,policy=bind -machine memory-backend=$1"
}

# --dry-run: the exact command line, nothing prepared.
free0=$(hp_free) recs0=$(records)
"$PREALLOC" qemu --dry-run --dir "$MNT" --id ram0 --node 0 --page-size 2M $SZ -- "${GUEST[@]}" \
	> "$TMP/out" 2> "$TMP/err"
rc=$?
check "--dry-run prints the exact options and prepares nothing (rc $rc: $(cat "$TMP/err"))" \
	all_of '[ $rc -eq 0 ] && [ "$(cat "$TMP/out")" = "$(want_line ram0)" ] &&
		[ ! -e "$MNT/ram0" ] && [ "$(hp_free)" -eq $free0 ] && [ "$(records)" -eq $recs0 ]'

# Several nodes (the two-node rig runs them, docs/testing.md): each must have
# memory (2, in the main command's words), the sizes given add up to SIZE and SIZE splits into equal whole
# pages (2); nothing prepared either way. The largest list it takes is 64
# nodes (then refused only for the nodes this host lacks), one more is refused
# as too many.
none=$(($(ls -d "$NODE_SYSFS"/node[0-9]* 2> /dev/null | sed 's/.*node//' | sort -n | tail -1) + 1))
for t in "2|--node 0,$none $SZ|node $none does not exist or is offline (nodes with memory: " \
	"2|--node 0:16M,$none:8M $SZ|add up to 25165824 bytes, SIZE is $SZB" \
	"2|--node 0,$none 34M|SIZE does not split into 2 equal parts of whole 2M pages" \
	"2|--node 0-63 128M|does not exist or is offline (nodes with memory: " \
	"2|--node 0-64 130M|--node: 65 nodes, at most 64"; do
	IFS='|' read -r want args msg <<< "$t"
	# shellcheck disable=SC2086 # args: words
	"$PREALLOC" qemu --dir "$MNT" --id ram0 --page-size 2M $args -- "${GUEST[@]}" \
		> "$TMP/out" 2> "$TMP/err"
	rc=$?
	check "qemu $args: exit $want, '$msg' (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq $want ] && grep -qF -e "$msg" "$TMP/err" && [ ! -s "$TMP/out" ] &&
			[ -z "$(ls "$MNT")" ] && [ "$(hp_free)" -eq $free0 ] && [ "$(records)" -eq $recs0 ]'
done

# --dir through a symbolic link (hugetlbfs holds none: one on the way to it,
# into another guest's directory), of another user than root and this one,
# or relative: refused before anything is claimed (4, the step named; 2),
# QEMU never run. Its stand-in, should it run, says what it found in the
# directories (the file made where the link points) and exits.
mkdir -p "$MNT/guest-b" "$MNT/other" "$TMP/guest-a"
ln -s "$MNT/guest-b" "$TMP/guest-a/to-b"
chown 4242:4242 "$MNT/other"
STANDIN=(sh -c 'ls -A "$1" "$2" > "$3"' standin "$MNT/guest-b" "$MNT/other" "$TMP/seen")
for t in "4|$TMP/guest-a/to-b|guest-a/to-b is a symbolic link: not followed" \
	"4|$MNT/other|other belongs to uid 4242" "2|guest-b|--dir guest-b: an absolute path"; do
	IFS='|' read -r want dir msg <<< "$t"
	rm -f "$TMP/seen"
	"$PREALLOC" qemu --dir "$dir" --id ram0 $SZ -- "${STANDIN[@]}" > "$TMP/out" 2> "$TMP/err"
	rc=$?
	check "qemu --dir $dir: exit $want, '$msg', QEMU not run (rc $rc: $(cat "$TMP/err")$(tr '\n' ' ' 2> /dev/null < "$TMP/seen"))" \
		all_of '[ $rc -eq $want ] && grep -qF -e "$msg" "$TMP/err" && [ ! -s "$TMP/out" ] &&
			[ ! -e "$TMP/seen" ] && [ -z "$(ls -A "$MNT/guest-b")" ] &&
			[ -z "$(ls -A "$MNT/other")" ] && [ "$(hp_free)" -eq $free0 ] &&
			[ "$(records)" -eq $recs0 ]'
done
# What a run that went through would leave: gone, so that it fails no later check.
"$PREALLOC" gc > /dev/null 2>&1
rm -rf "${MNT:?}/guest-b/"* "$MNT/other/"*

# Prepared memory: QEMU maps the pre-faulted file, all of it on node 0.
if start --print --dir "$MNT" --id ram0; then
	ok "QEMU runs on prepared memory (pid $QPID)"
	check "--print gave the exact command line QEMU runs" \
		all_of '[ "$(cat "$TMP/out")" = "$(want_line ram0)" ] &&
			[ "$(tr "\0" " " < /proc/$QPID/cmdline)" = "$(want_line ram0) " ]'
	check "QEMU maps $MNT/ram0 whole ($SZB bytes), its $PAGES pages on node 0, bound there" \
		mapped "$MNT/ram0"
	check "the file is $SZB bytes, its $PAGES hugepages taken from the pool, one record" \
		all_of '[ "$(stat -c %s "$MNT/ram0")" -eq $SZB ] &&
			[ "$(hp_free)" -eq $((free0 - PAGES)) ] && [ "$(records)" -eq $((recs0 + 1)) ]'
	qmp quit
	finish_run
	check "QEMU quit: exit 0, the file gone, the pages free, the records as before (rc $RC)" \
		all_of '[ $RC -eq 0 ] && [ ! -e "$MNT/ram0" ] && [ "$(hp_free)" -eq $free0 ] &&
			[ "$(records)" -eq $recs0 ] && ! kill -0 $QPID 2> /dev/null'
else
	fail "QEMU runs on prepared memory: $(cat "$TMP/err")"
fi

# SIGTERM to the command: QEMU gets it, and the memory is given back.
if start --dir "$MNT" --id ram0; then
	kill -TERM "$PID"
	finish_run
	check "SIGTERM is passed on to QEMU: exit 143, QEMU gone, the memory given back (rc $RC)" \
		all_of '[ $RC -eq 143 ] && ! kill -0 $QPID 2> /dev/null && [ ! -e "$MNT/ram0" ] &&
			[ "$(hp_free)" -eq $free0 ] && [ "$(records)" -eq $recs0 ]'
else
	fail "QEMU runs for the SIGTERM case: $(cat "$TMP/err")"
fi

# A signal that arrives while the memory is prepared (the run stopped at
# session-prepared: its file made, pre-faulted and recorded, the prepare
# over; SIGTERM sent, then let go): everything given back, exit 128 + 15,
# QEMU never started (its stand-in would leave a file).
rm -f "$TMP/seen"
PREALLOC_TEST_PAUSE=session-prepared "$PREALLOC" qemu --dir "$MNT" --id ram0 $SZ -- \
	sh -c 'touch "$1"' standin "$TMP/seen" > "$TMP/out" 2> "$TMP/err" &
pid=$!
on_exit "kill -9 $pid 2> /dev/null"
if wait_stopped $pid; then
	kill -TERM $pid
	kill -CONT $pid
	wait $pid
	rc=$?
	check "SIGTERM while the memory is prepared: exit 143, QEMU never started, the file gone, the pages free, the records as before (rc $rc; $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 143 ] && [ ! -e "$TMP/seen" ] && [ ! -e "$MNT/ram0" ] &&
			[ "$(hp_free)" -eq $free0 ] && [ "$(records)" -eq $recs0 ]'
else
	fail "SIGTERM while the memory is prepared: never stopped at session-prepared ($(cat "$TMP/err"))"
fi

# QEMU fails (an option it does not know): its status, and nothing left.
"$PREALLOC" qemu --dir "$MNT" --id ram0 $SZ -- "$QEMU_BIN" -machine q35 -accel tcg \
	-display none -no-such-option > "$TMP/out" 2> "$TMP/err"
rc=$?
check "QEMU failing: its exit status (1), the memory given back (rc $rc)" \
	all_of '[ $rc -eq 1 ] && [ ! -e "$MNT/ram0" ] && [ "$(hp_free)" -eq $free0 ] &&
		[ "$(records)" -eq $recs0 ]'

# Warm: one READY file of the guest's size, linked at the path QEMU opens.
printf 'node0.2M = 1 x %s @ %s\n' $SZ "$MNT" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
# warm take --to through the link: refused (4), the step named, the file READY.
"$PREALLOC" warm take --node 0 --page-size 2M --mount "$MNT" --to "$TMP/guest-a/to-b/ram" \
	$SZ > "$TMP/out" 2> "$TMP/err"
rc=$?
check "warm take --to through a symbolic link: exit 4, the link named, nothing linked, READY (rc $rc: $(cat "$TMP/err"))" \
	all_of '[ $rc -eq 4 ] && grep -qF "guest-a/to-b is a symbolic link" "$TMP/err" &&
		[ -z "$(ls -A "$MNT/guest-b")" ] && [ "$(warm_bytes ready_bytes)" -eq $SZB ]'
# Linked anyway: given back and renewed, so that the warm run below has its file.
[ $rc -eq 0 ] && "$PREALLOC" warm give "$TMP/guest-a/to-b/ram" > /dev/null 2>&1 &&
	"$PREALLOC" warm fill > /dev/null 2>&1
rm -rf "$TMP/guest-a" "$MNT/guest-b" "$MNT/other"
free1=$(hp_free) recs1=$(records)
pool_ino=$(stat -c %i "$MNT"/.prealloc/* 2> /dev/null | head -1)
check "warm fill: one READY file of $SZ (pool inode $pool_ino)" \
	all_of '[ "$(warm_bytes ready_bytes)" -eq $SZB ] && [ -n "$pool_ino" ]'
# holder PID: the warm file's holder as `prealloc pool --json` says it, and alive.
holder() {
	"$PREALLOC" pool --json > "$TMP/pool.json" 2> /dev/null &&
		json_get "$TMP/pool.json" "[r['holder'] + (' alive' if r['alive'] else ' gone') for r in d['records'] if r.get('holder', '').startswith('qemu:$1:')]"
}
if start --warm --verbose --dir "$MNT" --id ram1; then
	ok "QEMU runs on a warm file (pid $QPID)"
	check "$MNT/ram1 is the pool's file (inode $pool_ino), handed, no page taken anew" \
		all_of '[ "$(stat -c %i "$MNT/ram1")" = "$pool_ino" ] &&
			[ "$(warm_bytes handed_bytes)" -eq $SZB ] && [ "$(hp_free)" -eq $free1 ]'
	# The run's start time: field 22 of its stat, counted after the command name's ')'.
	pstart=$(sed 's/.*) //' "/proc/$PID/stat" | cut -d' ' -f20)
	h=$(holder "$PID")
	check "its holder is the run by pid and start time, alive: qemu:$PID:$pstart ($h)" \
		[ "$h" = "['qemu:$PID:$pstart alive']" ]
	check "QEMU maps $MNT/ram1 whole, its $PAGES pages on node 0, bound there" \
		mapped "$MNT/ram1"
	qmp quit
	finish_run
	check "QEMU quit: exit 0, the link gone, the file given back to the pool (rc $RC)" \
		all_of '[ $RC -eq 0 ] && [ ! -e "$MNT/ram1" ] && [ "$(warm_bytes handed_bytes)" -eq 0 ] &&
			[ "$(records)" -eq $recs1 ]'
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	check "warm fill: READY again, the pool's pages as before" \
		all_of '[ "$(warm_bytes ready_bytes)" -eq $SZB ] && [ "$(hp_free)" -eq $free1 ]'
else
	fail "QEMU runs on a warm file: $(cat "$TMP/err")"
fi
echo "# warm run's log: $(tr '\n' '|' < "$TMP/err")"
finish
