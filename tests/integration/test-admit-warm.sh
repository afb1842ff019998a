#!/bin/bash
# SPDX-License-Identifier: MIT
# Admission that takes from the warm pool, killed in the middle (issue 38,
# item 5), on a private hugetlbfs of 2M pages with a warm.conf of its own
# (node0.2M = 1 x 8M): a cold request on node 0, whose free pages are used
# up by a file of the test's, must cut (4M) or remove (8M) the READY warm
# file. It is SIGKILLed where PREALLOC_TEST_PAUSE stops it:
#  - admit-warm-recorded: the warm file's record written ahead (DIRTY at its
#    new size, or QUARANTINED when it goes), its file not changed yet;
#  - admit-warm-taken: the file cut or removed.
# After each kill, `warm status --json`, `warm take`, `gc` and `warm
# fill` exit 0 (a take may also find nothing READY: exit 3, nothing handed);
# no take hands out a file whose size is not the one asked, or not the one
# its report gives; after fill every READY record's file is the record's
# size, and every file in the staging directory is named by a record.
# Written ahead the other way round (the file first), the kill at
# admit-warm-taken left a READY record of 8M over a 4M file, handed out as
# a full hit of 8M (a take now checks the file's size too: the store right
# after the kill is checked as well).
# And a cut that fails after the pool grew: the growth goes back; a cut's
# growth moves to the request and is counted once.
TAP=1
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
DIR=$MNT
PS=2097152
SZ=8M
SZB=$((8 << 20))
export PREALLOC_WARM_CONF=$TMP/warm.conf
export PREALLOC_CALIBRATION=$TMP/calibration
printf 'node0.2M = 1 x %s @ %s\npressure = off\n' "$SZ" "$DIR" > "$PREALLOC_WARM_CONF"

status() {	# status KEY: KEY of node 0's 2M entry on $DIR (-1 when status fails)
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> /dev/null || { echo -1; return; }
	python3 -c "
import json
for e in json.load(open('$TMP/st.json')):
    if e['node'] == 0 and e['page_size'] == $PS and e['mount'] == '$DIR':
        print(e['$1']); break
else: print(0)"
}

# ready_agrees: every READY warm record's pool link is a file of the record's
# size; else prints the ones that are not.
ready_agrees() {
	python3 - "$PREALLOC_STATE_DIR/store" <<'PY'
import os, sys, urllib.parse
bad, rec = [], None
for line in open(sys.argv[1]):
    t = line.split()
    if t and t[0] == 'rec':
        rec = t
    elif t and t[0] == 'warm' and t[1] == 'ready' and rec:
        size, hidden = int(rec[8]), urllib.parse.unquote(rec[-1])
        have = os.stat(hidden).st_size if os.path.exists(hidden) else -1
        if have != size:
            bad.append('%s: record %d, file %d' % (hidden, size, have))
print('; '.join(bad))
sys.exit(1 if bad else 0)
PY
}

# unnamed: files in the staging directory that no record names (its hidden name, decoded).
unnamed() {
	python3 - "$PREALLOC_STATE_DIR/store" "$DIR/.prealloc" <<'PY'
import os, sys, urllib.parse
named = set()
if os.path.exists(sys.argv[1]):
    for line in open(sys.argv[1]):
        t = line.split()
        if t and t[0] == 'rec':
            named.update(urllib.parse.unquote(p) for p in t[-2:])
d = sys.argv[2]
print(' '.join(os.path.join(d, f) for f in sorted(os.listdir(d)) if os.path.join(d, f) not in named)
      if os.path.isdir(d) else '')
PY
}

# take_sane NAME: a take of $SZ at $DIR/NAME; 0 when it handed out a file
# of $SZ whose report agrees (full: file_bytes the same, cut: larger,
# partial: smaller), or (with ALLOW_NONE) handed nothing, exit 3. WHY says
# what was seen.
take_sane() {
	local rc size hit fb
	"$PREALLOC" warm take --json --node 0 --page-size 2M --mount "$DIR" --to "$DIR/$1" "$SZ" \
		> "$TMP/take.json" 2> "$TMP/take.err"
	rc=$?
	if [ $rc -ne 0 ]; then
		WHY="rc $rc: $(cat "$TMP/take.err")"
		[ $rc -eq 3 ] && [ "${ALLOW_NONE:-0}" = 1 ] && [ ! -e "$DIR/$1" ]
		return
	fi
	size=$(stat -c %s "$DIR/$1" 2> /dev/null || echo -1)
	hit=$(json_get "$TMP/take.json" 'd["hit"]')
	fb=$(json_get "$TMP/take.json" 'd["file_bytes"]')
	WHY="rc 0, hit $hit, file_bytes $fb, the file handed out $size bytes, $SZB asked"
	[ "$size" -eq $SZB ] || return 1
	case $hit in
	full) [ "$fb" -eq $SZB ] ;;
	cut) [ "$fb" -gt $SZB ] ;;
	partial) [ "$fb" -lt $SZB ] ;;
	*) false ;;
	esac
}

# use_up: node 0's free 2M pages held by a file of the test's (prealloc rm at the end).
FILLS=0
use_up() {
	local free
	free=$(hp free 2048)
	[ "$free" -gt 0 ] || return 0
	FILLS=$((FILLS + 1))
	"$PREALLOC" --node 0 --page-size 2M --file "$DIR/fillup$FILLS" "$((free * 2))M" \
		> /dev/null 2>&1
}

"$PREALLOC" warm fill > /dev/null 2> "$TMP/fill.err"
check "warm fill makes the target: $SZ READY ($(status ready_bytes); $(cat "$TMP/fill.err"))" \
	[ "$(status ready_bytes)" -eq $SZB ]

for point in admit-warm-recorded admit-warm-taken; do
	for want in 4M 8M; do
		leg="$point, a cold $want"
		"$PREALLOC" warm fill > /dev/null 2>&1
		use_up
		ready=$(status ready_bytes)
		PREALLOC_TEST_PAUSE=$point "$PREALLOC" --node 0 --page-size 2M \
			--file "$DIR/cold" "$want" > /dev/null 2> "$TMP/cold.err" &
		pid=$!
		if wait_stopped $pid; then
			kill -KILL $pid
			wait $pid 2> /dev/null
			ok "$leg: stopped at $point and SIGKILLed"
		else
			wait $pid 2> /dev/null
			fail "$leg: never stopped at $point (it ran to its end; $ready READY before, $(hp free 2048) free: $(cat "$TMP/cold.err"))"
		fi
		st=$(status ready_bytes)
		check "$leg: warm status --json exits 0 after the kill ($st READY)" [ "$st" -ge 0 ]
		bad=$(ready_agrees)
		check "$leg: right after the kill, no READY record over a file of another size: the cut was written ahead ($bad)" \
			[ -z "$bad" ]
		ALLOW_NONE=1 take_sane first
		check "$leg: a take at once hands out nothing, or a file of the size asked that its report agrees with ($WHY)" \
			[ $? -eq 0 ]
		[ -e "$DIR/first" ] && "$PREALLOC" warm give "$DIR/first" > /dev/null 2>&1
		"$PREALLOC" gc > "$TMP/gc.out" 2>&1
		rc=$?
		check "$leg: gc exits 0 (rc $rc: $(tail -1 "$TMP/gc.out"))" [ $rc -eq 0 ]
		"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
		rc=$?
		check "$leg: warm fill exits 0 (rc $rc: $(tail -1 "$TMP/fill.out"))" [ $rc -eq 0 ]
		bad=$(ready_agrees)
		check "$leg: after fill every READY record's file is the record's size ($bad)" \
			[ -z "$bad" ]
		left=$(unnamed)
		check "$leg: every file in the staging directory is a record's ($left)" [ -z "$left" ]
		take_sane second
		check "$leg: a take after fill hands out a file of the size asked, its report agreeing ($WHY)" \
			[ $? -eq 0 ]
		"$PREALLOC" warm give "$DIR/second" > /dev/null 2>&1
		"$PREALLOC" rm "$DIR/cold" > /dev/null 2>&1
	done
done

# A growth given back when the warm cut after it fails: 12M with --grow-pools
# and no free page takes the 8M warm file whole and grows the pool by 2
# pages first. Stopped once the cut is written ahead, the file's pool link
# is removed under it, so the cut fails and the request is refused: the 2
# pages it grew must go back (admission's undo), not stay with no record.
"$PREALLOC" warm fill > /dev/null 2>&1
use_up
nr_before=$(hp nr 2048)
PREALLOC_TEST_PAUSE=admit-warm-recorded "$PREALLOC" --grow-pools --node 0 --page-size 2M \
	--file "$DIR/grown" 12M > /dev/null 2> "$TMP/grown.err" &
pid=$!
if wait_stopped $pid; then
	link=$(python3 - "$PREALLOC_STATE_DIR/store" <<'PY'
import sys, urllib.parse
rec = None
for line in open(sys.argv[1]):
    t = line.split()
    if t and t[0] == 'rec':
        rec = t
    elif t and t[0] == 'warm' and rec:
        print(urllib.parse.unquote(rec[-1]))
        break
PY
)
	grown=$(hp nr 2048)
	rm -f "$link"
	kill -CONT $pid
	wait $pid
	rc=$?
	check "a cut that fails after a growth: refused (exit 3; rc $rc: $(head -c 200 "$TMP/grown.err"))" \
		[ $rc -eq 3 ]
	check "... the pool it grew ($nr_before -> $grown pages) given back: $(hp nr 2048)" \
		all_of '[ "$grown" -gt "$nr_before" ] && [ "$(hp nr 2048)" -eq "$nr_before" ]'
else
	wait $pid 2> /dev/null
	fail "a cut that fails after a growth: never stopped at admit-warm-recorded ($(cat "$TMP/grown.err"))"
fi
"$PREALLOC" rm "$DIR/grown" > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1

for ((i = 1; i <= FILLS; i++)); do "$PREALLOC" rm "$DIR/fillup$i" > /dev/null 2>&1; done
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1
check "at the end: the target READY again, every READY record its file's size ($(status ready_bytes) READY; $(ready_agrees))" \
	all_of '[ "$(status ready_bytes)" -eq $SZB ] && ready_agrees > /dev/null'

# A cut's growth counted once: the warm file grew the pool for all its 4
# pages (none free before); a cold 4M request cuts 2 of them, and their
# growth moves to the request, leaving the warm record. With 2 free pages
# of another user's beside them, the cold file removed and the warm one
# dropped give back exactly the 4 grown: the other user's 2 stay.
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1
nr0=$NODE_SYSFS/node0/hugepages/hugepages-2048kB/nr_hugepages
[ -e "$nr0" ] || nr0=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
echo $(($(hp nr 2048) - $(hp free 2048))) > "$nr0"
base=$(hp nr 2048)
pool() { echo "nr +$(($(hp nr 2048) - base)) free $(hp free 2048)"; }
printf 'node0.2M = 1 x %s @ %s\npressure = off\n' "$SZ" "$DIR" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
grew=$(pool)
"$PREALLOC" --node 0 --page-size 2M --file "$DIR/cold" 4M > "$TMP/cold.json" 2> "$TMP/cold.err"
rc=$?
echo $(($(hp nr 2048) + 2)) > "$nr0"
"$PREALLOC" rm "$DIR/cold" > /dev/null 2>&1
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
check "a cut's growth counted once: the warm file grew 4 ($grew), a cold 4M cut 2 of them (rc $rc), both gone: the other user's 2 free pages stay ($(pool))" \
	all_of '[ "$grew" = "nr +4 free 0" ] && [ $rc -eq 0 ] && [ "$(pool)" = "nr +2 free 2" ]'
finish
