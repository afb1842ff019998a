#!/bin/bash
# SPDX-License-Identifier: MIT
# `prealloc vfio-map` opens the file it checked, never another: stopped at
# a PREALLOC_TEST_PAUSE point (vfio-map-open: after its checks, a regular
# file with a ready record, before its open; vfio-map-region: after that
# open, before the library's region opens the path again), the file is
# removed, or replaced by another file; continued, vfio-map must fail with
# exit 4 and one line naming the file, leave nothing at the path and a
# replacement as it is. The open comes before the device is needed, so no VFIO is needed
# here: a device that does not exist (exit 2 once the file is open) shows
# where an untouched run gets to. 4k pages on a private tmpfs: no pools.
set -u
. "$(dirname "$0")/lib.sh"
need_root

DIR=$(mktemp -d /tmp/prealloc-vfio-vanish.XXXXXX) || bail "mktemp"
track_dir "$DIR"
mount -t tmpfs -o size=64M,mode=0755 none "$DIR" || bail "cannot mount tmpfs on $DIR"
track_mount "$DIR"
F=$DIR/guest
NO_DEVICE=0000:ff:1f.7
PID=
on_exit '[ -n "$PID" ] && kill -CONT "$PID" && kill "$PID" && wait "$PID"'

prepare() {
	rm -f "$F"	# what a failed case left, so that each case stands alone
	"$PREALLOC" --page-size 4k --file "$F" -q 8M 2> "$TMP/err" ||
		bail "prealloc --file $F 8M: $(head -c 300 "$TMP/err")"
}

# stopped_map POINT: vfio-map of $F in the background, stopped at POINT; PID set.
stopped_map() {
	PREALLOC_TEST_PAUSE=$1 "$PREALLOC" vfio-map --device "$NO_DEVICE" "$F" \
		> "$TMP/out" 2> "$TMP/err" &
	PID=$!
	if ! wait_stopped "$PID"; then
		wait "$PID"
		fail "vfio-map never stopped at $1 (rc $?: $(head -c 300 "$TMP/err"))"
		PID=
		return 1
	fi
}

# resume: continue the stopped vfio-map; its exit status in RC.
resume() {
	kill -CONT "$PID"
	wait "$PID"
	RC=$?
	PID=
}

# Both points: after the checks, before vfio-map's own open (vfio-map-open);
# after that open, before the region opens the file by its path again
# (vfio-map-region: a file gone is made anew there, and must be removed).
for P in vfio-map-open vfio-map-region; do
	# An untouched run: past the open, refused for the device (exit 2), file kept.
	prepare
	if stopped_map $P; then
		resume
		check "$P untouched: exit 2 at the device, after the open (rc $RC: $(head -c 200 "$TMP/err"))" \
			[ "$RC" -eq 2 ]
		check "$P untouched: it was the device that failed" \
			grep -q "no PCI device $NO_DEVICE" "$TMP/err"
		check "$P untouched: the file is still there" [ -f "$F" ]
	fi
	"$PREALLOC" rm "$F" 2> /dev/null

	# Removed while stopped.
	prepare
	if stopped_map $P; then
		"$PREALLOC" rm "$F" 2> "$TMP/rm.err" ||
			fail "prealloc rm $F: $(head -c 300 "$TMP/rm.err")"
		resume
		check "$P vanished: exit 4 (rc $RC)" [ "$RC" -eq 4 ]
		check "$P vanished: one line on stderr ($(head -c 300 "$TMP/err"))" \
			[ "$(wc -l < "$TMP/err")" -eq 1 ]
		check "$P vanished: it names the file and says it vanished" \
			grep -q "^prealloc: error: vfio-map: $F vanished" "$TMP/err"
		check "$P vanished: nothing was created at $F" [ ! -e "$F" ]
		check "$P vanished: nothing else in $DIR ($(leftovers "$DIR"))" \
			[ -z "$(leftovers "$DIR")" ]
	fi

	# Replaced by another file of the same size while stopped.
	prepare
	if stopped_map $P; then
		printf 'not guest memory' > "$DIR/other"
		truncate -s 8M "$DIR/other"
		chmod 600 "$DIR/other"
		SUM=$(md5sum < "$DIR/other")
		mv "$DIR/other" "$F"
		resume
		check "$P replaced: exit 4 (rc $RC)" [ "$RC" -eq 4 ]
		check "$P replaced: one line on stderr ($(head -c 300 "$TMP/err"))" \
			[ "$(wc -l < "$TMP/err")" -eq 1 ]
		check "$P replaced: it names the file and says it was replaced" \
			grep -q "^prealloc: error: vfio-map: $F was replaced" "$TMP/err"
		check "$P replaced: the other file is there, as it was" \
			[ "$(md5sum < "$F" 2> /dev/null)" = "$SUM" ]
		rm -f "$F"
	fi
done

finish
