# SPDX-License-Identifier: MIT
# Shared by the integration scripts: pools, mounts and cleanup done right.
# Sourced, not run. Each test gets a private state dir and hugetlbfs mount.
# Whatever a test mounts or creates it registers (track_mount, track_dir,
# on_exit for anything else: cgroups, background processes); cleanup undoes
# it all on any exit, including SIGINT and SIGTERM (meson's timeout), and
# puts every hugepage pool (each node, both sizes) back as it found them.

# The test runs in a session of its own, under a forwarder meson knows as
# the test, so that its cleanup outlives meson's SIGKILL (tests/lib/session.sh).
. "$(dirname "${BASH_SOURCE[0]}")/../lib/session.sh"
own_session PREALLOC_TEST_SESSION -- "$@"

# The suite's lock (docs/testing.md, "One root test at a time"): a test here
# changes system-wide hugepage pools and sysctls, so none runs beside another,
# whoever started it (meson, a helper, a second checkout). Held already when
# an ancestor took it (flock(1) passes its descriptor on: the
# same open file, so flock -n on it succeeds; meson test closes every
# descriptor past 2 in what it starts, so an ancestor's descriptor counts
# too, when it is the one that holds the lock: its fdinfo shows the FLOCK,
# which a descriptor merely open on the file, or one still waiting, does
# not); else taken here, 15 minutes at most (the longest test's timeout is
# 10), and held until this test and what it started are gone.
SUITE_LOCK=/var/tmp/prealloc-suite.lock
suite_lock() {
	local f p=$PPID
	for f in /proc/$$/fd/*; do
		[ "$(readlink "$f" 2> /dev/null)" = "$SUITE_LOCK" ] && flock -n "${f##*/}" && return 0
	done
	while [ "${p:-0}" -gt 1 ]; do
		for f in /proc/"$p"/fd/*; do
			[ "$(readlink "$f" 2> /dev/null)" = "$SUITE_LOCK" ] &&
				grep -q '^lock:.*FLOCK.*WRITE' "/proc/$p/fdinfo/${f##*/}" 2> /dev/null &&
				return 0
		done
		p=$(awk '/^PPid:/ { print $2 }' /proc/"$p"/status 2> /dev/null)
	done
	exec {SUITE_LOCK_FD}>> "$SUITE_LOCK" && flock -w 900 "$SUITE_LOCK_FD"
}
if [ "$(id -u)" -eq 0 ] && ! suite_lock; then
	echo "not ok 1 - $SUITE_LOCK held for 15 minutes by another test (its holders: the processes with it in /proc/PID/fd)"
	echo "1..1"
	exit 1
fi

PREALLOC=${PREALLOC:?set PREALLOC to the CLI binary}
CHECK_FILE=${CHECK_FILE:-}
NODE_SYSFS=/sys/devices/system/node
TMP=$(mktemp -d /tmp/prealloc-test.XXXXXX)
export PREALLOC_STATE_DIR=$TMP/state
MNT=
TRACKED_MOUNTS=()
TRACKED_DIRS=()
EXIT_CMDS=()
POOL_FILES=()
POOL_VALUES=()
FAILS=0
COUNT=0

# skip REASON: the whole test skipped for a proven cause (meson's exit 77).
# A script run with protocol 'tap' sets TAP=1 before sourcing this file:
# then the skip is TAP's own plan (`1..0 # SKIP REASON`, exit 0), since a
# bare line there is an error in meson's TAP parser.
skip() {
	if [ "${TAP:-0}" = 1 ]; then
		echo "1..0 # SKIP $*"
		exit 0
	fi
	echo "SKIP: $*"
	exit 77
}
# A description is one TAP line: what a command printed inside it (several
# lines) is joined with spaces, else meson reads the rest as unknown lines.
tap_line() { local d="$*"; echo "${d//$'\n'/ }"; }
fail() { COUNT=$((COUNT + 1)); tap_line "not ok $COUNT - $*"; FAILS=$((FAILS + 1)); }
ok() { COUNT=$((COUNT + 1)); tap_line "ok $COUNT - $*"; }
# bail REASON: a failure that ends the test (exit 1) with the reason.
bail() { fail "$*"; finish; exit 1; }
# check DESCRIPTION COMMAND...: ok or not ok; returns the verdict, so that
# `check ... || echo "# diagnostics"` prints them only on failure. check
# runs ONE command: `check D a && b` tests a alone (b runs after, judged by
# nobody); a condition of several is `check D all_of 'a && b'`.
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; return 1; fi
}

# all_of 'CONDITION': a shell condition of several commands, for check.
all_of() { eval "$1"; }

# track_mount DIR: unmount DIR (emptied first) at exit. track_dir DIR: remove
# DIR and its contents at exit, after every tracked mount is undone.
track_mount() { TRACKED_MOUNTS+=("$1"); }
track_dir() { TRACKED_DIRS+=("$1"); }
# on_exit COMMAND: run at exit, before mounts are undone, latest first.
on_exit() { EXIT_CMDS+=("$*"); }

# pool_files KB: the pool size files, per node where nodes are exposed.
pool_files() {
	if [ -d "$NODE_SYSFS/node0" ]; then
		ls "$NODE_SYSFS"/node*/hugepages/hugepages-"$1"kB/nr_hugepages 2>/dev/null
	else
		ls /sys/kernel/mm/hugepages/hugepages-"$1"kB/nr_hugepages 2>/dev/null
	fi
}
for f in $(pool_files 2048) $(pool_files 1048576); do
	POOL_FILES+=("$f")
	POOL_VALUES+=("$(cat "$f")")
done

# kill_session: every process of this test's session but the test itself,
# killed and reaped. The test is its session's leader (the forwarder above
# runs it under setsid), so the session is what it started, at any depth. A
# run paused by PREALLOC_TEST_PAUSE is stopped and never sees the SIGTERM
# that interrupts the test, and an interrupted test may not have reached the
# on_exit of what it started last: without this, such a run outlives the
# test (seen: an interrupted `warm` left a stopped `prealloc warm fill`).
kill_session() {
	local i p pids
	[ "$(ps -o sid= -p $$ | tr -d ' ')" = $$ ] || return 0
	for ((i = 0; i < 100; i++)); do
		pids=
		# Into a file, not $(...): the subshell a command substitution runs
		# in is of the session too, alive while pgrep lists it, and a new
		# one each round (the loop ran all its 100 rounds: 10 s a test).
		pgrep -s $$ > "$TMP/.session" 2> /dev/null	# pgrep leaves itself out
		while read -r p; do
			[ "$p" = $$ ] || [ "$p" = "$BASHPID" ] || pids+=" $p"
		done < "$TMP/.session"
		[ -n "$pids" ] || return 0
		for p in $pids; do
			kill -KILL "$p" 2> /dev/null
			wait "$p" 2> /dev/null	# ours: reaped; another's: its parent's to reap
		done
		sleep 0.1
	done
	echo "# cleanup: still running after SIGKILL: $(echo $pids)"
}

cleanup() {
	local rc=$? i m d
	trap - EXIT
	# Ignored, not reset: a SIGTERM forwarded while a test that passed is
	# already cleaning up (an interrupted run) would otherwise kill the
	# cleanup halfway and leave $TMP behind (seen: create-auto's).
	trap '' INT TERM HUP
	trap '' PIPE	# the reader of our output may be gone (an interrupted run)
	for ((i = ${#EXIT_CMDS[@]} - 1; i >= 0; i--)); do
		eval "${EXIT_CMDS[$i]}" 2>/dev/null
	done
	kill_session
	# Whatever the test's runs made, wherever it is (/dev/shm too): its
	# private store names every file and hidden file, so a test that fails
	# half-way leaves none behind; gc then settles their records.
	if [ -s "$PREALLOC_STATE_DIR/store" ]; then
		python3 - "$PREALLOC_STATE_DIR/store" <<'PY' 2>/dev/null |
import sys, urllib.parse
for line in open(sys.argv[1]):
    t = line.split()
    if t and t[0] == "rec":
        for p in t[-2:]:
            if p.startswith("/"):
                sys.stdout.write(urllib.parse.unquote(p) + "\0")
PY
			while IFS= read -r -d '' f; do rm -f -- "$f"; done
		"$PREALLOC" gc > /dev/null 2>&1
	fi
	for ((i = ${#TRACKED_MOUNTS[@]} - 1; i >= 0; i--)); do
		m=${TRACKED_MOUNTS[$i]}
		mountpoint -q "$m" 2>/dev/null || continue
		rm -rf "${m:?}"/* 2>/dev/null
		if ! umount "$m"; then
			echo "# cleanup: cannot unmount $m"
			[ "$rc" -eq 0 ] && rc=1
		fi
	done
	for i in "${!POOL_FILES[@]}"; do
		echo "${POOL_VALUES[$i]}" > "${POOL_FILES[$i]}" 2>/dev/null
	done
	# --one-file-system: a mount that would not go stays as it is.
	for ((i = ${#TRACKED_DIRS[@]} - 1; i >= 0; i--)); do
		d=${TRACKED_DIRS[$i]}
		rm -rf --one-file-system "${d:?}"
	done
	# A run of ours stopped by the same signal may still be rolling back
	# (it saves its store in $TMP/state): its new files would make one rm
	# fail on a directory no longer empty, so try again while it finishes.
	for ((i = 0; i < 50; i++)); do
		rm -rf --one-file-system "$TMP" 2> /dev/null
		[ -e "$TMP" ] || break
		sleep 0.1
	done
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The reader of our output gone (meson stopped, its forwarder killed): the
# next line written would kill the test by SIGPIPE, with no cleanup, and
# leave $TMP behind. Trapped (not ignored: the programs a test runs must
# still get SIGPIPE's default), it ends the test through its cleanup.
trap 'exit 141' PIPE

need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root to reserve hugepages and mount hugetlbfs"; }

# page_kb SIZE: the hstate size in kB of a page size given as 2M or 1G.
page_kb() {
	case $1 in
	2M) echo 2048 ;;
	1G) echo 1048576 ;;
	*) echo "page_kb: unknown page size $1" >&2; return 1 ;;
	esac
}

# need_hugetlbfs SIZE: skip, saying why, only where the kernel provably lacks
# hugetlbfs or the SIZE hstate.
need_hugetlbfs() {
	local kb
	kb=$(page_kb "$1") || bail "need_hugetlbfs: unknown page size $1"
	grep -qw hugetlbfs /proc/filesystems ||
		skip "this kernel has no hugetlbfs (not in /proc/filesystems)"
	[ -d "/sys/kernel/mm/hugepages/hugepages-${kb}kB" ] ||
		skip "this kernel has no $1 hugepages (no /sys/kernel/mm/hugepages/hugepages-${kb}kB)"
}

# mount_hugetlbfs SIZE: a private hugetlbfs mount in $MNT, undone at exit;
# returns 1 if it cannot be made. Callers run need_root and need_hugetlbfs
# first, so that a failure here is a failure of the test, not a skip.
mount_hugetlbfs() {
	MNT=$(mktemp -d /tmp/prealloc-hugetlbfs.XXXXXX) || { MNT=; return 1; }
	track_dir "$MNT"
	mount -t hugetlbfs -o pagesize="$1" none "$MNT" || return 1
	track_mount "$MNT"
}

# private_hugetlbfs SIZE: root, hugetlbfs with SIZE pages (else a skip that
# says why), and a private mount of it in $MNT; a mount that fails anyway
# fails the test.
private_hugetlbfs() {
	need_root
	need_hugetlbfs "$1"
	mount_hugetlbfs "$1" ||
		bail "cannot mount hugetlbfs with $1 pages on $MNT, though the kernel has both"
}

# reserve_2m N: make N more 2M pages free (restored at exit).
reserve_2m() {
	local want=$1 cur
	cur=$(cat /proc/sys/vm/nr_hugepages)
	echo $((cur + want)) > /proc/sys/vm/nr_hugepages
	[ "$(cat /proc/sys/vm/nr_hugepages)" -ge $((cur + want)) ]
}

# leftovers DIR...: what each DIR holds (names relative to it), but for an
# empty staging directory of prealloc's (.prealloc, .prealloc-<uid>): it
# stays on a mount once made, while a file staged in it is listed.
leftovers() {
	local d
	for d in "$@"; do
		find "$d" -mindepth 1 \! \( -type d \( -name .prealloc -o -name '.prealloc-*' \) \
			-empty \) -printf '%P ' 2> /dev/null
	done
}

# A process stopped by PREALLOC_TEST_PAUSE (it raises SIGSTOP at its point).
proc_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }

# wait_for SECONDS COMMAND...: true once COMMAND is, false after SECONDS.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.1
	done
}
wait_stopped() {	# wait_stopped PID: true once it is stopped (T), false if it exits first
	local i
	for ((i = 0; i < 1000; i++)); do
		[ "$(proc_state "$1")" = T ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# hold_lock FILE: a process holding flock FILE until killed, in HOLDER (also
# killed at exit); returns once the lock is held. The holder is the process
# with the lock's descriptor: flock(1)'s child would keep it after a kill.
hold_lock() {
	local i
	( flock 8 && exec sleep 60 ) 8> "$1" &
	HOLDER=$!
	on_exit "kill $HOLDER"
	for ((i = 0; i < 500; i++)); do
		flock -n "$1" true || return 0
		sleep 0.01
	done
	return 1
}

# map_file FILE MiB: a process mapping FILE shared until killed, in MAPPER
# (also killed at exit); returns once the mapping exists.
map_file() {
	local i out=$TMP/mapper.$$.$RANDOM
	python3 -c "
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR); m = mmap.mmap(fd, int(sys.argv[2]) << 20); os.close(fd)
print('mapped', flush=True); time.sleep(60)" "$1" "$2" > "$out" &
	MAPPER=$!
	on_exit "kill $MAPPER"
	for ((i = 0; i < 200; i++)); do
		grep -q mapped "$out" && return 0
		sleep 0.05
	done
	return 1
}

# fill_pattern FILE: every byte of FILE non-zero, written through a shared
# mapping (a guest's memory, as the next holder must never see it).
fill_pattern() {
	python3 - "$1" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
n = os.fstat(fd).st_size
m = mmap.mmap(fd, n)
m[:] = (b'A holder\'s secret ' * (n // 18 + 1))[:n]
m.close(); os.close(fd)
PY
}

hp_free() { awk '/^HugePages_Free/ {print $2}' /proc/meminfo; }
hp_total() { awk '/^HugePages_Total/ {print $2}' /proc/meminfo; }

# json_get FILE EXPR: a value from the CLI's JSON via python3 (in Debian's base).
json_get() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

finish() {
	echo "1..$COUNT"
	echo "# $FAILS of $COUNT failed"
	[ "$FAILS" -eq 0 ]
}
