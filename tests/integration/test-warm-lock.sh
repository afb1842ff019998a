#!/bin/bash
# SPDX-License-Identifier: MIT
# The store's lock on a busy host (docs/warm.md, "The store's lock"; issue
# 48, items 3 and 7). Nothing whose cost another user controls runs while
# the lock is held: a local user (uid 65534) holding no warm file at all
# starts 100 processes with 20,000 descriptors each, and a take issued while
# a renewal retires its old file must still complete at once (it waited out
# the retire's walk over every descriptor of every process, 15-43 s, or
# failed after 30 s). And a take or a give that dies between its steps
# (SIGKILL at each pause point) is finished or undone by the next fill, while
# one that still runs is left alone: a take killed after HANDED was written
# with --holder NAME and no check stayed HANDED for good.
TAP=1
. "$(dirname "$0")/lib-admit.sh"

SHM=$TMP/shm
mkdir -p "$SHM"
mount -t tmpfs -o size=512M none "$SHM" || bail "cannot mount a tmpfs on $SHM"
track_mount "$SHM"
chmod 711 "$TMP"
export PREALLOC_WARM_CONF=$TMP/warm.conf
printf 'node0.4k = 2 x 16M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
M=1048576

st() {	# st FIELD: FIELD of the status entry of node 0, 4k, $SHM (0: none)
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> "$TMP/st.err" || { echo "status failed"; return; }
	json_get "$TMP/st.json" "([e['$1'] for e in d if e['page_size'] == 4096 and e['mount'] == '$SHM'] + [0])[0]"
}
take() {	# take NAME [ARGS...]: a 16M take at $SHM/NAME; its status in TAKE_RC
	local name=$1
	shift
	"$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" --to "$SHM/$name" "$@" 16M \
		> "$TMP/take.out" 2>&1
	TAKE_RC=$?
}
paused() {	# paused POINT CMD...: CMD run until it stops at POINT (its pid in PPID_), else 1
	PREALLOC_TEST_PAUSE=$1 "${@:2}" > "$TMP/paused.out" 2>&1 &
	PPID_=$!
	on_exit "kill -9 $PPID_ 2> /dev/null"
	wait_stopped $PPID_
}
store_state() {	# store_state HOLDER: "state busy" of the warm record of HOLDER ("-" none)
	python3 - "$PREALLOC_STATE_DIR/store" "$1" <<'PY'
import sys, urllib.parse
cur = None
out = {}
for line in open(sys.argv[1]):
    t = line.split()
    if t and t[0] == "rec":
        o = t[3].split(":")
        cur = urllib.parse.unquote(o[1]) if o[0] == "holder" else None
    elif t and t[0] == "warm" and cur == sys.argv[2]:
        out["state"] = t[1]
    elif t and t[0] == "busy" and cur == sys.argv[2]:
        out["busy"] = t[1]
print(out.get("state", "-"), out.get("busy", "-"))
PY
}
ready_files() { echo $(($(st ready_bytes) / (16 * M))); }
elapsed() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$@"; }
now() { date +%s.%N; }

"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 || bail "the first fill failed: $(cat "$TMP/fill.out")"
[ "$(ready_files)" = 2 ] || bail "the first fill made $(ready_files) READY files, not 2"

# ---- 1. a local user's 2,000,000 descriptors, and a take during a retire ----
# Each hog: uid 65534, 20,000 descriptors of /dev/null (or as many as its
# limit allows: a sandbox without CAP_SYS_RESOURCE cannot raise a hard limit
# of 20000), then sleeps.
HOGS=100 FDS=$(( $(ulimit -Hn) > 20064 ? 20000 : $(ulimit -Hn) - 64 ))
: > "$TMP/hogs.out"
HOG_PIDS=()
for ((i = 0; i < HOGS; i++)); do
	( ulimit -n $((FDS + 64)) 2> /dev/null; exec setpriv --reuid 65534 --regid 65534 --clear-groups \
		/usr/bin/python3 -c '
import os, sys, time
fd = os.open("/dev/null", os.O_RDONLY)
for _ in range(int(sys.argv[1])):
	os.dup(fd)
print("hog", flush=True)
time.sleep(3600)' $FDS >> "$TMP/hogs.out" 2>> "$TMP/hogs.err" ) &
	HOG_PIDS+=($!)
done
on_exit 'kill -KILL ${HOG_PIDS[*]} 2> /dev/null; wait ${HOG_PIDS[*]} 2> /dev/null'
if ! wait_for 120 all_of "[ \$(grep -c hog '$TMP/hogs.out') -ge $HOGS ]"; then
	bail "the hogs did not start: $(grep -c hog "$TMP/hogs.out") of $HOGS ($(sort "$TMP/hogs.err" | uniq -c | head -3))"
fi
echo "# $HOGS processes of uid 65534 hold $((HOGS * FDS)) descriptors"

take a --holder guest-a
[ $TAKE_RC = 0 ] || bail "the take before the load failed: $(cat "$TMP/take.out")"
"$PREALLOC" warm give --holder guest-a > "$TMP/give.out" 2>&1 ||
	bail "the give failed: $(cat "$TMP/give.out")"
# The renewal stopped just before it retires the old file; then let go.
paused warm-renew-before-retire "$PREALLOC" warm fill ||
	bail "fill never reached warm-renew-before-retire: $(cat "$TMP/paused.out")"
FILL=$PPID_
t0=$(now)
kill -CONT $FILL
sleep 0.1
t1=$(now)
take b --holder guest-b
t2=$(now)
took=$(elapsed "$t1" "$t2")
echo "# the take during the retire: rc $TAKE_RC in $took s"
check "a take issued 0.1 s into a retire completes under $HOGS x $FDS descriptors of another user (rc $TAKE_RC, $took s; bound 3 s: a hang detector, not a figure)" \
	all_of "[ $TAKE_RC = 0 ] && python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 3)' $took"
wait $FILL
rc=$?
t3=$(now)
echo "# the fill (its renewal and retire): rc $rc, $(elapsed "$t0" "$t3") s after it went on"
check "the renewal under the load completes (rc $rc: $(tail -1 "$TMP/paused.out"))" [ $rc = 0 ]
t1=$(now)
"$PREALLOC" warm give --holder guest-b > "$TMP/give.out" 2>&1
rc=$?
t2=$(now)
check "a give under the load completes at once (rc $rc, $(elapsed "$t1" "$t2") s)" \
	all_of "[ $rc = 0 ] && python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 3)' $(elapsed "$t1" "$t2")"
"$PREALLOC" warm fill > /dev/null 2>&1
kill -KILL "${HOG_PIDS[@]}" 2> /dev/null
wait "${HOG_PIDS[@]}" 2> /dev/null
check "after the load, fill keeps the target: 2 READY files ($(ready_files))" [ "$(ready_files)" = 2 ]

# ---- 2. a take killed between its steps -----------------------------------
# After HANDED is written, before the link: --holder and no check, no expiry.
paused warm-take-recorded "$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" \
	--to "$SHM/k1" --holder killed-1 16M || bail "take never reached warm-take-recorded"
ino=$(stat -c %i "$SHM"/.prealloc*/* 2> /dev/null | sort | head -1)
set -- $(store_state killed-1)
check "a stopped take: HANDED, marked busy by its own pid ($1 busy $2, pid $PPID_)" \
	all_of "[ $1 = handed ] && [ $2 = $PPID_ ]"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "a fill leaves a take that still runs alone ($(store_state killed-1))" \
	[ "$(store_state killed-1)" = "handed $PPID_" ]
kill -9 $PPID_
wait $PPID_ 2> /dev/null
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
"$PREALLOC" warm fill > "$TMP/fill2.out" 2>&1
check "a take killed after HANDED, before its link: given back by the next fill ($(store_state killed-1), handed $(st handed_bytes), ready $(ready_files))" \
	all_of "[ \"\$(store_state killed-1)\" = '- -' ] && [ \$(st handed_bytes) = 0 ] && [ \$(ready_files) = 2 ]"
check "... and nothing was linked at its path" [ ! -e "$SHM/k1" ]

# After the link: the holder's link exists; the file may have been opened.
paused warm-take-linked "$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" \
	--to "$SHM/k2" --holder killed-2 16M || bail "take never reached warm-take-linked"
ino=$(stat -c %i "$SHM/k2")
kill -9 $PPID_
wait $PPID_ 2> /dev/null
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
inos=$(stat -c %i "$SHM"/.prealloc*/* 2> /dev/null | tr '\n' ' ')
check "a take killed after its link: the link is taken back and the file renewed, never READY as it was (k2 $( [ -e "$SHM/k2" ] && echo there || echo gone); $ino not in: $inos)" \
	all_of "[ ! -e '$SHM/k2' ] && [ \$(ready_files) = 2 ] && ! grep -qw $ino <<< '$inos'"

# gc, too: a dead take's file is no longer HANDED after it (the next fill finishes it).
paused warm-take-recorded "$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" \
	--to "$SHM/k3" --holder killed-3 16M || bail "take never reached warm-take-recorded"
kill -9 $PPID_
wait $PPID_ 2> /dev/null
"$PREALLOC" gc > "$TMP/gc.out" 2>&1
set -- $(store_state killed-3)
check "gc after a dead take: its file is being given back, no longer HANDED ($1, busy $2)" \
	all_of "[ $1 != handed ] && [ $2 = - ]"
"$PREALLOC" warm fill > /dev/null 2>&1
check "... and the fill after it gives it back (handed $(st handed_bytes), ready $(ready_files))" \
	all_of "[ \$(st handed_bytes) = 0 ] && [ \$(ready_files) = 2 ]"

# ---- 3. a give killed between its steps -------------------------------------
take g1 --holder give-1
paused warm-give-recorded "$PREALLOC" warm give --holder give-1 ||
	bail "give never reached warm-give-recorded"
set -- $(store_state give-1)
check "a stopped give: RETURNING, marked busy by its own pid ($1 busy $2, pid $PPID_)" \
	all_of "[ $1 = returning ] && [ $2 = $PPID_ ]"
"$PREALLOC" warm fill > /dev/null 2>&1
check "a fill leaves a give that still runs alone ($(store_state give-1), g1 $( [ -e "$SHM/g1" ] && echo there || echo gone))" \
	all_of "[ \"\$(store_state give-1)\" = 'returning $PPID_' ] && [ -e '$SHM/g1' ]"
kill -CONT $PPID_
wait $PPID_
rc=$?
check "the give goes on and ends (rc $rc: $(cat "$TMP/paused.out"))" \
	all_of "[ $rc = 0 ] && [ ! -e '$SHM/g1' ]"
"$PREALLOC" warm fill > /dev/null 2>&1
take g2 --holder give-2
paused warm-give-recorded "$PREALLOC" warm give --holder give-2 ||
	bail "give never reached warm-give-recorded"
kill -9 $PPID_
wait $PPID_ 2> /dev/null
"$PREALLOC" warm fill > /dev/null 2>&1
check "a give killed after RETURNING: the next fill finishes it (link $( [ -e "$SHM/g2" ] && echo there || echo gone), $(store_state give-2), ready $(ready_files))" \
	all_of "[ ! -e '$SHM/g2' ] && [ \"\$(store_state give-2)\" = '- -' ] && [ \$(ready_files) = 2 ]"
finish
