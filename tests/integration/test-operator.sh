#!/bin/bash
# SPDX-License-Identifier: MIT
# Errors and progress as an operator meets them (docs/prealloc.1.md):
#  - `prealloc qemu` with a QEMU that is not there, or not executable:
#    127 or 126 before anything is claimed or touched (no record, no file);
#  - a node that does not exist: one answer, exit 2 and the same words,
#    from the main command and from `prealloc qemu`;
#  - 1.5G is a size (QEMU's -m takes it), rounded up to the page;
#  - a long prepare and a long fill on a terminal (a pty)
#    draw done/total, GB/s and the time left; nothing of it when standard
#    error is not a terminal (python's pty.spawn: script(1) outlives its
#    command when run in the background). The run is held at its first chunk
#    (PREALLOC_TEST_PAUSE=mid-op) for more than the second the bar waits.
TAP=1
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" -eq 0 ] || skip "needs root (a private tmpfs)"
T=$TMP/tmpfs
mkdir -p "$T"
mount -t tmpfs -o size=96m,mode=755 prealloc-operator "$T" || bail "cannot mount a tmpfs at $T"
track_mount "$T"
records() { "$PREALLOC" pool --json 2> /dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin).get("records", [])))'; }

# ---- QEMU missing: before any memory is touched -------------------------------
r0=$(records)
echo "not a program" > "$TMP/noexec"
chmod 644 "$TMP/noexec"
for t in "127|/nonexistent/qemu-system-x86_64|cannot run /nonexistent/qemu-system-x86_64: No such file" \
	"127|no-such-qemu-$$|cannot run no-such-qemu-$$: not found in \$PATH" \
	"126|$TMP/noexec|cannot run $TMP/noexec: Permission denied"; do
	IFS='|' read -r want bin msg <<< "$t"
	"$PREALLOC" qemu --page-size 4k --dir "$T" --id g 8M -- "$bin" > "$TMP/out" 2> "$TMP/err"
	rc=$?
	check "qemu -- $bin: exit $want, '$msg', nothing made (rc $rc: $(cat "$TMP/err"))" \
		all_of '[ $rc = $want ] && grep -qF -- "$msg" "$TMP/err" && [ -z "$(ls -A "$T")" ] &&
			[ "$(records)" = "$r0" ]'
done

# Looked up before memory: on a tmpfs too small for the guest, a missing QEMU is 127,
# never the prepare's 3 (the memory was tried first).
S=$TMP/small
mkdir -p "$S"
mount -t tmpfs -o size=4m,mode=755 prealloc-operator-small "$S" || bail "cannot mount a tmpfs at $S"
track_mount "$S"
"$PREALLOC" qemu --page-size 4k --dir "$S" --id g 8M -- /nonexistent/qemu > /dev/null 2> "$TMP/err"
rc=$?
check "qemu -- /nonexistent/qemu, memory that cannot be had: 127 before the memory is tried (rc $rc: $(cat "$TMP/err"))" \
	[ $rc = 127 ]

# ---- a node that does not exist: one answer ----------------------------------
none=$(($(ls -d "$NODE_SYSFS"/node[0-9]* | sed 's/.*node//' | sort -n | tail -1) + 1))
"$PREALLOC" --node "$none" --page-size 4k --file "$T/f" 8M > /dev/null 2> "$TMP/main.err"
rc_main=$?
"$PREALLOC" qemu --node "$none" --page-size 4k --dir "$T" 8M -- true > /dev/null 2> "$TMP/qemu.err"
rc_qemu=$?
main_words=$(sed 's/^prealloc: error: //' "$TMP/main.err")
qemu_words=$(sed 's/^prealloc: error: qemu: //' "$TMP/qemu.err")
check "node $none: exit 2 from both (main $rc_main, qemu $rc_qemu), the same words ('$main_words' / '$qemu_words')" \
	all_of '[ $rc_main = 2 ] && [ $rc_qemu = 2 ] && [ "$main_words" = "$qemu_words" ] &&
		[[ "$main_words" == "node $none does not exist or is offline"* ]]'

# ---- sizes with a fraction -------------------------------------------------------
"$PREALLOC" qemu --dry-run --page-size 4k --dir "$T" --id g 1.5M -- true > "$TMP/out" 2>&1
check "qemu 1.5M: 1572864 bytes ($(cat "$TMP/out"))" grep -q ',size=1572864,' "$TMP/out"
"$PREALLOC" qemu --dry-run --page-size 4k --dir "$T" --id g 1.3M -- true > "$TMP/out" 2>&1
check "qemu 1.3M: rounded up to a whole 4k page, 1363968 bytes ($(cat "$TMP/out"))" \
	grep -q ',size=1363968,' "$TMP/out"
"$PREALLOC" --page-size 4k --file "$T/half" 1.5M > /dev/null 2> "$TMP/err"
check "prealloc 1.5M: a file of 1572864 bytes (rc $?: $(cat "$TMP/err"))" \
	[ "$(stat -c %s "$T/half" 2> /dev/null)" = 1572864 ]
"$PREALLOC" rm "$T/half" > /dev/null 2>&1

# ---- progress: on a terminal, and not elsewhere --------------------------------
# held CMD...: CMD (under script when TTY=1) held at its first chunk for 1.5 s.
held() {
	local pid bg
	rm -f "$TMP/held.out" "$TMP/held.err"
	if [ "$TTY" = 1 ]; then	# a pty of its own (script(1) outlives its command here)
		PREALLOC_TEST_PAUSE=mid-op python3 -c 'import pty, sys; pty.spawn(sys.argv[1:])' \
			"$@" < /dev/null > "$TMP/held.out" 2>&1 &
	else
		PREALLOC_TEST_PAUSE=mid-op "$@" > "$TMP/held.out" 2> "$TMP/held.err" &
	fi
	bg=$!
	for _ in $(seq 100); do
		pid=$(pgrep -f -n "^$1 ")
		[ -n "$pid" ] && [ "$(proc_state "$pid")" = T ] && break
		sleep 0.05
	done
	echo "# held: pid '$pid' state $(proc_state "$pid")"
	sleep 1.5
	[ -n "$pid" ] && kill -CONT "$pid" 2> /dev/null
	timeout 30 tail --pid="$bg" -f /dev/null
	kill "$bg" 2> /dev/null
}
for TTY in 1 0; do
	held "$PREALLOC" --page-size 4k --threads 1 --file "$T/p$TTY" 64M
	out=$(cat "$TMP/held.out" "$TMP/held.err" 2> /dev/null)
	if [ $TTY = 1 ]; then
		check "a prepare on a terminal draws done/total, GB/s and the time left" \
			all_of '[[ "$out" == *"/ 64 MiB"*"GB/s"* ]] && [[ "$out" == *" s, done"* ]]' ||
			echo "$out" | tr '\r\033' '|~' | sed 's/^/# /' | head -5
	else
		check "... and nothing of it when stderr is not one" \
			all_of '[[ "$out" != *"/ 64 MiB"* ]] && [[ "$out" != *" s left"* ]] && [[ "$out" != *$'"'"'\033'"'"'* ]]'
	fi
	"$PREALLOC" rm "$T/p$TTY" > /dev/null 2>&1
done
export PREALLOC_WARM_CONF=$TMP/warm.conf
echo "node0.4k = 1 x 32M @ $T" > "$PREALLOC_WARM_CONF"
TTY=1 held "$PREALLOC" warm fill --threads 1
out=$(cat "$TMP/held.out")
check "a fill on a terminal draws its new file's done/total, GB/s and the time left" \
	all_of '[[ "$out" == *"/ 32 MiB"*"GB/s"* ]] && [[ "$out" == *"1 created"* ]]' ||
	echo "$out" | tr '\r\033' '|~' | sed 's/^/# /' | head -5
"$PREALLOC" warm drain > /dev/null 2>&1
finish
