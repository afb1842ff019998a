#!/bin/bash
# SPDX-License-Identifier: MIT
# A renewal's growth (docs/warm.md, "Pages and other flows"; issue 51,
# section 2), on a private hugetlbfs of 2M pages with a warm.conf of its own
# (node0.2M = 1 x 16M) and node 0's pool left with no free page of its own:
# a file given back with no tenant is renewed. The new file is made while
# the old one still holds its pages, then the old one's pages go, and the
# old file's growth moves to the new record only as far as the new file took
# pages it did not grow the pool for; the rest goes back with the old one.
#  A. no free page: the new file grows the pool by its own 8 pages; the old
#     file's 8 go back (the pool ends at the file's 8, none free);
#  B. 8 free pages of another user's: the new file takes them, and the old
#     file's growth moves to it (the pool ends with the file's 8 and the
#     other user's 8 free again, never fewer);
#  D. 4 free pages of another user's: the new file takes them and grows the
#     pool by 4; half the old file's growth moves, half goes back (the
#     pool ends with the file's 8 and the other user's 4 free);
#  C. a pass stopped between the steps (warm-renew-before-create): the old
#     file still holds every page its record's growth counts; SIGKILLed
#     there, the next fill renews it and the pool ends as in A;
#  E. stopped once the new file exists (warm-renew-before-retire): the old
#     file holds nothing (truncated under a lease: an O_PATH descriptor
#     would keep no memory), then the pass ends as in A.
TAP=1
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
DIR=$MNT
export PREALLOC_WARM_CONF=$TMP/warm.conf
export PREALLOC_CALIBRATION=$TMP/calibration
nr0=$NODE_SYSFS/node0/hugepages/hugepages-2048kB/nr_hugepages
[ -e "$nr0" ] || nr0=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
# No free page to start with (lib.sh restores the pool at exit).
echo $(($(hp nr 2048) - $(hp free 2048))) > "$nr0"
base=$(hp nr 2048)
printf 'node0.2M = 1 x 16M @ %s\npressure = off\n' "$DIR" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 || bail "the first fill failed: $(cat "$TMP/fill.out")"
pool() { echo "nr +$(($(hp nr 2048) - base)) free $(hp free 2048)"; }
check "the first fill grew the pool by its file's 8 pages ($(pool))" [ "$(pool)" = "nr +8 free 0" ]

# give_back: the file taken by a tenant, written, given back with none (renewed next).
give_back() {
	"$PREALLOC" warm take --node 0 --page-size 2M --mount "$DIR" --to "$DIR/g" --tenant t1 \
		16M > "$TMP/take.out" 2>&1 || { echo "take: $(cat "$TMP/take.out")"; return 1; }
	fill_pattern "$DIR/g"
	"$PREALLOC" warm give "$DIR/g" > /dev/null 2>&1
}

# stopped_at POINT: a fill run until it stops at POINT (its pid in fp), the old
# file's hidden name in old; false if it never stops there.
stopped_at() {
	old=$(ls "$DIR"/.prealloc/* 2> /dev/null | head -1)
	PREALLOC_TEST_PAUSE=$1 "$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 &
	fp=$!
	on_exit "kill -9 $fp 2> /dev/null"
	wait_stopped $fp
}

# ---- A: no free page ----
give_back || fail "A: a take ($(cat "$TMP/take.out"))"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "A: renewed with no free page: the old file's growth goes back with it, none counted twice ($(pool); $(cat "$TMP/fill.out"))" \
	all_of 'grep -q " 1 renewed" "$TMP/fill.out" && [ "$(pool)" = "nr +8 free 0" ]'

# from_free LEG FREE WANT END WHAT: renewed with FREE free pages of another
# user's beside the pool's 8; the pool WANT after ("nr +N free M"), END once
# the file is gone (its growth back, the other user's FREE staying).
from_free() {
	local leg=$1 free=$2 want=$3 end=$4 what=$5
	printf 'node0.2M = 1 x 16M @ %s\npressure = off\n' "$DIR" > "$PREALLOC_WARM_CONF"
	"$PREALLOC" warm fill > /dev/null 2>&1
	give_back || fail "$leg: a take ($(cat "$TMP/take.out"))"
	echo $((base + 8 + free)) > "$nr0"
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	check "$leg: $what ($(pool); $(cat "$TMP/fill.out"))" \
		all_of 'grep -q " 1 renewed" "$TMP/fill.out" && [ "$(pool)" = "$want" ]'
	: > "$PREALLOC_WARM_CONF"
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$leg: the file gone, its growth goes back and the other user's $free stay ($(pool))" \
		[ "$(pool)" = "$end" ]
	echo "$base" > "$nr0"
}
from_free B 8 "nr +16 free 8" "nr +8 free 8" \
	"renewed from another user's 8 free pages: the old file's growth moves to the new one, those 8 free again"
from_free D 4 "nr +12 free 4" "nr +4 free 4" \
	"renewed from 4 free pages and 4 grown: half the old file's growth moves, half goes back, the other user's 4 free again"

# ---- C: stopped, then killed, between the steps ----
printf 'node0.2M = 1 x 16M @ %s\npressure = off\n' "$DIR" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
give_back || fail "C: a take ($(cat "$TMP/take.out"))"
if stopped_at warm-renew-before-create; then
	held=$(($(stat -c %b "$old") * 512))
	check "C: before the new file is made, the old one still holds all its pages ($held bytes of 16 MiB)" \
		[ "$held" -eq 16777216 ]
	kill -9 $fp
	wait $fp 2> /dev/null
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	check "C: killed there, the next fill renews it and the pool ends at the file's 8 ($(pool); $(cat "$TMP/fill.out"))" \
		all_of 'grep -q " 1 renewed" "$TMP/fill.out" && [ "$(pool)" = "nr +8 free 0" ]'
else
	fail "C: fill stops before the new file ($(cat "$TMP/fill.out"))"
fi

# ---- E: the new file made, the old one not yet retired ----
give_back || fail "E: a take ($(cat "$TMP/take.out"))"
if stopped_at warm-renew-before-retire; then
	held=$(stat -c '%s %b' "$old")
	check "E: once the new file exists, the old one's pages are gone before its retirement, truncated under a lease (size and blocks: $held)" \
		[ "$held" = "0 0" ]
	kill -CONT $fp
	wait $fp
	check "E: then the pass ends, the pool at the file's 8 ($(pool); $(cat "$TMP/fill.out"))" \
		all_of 'grep -q " 1 renewed" "$TMP/fill.out" && [ "$(pool)" = "nr +8 free 0" ]'
else
	fail "E: fill stops before the retirement ($(cat "$TMP/fill.out"))"
fi
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1
check "at the end: no file, the pool as it began ($(pool))" [ "$(pool)" = "nr +0 free 0" ]
finish
