#!/bin/bash
# SPDX-License-Identifier: MIT
# `prealloc warm serve` (docs/warm.md), the daemon, on a private hugetlbfs
# of 2M pages with a warm.conf of its own:
#  - it tells a service manager it is up: READY=1 on a $NOTIFY_SOCKET the
#    test owns (sd_notify's protocol, what Type=notify waits for), and
#    STOPPING=1 then exit 0 at SIGTERM;
#  - it keeps the target full, and a file given back becomes READY (zero)
#    with no other command; a file whose holder left (path gone, nothing
#    maps it) comes back by its liveness check alone;
#  - SIGHUP with a lower target: the pool shrinks, and the hugetlb pool by
#    what the warm files had added to it;
#  - admission: a cold request on a node whose free pages are all in READY
#    warm files cuts one, then removes one, and its JSON report says so;
#  - pressure: a reader of a 1 GiB disk file (random reads through a
#    mapping) inside a v1 memory cgroup of 256 MiB stalls on reclaim and
#    refaults, PSI fires, and the pool gives back a step (the time printed);
#  - killed at each named point of its pass, the next take is all zero or
#    nothing (the part 1 invariant).
TAP=1
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
DIR=$MNT
PS=2097152
SZ=16M
SZB=$((16 << 20))
PAGES_PER=$((SZB / PS))
ZERO=$(head -c "$SZB" /dev/zero | sha256sum)
export PREALLOC_WARM_CONF=$TMP/warm.conf
POOL=/proc/sys/vm/nr_hugepages

status() {	# status KEY: KEY of node 0's 2M entry on $DIR
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> /dev/null || { echo -1; return; }
	python3 -c "
import json
for e in json.load(open('$TMP/st.json')):
    if e['node'] == 0 and e['page_size'] == $PS and e['mount'] == '$DIR':
        print(e['$1']); break
else: print(0)"
}
ready_is() { [ "$(status ready_bytes)" -eq "$1" ]; }
warm_at_most() {	# every state's bytes together at most $1 (false when status fails)
	local s t=0 v
	for s in ready dirty clearing returning handed populating; do
		v=$(status ${s}_bytes)
		[ "$v" -ge 0 ] || return 1
		t=$((t + v))
	done
	[ "$t" -le "$1" ]
}
take() {	# take NAME [options]: a 16M file at $DIR/NAME
	local name=$1
	shift
	"$PREALLOC" warm take --node 0 --page-size 2M --mount "$DIR" --to "$DIR/$name" "$@" "$SZ"
}

# notify_listen: a datagram socket at $TMP/notify that logs what it gets to
# $TMP/notify.log, one line per datagram (NOTIFY, killed at exit).
notify_listen() {
	rm -f "$TMP/notify" "$TMP/notify.log"
	python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print('bound', flush=True)
while True:
    d = s.recv(4096).decode()
    with open(sys.argv[2], 'a') as f:
        f.write(d.replace('\n', ' ') + '\n')
" "$TMP/notify" "$TMP/notify.log" > "$TMP/notify.out" &
	NOTIFY=$!
	on_exit "kill $NOTIFY"
	wait_for 10 grep -q bound "$TMP/notify.out"
}
# serve_start: serve in the background (SERVE), its log in $TMP/serve.log.
serve_start() {
	NOTIFY_SOCKET=$TMP/notify "$PREALLOC" warm serve > "$TMP/serve.log" 2>&1 &
	SERVE=$!
	on_exit "kill -KILL $SERVE"
}
serve_stop() {
	kill -TERM "$SERVE"
	wait "$SERVE"
}

# The clear kernels' ranking, measured by serve at start, goes here.
export PREALLOC_CALIBRATION=$TMP/calibration
hp0=$(cat $POOL)
free0=$(hp free 2048)
cat > "$PREALLOC_WARM_CONF" <<EOF
node0.2M = 2 x $SZ @ $DIR
check_interval = 1s
pressure = off
EOF

# Up: READY=1 to the socket the test owns, once warm.conf is read.
notify_listen || bail "cannot bind a notify socket at $TMP/notify"
serve_start
wait_for 20 grep -q 'READY=1' "$TMP/notify.log"
check "serve tells its service manager READY=1 on \$NOTIFY_SOCKET ($(cat "$TMP/notify.log" 2> /dev/null))" \
	grep -q 'READY=1' "$TMP/notify.log"
check "serve ranked the clear kernels at start, before READY=1, and kept it ($(grep -o 'large clears use.*' "$TMP/serve.log"))" \
	all_of 'grep -q "^kernel " "$PREALLOC_CALIBRATION.ranking" && grep -q "large clears use .*measured by warm serve at start" "$TMP/serve.log"'
wait_for 60 ready_is $((2 * SZB))
check "serve fills the target by itself: 2 x $SZ READY ($(status ready_bytes))" ready_is $((2 * SZB))
check "... the pool grew for them ($hp0 -> $(cat $POOL) pages, $free0 were free)" \
	[ "$(cat $POOL)" -ge $((hp0 + 2 * PAGES_PER - free0)) ]

# A give: READY again with no other command, and zero.
take a > /dev/null 2>&1 && fill_pattern "$DIR/a"
"$PREALLOC" warm give "$DIR/a" > /dev/null 2>&1
wait_for 30 ready_is $((2 * SZB))
check "a file given back is cleared and READY again, no other command run ($(status ready_bytes) ready, $(status dirty_bytes) dirty)" \
	ready_is $((2 * SZB))
take b > /dev/null 2>&1
take c > /dev/null 2>&1
check "both takes after it read all zero" \
	all_of '[ "$(sha256sum < "$DIR/b")" = "$ZERO" ] && [ "$(sha256sum < "$DIR/c")" = "$ZERO" ]'
"$PREALLOC" warm give "$DIR/b" > /dev/null 2>&1
"$PREALLOC" warm give "$DIR/c" > /dev/null 2>&1

# A holder gone without a give: its path removed, nothing maps it: the liveness check brings it back.
wait_for 30 ready_is $((2 * SZB))
take n > /dev/null 2>&1 && fill_pattern "$DIR/n"
rm -f "$DIR/n"
wait_for 30 ready_is $((2 * SZB))
check "a file whose holder left without a give (path gone, unmapped) is READY again by serve's check alone ($(status ready_bytes))" \
	ready_is $((2 * SZB))

# SIGHUP with a lower target: one file given back, and its growth with it.
before=$(cat $POOL)
sed -i "s/^node0.2M = .*/node0.2M = 1 x $SZ @ ${DIR//\//\\/}/" "$PREALLOC_WARM_CONF"
kill -HUP "$SERVE"
wait_for 30 warm_at_most $SZB
check "SIGHUP with a target of 1 x $SZ: the pool gives one file back ($(status ready_bytes) ready)" \
	ready_is $SZB
check "... and the hugetlb pool shrinks by its pages ($before -> $(cat $POOL), free at start $free0)" \
	[ "$(cat $POOL)" -le $((before - PAGES_PER + free0)) ]
grep -q 'read again' "$TMP/serve.log"
check "serve logs that it read warm.conf again" [ $? -eq 0 ]

# A bad warm.conf at SIGHUP: logged, the old targets kept, serve still up.
cp "$PREALLOC_WARM_CONF" "$TMP/good.conf"
echo 'node0.2M = 3M' >> "$PREALLOC_WARM_CONF"
kill -HUP "$SERVE"
wait_for 10 grep -q 'line 4: 3M is not a whole number' "$TMP/serve.log"
check "SIGHUP with a bad line: serve names it and keeps serving (alive: $(kill -0 $SERVE 2>&1 && echo yes))" \
	all_of 'grep -q "line 4: 3M is not a whole number" "$TMP/serve.log" && kill -0 $SERVE'
cp "$TMP/good.conf" "$PREALLOC_WARM_CONF"

# SIGTERM: STOPPING=1, exit 0.
serve_stop
rc=$?
check "SIGTERM: serve says STOPPING=1 and exits 0 (rc $rc)" \
	all_of '[ $rc -eq 0 ] && grep -q STOPPING=1 "$TMP/notify.log"'

# Admission takes from the pool: free pages short, the READY file is cut, then removed.
free=$(hp free 2048)
if [ "$free" -gt 0 ]; then
	# Pages free besides the warm file's: used up by a file of our own first, so they are short.
	"$PREALLOC" --node 0 --page-size 2M --file "$DIR/fillup" "$((free * 2))M" > /dev/null 2>&1
fi
"$PREALLOC" --node 0 --page-size 2M --file "$DIR/big" 64M > /dev/null 2> "$TMP/err"
rc=$?
check "a cold 64M request the warm file could not cover is refused (exit 3) and takes nothing from it ($(status ready_bytes) READY; rc $rc: $(cat "$TMP/err"))" \
	all_of '[ $rc -eq 3 ] && ready_is $SZB && [ ! -e "$DIR/big" ]'
"$PREALLOC" --node 0 --page-size 2M --file "$DIR/cold1" --json 8M > "$TMP/cold1.json" 2> "$TMP/err"
rc=$?
check "a cold 8M request with no free page succeeds from the warm file (rc $rc: $(cat "$TMP/err"))" [ $rc -eq 0 ]
check "... its report: 4 pages from warm files, one cut, none removed, none grown ($(json_get "$TMP/cold1.json" 'd.get("admission")' 2>&1))" \
	all_of '[ "$(json_get "$TMP/cold1.json" "d[\"admission\"][\"warm_pages\"]")" = 4 ] && [ "$(json_get "$TMP/cold1.json" "d[\"admission\"][\"warm_files_cut\"]")" = 1 ] && [ "$(json_get "$TMP/cold1.json" "d[\"admission\"][\"warm_files_removed\"]")" = 0 ] && [ "$(json_get "$TMP/cold1.json" "d[\"admission\"][\"grown_pages\"]")" = 0 ]'
check "... the warm file is READY at 8M now ($(status ready_bytes))" ready_is $((8 << 20))
"$PREALLOC" --node 0 --page-size 2M --file "$DIR/cold2" --json 8M > "$TMP/cold2.json" 2> "$TMP/err"
rc=$?
check "a second cold 8M request removes it (rc $rc): warm_files_removed 1, no warm file left" \
	all_of '[ $rc -eq 0 ] && [ "$(json_get "$TMP/cold2.json" "d[\"admission\"][\"warm_files_removed\"]")" = 1 ] && ready_is 0'
"$PREALLOC" --node 0 --page-size 2M --file "$DIR/cold3" 8M > /dev/null 2> "$TMP/err"
rc=$?
check "a third, with neither free nor warm pages and no --grow-pools, is refused: exit 3 (rc $rc: $(cat "$TMP/err"))" \
	[ $rc -eq 3 ]
for f in cold1 cold2 fillup; do "$PREALLOC" rm "$DIR/$f" > /dev/null 2>&1; done
check "the cold files removed: the growth they took over from the warm files goes back ($(cat $POOL) pages, $hp0 at start)" \
	[ "$(cat $POOL)" -le "$hp0" ]
# A reserved file (a guest between prepare and start) is never admission's to take.
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" warm take --reserve --holder res-a --node 0 --page-size 2M --mount "$DIR" "$SZ" > /dev/null 2>&1
# The pool's free pages (another user's, or what the rm above gave back) used up first, as above.
free=$(hp free 2048)
[ "$free" -gt 0 ] &&
	"$PREALLOC" --node 0 --page-size 2M --file "$DIR/fillup" "$((free * 2))M" > /dev/null 2>&1
"$PREALLOC" --node 0 --page-size 2M --file "$DIR/cold4" 8M > /dev/null 2> "$TMP/err"
rc=$?
check "a cold request while the only warm file is reserved is refused (exit 3), the reservation whole (rc $rc: $(cat "$TMP/err"))" \
	all_of '[ $rc -eq 3 ] && [ "$(status handed_bytes)" -eq $SZB ]'
"$PREALLOC" warm give --holder res-a > /dev/null 2>&1
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" rm "$DIR/cold4" "$DIR/fillup" > /dev/null 2>&1

# Killed at each named point of its pass: every take after it reads zero. Two
# files: one is dirtied and given back, and serve is stopped (SIGSTOP at the
# point, then SIGKILL) while it works on it; then both are taken if they
# can be, and each one taken must read all zero.
printf 'node0.2M = 2 x %s @ %s\ncheck_interval = 1s\npressure = off\n' "$SZ" "$DIR" > "$TMP/two.conf"
# Given back with no tenant, the file is renewed; by its tenant (t1:), cleared in place.
for point in warm-serve-pass warm-fill-clearing warm-renew-before-create mid-op before-check \
	warm-renew-before-retire warm-drop t1:warm-fill-before-clear t1:mid-op \
	t1:warm-fill-after-verify; do
	ten=()
	case $point in t1:*) ten=(--tenant t1) point=${point#t1:} ;; esac
	cp "$TMP/two.conf" "$PREALLOC_WARM_CONF"
	"$PREALLOC" warm fill > /dev/null 2>&1
	take k "${ten[@]}" > /dev/null 2> "$TMP/err" && fill_pattern "$DIR/k"
	check "$point${ten[*]:+ (tenant)}: a file to dirty is taken ($(cat "$TMP/err"))" [ -e "$DIR/k" ]
	[ $point = warm-drop ] && printf 'node0.2M = 0 @ %s\n' "$DIR" > "$PREALLOC_WARM_CONF"
	"$PREALLOC" warm give "$DIR/k" "${ten[@]}" > /dev/null 2>&1
	PREALLOC_TEST_PAUSE=$point "$PREALLOC" warm serve > /dev/null 2>&1 &
	pid=$!
	wait_stopped $pid
	stopped=$?
	kill -KILL $pid
	wait $pid 2> /dev/null
	check "serve stops at $point${ten[*]:+ (tenant)}" [ $stopped -eq 0 ]
	cp "$TMP/two.conf" "$PREALLOC_WARM_CONF"
	got=0 zero=0
	for f in v w; do
		take $f "${ten[@]}" > /dev/null 2>&1 || continue
		got=$((got + 1))
		[ "$(sha256sum < "$DIR/$f")" = "$ZERO" ] && zero=$((zero + 1))
	done
	check "serve killed at $point${ten[*]:+ (tenant)}: $got files taken after it, $zero of them all zero" \
		all_of '[ $got -ge 1 ] && [ $zero -eq $got ]'
	for f in v w; do "$PREALLOC" warm give "$DIR/$f" > /dev/null 2>&1; done
done
cp "$TMP/good.conf" "$PREALLOC_WARM_CONF"

# Pressure: PSI where the kernel has it (this test needs it: the floor is the unit's business).
if [ ! -e /proc/pressure/memory ]; then
	ok "# SKIP pressure: this kernel has no /proc/pressure/memory (CONFIG_PSI off or psi=0)"
elif [ ! -d /sys/fs/cgroup/memory ]; then
	ok "# SKIP pressure: no v1 memory controller at /sys/fs/cgroup/memory to squeeze a reader in"
else
	cat > "$PREALLOC_WARM_CONF" <<EOF
node0.2M = 4 x $SZ @ $DIR
check_interval = 1s
pressure = some 10ms 500ms
pressure_step = $SZ
pressure_quiet = 60s
EOF
	serve_start
	wait_for 60 ready_is $((4 * SZB))
	check "pressure leg: serve fills 4 x $SZ first ($(status ready_bytes))" ready_is $((4 * SZB))
	CG=/sys/fs/cgroup/memory/prealloc-test-$$
	mkdir "$CG" && on_exit "rmdir $CG"
	echo $((256 << 20)) > "$CG/memory.limit_in_bytes"
	BIG=/var/tmp/prealloc-pressure-$$
	on_exit "rm -f $BIG"
	head -c $((1 << 30)) /dev/urandom > "$BIG"
	sync
	echo 3 > /proc/sys/vm/drop_caches
	t0=$(date +%s%N)
	# One process, in the cgroup before its first read: random 4k reads of
	# the file through a mapping, so that every page it reads again has been
	# reclaimed to make room and faults back in (sequential read()s of the
	# same file stalled under 0.01 s a second here: too little to see).
	python3 -c "
import mmap, os, random, sys
open(sys.argv[1] + '/tasks', 'w').write(str(os.getpid()))
fd = os.open(sys.argv[2], os.O_RDONLY)
m = mmap.mmap(fd, 1 << 30, prot=mmap.PROT_READ)
n = (1 << 30) // 4096
for _ in range(100000000):
    m[random.randrange(n) * 4096]" "$CG" "$BIG" &
	READER=$!
	on_exit "kill -KILL $READER; wait $READER"
	wait_for 60 warm_at_most $((3 * SZB))
	t1=$(date +%s%N)
	took=$(( (t1 - t0) / 1000000 ))
	took=$((took / 1000)).$(printf %03d $((took % 1000)))
	kill $READER 2> /dev/null
	wait $READER 2> /dev/null
	echo "# pressure: a 1 GiB reader in a 256 MiB cgroup; the pool gave back a step after $took s"
	echo "# $(grep -c 'memory pressure' "$TMP/serve.log") pressure events logged; /proc/pressure/memory: $(tr '\n' ' ' < /proc/pressure/memory)"
	grep -E 'PSI|pressure is MemAvailable' "$TMP/serve.log" | sed 's/^/# serve: /'
	check "under pressure the pool gives back at least one $SZ step within 60 s ($(status ready_bytes) ready, $took s)" \
		warm_at_most $((3 * SZB))
	serve_stop
	rm -f "$BIG"
fi

cat > "$PREALLOC_WARM_CONF" <<EOF
node0.2M = 0 @ $DIR
EOF
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" gc > /dev/null 2>&1
check "at the end no warm file is left ($(find "$DIR/.prealloc" -type f | wc -l))" \
	[ "$(find "$DIR/.prealloc" -type f | wc -l)" -eq 0 ]
finish
