#!/bin/bash
# SPDX-License-Identifier: MIT
# The warm pool's choices (docs/warm.md, "States"), issue 42: every state a
# file can be in (POPULATING, READY, HANDED, reserved, RETURNING, DIRTY,
# CLEARING, QUARANTINED) held at once on one private tmpfs, each of its
# own size, against each command that picks files. status counts each
# state in its own field (the sizes differ per field, so a swapped field
# fails); a take gets only a READY file; give acts only on the HANDED file
# it is named for; fill leaves a live run's new file, the files handed out
# and a file still mapped alone. Also: which READY file a take cuts (the
# smallest larger one) or grows (the largest smaller one), at exactly a
# file's size, one page over and one page under; RETURNING written before
# the holder's link goes at give; and a file given back while a process
# still maps it: counted still in use, never cleared or punched under it.
# A holder that is a process (qemu:PID:START, /proc/PID): a file handed to
# a live pid at another start time (a reused pid) is given back by fill,
# the one at its start time kept until the process ends. A READY file grown
# past its record is never handed out.
TAP=1
. "$(dirname "$0")/lib-admit.sh"

SHM=$TMP/shm
mkdir -p "$SHM"
mount -t tmpfs -o size=256M none "$SHM" || bail "cannot mount a tmpfs on $SHM"
track_mount "$SHM"
export PREALLOC_WARM_CONF=$TMP/warm.conf
M=1048576
touch "$TMP/alive"	# the holders' check path: alive while it exists

st() {	# st FIELD: FIELD of the status entry of node 0, 4k, $SHM (0: none)
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> "$TMP/st.err" || { echo "status failed"; return; }
	json_get "$TMP/st.json" "([e['$1'] for e in d if e['page_size'] == 4096 and e['mount'] == '$SHM'] + [0])[0]"
}
states() {	# every state's bytes of node 0, 4k, $SHM in KiB, in one line
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> "$TMP/st.err" || { echo "status failed"; return; }
	python3 - "$TMP/st.json" "$SHM" <<'PY'
import json, sys
e = ([e for e in json.load(open(sys.argv[1])) if e['page_size'] == 4096 and e['mount'] == sys.argv[2]] + [{}])[0]
print(' '.join('%s=%d' % (f, e.get(f + '_bytes', 0) // 1024) for f in
               ('ready', 'handed', 'returning', 'dirty', 'clearing', 'quarantined', 'populating')))
PY
}
take() {	# take SIZE NAME [ARGS...]: "hit file_bytes" of a take at $SHM/NAME, or nothing
	local size=$1 name=$2
	shift 2
	"$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" --to "$SHM/$name" --json \
		"$@" "$size" > "$TMP/take.json" 2> "$TMP/take.err" &&
		json_get "$TMP/take.json" "'%s %d' % (d['hit'], d['file_bytes'])"
}
paused() {	# paused POINT CMD...: CMD run until it stops at POINT (its pid in PPID_), else 1
	PREALLOC_TEST_PAUSE=$1 "${@:2}" > "$TMP/paused.out" 2>&1 &
	PPID_=$!
	on_exit "kill -9 $PPID_ 2> /dev/null"
	wait_stopped $PPID_
}
store_state() {	# store_state PATH: the warm state the store file says for the record at PATH
	python3 - "$PREALLOC_STATE_DIR/store" "$1" <<'PY'
import sys, urllib.parse
cur = None
for line in open(sys.argv[1]):
    t = line.split()
    if t and t[0] == "rec":
        cur = urllib.parse.unquote(t[-2])
    elif t and t[0] == "warm" and cur == sys.argv[2]:
        print(t[1])
PY
}
# mapper FILE: a process that maps FILE, writes its own pattern through the
# mapping and, on a line on fd 8, says whether every byte is still its own.
mapper() {
	local i
	rm -f "$TMP/mctl" "$TMP/map.out"
	mkfifo "$TMP/mctl"
	python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR); n = os.fstat(fd).st_size
m = mmap.mmap(fd, n); os.close(fd)
pat = (b"A-GUEST-STILL-RUNNING-" * (n // 22 + 1))[:n]
m[:] = pat
print("mapped", flush=True)
sys.stdin.readline()
print("intact" if m[:] == pat else "lost", flush=True)' "$1" < "$TMP/mctl" > "$TMP/map.out" &
	MPID=$!
	on_exit "kill $MPID 2> /dev/null"
	exec 8> "$TMP/mctl"
	for ((i = 0; i < 200; i++)); do
		grep -q mapped "$TMP/map.out" && return 0
		sleep 0.05
	done
	return 1
}
# mapper_verdict: the mapper's verdict in V (not in a subshell: it waits for its child).
mapper_verdict() { echo go >&8; exec 8>&-; wait $MPID; V=$(tail -1 "$TMP/map.out"); }

# ---- Which file a take gets -----------------------------------------------
# READY files of 12M, 12M, 4M, 4M, 8M (in that order in the store): three
# 12M files cut to 4M, 4M and 8M, given back and renewed at their sizes
# with no warm.conf (nothing dropped as a misfit).
printf 'node0.4k = 5 x 12M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 || bail "the first fill failed: $(cat "$TMP/fill.out")"
for s in 4M 4M 8M; do
	take $s cut > /dev/null && "$PREALLOC" warm give "$SHM/cut" > /dev/null 2>&1 ||
		bail "cannot cut a $s file ($(cat "$TMP/take.err"))"
done
rm -f "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "the pool holds 40M READY, nothing else ($(states); $(cat "$TMP/fill.out"))" \
	[ "$(states)" = "ready=40960 handed=0 returning=0 dirty=0 clearing=0 quarantined=0 populating=0" ]
h=$(take 16M w1)
check "a take of 16M with READY 12M, 12M, 4M, 4M, 8M grows the largest smaller one, 12M ($h)" \
	[ "$h" = "partial $((12 * M))" ]
h=$(take $((4 * M + 4096)) w2)
check "a take one page over 4M cuts the smallest larger file, 8M, not a 12M one ($h)" \
	[ "$h" = "cut $((8 * M))" ]
h=$(take $((4 * M - 4096)) w3)
check "a take one page under 4M cuts a 4M file, the smallest larger one ($h)" \
	[ "$h" = "cut $((4 * M))" ]
h=$(take 4M w4)
check "a take of exactly 4M is a full hit of the other 4M file ($h)" [ "$h" = "full $((4 * M))" ]
h=$(take 4M w5)
check "with only a 12M file left, a 4M take cuts it ($h)" [ "$h" = "cut $((12 * M))" ]
for n in w1 w2 w3 w4 w5; do "$PREALLOC" warm give "$SHM/$n" > /dev/null 2>&1; done
check "status counts READY in ready_bytes only ($(states))" \
	[ "$(states)" = "ready=0 handed=0 returning=0 dirty=32768 clearing=0 quarantined=0 populating=0" ]
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1	# an empty one: every file goes
check "an empty warm.conf leaves no file ($(states))" [ "$(st ready_bytes)" -eq 0 ]

# ---- Written ahead at give ------------------------------------------------
printf 'node0.4k = 2 x 4M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
take 4M g > /dev/null
if paused warm-give-recorded "$PREALLOC" warm give "$SHM/g"; then
	s=$(store_state "$SHM/g")
	check "give stopped after its write: the store says returning, the link is still there ($s)" \
		all_of '[ "$s" = returning ] && [ -e "$SHM/g" ]'
	kill -CONT $PPID_
fi
wait $PPID_
take 4M g > /dev/null
if paused warm-give-unlinked "$PREALLOC" warm give "$SHM/g"; then
	s=$(store_state "$SHM/g")
	check "give stopped once the holder's link is gone: the store said returning before ($s)" \
		all_of '[ "$s" = returning ] && [ ! -e "$SHM/g" ]'
	kill -9 $PPID_
else
	fail "give stops at warm-give-unlinked ($(cat "$TMP/paused.out"))"
fi
wait $PPID_ 2> /dev/null
check "killed there, the file is not READY: returning ($(states))" \
	all_of '[ "$(st ready_bytes)" -eq 0 ] && [ "$(st returning_bytes)" -eq $((4 * M)) ]'
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "the next fill takes it back and renews it ($(states); $(cat "$TMP/fill.out"))" \
	all_of 'grep -q "1 returned, 2 renewed" "$TMP/fill.out" && [ "$(st ready_bytes)" -eq $((8 * M)) ]'

# ---- Still in use ---------------------------------------------------------
# Given back while a process maps it (with or without its tenant): counted
# still in use, and the fill renews it (never clears it in place nor
# punches it) so that the mapping keeps every byte.
for how in plain tenant; do
	args=()
	[ $how = tenant ] && args=(--tenant t1)
	take 4M m "${args[@]}" > /dev/null
	ino=$(stat -c %i "$SHM/m")
	if ! mapper "$SHM/m"; then
		fail "$how: a process maps the file"
		continue
	fi
	"$PREALLOC" warm give "$SHM/m" "${args[@]}" > "$TMP/give.out" 2>&1
	check "$how: given back while mapped: 1 still in use, DIRTY, not READY ($(cat "$TMP/give.out"); $(states))" \
		all_of 'grep -q "(1 still in use" "$TMP/give.out" && [ "$(st dirty_bytes)" -eq $((4 * M)) ] && [ "$(st ready_bytes)" -eq $((4 * M)) ]'
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	check "$how: the fill renews it, never clears it in place ($(cat "$TMP/fill.out"))" \
		grep -q " 1 renewed.* 0 cleared" "$TMP/fill.out"
	mapper_verdict
	v=$V
	check "$how: the mapping keeps every byte it wrote through the give and the fill ($v)" \
		[ "$v" = intact ]
	t1=$(take 4M n1 "${args[@]}" | cut -d' ' -f1) i1=$(stat -c %i "$SHM/n1" 2> /dev/null)
	t2=$(take 4M n2 "${args[@]}" | cut -d' ' -f1) i2=$(stat -c %i "$SHM/n2" 2> /dev/null)
	check "$how: the next takes get new inodes, all zero ($ino: $i1 $i2)" \
		all_of '[ -n "$i1" ] && [ -n "$i2" ] && [ "$i1" != "$ino" ] && [ "$i2" != "$ino" ] && cmp -s -n $((4 * M)) "$SHM/n1" /dev/zero && cmp -s -n $((4 * M)) "$SHM/n2" /dev/zero'
	"$PREALLOC" warm give "$SHM/n1" > /dev/null 2>&1
	"$PREALLOC" warm give "$SHM/n2" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
done
# HANDED with no holder, its path gone, still mapped: not free.
take 4M h > /dev/null
if mapper "$SHM/h"; then
	rm -f "$SHM/h"
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	check "a file handed to no holder, its path gone, still mapped, stays HANDED ($(states); $(cat "$TMP/fill.out"))" \
		all_of '[ "$(st handed_bytes)" -eq $((4 * M)) ] && grep -q "0 returned" "$TMP/fill.out"'
	mapper_verdict
	v=$V
	check "its mapping kept every byte ($v)" [ "$v" = intact ]
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	check "unmapped, the next fill takes it back ($(states); $(cat "$TMP/fill.out"))" \
		all_of '[ "$(st handed_bytes)" -eq 0 ] && grep -q "1 returned" "$TMP/fill.out"'
else
	fail "a process maps the handed file"
fi
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1

# ---- Every state at once --------------------------------------------------
# POPULATING 7M (a fallback take stopped while its run lives), then 8 READY
# 8M files; CLEARING 8M (a fill killed after its write), handed 1M + a 2M
# reservation, RETURNING 4M (a give killed after its write), DIRTY 5M,
# QUARANTINED 6M (given back with a link the pool did not make): READY 16M.
rm -f "$PREALLOC_WARM_CONF"
paused after-create "$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" --to "$SHM/cold" \
	--fallback 7M || bail "a fallback take stops once its file is recorded ($(cat "$TMP/paused.out"))"
POP=$PPID_
printf 'node0.4k = 9 x 8M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "fill with a live run's 7M POPULATING makes 8 x 8M READY ($(states))" \
	[ "$(states)" = "ready=65536 handed=0 returning=0 dirty=0 clearing=0 quarantined=0 populating=7168" ]
take 8M c > /dev/null && "$PREALLOC" warm give "$SHM/c" > /dev/null 2>&1
paused warm-fill-clearing "$PREALLOC" warm fill && kill -9 $PPID_
wait $PPID_ 2> /dev/null
take 1M h --holder hh --holder-check "$TMP/alive" > /dev/null
"$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" --reserve --holder hr \
	--holder-check "$TMP/alive" 2M > /dev/null 2>&1
take 4M r > /dev/null
paused warm-give-recorded "$PREALLOC" warm give "$SHM/r" && kill -9 $PPID_
wait $PPID_ 2> /dev/null
take 5M d > /dev/null && "$PREALLOC" warm give "$SHM/d" > /dev/null 2>&1
take 6M q > /dev/null && ln "$SHM/q" "$SHM/q2"
"$PREALLOC" warm give "$SHM/q" > /dev/null 2>&1
ALL="ready=16384 handed=3072 returning=4096 dirty=5120 clearing=8192 quarantined=6144 populating=7168"
check "status counts each state in its own field ($(states))" [ "$(states)" = "$ALL" ]
# gc and rm leave warm files to the pool, whatever their state.
"$PREALLOC" gc > "$TMP/gc.out" 2>&1
check "gc changes no warm file's state ($(states); $(tail -1 "$TMP/gc.out"))" \
	[ "$(states)" = "$ALL" ]
"$PREALLOC" rm "$SHM/h" "$SHM/r" > "$TMP/rm.out" 2>&1
check "rm of a HANDED and a RETURNING file's links touches neither ($(states); $(tail -1 "$TMP/rm.out"))" \
	all_of '[ -e "$SHM/h" ] && [ -e "$SHM/r" ] && [ "$(states)" = "$ALL" ]'

h=$(take 1536K t)
check "a take of 1.5M gets a READY 8M file, no file of another state ($h)" [ "$h" = "cut $((8 * M))" ]
"$PREALLOC" warm give "$SHM/t" > /dev/null 2>&1
ALL="ready=8192 handed=3072 returning=4096 dirty=6656 clearing=8192 quarantined=6144 populating=7168"
check "the take and its give moved that file alone ($(states))" [ "$(states)" = "$ALL" ]
"$PREALLOC" warm give "$SHM/r" > "$TMP/give.out" 2>&1
rc=$?
check "give of a RETURNING file's path acts on nothing (rc $rc: $(cat "$TMP/give.out"); $(states))" \
	all_of '[ $rc -ne 0 ] && [ -e "$SHM/r" ] && [ "$(states)" = "$ALL" ]'
"$PREALLOC" warm give --holder hh > "$TMP/give.out" 2>&1
rc=$?
ALL="ready=8192 handed=2048 returning=4096 dirty=7680 clearing=8192 quarantined=6144 populating=7168"
check "give --holder hh gives back its 1M file alone, not hr's reservation (rc $rc; $(states))" \
	all_of '[ $rc -eq 0 ] && [ ! -e "$SHM/h" ] && [ "$(states)" = "$ALL" ]'
"$PREALLOC" warm give --holder nobody-here > "$TMP/give.out" 2>&1
rc=$?
check "give --holder of no holder acts on nothing (rc $rc; $(states))" \
	all_of '[ $rc -ne 0 ] && [ "$(states)" = "$ALL" ]'
# fill: the RETURNING file back, CLEARING and DIRTY renewed, QUARANTINED
# removed; the live run's POPULATING file and the reservation stay.
rm -f "$PREALLOC_WARM_CONF" "$SHM/q2"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "fill leaves the live run's POPULATING file and the reservation, settles the rest ($(states); $(cat "$TMP/fill.out"))" \
	[ "$(states)" = "ready=28160 handed=2048 returning=0 dirty=0 clearing=0 quarantined=0 populating=7168" ]
kill -9 $POP 2> /dev/null
wait $POP 2> /dev/null
"$PREALLOC" warm give --holder hr > /dev/null 2>&1
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "once its run is dead and every file given back, an empty warm.conf leaves nothing ($(states))" \
	[ "$(states)" = "ready=0 handed=0 returning=0 dirty=0 clearing=0 quarantined=0 populating=0" ]

# ---- A removal killed after its write-ahead ---------------------------------
# A fill that drops a file over a lowered target, SIGKILLed between the
# record's RELEASING save and the unlink (settle-releasing): the record still
# says READY for the warm pool, but the file's removal began. No take may get
# it (the next pass removes it, under its holder); the next fill finishes it.
printf 'node0.4k = 2 x 4M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
printf 'node0.4k = 1 x 4M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
paused settle-releasing "$PREALLOC" warm fill
kill -9 $PPID_
wait $PPID_ 2> /dev/null
releasing=$(python3 - "$PREALLOC_STATE_DIR/store" <<'PY'
import sys
print(' '.join(l.split()[6] for l in open(sys.argv[1]) if l.startswith('rec ') and l.split()[2] == 'releasing'))
PY
)
got1=$(take 4M rel1 --owner 65534:65534) ino1=$(stat -c %i "$SHM/rel1" 2> /dev/null)
got2=$(take 4M rel2 --owner 65534:65534) ino2=$(stat -c %i "$SHM/rel2" 2> /dev/null)
check "a fill killed after a drop's write-ahead: no take gets that file (releasing inode '$releasing'; takes got '$got1' $ino1 and '$got2' $ino2)" \
	all_of '[ -n "$releasing" ] && [ "$ino1" != "$releasing" ] && [ "$ino2" != "$releasing" ] &&
		[ -z "$got2" ]'
"$PREALLOC" warm give "$SHM/rel1" > /dev/null 2>&1
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
check "... and the next fill finishes its removal: nothing left recorded ($(states))" \
	[ "$(states)" = "ready=0 handed=0 returning=0 dirty=0 clearing=0 quarantined=0 populating=0" ]

# ---- A READY file that no longer matches its record ------------------------
# Grown past its record since it was verified (its bytes past the end were
# never proven zero, nor are they the guest's to see): never handed out,
# not even to a take its size would fit as a full hit.
printf 'node0.4k = 1 x 4M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
grown=$(ls "$SHM"/.prealloc/* 2> /dev/null | head -1)
ino_g=$(stat -c %i "$grown" 2> /dev/null)
[ -n "$grown" ] && truncate -s $((4 * M + 4096)) "$grown"
got=$(take 4M big) ino=$(stat -c %i "$SHM/big" 2> /dev/null)
check "a READY file grown past its record (inode '$ino_g') is not handed out (take '$got', inode '$ino', size $(stat -c %s "$SHM/big" 2> /dev/null))" \
	all_of '[ -n "$ino_g" ] && [ "$ino" != "$ino_g" ]'
[ -e "$SHM/big" ] && "$PREALLOC" warm give "$SHM/big" > /dev/null 2>&1
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1

# ---- A holder that is a process -------------------------------------------
# `prealloc qemu`'s holder, qemu:PID:START with the check path /proc/PID
# (prealloc_holder_process): kept while that process runs, given back once
# PID is another process's. A live pid named with a start time it does not
# have is such a reused pid: /proc/PID exists, the process is not the one.
printf 'node0.4k = 2 x 4M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
sleep 600 &
SPID=$!
on_exit "kill $SPID 2> /dev/null"
sstart=$(sed 's/.*) //' "/proc/$SPID/stat" | cut -d' ' -f20)
take 4M live --holder "qemu:$SPID:$sstart" --holder-check "/proc/$SPID" > /dev/null
take 4M reused --holder "qemu:$SPID:$((sstart + 1))" --holder-check "/proc/$SPID" > /dev/null
check "two files handed to pid $SPID: as qemu:$SPID:$sstart (its start time) and as qemu:$SPID:$((sstart + 1)) ($(states))" \
	[ "$(states)" = "ready=0 handed=8192 returning=0 dirty=0 clearing=0 quarantined=0 populating=0" ]
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "fill gives back the reused pid's file (its link gone) and keeps the live process's ($(states); $(cat "$TMP/fill.out"))" \
	all_of '[ ! -e "$SHM/reused" ] && [ -e "$SHM/live" ] &&
		[ "$(states)" = "ready=4096 handed=4096 returning=0 dirty=0 clearing=0 quarantined=0 populating=0" ]'
kill $SPID
wait $SPID 2> /dev/null
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "once the process is gone, its file comes back too ($(states))" \
	all_of '[ ! -e "$SHM/live" ] &&
		[ "$(states)" = "ready=8192 handed=0 returning=0 dirty=0 clearing=0 quarantined=0 populating=0" ]'
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
finish
