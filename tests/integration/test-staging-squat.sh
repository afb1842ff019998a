#!/bin/bash
# SPDX-License-Identifier: MIT
# A local user squats the staging directory's name (docs/warm.md, "Where the
# files live") on a world-writable tmpfs (mode 1777, as /dev/shm): before
# root's first run, uid 65534 makes .prealloc a directory of its own (mode
# 0700, then 0777), a link to a directory root owns on the mount, a file, a
# FIFO, and guesses of the names prealloc picks otherwise (a directory and a
# link to root's). Each time `warm fill`, `warm take --fallback` and a plain
# `prealloc --file` still work, all in one directory that root made, and the
# squatter's objects are untouched, with nothing of root's in them. Then the
# same for a user's own staging directory (.prealloc-<uid>) squatted by
# another user. Everything goes at exit (mounts, state).
TAP=1
. "$(dirname "$0")/lib.sh"

need_root
command -v setpriv > /dev/null || skip "setpriv (util-linux) is not installed"
SQUATTER=65534
USER_UID=65533
as() { local u=$1; shift; setpriv --reuid "$u" --regid "$u" --clear-groups "$@"; }
export PREALLOC_WARM_CONF=$TMP/warm.conf

status() {	# status KEY MOUNT: KEY of node 0's 4k entry on MOUNT
	"$PREALLOC" warm status --json > "$TMP/st.json" 2> "$TMP/st.err" || { echo "status failed"; return; }
	python3 -c "
import json,sys
for e in json.load(open('$TMP/st.json')):
    if e['node'] == 0 and e['page_size'] == 4096 and e['mount'] == '$2':
        print(e['$1']); break
else: print(0)"
}

# The mounts sit where the users can reach them ($TMP is root's alone).
BASE=$(mktemp -d /tmp/prealloc-squat.XXXXXX) || bail "cannot make a directory in /tmp"
track_dir "$BASE"
chmod 0755 "$BASE"

# A fresh world-writable tmpfs in M.
new_mount() {
	M=$BASE/$1
	mkdir "$M" && mount -t tmpfs -o size=128M,mode=1777 none "$M" || bail "cannot mount a tmpfs on $M"
	track_mount "$M"
}

# What the squatter made, as it must stay: type, owner, mode, inode, link
# target, and everything inside (a directory, or a link's directory).
snapshot() {
	local f
	for f in "$@"; do
		stat -c '%n %F %u %a %i' "$f"
		[ -L "$f" ] && readlink "$f"
		[ -d "$f" ] && find "$f/" -mindepth 1 -printf '%P %u %m\n' | sort
	done 2>&1
}

# The staging directories root made in M's root: real directories, root's.
root_staging() { find "$1" -mindepth 1 -maxdepth 1 -name '.prealloc*' -type d -uid 0 -printf '%P\n'; }

# squat KIND: uid 65534's objects in M (their paths in the array SQUATTED).
squat() {
	case $1 in
	none) ;;	# nobody: root makes and keeps .prealloc, as before
	dir) as $SQUATTER mkdir -m 0700 "$M/.prealloc" ;;
	dir0777) as $SQUATTER mkdir -m 0777 "$M/.prealloc" ;;
	link) as $SQUATTER ln -s "$M/rootdir" "$M/.prealloc" ;;
	file) as $SQUATTER touch "$M/.prealloc" ;;
	fifo) as $SQUATTER mkfifo "$M/.prealloc" ;;
	guess)	# .prealloc taken, and the pattern of the other names guessed too
		as $SQUATTER mkdir -m 0700 "$M/.prealloc"
		for h in 0000000000000000 ffffffffffffffff; do
			as $SQUATTER mkdir -m 0700 "$M/.prealloc-$h"
		done
		as $SQUATTER ln -s "$M/rootdir" "$M/.prealloc-1111111111111111" ;;
	esac
	mapfile -t SQUATTED < <(find "$M" -mindepth 1 -maxdepth 1 -name '.prealloc*')
}

for kind in none dir dir0777 link file fifo guess; do
	new_mount "$kind"
	# A directory root owns on the mount, which a link may point at.
	mkdir -m 0700 "$M/rootdir"
	squat "$kind"
	[ ${#SQUATTED[@]} -gt 0 ] || [ $kind = none ] || bail "$kind: uid $SQUATTER could not squat $M/.prealloc"
	before=$(snapshot "${SQUATTED[@]}" "$M/rootdir")

	printf 'node0.4k = 16M @ %s\n' "$M" > "$PREALLOC_WARM_CONF"
	"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
	rc=$?
	check "$kind: warm fill makes a READY 16M file (rc $rc: $(tail -1 "$TMP/fill.out"))" \
		all_of '[ $rc -eq 0 ] && [ "$(status ready_bytes "$M")" -eq $((16 << 20)) ]'

	# The READY file, then one populated now (nothing READY left): both staged.
	"$PREALLOC" warm take --node 0 --page-size 4k --mount "$M" --to "$M/vm-a" \
		--owner 65534:65534 --holder vm-a --fallback --json 16M > "$TMP/take-a.json" 2> "$TMP/err"
	rc=$?
	check "$kind: warm take --fallback hands out the READY file (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 0 ] && [ "$(json_get "$TMP/take-a.json" "d[\"hit\"]")" != cold ] && [ "$(stat -c "%u %s" "$M/vm-a")" = "65534 $((16 << 20))" ]'
	"$PREALLOC" warm take --node 0 --page-size 4k --mount "$M" --to "$M/vm-b" \
		--owner 65534:65534 --holder vm-b --fallback --json 8M > "$TMP/take-b.json" 2> "$TMP/err"
	rc=$?
	check "$kind: warm take --fallback with nothing READY populates one now (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc -eq 0 ] && [ "$(json_get "$TMP/take-b.json" "d[\"hit\"]")" = cold ] && [ "$(stat -c "%u %s" "$M/vm-b")" = "65534 $((8 << 20))" ]'

	"$PREALLOC" --node 0 --page-size 4k --file "$M/vm-c" -q 8M > "$TMP/create.out" 2>&1
	rc=$?
	check "$kind: prealloc --file in the mount works (rc $rc: $(tail -1 "$TMP/create.out"))" \
		all_of '[ $rc -eq 0 ] && [ "$(stat -c %s "$M/vm-c")" -eq $((8 << 20)) ]'

	# Given back, the pool's files sit in root's one staging directory.
	"$PREALLOC" warm give "$M/vm-a" > /dev/null 2>&1
	"$PREALLOC" warm give "$M/vm-b" > /dev/null 2>&1
	# .prealloc where nobody took it first, else one random name of root's.
	want='\.prealloc-[0-9a-f]{16}'
	[ $kind = none ] && want='\.prealloc'
	dirs=$(root_staging "$M" | tr '\n' ' ')
	check "$kind: one staging directory, root's, mode 0700, holds the pool's files ($dirs)" \
		all_of '[ "$(root_staging "$M" | wc -l)" -eq 1 ] && echo "${dirs% }" | grep -Eqx "$want" && [ "$(stat -c "%u %a" "$M/${dirs% }")" = "0 700" ] && [ "$(find "$M/${dirs% }" -type f | wc -l)" -ge 1 ]'
	after=$(snapshot "${SQUATTED[@]}" "$M/rootdir")
	check "$kind: the squatter's objects are as it made them, nothing of root's inside" \
		[ "$before" = "$after" ] ||
		diff <(echo "$before") <(echo "$after") | sed 's/^/# /'

	# Gone again: the pool's files, the created one.
	printf 'node0.4k = 0 @ %s\n' "$M" > "$PREALLOC_WARM_CONF"
	"$PREALLOC" warm fill > /dev/null 2>&1
	"$PREALLOC" rm "$M/vm-c" > /dev/null 2>&1
done

# A user's own staging directory (.prealloc-<uid>), squatted by another user:
# the user's run still works, in a directory of its own, the squatter's untouched.
new_mount user
as $USER_UID mkdir -m 0700 "$M/state" "$M/mine"
as $SQUATTER mkdir -m 0700 "$M/.prealloc-$USER_UID"
as $SQUATTER ln -s "$M/mine" "$M/.prealloc-$USER_UID-1111111111111111"
mapfile -t SQUATTED < <(find "$M" -mindepth 1 -maxdepth 1 -name '.prealloc*')
before=$(snapshot "${SQUATTED[@]}" "$M/mine")
PREALLOC_STATE_DIR=$M/state as $USER_UID "$PREALLOC" --node 0 --page-size 4k \
	--file "$M/vm-u" -q 8M > "$TMP/user.out" 2>&1
rc=$?
check "uid $USER_UID: prealloc --file works past .prealloc-$USER_UID of uid $SQUATTER (rc $rc: $(tail -1 "$TMP/user.out"))" \
	all_of '[ $rc -eq 0 ] && [ "$(stat -c "%u %s" "$M/vm-u")" = "$USER_UID $((8 << 20))" ]'
check "uid $USER_UID: its staging directory is its own, mode 0700 ($(find "$M" -maxdepth 1 -name '.prealloc*' -uid $USER_UID -printf '%P %m '))" \
	[ "$(find "$M" -maxdepth 1 -name ".prealloc-$USER_UID-*" -type d -uid $USER_UID -perm 0700 | wc -l)" -eq 1 ]
after=$(snapshot "${SQUATTED[@]}" "$M/mine")
check "uid $USER_UID: the squatter's objects are as it made them" [ "$before" = "$after" ] ||
	diff <(echo "$before") <(echo "$after") | sed 's/^/# /'
PREALLOC_STATE_DIR=$M/state as $USER_UID "$PREALLOC" rm "$M/vm-u" > /dev/null 2>&1

finish
