# SPDX-License-Identifier: MIT
# Sourced by the root test libraries (tests/integration/lib.sh,
# tests/packaging/lib-packages.sh): the test runs in a session of its own,
# under a small forwarder that meson knows as the test. meson stops a test
# (^C, SIGTERM, its timeout) with SIGTERM to the test's process group and
# SIGKILL 0.5 s later, and a cleanup that unmounts, runs gc and puts pools
# back takes longer than that. The forwarder passes the signal on and waits;
# if it is killed, the test's cleanup still runs to its end.
#
# own_session VAR [WRAPPER...] -- "$@": unless VAR is set (this is the test
# itself), reruns the script ($0, its arguments) as VAR=$$ setsid WRAPPER...
# bash, and forwards until it exits, with its status; never returns then.
own_session() {
	local var=$1 wrap=() pid rc
	shift
	while [ "$1" != -- ]; do
		wrap+=("$1")
		shift
	done
	shift
	[ -n "${!var:-}" ] && return 0
	env "$var=$$" setsid "${wrap[@]}" "$BASH" "$0" "$@" &
	pid=$!
	# shellcheck disable=SC2064 # the pid as it is now
	trap "kill -TERM -- -$pid 2> /dev/null" TERM INT HUP
	while :; do
		wait "$pid"
		rc=$?
		kill -0 "$pid" 2> /dev/null || exit "$rc"
	done
}
