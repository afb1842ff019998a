#!/bin/bash
# SPDX-License-Identifier: MIT
# What a hostile holder does to its own file (docs/warm.md, "Threat model"),
# holder A being uid 65534 (warm-attacker.c), each time with the file given
# back and a fill run:
#
# - it grows the file past its record (ftruncate and faults, fallocate
#   KEEP_SIZE, a shared mapping past the end: hugetlbfs reserves its pages)
#   and keeps only an O_PATH fd: nothing past the record stays in use
#   recorded nowhere (tmpfs usage, hugetlb in use plus reserved), and what
#   was cut is counted;
# - it hard-links the file into a directory of its own before each give:
#   the file is quarantined and stays recorded, its memory in warm status,
#   --json and the metrics, a quarantine counted once per file and logged,
#   until A removes its links and a fill runs;
# - it keeps a read lease (SIGIO ignored) on a file its tenant gives back:
#   fill never waits fs.lease-break-time (set to 20 s here; the bound of a
#   few seconds is a hang detector, not a figure) and renews the file;
#   taken with no holder name, its path removed, the lease it keeps says
#   it is in use: fill leaves the file HANDED.
TAP=1
. "$(dirname "$0")/lib-admit.sh"
. "$(dirname "$0")/lib-holder.sh"

M16=16777216

holder_mounts 512M 96
printf 'node0.4k = 16M @ %s\nnode0.2M = 16M @ %s\n' "$SHM" "$MNT2M" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 || bail "the first fill failed: $(cat "$TMP/fill.out")"

# st PAGE EXPR: EXPR of warm status --json's entry of page size PAGE (e), 0 if it has no such key.
st() {
	local ps=4096
	[ "$1" = 2M ] && ps=2097152
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> /dev/null
	json_get "$TMP/st.json" "[$2 for e in d if e['page_size'] == $ps][0]" 2> /dev/null || echo 0
}
# Bytes of every warm file of PAGE the store records, whatever its state.
recorded() {
	st "$1" "sum(e[s + '_bytes'] for s in ('populating', 'ready', 'handed', 'returning', 'dirty', 'clearing', 'quarantined'))"
}
# Memory in use that the pool does not account for: on the tmpfs, its
# usage less the blocks of the files the store records; of 2M pages, the
# pages in use or reserved less those of the store's files.
shm_extra() { echo $(($(df --output=used -B1 "$SHM" | tail -1) - $(recorded 4k))); }
hp_meminfo() { awk -v k="HugePages_$1:" '$1 == k {print $2}' /proc/meminfo; }
hp_extra() {
	echo $((($(hp_meminfo Total) - $(hp_meminfo Free) + $(hp_meminfo Rsvd)) * 2097152 - $(recorded 2M)))
}
extra() { if [ "$1" = 4k ]; then shm_extra; else hp_extra; fi; }
dir_of() { if [ "$1" = 4k ]; then echo "$SHM"; else echo "$MNT2M"; fi; }

take() {	# take PAGE NAME [ARGS...]: a 16M take at DIR/NAME; its inode, or nothing
	local page=$1 dir name=$2
	dir=$(dir_of "$page")
	shift 2
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/$name" "$@" \
		16M > "$TMP/take.out" 2>&1 && stat -c %i "$dir/$name"
}

# hold PAGE MODE [TAKE ARGS...]: A takes DIR/a as uid 65534 and does MODE
# (warm-attacker.c) in the background, its control on fd 7; APID, INO_A.
hold() {
	local page=$1 mode=$2 dir
	dir=$(dir_of "$page")
	shift 2
	INO_A=$(take "$page" a --owner 65534:65534 --holder guest-a "$@")
	[ -n "$INO_A" ] || return 1
	attacker_hold "$dir/a" "$mode"
}
release() {	# A lets go of whatever it kept (if it is still there to)
	kill -0 $APID 2> /dev/null && echo go >&7
	exec 7>&-
	wait $APID
}

# ---- 4: a holder grows its file past its record, keeping an O_PATH fd ----
# grown PAGE MODE PAST: A does MODE, adding PAST bytes past the record.
grown() {
	local page=$1 mode=$2 past=$3 base trimmed0 e rc t
	base=$(extra "$page")
	trimmed0=$(st "$page" "e.get('trimmed_bytes', 0)")
	if ! hold "$page" "$mode"; then
		fail "$page/$mode: A takes its file and grows it ($(cat "$TMP/take.out"))"
		return
	fi
	"$PREALLOC" warm give --holder guest-a > "$TMP/give.out" 2>&1
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	rc=$?
	e=$(extra "$page")
	check "$page/$mode: give and fill work (fill rc $rc: $(cat "$TMP/give.out") / $(tail -2 "$TMP/fill.out"))" \
		all_of '[ $rc -eq 0 ] && grep -q " 1 renewed" "$TMP/fill.out"'
	check "$page/$mode: nothing A added past its record stays in use, recorded nowhere, while A keeps an O_PATH fd (unaccounted bytes $base -> $e; Rsvd $(hp_meminfo Rsvd))" \
		[ "$e" -eq "$base" ]
	t=$(st "$page" "e.get('trimmed_bytes', 0)")
	check "$page/$mode: what was cut past the record is counted (trimmed_bytes $trimmed0 -> $t, A added $past)" \
		[ $((t - trimmed0)) -ge "$past" ]
	release
	"$PREALLOC" warm fill > /dev/null 2>&1
}
grown 4k grow $((7 * M16))
grown 4k keep 8388608
grown 2M grow $((7 * M16))
grown 2M keep 8388608
grown 2M mappast 8388608
grown 2M mapro 8388608

# The same after the give: A keeps its fd (the give finds the file in use),
# then grows the file, closes its fd and keeps an O_PATH one before the
# fill: the renewal empties the whole file under its lease, past its end.
for page in 4k 2M; do
	base=$(extra $page)
	if ! hold $page late; then
		fail "$page/late: A takes its file and keeps its fd"
		continue
	fi
	"$PREALLOC" warm give --holder guest-a > "$TMP/give.out" 2>&1
	echo grow >&7
	wait_for 10 grep -q grown "$TMP/att.out"
	grown=$?
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	e=$(extra $page)
	check "$page/late: grown after its give, nothing of the file stays in use recorded nowhere (A grew it: $([ $grown = 0 ] && echo yes || cat "$TMP/att.err"); unaccounted bytes $base -> $e; $(cat "$TMP/give.out"); $(cat "$TMP/fill.out"))" \
		all_of '[ $grown = 0 ] && [ "$e" -eq "$base" ] && grep -q " 1 renewed" "$TMP/fill.out"'
	release
	"$PREALLOC" warm fill > /dev/null 2>&1
done

# ---- 5: a quarantined file stays recorded, and shown, while A links it ----
# linked PAGE ROUNDS: A hard-links its file into its own directory before
# each give, ROUNDS times.
linked() {
	local page=$1 rounds=$2 dir own n q0 q rc held qb e
	dir=$(dir_of "$page")
	own=$dir/own-$page
	mkdir "$own" && chown 65534:65534 "$own"
	q0=$(st "$page" "e.get('quarantines', 0)")
	for ((n = 1; n <= rounds; n++)); do
		if ! hold "$page" "link=$own/l$n"; then
			fail "$page round $n: A takes its file and links it ($(cat "$TMP/take.out"))"
			continue
		fi
		wait $APID
		exec 7>&-
		"$PREALLOC" warm give --holder guest-a > "$TMP/give.out" 2> "$TMP/give.err"
		"$PREALLOC" warm fill > "$TMP/fill.out" 2> "$TMP/fill.err"
		rc=$?
		qb=$(st "$page" "e['quarantined_bytes']")
		held=$(st "$page" "e.get('quarantined_held_bytes', 0)")
		q=$(st "$page" "e.get('quarantines', 0)")
		e=$(extra "$page")
		check "$page round $n: the linked file is quarantined and stays recorded (fill rc $rc; quarantined $qb bytes)" \
			all_of '[ $rc -eq 0 ] && [ "$qb" -eq $((n * M16)) ]'
		check "$page round $n: its memory shows as quarantined memory held ($held)" \
			[ "$held" -eq $((n * M16)) ]
		check "$page round $n: the pool accounts for all the memory in use (unaccounted $e bytes)" \
			[ "$e" -eq 0 ]
		check "$page round $n: one more quarantine counted ($q0 -> $q)" [ "$q" -eq $((q0 + n)) ]
		check "$page round $n: the log says so ($(cat "$TMP/give.err" "$TMP/fill.err" | head -3))" \
			grep -q "quarantined" "$TMP/give.err" "$TMP/fill.err"
		"$PREALLOC" warm status --format=prometheus > "$TMP/metrics" 2>&1
		check "$page round $n: the metrics show it (held bytes, the quarantines counter)" \
			all_of "grep -q '^prealloc_warm_quarantined_held_bytes{.*page_size=\"$([ $page = 4k ] && echo 4096 || echo 2097152)\".*} $((n * M16))\$' '$TMP/metrics' && grep -q '^prealloc_warm_quarantines_total{.*} $((q0 + n))\$' '$TMP/metrics'"
	done
	"${NOBODY[@]}" rm -f "$own"/l*
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	qb=$(st "$page" "e['quarantined_bytes']")
	e=$(extra "$page")
	check "$page: once A removes its links, a fill removes the quarantined files and their memory (quarantined $qb bytes, unaccounted $e; $(cat "$TMP/fill.out"))" \
		all_of '[ "$qb" -eq 0 ] && [ "$e" -eq 0 ] && [ -z "$(ls -A "$own")" ]'
	rmdir "$own"
}
linked 4k 3
linked 2M 1

# ---- 6: a holder's read lease never stalls the pass ----
old_lbt=$(cat /proc/sys/fs/lease-break-time)
on_exit "echo $old_lbt > /proc/sys/fs/lease-break-time"
echo 20 > /proc/sys/fs/lease-break-time
for page in 4k 2M; do
	if ! hold "$page" lease --tenant t1; then
		fail "$page/lease: A takes its file and keeps a read lease on it ($(cat "$TMP/att.err"))"
		continue
	fi
	"$PREALLOC" warm give --holder guest-a --tenant t1 > "$TMP/give.out" 2>&1
	check "$page/lease: give counts the file A still leases in use ($(cat "$TMP/give.out"))" \
		grep -q "(1 still in use" "$TMP/give.out"
	t0=$(date +%s%N)
	timeout 60 "$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	check "$page/lease: fill does not wait out A's lease ($ms ms, fs.lease-break-time 20 s; rc $rc: $(cat "$TMP/fill.out"))" \
		all_of '[ $rc -eq 0 ] && [ $ms -lt 5000 ]'
	ino=$(take "$page" b --tenant t1)
	check "$page/lease: the file is renewed, not cleared in place ($(cat "$TMP/fill.out"); A $INO_A, next $ino)" \
		all_of 'grep -q " 1 renewed" "$TMP/fill.out" && [ -n "$ino" ] && [ "$ino" != "$INO_A" ]'
	release
	"$PREALLOC" warm give "$(dir_of "$page")/b" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
done

# ---- 6b: a holder with no name, its path gone, still leasing its file ----
# Its liveness is its path and whether anything opens the file: fill's open
# meets A's lease (EWOULDBLOCK), which says A has it open: kept, HANDED.
for page in 4k 2M; do
	dir=$(dir_of "$page")
	INO_A=$(take "$page" a --owner 65534:65534)
	if [ -z "$INO_A" ] || ! attacker_hold "$dir/a" lease; then
		fail "$page/lease, no holder name: A takes its file and keeps a read lease ($(cat "$TMP/take.out"); $(cat "$TMP/att.err"))"
		continue
	fi
	rm -f "$dir/a"
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	hb=$(st "$page" "e['handed_bytes']")
	check "$page/lease, no holder name: its path gone, its lease held: still in use, not taken back ($(cat "$TMP/fill.out"); handed $hb)" \
		all_of 'grep -q "^warm fill: 0 returned" "$TMP/fill.out" && [ "$hb" = $M16 ]'
	release
	"$PREALLOC" warm fill > /dev/null 2>&1
done

: > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
left=$(find "$SHM" "$MNT2M" -type f 2> /dev/null)
check "with no targets, fill gives every file back (left: $left)" [ -z "$left" ]
finish
