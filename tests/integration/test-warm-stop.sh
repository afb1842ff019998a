#!/bin/bash
# SPDX-License-Identifier: MIT
# The warm pool's stops, choices, daemon and counters (docs/warm.md; issue
# 42), on a private hugetlbfs of 2M pages with a warm.conf of its own:
#  - stopped, not finished: serve stopped by SIGTERM in the middle of a
#    clear (in place for a tenant, or the renewal's new file) and a fill
#    stopped by SIGTERM there leave the file DIRTY (or CLEARING of a dead
#    run), never READY; every take after it reads all zero;
#  - which file: a target lowered gives back only READY or DIRTY files,
#    never a HANDED or RESERVED one (drop_pick, which pressure's shrink
#    uses too);
#  - the daemon: with a check interval of an hour, a give wakes serve (the
#    store's save is a rename into the state dir) and the file is READY
#    again within seconds; a SIGHUP with a bad warm.conf keeps the targets
#    it had (a misfit given back is replaced by a file of the old target);
#    its counters at stop, each a different value;
#  - fill's counters, each a different value, and a target exactly met: a
#    pass with nothing to do.
TAP=1
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
DIR=$MNT
SZ=16M
SZB=$((16 << 20))
ZERO=$(head -c "$SZB" /dev/zero | sha256sum)
export PREALLOC_WARM_CONF=$TMP/warm.conf
export PREALLOC_CALIBRATION=$TMP/calibration

status() {	# status KEY: KEY of node 0's 2M entry on $DIR
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> /dev/null || { echo -1; return; }
	python3 -c "
import json
for e in json.load(open('$TMP/st.json')):
    if e['node'] == 0 and e['page_size'] == 2097152 and e['mount'] == '$DIR':
        print(e['$1']); break
else: print(0)"
}
ready_is() { [ "$(status ready_bytes)" -eq "$1" ]; }
take() {	# take NAME [options] [SIZE]: a file at $DIR/NAME (16M unless a size ends the options)
	local name=$1 size=$SZ
	shift
	case ${!#} in [0-9]*M) size=${!#}; set -- "${@:1:$(($# - 1))}" ;; esac
	"$PREALLOC" warm take --node 0 --page-size 2M --mount "$DIR" --to "$DIR/$name" "$@" "$size"
}
conf() {	# conf N [SETTINGS...]: N x 16M on $DIR (0: none), then each setting on a line
	if [ "$1" -eq 0 ]; then
		printf 'node0.2M = 0 @ %s\n' "$DIR"
	else
		printf 'node0.2M = %s x %s @ %s\n' "$1" "$SZ" "$DIR"
	fi > "$PREALLOC_WARM_CONF"
	shift
	printf '%s\n' "$@" >> "$PREALLOC_WARM_CONF"
}
# fill_says: one `warm fill`, its summary line in $TMP/fill.out.
fill_says() { "$PREALLOC" warm fill > "$TMP/fill.out" 2> "$TMP/fill.err"; }
# counters: fill's summary as "R returned, N renewed, C cleared, M created, D removed".
counters() {
	sed -E 's/^warm fill: ([0-9]+) returned, ([0-9]+) renewed \([^)]*\), ([0-9]+) cleared \([^)]*\), ([0-9]+) created, ([0-9]+) removed$/\1 returned, \2 renewed, \3 cleared, \4 created, \5 removed/' "$TMP/fill.out"
}
# takes_zero NAME... [-- TAKE OPTIONS]: each file taken is all zero; GOT and ZEROS say how many.
takes_zero() {
	local names=() f
	while [ $# -gt 0 ] && [ "$1" != -- ]; do names+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	GOT=0 ZEROS=0
	for f in "${names[@]}"; do
		take "$f" "$@" > /dev/null 2>&1 || continue
		GOT=$((GOT + 1))
		[ "$(sha256sum < "$DIR/$f")" = "$ZERO" ] && ZEROS=$((ZEROS + 1))
	done
}
give_all() { local f; for f in "$@"; do "$PREALLOC" warm give "$DIR/$f" > /dev/null 2>&1; done; }

# PARTS: which of the four below run (all by default; a shorter run while debugging).
PARTS=${PARTS:-1234}

# 1. Stopped, not finished. Two files: one dirtied and given back (by its
# tenant: cleared in place; without: renewed), the run paused at mid-op of
# that clear (its first step done, the rest not), then SIGTERM and SIGCONT.
for leg in serve:t1 serve: fill:t1 fill:; do
	[[ $PARTS == *1* ]] || break
	run=${leg%%:*} ten=()
	[ -n "${leg#*:}" ] && ten=(--tenant "${leg#*:}")
	how=" (renewal)"
	[ -n "${ten[*]}" ] && how=" (in place, tenant)"
	what="$run stopped by SIGTERM mid-clear$how"
	conf 2 'check_interval = 1s' 'pressure = off'
	"$PREALLOC" warm fill > /dev/null 2>&1
	take k "${ten[@]}" > /dev/null 2> "$TMP/err" && fill_pattern "$DIR/k"
	"$PREALLOC" warm give "$DIR/k" "${ten[@]}" > /dev/null 2>&1
	check "$what: the file given back is DIRTY ($(status dirty_bytes); $(cat "$TMP/err"))" \
		[ "$(status dirty_bytes)" -eq $SZB ]
	PREALLOC_TEST_PAUSE=mid-op "$PREALLOC" warm $run > /dev/null 2> "$TMP/run.err" &
	pid=$!
	wait_stopped $pid
	stopped=$?
	kill -TERM $pid
	kill -CONT $pid
	wait $pid
	rc=$?
	check "$what: it stopped at mid-op and ended on SIGTERM (rc $rc)" \
		all_of '[ $stopped -eq 0 ] && { [ $run = fill ] || [ $rc -eq 0 ]; }'
	# serve's stop ends the clear (DIRTY again); fill dies of it (CLEARING, its run dead).
	dty=$SZB clr=0
	[ $run = fill ] && dty=0 clr=$SZB
	check "$what: the file is not READY: $dty DIRTY, $clr CLEARING (READY $(status ready_bytes), DIRTY $(status dirty_bytes), CLEARING $(status clearing_bytes))" \
		all_of 'ready_is $SZB && [ "$(status dirty_bytes)" -eq $dty ] && [ "$(status clearing_bytes)" -eq $clr ]'
	takes_zero v w -- "${ten[@]}"
	check "$what: one file taken after it ($GOT), all zero ($ZEROS)" \
		all_of '[ $GOT -eq 1 ] && [ $ZEROS -eq 1 ]'
	give_all v w
	"$PREALLOC" warm fill > /dev/null 2>&1
	takes_zero v w -- "${ten[@]}"
	check "$what: the next fill clears it: both taken ($GOT), all zero ($ZEROS)" \
		all_of '[ $GOT -eq 2 ] && [ $ZEROS -eq 2 ]'
	give_all v w
done
"$PREALLOC" warm fill > /dev/null 2>&1

# 2. Which file goes when a target is lowered: READY (or DIRTY) only; a
# HANDED file (its holder's link and bytes) and a RESERVED one stay, and go
# once given back.
if [[ $PARTS == *2* ]]; then
	conf 4
	"$PREALLOC" warm fill > /dev/null 2>&1
	take h > /dev/null 2>&1 && fill_pattern "$DIR/h"
	hsum=$(sha256sum < "$DIR/h")
	"$PREALLOC" warm take --reserve --holder res-a --node 0 --page-size 2M --mount "$DIR" "$SZ" \
		> /dev/null 2> "$TMP/err"
	"$PREALLOC" warm fill > /dev/null 2>&1
	check "which file: 2 READY, 2 HANDED (one reserved) before the target goes down ($(status ready_bytes) $(status handed_bytes); $(cat "$TMP/err"))" \
		all_of 'ready_is $((2 * SZB)) && [ "$(status handed_bytes)" -eq $((2 * SZB)) ]'
	conf 0
	fill_says
	check "which file: a target of 0 gives back the 2 READY files alone ($(cat "$TMP/fill.out"))" \
		all_of 'ready_is 0 && grep -q " 2 removed" "$TMP/fill.out"'
	check "... the HANDED and RESERVED files stay handed ($(status handed_bytes))" \
		[ "$(status handed_bytes)" -eq $((2 * SZB)) ]
	check "... the holder's file is whole: its link, its bytes" \
		all_of '[ -f "$DIR/h" ] && [ "$(sha256sum < "$DIR/h")" = "$hsum" ] && [ "$(stat -c %h "$DIR/h")" -eq 2 ]'
	"$PREALLOC" warm give "$DIR/h" > /dev/null 2>&1
	"$PREALLOC" warm give --holder res-a > /dev/null 2>&1
	fill_says
	check "... given back, the next pass gives them back too ($(status handed_bytes) handed, $(status ready_bytes) ready; $(cat "$TMP/fill.out"))" \
		all_of '[ "$(status handed_bytes)" -eq 0 ] && ready_is 0 && grep -q " 2 removed" "$TMP/fill.out"'
fi

# 3. The daemon, checking on its own once an hour: only the store's changes wake it.
if [[ $PARTS == *3* ]]; then
	notify=$TMP/serve.log
	conf 2 'check_interval = 60m' 'pressure = off'
	"$PREALLOC" warm serve > "$notify" 2>&1 &
	SERVE=$!
	on_exit "kill -KILL $SERVE"
	wait_for 60 ready_is $((2 * SZB))
	check "serve: 2 x $SZ READY at start ($(status ready_bytes))" ready_is $((2 * SZB))
	sleep 1
	for n in 1 2; do
		take a --tenant t1 > /dev/null 2>&1 && fill_pattern "$DIR/a"
		"$PREALLOC" warm give "$DIR/a" --tenant t1 > /dev/null 2>&1
		t0=$SECONDS
		wait_for 8 ready_is $((2 * SZB))
		check "serve (check interval 60 min): give $n wakes it, the file is READY again in $((SECONDS - t0)) s ($(status ready_bytes) ready, $(status dirty_bytes) dirty)" \
			ready_is $((2 * SZB))
	done
	takes_zero v w -- --tenant t1
	check "... both takes after it read all zero ($GOT, $ZEROS)" all_of '[ $GOT -eq 2 ] && [ $ZEROS -eq 2 ]'
	give_all v w
	wait_for 8 ready_is $((2 * SZB))
	# A bad warm.conf at SIGHUP: the targets it had stay. A file cut to 8M and
	# given back is a misfit: serve gives it back and makes one of the old
	# target's 16M, woken by the give alone.
	cp "$PREALLOC_WARM_CONF" "$TMP/good.conf"
	echo 'node0.2M = 3M' >> "$PREALLOC_WARM_CONF"
	kill -HUP "$SERVE"
	wait_for 10 grep -q 'line 4: 3M is not a whole number' "$notify"
	check "serve: SIGHUP with a bad line is logged, serve still up" \
		all_of 'grep -q "line 4: 3M is not a whole number" "$notify" && kill -0 $SERVE'
	# The good file back (status reads it too), not read by serve: no SIGHUP.
	cp "$TMP/good.conf" "$PREALLOC_WARM_CONF"
	take c 8M > /dev/null 2> "$TMP/err" && fill_pattern "$DIR/c"
	check "... a take of 8M cuts a 16M file ($(status ready_bytes) ready, $(status handed_bytes) handed; $(cat "$TMP/err"))" \
		all_of 'ready_is $SZB && [ "$(status handed_bytes)" -eq $((8 << 20)) ]'
	"$PREALLOC" warm give "$DIR/c" > /dev/null 2>&1
	wait_for 10 ready_is $((2 * SZB))
	check "... given back, serve keeps the old target: 2 x $SZ READY again ($(status ready_bytes))" \
		ready_is $((2 * SZB))
	takes_zero v w
	check "... both takes after it read all zero ($GOT, $ZEROS)" all_of '[ $GOT -eq 2 ] && [ $ZEROS -eq 2 ]'
	give_all v w
	wait_for 10 ready_is $((2 * SZB))
	kill -TERM "$SERVE"
	wait "$SERVE"
	rc=$?
	stopline=$(grep 'stopped after' "$notify")
	check "serve's counters at stop: 2 cleared, 3 made, 1 given back (8 MiB), 0 under pressure (rc $rc: $stopline)" \
		all_of '[ $rc -eq 0 ] && [[ $stopline == *": 2 cleared, 3 made, 1 given back (8 MiB, 0 MiB of it under 0 pressure events)" ]]'
	# A pass whose only work was renewals is not idle: a give saved while it
	# ran is not told from its own saves, so serve looks once more at once
	# instead of waiting the hour. Both files of the target taken, r given
	# back without a tenant: serve's first pass renews it and does nothing
	# else (the target counts the handed s). serve stops after each pass
	# (warm-serve-pass); let go after the first, it must stop again at once,
	# for its second look.
	conf 2 'check_interval = 60m' 'pressure = off'
	"$PREALLOC" warm fill > /dev/null 2>&1
	take r > /dev/null 2>&1 && fill_pattern "$DIR/r"
	take s > /dev/null 2>&1 && fill_pattern "$DIR/s"
	"$PREALLOC" warm give "$DIR/r" > /dev/null 2>&1
	PREALLOC_TEST_PAUSE=warm-serve-pass "$PREALLOC" warm serve > "$TMP/serve-r.log" 2>&1 &
	RSERVE=$!
	on_exit "kill -KILL $RSERVE"
	if wait_stopped $RSERVE; then
		first=$(grep -v '^$' "$TMP/serve-r.log" | tail -1)
		kill -CONT $RSERVE
		wait_stopped $RSERVE
		again=$?
		check "serve (check interval 60 min): a pass that only renewed ($first) looks once more at once (stopped again: $again, 0 is yes)" \
			all_of '[[ $first == *": 0 returned, 1 renewed "*", 0 cleared "*", 0 made, 0 given back "* ]] && [ $again -eq 0 ]'
	else
		fail "serve never stopped at warm-serve-pass ($(cat "$TMP/serve-r.log"))"
	fi
	kill -KILL $RSERVE
	wait $RSERVE 2> /dev/null
	"$PREALLOC" warm give "$DIR/s" > /dev/null 2>&1
	# A lease an open has broken is not a lease held: a file its tenant gave
	# back, cleared in place under a write lease, opened (O_NONBLOCK: the open
	# fails, the break stays pending) between the lease and the clear's end,
	# is renewed (a new inode READY), never READY as it is.
	conf 1 'pressure = off'
	"$PREALLOC" warm fill > /dev/null 2>&1
	take b --tenant t1 > /dev/null 2>&1 && fill_pattern "$DIR/b"
	old=$(stat -c %i "$DIR/b" 2> /dev/null)
	"$PREALLOC" warm give "$DIR/b" --tenant t1 > /dev/null 2>&1
	PREALLOC_TEST_PAUSE=warm-fill-before-clear "$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 &
	FPID=$!
	on_exit "kill -KILL $FPID"
	if wait_stopped $FPID; then
		opened=$(python3 - "$DIR/.prealloc" "$old" <<'PY'
import errno, os, sys
for d, _, names in os.walk(sys.argv[1]):
  for n in names:
    p = os.path.join(d, n)
    if os.path.isfile(p) and os.stat(p).st_ino == int(sys.argv[2]):
      try:
        os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK))
        print('opened')
      except OSError as e:
        print(errno.errorcode[e.errno])
PY
)
		kill -CONT $FPID
		wait $FPID
		inos=$(find "$DIR/.prealloc" -type f -exec stat -c %i {} + | tr '\n' ' ')
		check "a file opened while it was cleared in place (its lease broken: $opened) is renewed, not READY as it was (inode $old; now $inos; $(tr '\n' ' ' < "$TMP/fill.out"))" \
			all_of '[ "$opened" = EAGAIN ] && ready_is $SZB && ! grep -qw "$old" <<< "$inos" &&
				grep -q " 1 renewed" "$TMP/fill.out"'
	else
		fail "fill never stopped at warm-fill-before-clear ($(cat "$TMP/fill.out"))"
	fi
	# A step of serve's own that failed part-way: its clear done, the store's
	# lock held by another past the lock's timeout (30 s), so that the end of
	# the clear cannot be written; the CLEARING record it left (this live
	# serve's) is DIRTY again at its next pass, and READY after it, never
	# stuck.
	conf 1 'check_interval = 1s' 'pressure = off'
	"$PREALLOC" warm fill > /dev/null 2>&1
	take b --tenant t1 > /dev/null 2>&1 && fill_pattern "$DIR/b"
	"$PREALLOC" warm give "$DIR/b" --tenant t1 > /dev/null 2>&1
	PREALLOC_TEST_PAUSE=warm-fill-after-verify "$PREALLOC" warm serve > "$TMP/serve-c.log" 2>&1 &
	CSERVE=$!
	on_exit "kill -KILL $CSERVE"
	if wait_stopped $CSERVE && hold_lock "$PREALLOC_STATE_DIR/lock"; then
		kill -CONT $CSERVE
		sleep 33	# past the lock's timeout: the clear's end not written
		clearing=$(status clearing_bytes)
		kill $HOLDER
		wait $HOLDER 2> /dev/null
		# Its next clear of the file stops at the same point: let go.
		wait_stopped $CSERVE && kill -CONT $CSERVE
		wait_for 10 ready_is $SZB
		check "serve's own step failed part-way (the lock held past its timeout: $clearing bytes CLEARING): DIRTY again, then READY within seconds ($(status ready_bytes) ready, $(status clearing_bytes) clearing; $(tail -2 "$TMP/serve-c.log" | tr '\n' ' '))" \
			all_of '[ "$clearing" -eq $SZB ] && ready_is $SZB && [ "$(status clearing_bytes)" -eq 0 ]'
	else
		fail "serve never stopped at warm-fill-after-verify, or the lock was not held ($(cat "$TMP/serve-c.log"))"
	fi
	kill -KILL $CSERVE
	wait $CSERVE 2> /dev/null
fi

# 4. fill's counters, each its own value: 2 returned (holders gone), 3
# renewed (those and one given back), 1 cleared (given back by its tenant),
# 4 created (the target raised from 6 to 10).
if [[ $PARTS == *4* ]]; then
	conf 6
	"$PREALLOC" warm fill > /dev/null 2>&1
	fill_says
	check "fill: the target exactly met, nothing to do ($(counters))" \
		[ "$(counters)" = "0 returned, 0 renewed, 0 cleared, 0 created, 0 removed" ]
	for f in a d e; do take $f > /dev/null 2>&1 && fill_pattern "$DIR/$f"; done
	take t --tenant t1 > /dev/null 2>&1 && fill_pattern "$DIR/t"
	"$PREALLOC" warm give "$DIR/a" > /dev/null 2>&1
	"$PREALLOC" warm give "$DIR/t" --tenant t1 > /dev/null 2>&1
	rm -f "$DIR/d" "$DIR/e"
	conf 10
	fill_says
	check "fill's counters: 2 returned, 3 renewed, 1 cleared, 4 created, 0 removed ($(counters))" \
		[ "$(counters)" = "2 returned, 3 renewed, 1 cleared, 4 created, 0 removed" ]
	check "... 10 x $SZ READY ($(status ready_bytes))" ready_is $((10 * SZB))
	takes_zero a b c d e f g h i j -- --tenant t1
	check "... all ten taken ($GOT), all zero ($ZEROS)" all_of '[ $GOT -eq 10 ] && [ $ZEROS -eq 10 ]'
	give_all a b c d e f g h i j
	conf 7
	fill_says
	check "fill: a target lowered from 10 to 7 with 10 DIRTY gives back 3 and renews 7 ($(counters))" \
		[ "$(counters)" = "0 returned, 7 renewed, 0 cleared, 0 created, 3 removed" ]
	check "... 7 x $SZ READY ($(status ready_bytes))" ready_is $((7 * SZB))
fi

conf 0
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1
check "at the end no warm file is left ($(find "$DIR/.prealloc" -type f | wc -l))" \
	[ "$(find "$DIR/.prealloc" -type f | wc -l)" -eq 0 ]
finish
