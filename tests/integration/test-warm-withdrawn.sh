#!/bin/bash
# SPDX-License-Identifier: MIT
# A file cleared in place under a single-tenant declaration goes out only
# while that declaration stands (docs/warm.md, "In place, only within one
# tenant"; issue 48 item 1). Holder A (uid 65534) takes a file of a target
# declared single-tenant, keeps its pages through a pipe (vmsplice: no lease
# sees it) and gives the file back; fill clears it in place. The
# administrator then withdraws the declaration; before the next pass,
# another tenant's take must not get A's inode, and A must never read that
# tenant's secret; the next fill renews the file. Also, for 4k (tmpfs) and
# 2M (hugetlbfs): a file taken and given back by one tenant under the
# declaration, withdrawn before the pass, is renewed; a pass killed while it clears a file in place under the
# declaration, withdrawn before the next pass, leaves a file that pass
# renews, not clears in place for its label; warm.conf edited
# in an unrelated line still hands the file
# out in place; warm.conf removed, or unreadable to the take, does not; a
# file reserved for a holder under the declaration is not linked for it
# once the declaration is withdrawn;
# `fill --conf FILE` and `serve --conf FILE` record their own file (not
# $PREALLOC_WARM_CONF) and the checksum of the text they read, and serve,
# whose conf stays loaded until SIGHUP, renews instead of clearing in place
# once the file on disk withdrew the declaration.
TAP=1
. "$(dirname "$0")/lib-admit.sh"
. "$(dirname "$0")/lib-holder.sh"

NODAC=(setpriv --bounding-set -dac_override,-dac_read_search
	--inh-caps -dac_override,-dac_read_search)

holder_mounts 128M 24
export PREALLOC_CALIBRATION=$TMP/calibration	# serve measures its clear kernels here
PRE=()

# conf FILE DECLARE [FIRST]: the two targets, 16M each, DECLARE after each
# (" single-tenant" or ""), FIRST (lines) before them.
conf() {
	printf '%bnode0.4k = 16M @ %s%s\nnode0.2M = 16M @ %s%s\n' "${3:-}" "$SHM" "$2" \
		"$MNT2M" "$2" > "$1"
}
dir_of() { [ "$1" = 2M ] && echo "$MNT2M" || echo "$SHM"; }

take() {	# take PAGE NAME [ARGS...]: a 16M take at DIR/NAME (run by PRE); its inode, or nothing
	local page=$1 dir name=$2
	dir=$(dir_of "$page")
	shift 2
	"${PRE[@]}" "$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/$name" \
		"$@" 16M > "$TMP/take.out" 2>&1 && stat -c %i "$dir/$name"
}
give() { "$PREALLOC" warm give "$@" > "$TMP/give.out" 2>&1; }
fill() { "$PREALLOC" warm fill "$@" > "$TMP/fill.out" 2>&1; }

# rec INO: "STATE TENANT DECLARED-SUM DECLARED-PATH" of the warm file of
# inode INO ("-" for none), as the store says; "gone" when it has none.
rec() {
	python3 - "$PREALLOC_STATE_DIR/store" "$1" <<'PY'
import sys, urllib.parse
found, mine = None, False
for line in open(sys.argv[1]):
    t = line.split()
    if t[0] == "rec":
        mine = t[6] == sys.argv[2]
        if mine:
            found = ["-", "-", "-", "-"]
    elif mine and t[0] == "warm":
        found[0], found[1] = t[1], (urllib.parse.unquote(t[3]) if len(t) > 3 else "-")
    elif mine and t[0] == "declared":
        found[2], found[3] = t[1], urllib.parse.unquote(t[2])
print(" ".join(found) if found else "gone")
PY
}
# fnv FILE: the FNV-1a 64 of FILE's bytes, as the store writes it.
fnv() {
	python3 -c "
h = 0xcbf29ce484222325
for b in open('$1', 'rb').read():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
print('%016x' % h)"
}

# in_place PAGE [FILL ARGS...]: a file of PAGE taken, written, given back and
# cleared in place by a fill (FILL ARGS: its --conf); its inode in INO_A.
in_place() {
	local page=$1 dir
	dir=$(dir_of "$page")
	shift
	INO_A=$(take "$page" a)
	fill_pattern "$dir/a"
	give "$dir/a"
	fill "$@"
	grep -q ' 1 cleared' "$TMP/fill.out" && [ "$(rec "$INO_A" | cut -d' ' -f1-2)" = \
		"ready @single-tenant" ]
}

# ---- withdrawn between the in-place clear and the take, A pinning its pages ----
for page in 4k 2M; do
	dir=$(dir_of $page)
	conf "$PREALLOC_WARM_CONF" " single-tenant"
	fill
	INO_A=$(take $page a --owner 65534:65534 --holder guest-a)
	attacker_hold "$dir/a" vmsplice ||
		fail "$page: A holds its file through a pipe ($(cat "$TMP/att.err"))"
	apid=$APID
	give --holder guest-a
	fill
	check "$page: A's file is cleared in place for the declared target ($(cat "$TMP/fill.out"); $(rec "$INO_A"))" \
		all_of 'grep -q " 1 cleared" "$TMP/fill.out" && [ "$(rec "$INO_A" | cut -d" " -f1-2)" = "ready @single-tenant" ]'
	conf "$PREALLOC_WARM_CONF" ""	# withdrawn; no pass runs before the take
	ino_b=$(take $page b --tenant other-tenant)
	check "$page: withdrawn before the take: another tenant's take does not get A's inode (A $INO_A, B '$ino_b': $(cat "$TMP/take.out"))" \
		all_of '[ "$ino_b" != "$INO_A" ]'
	check "$page: the take left it DIRTY, its label gone, for the next pass ($(rec "$INO_A"))" \
		all_of '[ "$(rec "$INO_A")" = "dirty - - -" ]'
	if [ -z "$ino_b" ]; then
		fill
		check "$page: the next fill renews it ($(cat "$TMP/fill.out"))" \
			grep -q ' 1 renewed' "$TMP/fill.out"
		ino_b=$(take $page b --tenant other-tenant)
		check "$page: then another tenant gets a new inode (A $INO_A, B '$ino_b')" \
			all_of '[ -n "$ino_b" ] && [ "$ino_b" != "$INO_A" ]'
	fi
	[ -n "$ino_b" ] && "$ATTACKER" write "$dir/b" "$MARK"
	echo go >&7
	exec 7>&-
	wait $apid
	v=$(tail -1 "$TMP/att.out")
	check "$page: A reads none of the other tenant's bytes through its pipe (verdict: $v)" \
		all_of '[ "$v" = own ] || [ "$v" = zero ]'
	give "$dir/b"
	fill
done

# ---- taken and given back by one tenant under the declaration, withdrawn before the pass ----
# Under the declaration the file may have had other tenants' holders before
# this one: it stays the declaration's (the taker's tenant is not its
# label), and once that is withdrawn the next pass renews it.
for page in 4k 2M; do
	dir=$(dir_of $page)
	conf "$PREALLOC_WARM_CONF" " single-tenant"
	fill
	in_place $page || fail "$page: a file cleared in place ($(cat "$TMP/fill.out"))"
	ino=$(take $page c --tenant ta)
	r0=$(rec "$INO_A")
	fill_pattern "$dir/c"
	give "$dir/c" --tenant ta
	r1=$(rec "$INO_A")
	conf "$PREALLOC_WARM_CONF" ""
	fill
	check "$page: taken by tenant ta under the declaration ($r0), given back by ta ($r1), withdrawn: renewed, not cleared in place for ta ($(cat "$TMP/fill.out"); $(rec "$INO_A"))" \
		all_of '[ "$ino" = "$INO_A" ] && [ "${r0% * *}" = "handed @single-tenant" ] && grep -q " 1 renewed" "$TMP/fill.out" && grep -q " 0 cleared" "$TMP/fill.out" && [ "$(rec "$INO_A")" = gone ]'
done

# ---- a pass killed clearing in place, the declaration withdrawn before the next ----
# The dead pass's record keeps its label (CLEARING, then DIRTY again): the
# next pass must renew it, not clear it in place for a label no longer declared.
for page in 4k 2M; do
	dir=$(dir_of $page)
	conf "$PREALLOC_WARM_CONF" " single-tenant"
	fill
	INO_A=$(take $page a --tenant ta)
	fill_pattern "$dir/a"
	give "$dir/a" --tenant ta
	PREALLOC_TEST_PAUSE=warm-fill-before-clear "$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 &
	fpid=$!
	wait_stopped $fpid || fail "$page: fill stops before its in-place clear ($(cat "$TMP/fill.out"))"
	kill -KILL $fpid
	wait $fpid 2> /dev/null
	r1=$(rec "$INO_A")
	conf "$PREALLOC_WARM_CONF" ""
	fill
	check "$page: killed clearing in place ($r1), withdrawn before the next pass: renewed, not cleared in place for its label ($(cat "$TMP/fill.out"); $(rec "$INO_A"))" \
		all_of '[ "${r1% * *}" = "clearing @single-tenant" ] && grep -q " 1 renewed" "$TMP/fill.out" && grep -q " 0 cleared" "$TMP/fill.out" && [ "$(rec "$INO_A")" = gone ]'
done

# ---- the conf edited, removed, unreadable, between the clear and the take ----
for page in 4k 2M; do
	dir=$(dir_of $page)
	conf "$PREALLOC_WARM_CONF" " single-tenant"
	fill
	if in_place $page; then
		conf "$PREALLOC_WARM_CONF" " single-tenant" "# edited\nclear_threads = 1\n"
		ino=$(take $page b --tenant other-tenant)
		check "$page: edited in an unrelated line: still handed out in place, all zero (A $INO_A, '$ino')" \
			all_of '[ "$ino" = "$INO_A" ] && cmp -s -n 16777216 "$dir/b" /dev/zero'
		give "$dir/b"
	else
		fail "$page: a file cleared in place ($(cat "$TMP/fill.out"))"
	fi
	fill
	if in_place $page; then
		rm "$PREALLOC_WARM_CONF"
		ino=$(take $page b --tenant other-tenant)
		check "$page: warm.conf removed: not handed out (A $INO_A, '$ino'; $(rec "$INO_A"))" \
			all_of '[ "$ino" != "$INO_A" ] && [ "$(rec "$INO_A")" = "dirty - - -" ]'
		[ -n "$ino" ] && give "$dir/b"
	else
		fail "$page: a file cleared in place ($(cat "$TMP/fill.out"))"
	fi
	conf "$PREALLOC_WARM_CONF" " single-tenant"
	fill
	if in_place $page; then
		chmod 000 "$PREALLOC_WARM_CONF"
		PRE=("${NODAC[@]}")
		ino=$(take $page b --tenant other-tenant)
		PRE=()
		check "$page: warm.conf unreadable to the take (no CAP_DAC_OVERRIDE, mode 000): not handed out (A $INO_A, '$ino'; $(cat "$TMP/take.out"))" \
			all_of '[ "$ino" != "$INO_A" ] && [ "$(rec "$INO_A")" = "dirty - - -" ]'
		[ -n "$ino" ] && give "$dir/b"
		chmod 644 "$PREALLOC_WARM_CONF"
	else
		fail "$page: a file cleared in place ($(cat "$TMP/fill.out"))"
	fi
	fill
done

# ---- reserved for a holder under the declaration, withdrawn before its link ----
for page in 4k 2M; do
	dir=$(dir_of $page)
	conf "$PREALLOC_WARM_CONF" " single-tenant"
	fill
	if in_place $page; then
		"$PREALLOC" warm take --reserve --holder guest-r --node 0 --page-size $page \
			--mount "$dir" 16M > "$TMP/reserve.out" 2>&1
		r1=$(rec "$INO_A")
		conf "$PREALLOC_WARM_CONF" ""
		ino=$(take $page r --reserved --holder guest-r)
		check "$page: reserved under the declaration ($r1), withdrawn before its link: not linked, given back (A $INO_A, '$ino'; $(rec "$INO_A"))" \
			all_of '[ "${r1%% *}" = handed ] && [ "$ino" != "$INO_A" ] && [ "$(rec "$INO_A")" = "dirty - - -" ]'
		[ -n "$ino" ] && give "$dir/r"
	else
		fail "$page: a file cleared in place ($(cat "$TMP/fill.out"))"
	fi
	fill
done

# ---- fill --conf FILE: its own file recorded, not $PREALLOC_WARM_CONF ----
OTHER=$TMP/other.conf
conf "$PREALLOC_WARM_CONF" " single-tenant"	# the default: declares, and stays so
for page in 4k 2M; do
	dir=$(dir_of $page)
	conf "$OTHER" " single-tenant"
	fill --conf "$OTHER"
	if in_place $page --conf "$OTHER"; then
		check "$page: fill --conf records its file and the sum of the text it read ($(rec "$INO_A"))" \
			all_of '[ "$(rec "$INO_A")" = "ready @single-tenant $(fnv "$OTHER") $OTHER" ]'
		conf "$OTHER" ""
		ino=$(take $page b --tenant other-tenant)
		check "$page: withdrawn in the --conf file, the default still declaring: not handed out (A $INO_A, '$ino')" \
			all_of '[ "$ino" != "$INO_A" ] && [ "$(rec "$INO_A")" = "dirty - - -" ]'
		[ -n "$ino" ] && give "$dir/b"
	else
		fail "$page: fill --conf clears a file in place ($(cat "$TMP/fill.out"))"
	fi
	fill --conf "$OTHER"
done

# ---- serve --conf FILE: what its pass read, and no in-place clear once withdrawn ----
SERVED=$TMP/serve.conf
conf "$SERVED" " single-tenant" "check_interval = 1s\npressure = off\n"
"$PREALLOC" warm serve --conf "$SERVED" > "$TMP/serve.log" 2>&1 &
spid=$!
on_exit "kill -KILL $spid 2> /dev/null"
ready() {	# ready PAGE: a READY file of PAGE's target, by the store
	local dir
	dir=$(dir_of "$1")
	python3 - "$PREALLOC_STATE_DIR/store" "$dir" <<'PY'
import sys, urllib.parse
state = path = None
ok = False
for line in open(sys.argv[1]):
    t = line.split()
    if t[0] == "rec":
        path = urllib.parse.unquote(t[-1])
    elif t[0] == "warm" and t[1] == "ready" and path.startswith(sys.argv[2] + "/"):
        ok = True
sys.exit(0 if ok else 1)
PY
}
for page in 4k 2M; do
	dir=$(dir_of $page)
	if [ $page = 2M ]; then	# declared again, and read again (serve is up by now)
		conf "$SERVED" " single-tenant" "check_interval = 1s\npressure = off\n"
		kill -HUP $spid
		wait_for 30 grep -q 'warm.conf read again' "$TMP/serve.log"
	fi
	wait_for 60 ready $page || fail "$page: serve makes a READY file ($(cat "$TMP/serve.log"))"
	INO_A=$(take $page a)
	fill_pattern "$dir/a"
	give "$dir/a"
	wait_for 30 all_of '[ "$(rec "$INO_A" | cut -d" " -f1-2)" = "ready @single-tenant" ]'
	check "$page: serve --conf clears in place, recording its file and the sum of the text it read ($(rec "$INO_A"))" \
		all_of '[ "$(rec "$INO_A")" = "ready @single-tenant $(fnv "$SERVED") $SERVED" ]'
	# Withdrawn on disk, no SIGHUP: serve still holds the conf that declared it.
	conf "$SERVED" "" "check_interval = 1s\npressure = off\n"
	ino=$(take $page b --tenant other-tenant)
	check "$page: withdrawn before serve reads it again: not handed out (A $INO_A, '$ino')" \
		all_of '[ "$ino" != "$INO_A" ]'
	[ -n "$ino" ] && give "$dir/b"
	wait_for 30 ready $page
	ino=$(take $page b --tenant other-tenant)
	check "$page: serve renews it, not in place again under the conf it still holds (A $INO_A, '$ino')" \
		all_of '[ -n "$ino" ] && [ "$ino" != "$INO_A" ]'
	give "$dir/b"
done
kill -TERM $spid
wait $spid
rc=$?
check "serve stops at SIGTERM (rc $rc)" [ $rc -eq 0 ]
finish
