#!/bin/bash
# SPDX-License-Identifier: MIT
# The warm pool against a hostile holder (docs/warm.md, "Threat model"):
# holder A (uid 65534) is handed a warm file, writes to it, keeps a way to
# its pages that no /proc file shows (its fd in flight over a socket, the
# file spliced into a pipe, its mapping vmspliced into a pipe), closes and
# unmaps, and the file is given back. Holder B is then handed the pool's
# next file and writes a secret; A reads through what it kept and must
# never find B's bytes. Also: the same with prealloc run without
# CAP_SYS_PTRACE and A keeping a plain fd (the pool keeps working there);
# a VMM that gives its file back while it still maps it keeps its bytes;
# in-place recycling only for one tenant, with a lease; a take whose link
# was moved away by the holder never puts the file back READY.
TAP=1
. "$(dirname "$0")/lib-admit.sh"
. "$(dirname "$0")/lib-holder.sh"

NOPTRACE=(setpriv --bounding-set -sys_ptrace --inh-caps -sys_ptrace)

holder_mounts 256M 24
printf 'node0.4k = 16M @ %s\nnode0.2M = 16M @ %s\n' "$SHM" "$MNT2M" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 || bail "the first fill failed: $(cat "$TMP/fill.out")"

unrecorded() {	# 2M pages of node 0 in use by no record, as warm status counts them
	"$PREALLOC" warm status --json > "$TMP/st.json"
	json_get "$TMP/st.json" "[e['unrecorded_pages'] for e in d if e['page_size'] == 2097152][0]"
}

take() {	# take PAGE DIR NAME [ARGS...]: a 16M take at DIR/NAME; its inode, or nothing
	local page=$1 dir=$2 name=$3
	shift 3
	"${PRE[@]}" "$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" \
		--to "$dir/$name" "$@" 16M > "$TMP/take.out" 2>&1 && stat -c %i "$dir/$name"
}

# hold PAGE DIR MODE: A takes DIR/a as uid 65534 and holds it by MODE
# (warm-attacker.c) in the background, its control on fd 7; APID, INO_A.
hold() {
	local page=$1 dir=$2 mode=$3
	INO_A=$(take "$page" "$dir" a --owner 65534:65534 --holder guest-a "${TAKE_ARGS[@]}")
	attacker_hold "$dir/a" "$mode"
}

# verdict: A reads through what it kept; its one-word verdict in V.
verdict() {
	echo go >&7
	exec 7>&-
	wait $APID
	V=$(tail -1 "$TMP/att.out")
}

# attack PAGE DIR MODE: A holds its file by MODE, gives it back; a fill;
# B takes the next file and writes the secret; A must not read it.
attack() {
	local page=$1 dir=$2 mode=$3 ino_b v
	if ! hold "$page" "$dir" "$mode"; then
		fail "$page/$mode: A takes its file and holds it ($(cat "$TMP/take.out"))"
		return
	fi
	"${PRE[@]}" "$PREALLOC" warm give --holder guest-a "${GIVE_ARGS[@]}" > "$TMP/give.out" 2>&1
	"${PRE[@]}" "$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	rc=$?
	check "$page/$mode$LABEL: give and fill work (fill rc $rc: $(cat "$TMP/give.out") / $(tail -2 "$TMP/fill.out"))" \
		[ $rc -eq 0 ]
	ino_b=$(take "$page" "$dir" b)
	"$ATTACKER" write "$dir/b" "$MARK"
	# The hugepage A's pipe pins is in use by no record, never free, until A lets go.
	[ "$page/$mode" = 2M/vmsplice ] && held=$(unrecorded) free_held=$(hp free 2048)
	verdict
	v=$V
	check "$page/$mode$LABEL: A reads none of B's bytes through what it kept (verdict: $v)" \
		all_of '[ "$v" = own ] || [ "$v" = zero ]'
	if [ "$page/$mode" = 2M/vmsplice ]; then
		check "2M: the page A's pipe holds shows in use by no record, not free ($held unrecorded)" \
			[ "$held" -eq 1 ]
		check "2M: once A's pipe is closed it is free again and recorded nowhere ($(unrecorded) unrecorded, free $free_held -> $(hp free 2048))" \
			all_of '[ "$(unrecorded)" -eq 0 ] && [ "$(hp free 2048)" -eq $((free_held + 1)) ]'
	fi
	check "$page/$mode$LABEL: B's file is not A's inode (A $INO_A, B $ino_b)" \
		all_of '[ -n "$ino_b" ] && [ "$ino_b" != "$INO_A" ]'
	"${PRE[@]}" "$PREALLOC" warm give "$dir/b" > /dev/null 2>&1
	"${PRE[@]}" "$PREALLOC" warm fill > /dev/null 2>&1
}

PRE=() TAKE_ARGS=() GIVE_ARGS=() LABEL=
for mode in scm splice vmsplice; do
	attack 4k "$SHM" $mode
done
# hugetlbfs has no splice_read: the fd in flight and vmsplice.
for mode in scm vmsplice; do
	attack 2M "$MNT2M" $mode
done

# Without CAP_SYS_PTRACE (root in a container): /proc/PID/fd of another uid
# cannot be read, so even a plain fd is invisible there.
caps=$("${NOPTRACE[@]}" awk '/^CapEff/ {print $2}' /proc/self/status)
if [ -n "$caps" ] && [ $((0x$caps & (1 << 19))) -eq 0 ]; then
	PRE=("${NOPTRACE[@]}") LABEL=" (no CAP_SYS_PTRACE, CapEff $caps)"
	attack 4k "$SHM" fd
	attack 2M "$MNT2M" fd
	attack 4k "$SHM" scm
	PRE=() LABEL=
else
	fail "setpriv drops CAP_SYS_PTRACE from prealloc's effective set (CapEff '$caps')"
fi

# A VMM that gives its file back while it still maps it: never punched nor
# cleared under it; B gets a new file.
for page in 4k 2M; do
	dir=$SHM
	[ $page = 2M ] && dir=$MNT2M
	if ! hold $page "$dir" map; then
		fail "$page/map: A maps its file"
		continue
	fi
	"$PREALLOC" warm give --holder guest-a > "$TMP/give.out" 2>&1
	check "$page: a file given back while mapped counts as still in use ($(cat "$TMP/give.out"))" \
		grep -q '(1 still in use' "$TMP/give.out"
	"$PREALLOC" warm fill > /dev/null 2>&1
	ino_b=$(take $page "$dir" b)
	"$ATTACKER" write "$dir/b" "$MARK"
	verdict
	v=$V
	check "$page: the early giver's mapping keeps every byte it wrote (verdict: $v)" [ "$v" = intact ]
	check "$page: B got a new inode (A $INO_A, B $ino_b)" \
		all_of '[ -n "$ino_b" ] && [ "$ino_b" != "$INO_A" ]'
	"$PREALLOC" warm give "$dir/b" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
done

# One tenant: a file its tenant gives back to itself, with nothing else
# open, is cleared in place (same inode) and goes to that tenant only.
for page in 4k 2M; do
	dir=$SHM
	[ $page = 2M ] && dir=$MNT2M
	ino_a=$(take $page "$dir" a --tenant t1)
	fill_pattern "$dir/a"
	"$PREALLOC" warm give "$dir/a" --tenant t1 > /dev/null 2>&1
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	check "$page: a tenant's file given back by it is cleared in place ($(cat "$TMP/fill.out"))" \
		grep -q ' 1 cleared' "$TMP/fill.out"
	take $page "$dir" x > /dev/null
	rc=$?
	check "$page: a take with no tenant does not get it (rc $rc: $(cat "$TMP/take.out"))" \
		all_of '[ $rc -ne 0 ] && [ ! -e "$dir/x" ]'
	take $page "$dir" x --tenant t2 > /dev/null
	rc=$?
	check "$page: nor does another tenant's (rc $rc)" all_of '[ $rc -ne 0 ] && [ ! -e "$dir/x" ]'
	# A take of the tenant that fails before its link (the path exists) leaves it the tenant's.
	touch "$dir/taken"
	take $page "$dir" taken --tenant t1 > /dev/null
	rc=$?
	take $page "$dir" x --tenant t2 > /dev/null
	rc2=$?
	check "$page: a tenant's take that fails (rc $rc) leaves the file its tenant's: another's fails (rc $rc2)" \
		all_of '[ $rc -ne 0 ] && [ $rc2 -ne 0 ] && [ ! -e "$dir/x" ]'
	rm -f "$dir/taken"
	ino=$(take $page "$dir" b --tenant t1)
	check "$page: the same tenant gets the same inode, all zero ($ino_a, $ino)" \
		all_of '[ -n "$ino" ] && [ "$ino" = "$ino_a" ] && cmp -s -n 16777216 "$dir/b" /dev/zero'
	# Given back with no tenant named: it leaves the pool.
	"$PREALLOC" warm give "$dir/b" > /dev/null 2>&1
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	ino=$(take $page "$dir" c --tenant t1)
	check "$page: given back without its tenant: renewed, not cleared ($(cat "$TMP/fill.out"); $ino_a, $ino)" \
		all_of 'grep -q " 1 renewed" "$TMP/fill.out" && [ -n "$ino" ] && [ "$ino" != "$ino_a" ]'
	"$PREALLOC" warm give "$dir/c" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
	# A fresh file's take that fails before its link leaves it no tenant's.
	touch "$dir/taken"
	take $page "$dir" taken --tenant t2 > /dev/null
	rc=$?
	ino=$(take $page "$dir" d)
	check "$page: a fresh file's take by tenant t2 that fails (rc $rc) leaves it no tenant's: a take with none gets it ('$ino': $(cat "$TMP/take.out"))" \
		all_of '[ $rc -ne 0 ] && [ -n "$ino" ]'
	rm -f "$dir/taken"
	"$PREALLOC" warm give "$dir/d" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
done
# The lease refused (the holder keeps its fd): no in-place clear, even for its tenant.
TAKE_ARGS=(--tenant t1) GIVE_ARGS=(--tenant t1) LABEL=" (tenant, lease refused)"
attack 4k "$SHM" fd
TAKE_ARGS=() GIVE_ARGS=() LABEL=

# A target declared single-tenant: every holder is one tenant, so a file
# given back with no label (and nothing else open) is cleared in place.
printf 'node0.4k = 16M @ %s single-tenant\nnode0.2M = 16M @ %s\n' "$SHM" "$MNT2M" > "$PREALLOC_WARM_CONF"
ino_a=$(take 4k "$SHM" a)
fill_pattern "$SHM/a"
"$PREALLOC" warm give "$SHM/a" > /dev/null 2>&1
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
ino=$(take 4k "$SHM" b)
check "single-tenant target: cleared in place, any take gets it, all zero ($(cat "$TMP/fill.out"); $ino_a, $ino)" \
	all_of 'grep -q " 1 cleared" "$TMP/fill.out" && [ "$ino" = "$ino_a" ] && cmp -s -n 16777216 "$SHM/b" /dev/zero'
"$PREALLOC" warm give "$SHM/b" > /dev/null 2>&1
"$PREALLOC" warm fill > /dev/null 2>&1
# The declaration withdrawn: the file cleared under it is renewed, never handed on as it is.
printf 'node0.4k = 16M @ %s\nnode0.2M = 16M @ %s\n' "$SHM" "$MNT2M" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
ino=$(take 4k "$SHM" b --tenant other)
check "single-tenant withdrawn: its in-place file is renewed ($(cat "$TMP/fill.out"); $ino_a, $ino)" \
	all_of '[ -n "$ino" ] && [ "$ino" != "$ino_a" ]'
"$PREALLOC" warm give "$SHM/b" > /dev/null 2>&1
"$PREALLOC" warm fill > /dev/null 2>&1

# take's failure after its link existed: the holder moves the new link away
# before the take sees it there. The file is never READY again.
"$PREALLOC" warm status --json > "$TMP/st0.json"
PREALLOC_TEST_PAUSE=warm-take-linked "$PREALLOC" warm take --node 0 --page-size 4k \
	--mount "$SHM" --to "$SHM/m" --owner 65534:65534 16M > "$TMP/take.out" 2>&1 &
pid=$!
if wait_stopped $pid; then
	"${NOBODY[@]}" mv "$SHM/m" "$SHM/moved"
	kill -CONT $pid
fi
wait $pid
rc=$?
ino_m=$(stat -c %i "$SHM/moved" 2> /dev/null)
check "the take fails once its link was moved away (rc $rc: $(cat "$TMP/take.out"))" \
	all_of '[ $rc -ne 0 ] && [ -n "$ino_m" ]'
"$PREALLOC" warm status --json > "$TMP/st.json"
check "the file is not READY again: quarantined" \
	[ "$(json_get "$TMP/st.json" "[e['quarantined_bytes'] for e in d if e['page_size'] == 4096][0]")" -eq 16777216 ]
"$PREALLOC" warm fill > /dev/null 2>&1
ino=$(take 4k "$SHM" n)
check "the next take gets another inode ($ino_m, $ino)" \
	all_of '[ -n "$ino" ] && [ "$ino" != "$ino_m" ]'
rm -f "$SHM/moved"
"$PREALLOC" warm give "$SHM/n" > /dev/null 2>&1

# Which file a take gets: exactly its size is a full hit, not a cut; a
# smaller take cuts a larger one (issue 42's boundaries).
printf 'node0.4k = 2 x 24M @ %s\nnode0.2M = 16M @ %s\n' "$SHM" "$MNT2M" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
hit() {	# hit SIZE NAME: "hit file_bytes" of a take of SIZE at $SHM/NAME
	"$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" --to "$SHM/$2" --json "$1" \
		> "$TMP/hit.json" 2> /dev/null &&
		json_get "$TMP/hit.json" "'%s %d' % (d['hit'], d['file_bytes'])"
}
h=$(hit 8M c1)
check "a take of 8M with only 24M files READY cuts one ($h)" [ "$h" = "cut 25165824" ]
"$PREALLOC" warm give "$SHM/c1" > /dev/null 2>&1
"$PREALLOC" warm fill > /dev/null 2>&1
h=$(hit 24M c2)
check "a take of exactly a file's size is a full hit ($h)" [ "$h" = "full 25165824" ]
"$PREALLOC" warm give "$SHM/c2" > /dev/null 2>&1

# An empty warm.conf: every file goes, none left behind.
: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
left=$(find "$SHM" "$MNT2M" -type f 2> /dev/null)
check "with no targets, fill gives every file back (left: $left)" [ -z "$left" ]
finish
