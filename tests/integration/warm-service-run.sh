#!/bin/bash
# SPDX-License-Identifier: MIT
# `prealloc` as prealloc-warm.service runs it, for test-warm-service.sh:
# used as $PREALLOC, it runs `prealloc warm serve` under the unit's
# sandbox (PID 1 is not systemd here: systemd-run cannot), every other
# command as it is. From the unit file $WARM_UNIT:
#  - RuntimeDirectory=, StateDirectory=, ConfigurationDirectory=: made
#    with their modes (the first on an empty /run of its own, as at boot);
#  - ProtectSystem=strict: every mount read-only but /dev, /proc, /sys,
#    then ReadWritePaths (and, as an operator's drop-in would, the state
#    directory and the mounts $PREALLOC_WARM_CONF names) writable again; a
#    ReadWritePaths= path that does not exist, without "-", fails as
#    systemd fails it (exit 226, 226/NAMESPACE);
#  - ProtectHome=yes: /home, /root, /run/user empty and read-only;
#  - PrivateNetwork=yes: a network namespace of its own;
#  - CapabilityBoundingSet: the bounding set (setpriv), nothing inheritable;
#  - NoNewPrivileges=yes;
#  - SystemCallFilter, SystemCallArchitectures, RestrictAddressFamilies and
#    MemoryDenyWriteExecute: seccomp-exec's filter, when $SECCOMP_EXEC is set.
# PrivateTmp=yes is not applied: the test's mounts and sockets live in /tmp.
# It execs all the way down: the daemon keeps the pid its caller started.
set -u
REAL=${PREALLOC_REAL:?set PREALLOC_REAL to the CLI binary}
if [ "${1:-}" != warm ] || [ "${2:-}" != serve ]; then
	exec "$REAL" "$@"
fi
UNIT=${WARM_UNIT:?set WARM_UNIT to the built prealloc-warm.service}

# unit_values KEY: every value of KEY= in [Service], one a line, words split.
unit_values() {
	sed -n '/^\[Service\]/,/^\[/p' "$UNIT" | sed -n "s/^$1=//p" | tr ' ' '\n' | sed '/^$/d'
}

# expand NAME...: system calls and @groups as systemd-analyze syscall-filter
# lists them, groups expanded (each once), one name a line.
expand() {
	local t
	for t in "$@"; do
		case $t in
		@*)
			[[ " $SEEN " == *" $t "* ]] && continue
			SEEN+=" $t"
			expand $(systemd-analyze syscall-filter "$t" | sed 1d | sed 's/#.*//') ;;
		*) echo "$t" ;;
		esac
	done
}
# allowed_numbers: SystemCallFilter's allow list less its ~ lines, as
# system call numbers of this build's ABI (names this kernel has not: none).
allowed_numbers() {
	local allow=() deny=() v
	while read -r v; do
		if [ "${v#\~}" != "$v" ]; then deny+=("${v#\~}"); else allow+=("$v"); fi
	done < <(sed -n '/^\[Service\]/,/^\[/p' "$UNIT" | sed -n 's/^SystemCallFilter=//p' |
		awk '{ neg = sub(/^~/, ""); for (i = 1; i <= NF; i++) print (neg ? "~" : "") $i }')
	SEEN=
	expand "${allow[@]}" | sort -u > "$STATE_TMP/allow"
	SEEN=
	expand "${deny[@]}" | sort -u > "$STATE_TMP/deny"
	printf '#include <sys/syscall.h>\n' | cc -E -dM - |
		awk '$1 == "#define" && $2 ~ /^__NR_/ && $3 ~ /^[0-9]+$/ { sub(/^__NR_/, "", $2); print $2, $3 }' |
		sort > "$STATE_TMP/numbers"
	comm -23 "$STATE_TMP/allow" "$STATE_TMP/deny" | join - "$STATE_TMP/numbers" |
		awk '{ print $2 }' | paste -sd, -
}

if [ -z "${WARM_SERVICE_INNER:-}" ]; then
	# Step 1, outside: a mount and network namespace of its own (unshare
	# execs itself in place), this script again inside it.
	export WARM_SERVICE_INNER=1
	exec unshare --mount --net --propagation slave "$0" "$@"
fi

# The filter's numbers first, while /tmp is writable.
filter=()
if [ -n "${SECCOMP_EXEC:-}" ]; then
	STATE_TMP=$(mktemp -d /tmp/prealloc-service.XXXXXX)
	filter=("$SECCOMP_EXEC" --allow "$(allowed_numbers)")
	rm -rf "$STATE_TMP"
	[ "$(unit_values RestrictAddressFamilies)" = AF_UNIX ] && filter+=(--af-unix)
	[ "$(unit_values MemoryDenyWriteExecute)" = yes ] && filter+=(--mdwe)
	filter+=(--)
fi

# Step 2: the unit's directories, ProtectSystem=strict, ProtectHome=yes,
# ReadWritePaths=. As systemd does at a fresh boot: /run is empty (a tmpfs of
# this namespace's own: the daemon's store is $PREALLOC_STATE_DIR, its
# notify socket the test's), RuntimeDirectory= and StateDirectory= are made
# with their modes and writable, and a ReadWritePaths= entry that does not
# exist fails the start (226/NAMESPACE) unless it has a "-".
rw=()
mount -t tmpfs -o mode=0755 prealloc-service-run /run || exit 1
for kind in Runtime:/run State:/var/lib Configuration:/etc; do
	mode=$(unit_values "${kind%%:*}DirectoryMode")
	for d in $(unit_values "${kind%%:*}Directory"); do
		mkdir -p -m "${mode:-0755}" "${kind#*:}/$d" || exit 1
		chmod "${mode:-0755}" "${kind#*:}/$d"
		[ "${kind%%:*}" = Configuration ] || rw+=("${kind#*:}/$d")
	done
done
while read -r p; do
	if [ -e "${p#-}" ]; then
		rw+=("$(realpath "${p#-}")")
	elif [ "${p#-}" = "$p" ]; then
		echo "warm-service-run.sh: ReadWritePaths=$p does not exist: the start fails" \
			"(status=226/NAMESPACE, as systemd refuses it)" >&2
		exit 226
	fi
done < <(unit_values ReadWritePaths)
[ -n "${PREALLOC_STATE_DIR:-}" ] && mkdir -p "$PREALLOC_STATE_DIR" && rw+=("$PREALLOC_STATE_DIR")
[ -n "${PREALLOC_CALIBRATION:-}" ] && rw+=("$(dirname "$PREALLOC_CALIBRATION")")
if [ -n "${PREALLOC_WARM_CONF:-}" ] && [ -f "$PREALLOC_WARM_CONF" ]; then
	while read -r p; do [ -d "$p" ] && rw+=("$p"); done < \
		<(sed -n 's/.*@ *\([^ #]*\).*/\1/p' "$PREALLOC_WARM_CONF")
fi
# Parents first, so that a later bind is not hidden under an earlier one's.
mapfile -t rw < <(printf '%s\n' "${rw[@]}" | sort -u)
for p in "${rw[@]}"; do mount --bind "$p" "$p" || exit 1; done
[ "$(unit_values ProtectSystem)" = strict ] &&
	awk '{ print $5 }' /proc/self/mountinfo | sort -u | while read -r m; do
		m=$(printf '%b' "$m")
		case $m in /dev | /dev/* | /proc | /proc/* | /sys | /sys/*) continue ;; esac
		mount -o remount,bind,ro "$m" 2> /dev/null
	done
for p in "${rw[@]}"; do mount -o remount,bind,rw "$p" || exit 1; done
if unit_values ProtectHome | grep -qx yes; then
	for h in /home /root /run/user; do
		[ -d "$h" ] && mount -t tmpfs -o ro,mode=0755 prealloc-protect-home "$h"
	done
fi

# Step 3: the capability bounding set and no new privileges, then the filter.
caps=$(unit_values CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/^cap_/+/' | paste -sd, -)
nnp=()
unit_values NoNewPrivileges | grep -qx yes && nnp=(--no-new-privs)
exec setpriv --bounding-set "-all,$caps" --inh-caps -all "${nnp[@]}" -- \
	"${filter[@]}" "$REAL" "$@"
