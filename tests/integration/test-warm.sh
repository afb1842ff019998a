#!/bin/bash
# SPDX-License-Identifier: MIT
# The warm pool (docs/warm.md) on private mounts: tmpfs (4k), hugetlbfs (2M)
# and, where the kernel can allocate three 1G pages now, hugetlbfs (1G),
# with warm.conf targets naming them.
#
# The invariant: a holder never sees a byte another holder wrote. A's file
# is filled with a pattern through its mapping, given back, and `warm fill`
# is SIGKILLed at each named point (its file marked CLEARING, before the
# clear, after the clear's first step, between the clear and the verify,
# after the verify and before the state write); after each kill, a take
# yields a file that is all zero, or no file. A file with a link the pool
# did not make is quarantined at give and never handed out; a file its
# holder truncated is dropped; take and give killed at their named points
# leave no file held twice. Everything goes at exit (mounts, pools, state).
TAP=1
. "$(dirname "$0")/lib-admit.sh"

PAGES=${WARM_PAGES:-4k 2M 1G}
SHM=$TMP/shm
mkdir -p "$SHM"
mount -t tmpfs -o size=256M none "$SHM" || bail "cannot mount a tmpfs on $SHM"
track_mount "$SHM"
case " $PAGES " in *" 2M "*)
	private_hugetlbfs 2M
	MNT2M=$MNT
	reserve_2m 40 || bail "cannot make 40 more 2M pages free" ;;
esac
# 1G: only where the kernel gives three more 1G pages at run time (read back:
# fragmentation refuses them, proven); fill grows the pool itself (--grow-pools).
MNT1G= why1g=
case " $PAGES " in *" 1G "*)
	pool1g=$(pool_files 1048576 | head -1)
	if [ -z "$pool1g" ]; then
		why1g="this kernel has no 1G hugepage pool"
	else
		nr1g=$(cat "$pool1g")
		echo $((nr1g + 3)) > "$pool1g"
		got1g=$(cat "$pool1g")
		echo "$nr1g" > "$pool1g"
		if [ "$got1g" -lt $((nr1g + 3)) ]; then
			why1g="the kernel allocated $((got1g - nr1g)) of 3 more 1G pages (fragmented)"
		else
			private_hugetlbfs 1G
			MNT1G=$MNT
		fi
	fi ;;
esac
export PREALLOC_WARM_CONF=$TMP/warm.conf

status() {	# status PAGE KEY: KEY of the status entry of node 0, PAGE
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> "$TMP/st.err" || { echo "status failed"; return; }
	python3 -c "
import json,sys
for e in json.load(open('$TMP/st.json')):
    if e['node'] == 0 and e['page_size'] == $2 and e['mount'] == '$3':
        print(e['$1']); break
else: print(0)"
}
staged() { find "$1/.prealloc" -type f 2> /dev/null | wc -l; }

# A bad line of warm.conf: fill and status refuse the file, naming the line (exit 2), touching nothing.
printf 'node0.4k = 16M @ %s\nnode0.2M = 3M\n' "$SHM" > "$PREALLOC_WARM_CONF"
for cmd in fill status; do
	"$PREALLOC" warm $cmd > "$TMP/out" 2> "$TMP/err"
	rc=$?
	check "warm $cmd with a bad line: exit 2, the line named, nothing made (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 2 ] && grep -q "warm.conf: line 2: 3M is not a whole number of 2M pages" "$TMP/err" && [ ! -s "$TMP/out" ] && [ "$(staged "$SHM")" -eq 0 ]'
done

for page in $PAGES; do
	case $page in
	4k) dir=$SHM ps=4096 SZ=16M ;;
	2M) dir=$MNT2M ps=2097152 SZ=16M ;;
	1G) dir=$MNT1G ps=1073741824 SZ=1G ;;
	esac
	if [ -z "$dir" ]; then
		COUNT=$((COUNT + 1))
		echo "ok $COUNT - 1G # SKIP $why1g"
		continue
	fi
	SZB=$(numfmt --from=iec "$SZ")
	ZERO=$(head -c "$SZB" /dev/zero | sha256sum)
	printf 'node0.%s = 2 x %s @ %s\n' "$page" "$SZ" "$dir" > "$PREALLOC_WARM_CONF"

	# fill: two files of $SZ, READY, root's alone in the staging directory.
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	rc=$?
	check "$page: fill makes the target's two files (rc $rc: $(tail -1 "$TMP/fill.out"))" \
		all_of '[ $rc -eq 0 ] && [ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ]'
	check "$page: they sit in $dir/.prealloc, root's, mode 0600, one link each" \
		all_of '[ "$(stat -c "%U %a %h" "$dir"/.prealloc/* | sort -u)" = "root 600 1" ]'

	# take: a link at the holder's path, the holder's uid, mode 0600, all zero.
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/a" \
		--owner 65534:65534 --holder guest-a "$SZ" > "$TMP/take.out" 2>&1
	rc=$?
	check "$page: take hands a file to A (rc $rc: $(cat "$TMP/take.out"))" \
		all_of '[ $rc -eq 0 ] && [ "$(stat -c "%u %a %s" "$dir/a")" = "65534 600 $SZB" ]'
	check "$page: A's file reads all zero" [ "$(sha256sum < "$dir/a")" = "$ZERO" ]
	check "$page: status says $SZ handed" [ "$(status handed_bytes $ps "$dir")" -eq $SZB ]
	# the invariant's first half: A writes, gives back; B gets zeroes only.
	fill_pattern "$dir/a"
	"$PREALLOC" warm give --holder guest-a > "$TMP/give.out" 2>&1
	rc=$?
	check "$page: give --holder takes A's file back, DIRTY (rc $rc: $(cat "$TMP/give.out"))" \
		all_of '[ $rc -eq 0 ] && [ ! -e "$dir/a" ] && [ "$(status dirty_bytes $ps "$dir")" -eq $SZB ]'
	# Only READY files go out: the other one, never the dirty one.
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/b" "$SZ" > /dev/null 2>&1
	check "$page: B's take before the clear gets the other file, zero" \
		[ "$(sha256sum < "$dir/b")" = "$ZERO" ]
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/c" "$SZ" > /dev/null 2> "$TMP/err"
	rc=$?
	check "$page: a third take finds nothing READY: exit 3, nothing at its path (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 3 ] && [ ! -e "$dir/c" ]'
	"$PREALLOC" warm give "$dir/b" > /dev/null 2>&1

	# fill killed at each point: a take then gets zeroes, or nothing. Given
	# back with no tenant, a file is renewed (a new file takes its place);
	# given back by its tenant to itself, it is cleared in place.
	for point in warm-fill-clearing warm-renew-before-create mid-op before-check \
		warm-renew-before-retire t1:warm-fill-clearing t1:warm-fill-before-clear t1:mid-op \
		t1:before-check t1:warm-fill-after-verify; do
		ten=()
		case $point in t1:*) ten=(--tenant t1) point=${point#t1:} ;; esac
		# Both files taken, dirtied and given back (by the tenant, if any).
		"$PREALLOC" warm fill > /dev/null 2>&1
		for f in x y; do
			"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/$f" \
				"${ten[@]}" "$SZ" > /dev/null 2>&1 && fill_pattern "$dir/$f"
			"$PREALLOC" warm give "$dir/$f" "${ten[@]}" > /dev/null 2>&1
		done
		PREALLOC_TEST_PAUSE=$point "$PREALLOC" warm fill > /dev/null 2>&1 &
		pid=$!
		if wait_stopped $pid; then
			kill -KILL $pid
			wait $pid 2> /dev/null
			stopped=yes
		else
			wait $pid 2> /dev/null
			stopped="no (it ran to its end)"
		fi
		"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/k" \
			"${ten[@]}" "$SZ" > /dev/null 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			sum=$(sha256sum < "$dir/k")
			check "$page: fill killed at $point${ten[*]:+ (tenant)} (stopped: $stopped): the take gets all zero" \
				[ "$sum" = "$ZERO" ]
			"$PREALLOC" warm give "$dir/k" > /dev/null 2>&1
		else
			check "$page: fill killed at $point${ten[*]:+ (tenant)} (stopped: $stopped): no file handed (rc $rc)" \
				all_of '[ $rc -eq 3 ] && [ ! -e "$dir/k" ]'
		fi
	done
	# The tenant's files back to the pool at large: given back with no tenant, renewed.
	"$PREALLOC" warm fill > /dev/null 2>&1
	for f in x y; do
		"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/$f" \
			--tenant t1 "$SZ" > /dev/null 2>&1
		"$PREALLOC" warm give "$dir/$f" > /dev/null 2>&1
	done
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: after the kills, a fill leaves the target READY again ($(status ready_bytes $ps "$dir") bytes)" \
		[ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ]
	rate=$(status last_clear_gbps $ps "$dir")
	check "$page: status gives the last clear's rate there ($rate GB/s)" \
		python3 -c "import sys; sys.exit(not float(sys.argv[1]) > 0)" "$rate"

	# No holder: held while its path exists or a process maps it, then back at the next fill.
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/n" "$SZ" > /dev/null 2>&1
	fill_pattern "$dir/n"
	map_file "$dir/n" $((SZB >> 20)) || fail "$page: cannot map $dir/n"
	rm -f "$dir/n"	# as libvirt removes its memory directory
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: path gone but a process still maps the file: not back yet (handed $(status handed_bytes $ps "$dir"), returning $(status returning_bytes $ps "$dir"))" \
		[ $(( $(status handed_bytes $ps "$dir") + $(status returning_bytes $ps "$dir") )) -eq $SZB ]
	kill "$MAPPER"
	wait "$MAPPER" 2> /dev/null
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: mapping gone too: the next fill takes it back and clears it, READY ($(status ready_bytes $ps "$dir"))" \
		[ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ]

	# Two fills at once: the second leaves alone the file the first (alive) is clearing.
	for f in x y; do
		"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/$f" "$SZ" > /dev/null 2>&1 &&
			fill_pattern "$dir/$f"
		"$PREALLOC" warm give "$dir/$f" > /dev/null 2>&1
	done
	PREALLOC_TEST_PAUSE=mid-op "$PREALLOC" warm fill > /dev/null 2>&1 &
	pid=$!
	wait_stopped $pid || fail "$page: the first fill did not stop mid-clear"
	"$PREALLOC" warm fill > /dev/null 2>&1
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/v1" "$SZ" > /dev/null 2>&1
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/v2" "$SZ" > /dev/null 2>&1
	rc=$?
	check "$page: a second fill leaves the file a live fill is clearing (CLEARING: $(status clearing_bytes $ps "$dir")); one take gets the other, zero; the next none (rc $rc)" \
		all_of '[ "$(sha256sum < "$dir/v1")" = "$ZERO" ] && [ $rc -eq 3 ] && [ ! -e "$dir/v2" ] && [ "$(status clearing_bytes $ps "$dir")" -eq $SZB ]'
	kill -CONT $pid
	wait $pid
	rc=$?
	check "$page: the first fill, continued, finishes its file: READY (rc $rc, $(status ready_bytes $ps "$dir") ready)" \
		all_of '[ $rc -eq 0 ] && [ "$(status ready_bytes $ps "$dir")" -eq $SZB ]'
	"$PREALLOC" warm give "$dir/v1" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1

	# The pool's files are the pool's: gc keeps them, rm refuses a handed one.
	"$PREALLOC" gc > /dev/null 2>&1
	check "$page: gc keeps the READY files ($(status ready_bytes $ps "$dir") bytes)" \
		[ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ]
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/m" "$SZ" > /dev/null 2>&1
	"$PREALLOC" rm "$dir/m" > /dev/null 2> "$TMP/err"
	rc=$?
	check "$page: rm refuses a handed warm file, exit 4, the file stays (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 4 ] && [ -e "$dir/m" ] && [ "$(status handed_bytes $ps "$dir")" -eq $SZB ]'
	"$PREALLOC" warm give "$dir/m" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1

	# A link A made to its file: quarantined at give, never handed out, kept
	# recorded (the pool's link with it) while A's link holds its memory,
	# removed by the fill after A's link goes (test-warm-holder.sh).
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/a" --holder guest-a "$SZ" > /dev/null 2>&1
	ln "$dir/a" "$dir/a-kept"
	"$PREALLOC" warm give --holder guest-a > "$TMP/give.out" 2>&1
	check "$page: a file with a link of A's own is quarantined at give ($(cat "$TMP/give.out"))" \
		grep -q '1 quarantined' "$TMP/give.out"
	"$PREALLOC" warm fill > /dev/null 2>&1
	for f in b c d; do
		"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/$f" "$SZ" > /dev/null 2>&1
	done
	kept=$(stat -c %i "$dir/a-kept")
	check "$page: no take after a fill hands out the file A kept a link to" \
		all_of '! stat -c %i "$dir/b" "$dir/c" "$dir/d" 2> /dev/null | grep -qx "$kept"'
	check "$page: fill keeps it quarantined while A's link holds it, the pool's link with it ($(stat -c %h "$dir/a-kept") links, $(status quarantined_bytes $ps "$dir") bytes quarantined)" \
		all_of '[ "$(stat -c %h "$dir/a-kept")" -eq 2 ] && stat -c %i "$dir"/.prealloc/* | grep -qx "$kept" && [ "$(status quarantined_bytes $ps "$dir")" -eq $SZB ]'
	for f in b c d; do "$PREALLOC" warm give "$dir/$f" > /dev/null 2>&1; done
	rm -f "$dir/a-kept"
	# Its pages were A's link's until now; growth made for it goes back with the next pass.
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: once A's link is gone, nothing is left quarantined ($(status quarantined_bytes $ps "$dir") bytes)" \
		[ "$(status quarantined_bytes $ps "$dir")" -eq 0 ]
	# A second link to a READY file, made in the pool's own directory: take checks again.
	ready=$(find "$dir/.prealloc" -type f | head -1)
	ln "$ready" "$dir/sneaky"
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/s" "$SZ" > /dev/null 2>&1
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/u" "$SZ" > /dev/null 2>&1
	check "$page: take never hands out a READY file with a second link" \
		all_of '! stat -c %i "$dir/s" "$dir/u" 2> /dev/null | grep -qx "$(stat -c %i "$dir/sneaky")"'
	rm -f "$dir/sneaky"
	for f in s u; do "$PREALLOC" warm give "$dir/$f" > /dev/null 2>&1; done
	"$PREALLOC" warm fill > /dev/null 2>&1

	# A READY file removed from the pool's directory by hand: take passes over it to the other.
	# The one a take would pick: the first READY record of the store (its pool link, decoded).
	gone=$(python3 -c "
import sys, urllib.parse
tmp = None
for l in open(sys.argv[1]):
    f = l.split()
    if f[0] == 'rec': tmp = f[-1]
    elif f[:2] == ['warm', 'ready']: print(urllib.parse.unquote(tmp)); break" "$PREALLOC_STATE_DIR/store")
	rm -f "$gone"
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/o" "$SZ" > /dev/null 2> "$TMP/err"
	rc=$?
	check "$page: a READY file gone from the pool by hand is passed over: the take gets the other (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 0 ] && [ "$(sha256sum < "$dir/o")" = "$ZERO" ]'
	"$PREALLOC" warm give "$dir/o" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: the next fill forgets it and makes a new one (ready $(status ready_bytes $ps "$dir"), quarantined $(status quarantined_bytes $ps "$dir"))" \
		all_of '[ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ] && [ "$(status quarantined_bytes $ps "$dir")" -eq 0 ]'

	# A file its holder truncated is dropped, never handed out short.
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/t" "$SZ" > /dev/null 2>&1
	truncate -s $((SZB / 2 / ps * ps)) "$dir/t"	# half, in whole pages (1G: none)
	"$PREALLOC" warm give "$dir/t" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: a truncated file is dropped and replaced: every READY file is $SZ ($(stat -c %s "$dir"/.prealloc/* | sort -u | tr '\n' ' '))" \
		all_of '[ "$(stat -c %s "$dir"/.prealloc/* | sort -u)" = "$SZB" ]'

	# take killed after HANDED is written, give killed after RETURNING: never two holders.
	PREALLOC_TEST_PAUSE=warm-take-recorded "$PREALLOC" warm take --node 0 --page-size "$page" \
		--mount "$dir" --to "$dir/p" "$SZ" > /dev/null 2>&1 &
	pid=$!
	wait_stopped $pid && kill -KILL $pid
	wait $pid 2> /dev/null
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/q" "$SZ" > /dev/null 2>&1
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/r" "$SZ" > /dev/null 2>&1
	check "$page: a take killed after its record: its file is not handed again (q, r: $(ls "$dir" | tr '\n' ' '))" \
		all_of '! { [ -e "$dir/q" ] && [ -e "$dir/r" ]; }'
	for f in p q r; do "$PREALLOC" warm give "$dir/$f" > /dev/null 2>&1; done
	"$PREALLOC" warm fill > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1

	# give killed after RETURNING is written, the holder's link still there: fill finishes it.
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/g" "$SZ" > /dev/null 2>&1
	fill_pattern "$dir/g"
	PREALLOC_TEST_PAUSE=warm-give-recorded "$PREALLOC" warm give "$dir/g" > /dev/null 2>&1 &
	pid=$!
	wait_stopped $pid && kill -KILL $pid
	wait $pid 2> /dev/null
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: a give killed before it removed the link: fill removes it and clears the file, not quarantined ($(status ready_bytes $ps "$dir") ready, $(status quarantined_bytes $ps "$dir") quarantined)" \
		all_of '[ ! -e "$dir/g" ] && [ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ]'

	# Holes its holder punched: the file leaves the pool; the one in its place is whole.
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/h" "$SZ" > /dev/null 2>&1
	fill_pattern "$dir/h"
	fallocate -p -o 0 -l $((SZB / 2 / ps * ps + ps)) "$dir/h"
	ino=$(stat -c %i "$dir/h")
	"$PREALLOC" warm give "$dir/h" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
	whole=0
	for hf in "$dir"/.prealloc*/*; do
		[ $(( $(stat -c "%b * %B" "$hf") )) -ge "$SZB" ] && [ "$(sha256sum < "$hf")" = "$ZERO" ] &&
			whole=$((whole + 1))
	done
	check "$page: a punched file leaves the pool; after fill both files are whole, all zero ($whole of 2)" \
		all_of '[ $whole -eq 2 ] && [ -z "$(find "$dir"/.prealloc* -inum "$ino")" ]'

	# A partial hit: only smaller READY files; the largest is grown, the rest populated on the node.
	if [ "$page" != 1G ]; then
		big=$((SZB + SZB / 2))
		# Not from pages promised to another run: one admitted for every free
		# page and stopped before it maps them (the kernel reserves nothing yet).
		if [ "$page" = 2M ]; then
			hfree=$(cat /sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages)
			PREALLOC_TEST_PAUSE=after-admission "$PREALLOC" --node 0 --page-size 2M \
				--file "$dir/promised" $((hfree * 2))M > /dev/null 2>&1 &
			hold=$!
			on_exit "kill -KILL $hold"
			wait_stopped $hold || fail "2M: the run holding every free page did not stop after admission"
			"$PREALLOC" warm take --node 0 --page-size 2M --mount "$dir" --to "$dir/w" \
				$((big >> 20))M > /dev/null 2> "$TMP/err"
			rc=$?
			check "2M: a partial hit is refused while its growth's pages are promised to another run (rc $rc: $(cat "$TMP/err"))" \
				all_of '[ $rc -eq 3 ] && [ ! -e "$dir/w" ] && grep -q "promised to other runs" "$TMP/err" && [ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ]'
			kill -CONT $hold
			wait $hold
			"$PREALLOC" rm "$dir/promised" > /dev/null 2>&1
		fi
		"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/w" --json \
			$((big >> 20))M > "$TMP/take.json" 2> "$TMP/err"
		rc=$?
		check "$page: a take larger than every READY file is a partial hit: grown to $((big >> 20))M, resident, zero (rc $rc: $(cat "$TMP/err"))" \
			all_of '[ $rc -eq 0 ] && [ "$(json_get "$TMP/take.json" "d[\"hit\"]")" = partial ] && [ "$(stat -c %s "$dir/w")" -eq $big ] && [ $(( $(stat -c "%b * %B" "$dir/w") )) -ge $big ] && cmp -s -n $big "$dir/w" /dev/zero'
		"$PREALLOC" warm give "$dir/w" > /dev/null 2>&1
		"$PREALLOC" warm fill > /dev/null 2>&1
		# A file cut for a small guest: once back, fill gives it up for one of the target's size.
		"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/s" \
			$((SZB / 2 >> 20))M > /dev/null 2>&1
		"$PREALLOC" warm give "$dir/s" > /dev/null 2>&1
		"$PREALLOC" warm fill > /dev/null 2>&1
		sizes=$(find "$dir/.prealloc" -type f -printf '%s\n' | sort | uniq -c | tr -s ' \n' '  ')
		check "$page: after a cut take, fill restores the target's two $SZ files ($sizes)" \
			all_of '[ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ] && [ "$sizes" = " 2 $SZB " ]'
	fi

	# Reserve (what the hook does at prepare): the file is res-a's, linked
	# nowhere; no other take gets it; a take of what was reserved links it.
	"$PREALLOC" warm fill > /dev/null 2>&1
	"$PREALLOC" warm take --reserve --holder res-a --node 0 --page-size "$page" --mount "$dir" \
		"$SZ" > "$TMP/res.out" 2>&1
	rc=$?
	check "$page: --reserve holds a file for res-a, linked nowhere (rc $rc: $(cat "$TMP/res.out"))" \
		all_of '[ $rc -eq 0 ] && [ "$(status handed_bytes $ps "$dir")" -eq $SZB ] && [ "$(status ready_bytes $ps "$dir")" -eq $SZB ] && [ -z "$(ls "$dir")" ]'
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/o1" "$SZ" > /dev/null 2>&1
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/o2" "$SZ" > /dev/null 2>&1
	rc=$?
	check "$page: other takes get the other file, never the reserved one (second: rc $rc)" \
		all_of '[ -e "$dir/o1" ] && [ $rc -eq 3 ] && [ ! -e "$dir/o2" ]'
	"$PREALLOC" warm take --reserved --holder res-b --node 0 --page-size "$page" --mount "$dir" \
		--to "$dir/rb" "$SZ" > /dev/null 2>&1
	rc=$?
	check "$page: another holder cannot link res-a's file (rc $rc)" all_of '[ $rc -eq 3 ] && [ ! -e "$dir/rb" ]'
	"$PREALLOC" warm take --reserved --holder res-a --node 0 --page-size "$page" --mount "$dir" \
		--to "$dir/ra" --owner 65534:65534 "$SZ" > "$TMP/res.out" 2>&1
	rc=$?
	check "$page: --reserved links res-a's file at its path, its owner's, all zero (rc $rc: $(cat "$TMP/res.out"))" \
		all_of '[ $rc -eq 0 ] && [ "$(stat -c "%u %s" "$dir/ra")" = "65534 $SZB" ] && [ "$(sha256sum < "$dir/ra")" = "$ZERO" ]'
	"$PREALLOC" warm give --holder res-a > /dev/null 2>&1
	"$PREALLOC" warm give "$dir/o1" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
	# A reservation whose guest never starts: back to the pool once it expires.
	"$PREALLOC" warm take --reserve --holder res-x --holder-check "$TMP/res-x.xml" --expires 1 \
		--node 0 --page-size "$page" --mount "$dir" "$SZ" > /dev/null 2>&1
	sleep 1.5
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: a reservation past its expiry, its check path never made, is READY again ($(status ready_bytes $ps "$dir") ready, $(status handed_bytes $ps "$dir") handed)" \
		all_of '[ "$(status ready_bytes $ps "$dir")" -eq $((2 * SZB)) ] && [ "$(status handed_bytes $ps "$dir")" -eq 0 ]'

	# Target 0: fill drops the pool's READY files.
	printf 'node0.%s = 0 @ %s\n' "$page" "$dir" > "$PREALLOC_WARM_CONF"
	"$PREALLOC" warm fill > /dev/null 2>&1
	left=$(staged "$dir")
	[ "$left" -eq 0 ] || "$PREALLOC" warm status >&2
	check "$page: a target of 0 leaves no warm file ($left left)" [ "$left" -eq 0 ]
	# Nothing READY: --fallback makes the file now (cold) and hands it over.
	"$PREALLOC" warm take --node 0 --page-size "$page" --mount "$dir" --to "$dir/f" --fallback --json \
		"$SZ" > "$TMP/take.json" 2> "$TMP/err"
	rc=$?
	check "$page: take --fallback with nothing READY populates one now: hit cold, $SZ, zero (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 0 ] && [ "$(json_get "$TMP/take.json" "d[\"hit\"]")" = cold ] && [ "$(stat -c %s "$dir/f")" -eq $SZB ] && [ "$(sha256sum < "$dir/f")" = "$ZERO" ]'
	"$PREALLOC" warm give "$dir/f" > /dev/null 2>&1
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "$page: ... and given back, a fill at target 0 removes it too ($(staged "$dir") left)" \
		[ "$(staged "$dir")" -eq 0 ]
	rm -f "$dir"/[a-z]
done

# One mount named twice (a trailing /): the first line counts, the second is
# ignored and said so; the pool does not swing between them pass after pass.
printf 'node0.4k = 16M @ %s\nnode0.4k = 32M @ %s/\n' "$SHM" "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill1.out" 2>&1
first=$(find "$SHM/.prealloc" -type f -printf '%i\n' | sort | tr '\n' ' ')
"$PREALLOC" warm fill > "$TMP/fill2.out" 2>&1
check "one mount under two names: line 1 counts (16M), line 2 ignored and named, a second fill changes nothing ($first/$(find "$SHM/.prealloc" -type f -printf '%i\n' | sort | tr '\n' ' '))" \
	all_of '[ "$(status ready_bytes 4096 "$SHM")" -eq $((16 << 20)) ] && grep -q "line 2 names the mount of line 1" "$TMP/fill1.out" && [ "$first" = "$(find "$SHM/.prealloc" -type f -printf "%i\n" | sort | tr "\n" " ")" ] && grep -q " 0 created, 0 removed" "$TMP/fill2.out"' ||
	sed 's/^/# /' "$TMP/fill1.out" "$TMP/fill2.out"
printf 'node0.4k = 0 @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1
finish
