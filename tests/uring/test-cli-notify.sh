#!/bin/bash
# SPDX-License-Identifier: MIT
# The CLI waits on its jobs through the same completion path as a VMM
# (its own ring, else the eventfd) and --json says which; a signal still
# cancels and rolls back while it waits on its ring. 4k files in /dev/shm.
# No pools, no mounts: a few lines of TAP of its own, not integration/lib.sh
# (whose cleanup rewrites every hugepage pool).
PREALLOC=${PREALLOC:?set PREALLOC to the CLI binary}
SECCOMP_EXEC=${SECCOMP_EXEC:?set SECCOMP_EXEC}
TMP=$(mktemp -d /tmp/prealloc-cli-notify.XXXXXX)
export PREALLOC_STATE_DIR=$TMP/state
F=/dev/shm/prealloc-cli-notify.$$
trap 'rm -rf "$TMP" "$F"' EXIT
COUNT=0 FAILS=0
check() {
	local what=$1
	shift
	COUNT=$((COUNT + 1))
	if "$@"; then echo "ok $COUNT - $what"; else echo "not ok $COUNT - $what"; FAILS=$((FAILS + 1)); fi
}
finish() { echo "1..$COUNT"; [ $FAILS -eq 0 ]; }
json() { sed -n "s/^ *\"$1\":\"\\{0,1\\}\\([^\",]*\\).*/\\1/p" "$2" | head -1; }

"$PREALLOC" --file "$F" --page-size 4k --json 64M > "$TMP/create" 2>&1
check "create: exit 0" [ $? -eq 0 ]
want=eventfd
[ "${HAVE_URING:-1}" = 1 ] && want=io_uring-
n=$(json notify "$TMP/create")
check "create --json: notify is $want* (got $n)" [ "${n#$want}" != "$n" ]
"$PREALLOC" clear --json "$F" > "$TMP/clear" 2>&1
n=$(json notify "$TMP/clear")
check "clear --json: notify is $want* (got $n)" [ "${n#$want}" != "$n" ]
"$SECCOMP_EXEC" "$PREALLOC" clear --json "$F" > "$TMP/clear-seccomp" 2>&1
check "clear under seccomp: exit 0" [ $? -eq 0 ]
check "clear under seccomp: notify eventfd" [ "$(json notify "$TMP/clear-seccomp")" = eventfd ]
"$PREALLOC" rm "$F" > /dev/null
check "rm: the file is gone" [ ! -e "$F" ]

# SIGINT while the CLI waits on its ring: cancelled, rolled back, exit 130.
"$PREALLOC" --file "$F" --threads 1 --page-size 4k 2G > "$TMP/sig" 2>&1 &
pid=$!
sleep 0.3
kill -INT $pid
wait $pid
rc=$?
check "SIGINT while waiting: exit 130 (got $rc)" [ $rc -eq 130 ]
check "SIGINT while waiting: nothing left behind" [ ! -e "$F" ]
finish
