#!/bin/bash
# SPDX-License-Identifier: MIT
# Workers that cannot all be created (a task limit): the run must neither
# hang nor leave anything behind. A shim makes pthread_create fail after N.
set -u
. "$(dirname "$0")/lib.sh"
SHIM=${FAIL_SHIM:?set FAIL_SHIM to the pthread_create shim}
[ "$(id -u)" -eq 0 ] || skip "needs root to mount a private tmpfs"
mkdir -p "$TMP/shm"
mount -t tmpfs -o size=256M none "$TMP/shm" || bail "cannot mount a private tmpfs on $TMP/shm"
track_mount "$TMP/shm"

for made in 0 1 3; do
	PREALLOC_TEST_THREADS=$made timeout 30 env LD_PRELOAD="$SHIM" \
		"$PREALLOC" --threads 8 --file "$TMP/shm/guest" 64M > "$TMP/out" 2> "$TMP/err"
	rc=$?
	check "$made of 8 workers made: exit 1, not a hang (rc $rc)" [ $rc -eq 1 ]
	check "$made of 8 workers made: says why ($(cat "$TMP/err"))" \
		grep -q "cannot start workers: Resource temporarily unavailable" "$TMP/err"
	check "$made of 8 workers made: no file left" [ ! -e "$TMP/shm/guest" ]
done
finish	# lib.sh's cleanup unmounts $TMP/shm
