#!/bin/bash
# SPDX-License-Identifier: MIT
# prealloc-warm.service's sandbox (docs/operations.md), proven on the daemon:
#  - `systemd-analyze security --offline=yes` rates the unit 5.0 or lower;
#  - warm-service-run.sh applies the unit's own lines (its capability
#    bounding set, NoNewPrivileges, its SystemCallFilter expanded by
#    systemd-analyze into a seccomp filter, RestrictAddressFamilies,
#    MemoryDenyWriteExecute, ProtectSystem=strict with its ReadWritePaths,
#    ProtectHome, PrivateNetwork): a probe in its place sees each of them;
#  - test-warm-serve.sh, every case of it, passes with its daemon run so.
# PID 1 is not systemd here, so nothing can start the unit itself; this is
# the same sandbox built by hand from the unit file (PrivateTmp aside: the
# test's mounts live in /tmp).
TAP=1
. "$(dirname "$0")/lib.sh"

need_root
UNIT=${WARM_UNIT:?set WARM_UNIT to the built prealloc-warm.service}
SECCOMP_EXEC=${SECCOMP_EXEC:?set SECCOMP_EXEC to the seccomp-exec helper}
RUN=$(dirname "$0")/warm-service-run.sh
export WARM_UNIT=$UNIT SECCOMP_EXEC PREALLOC_REAL=$PREALLOC
command -v systemd-analyze > /dev/null || bail "systemd-analyze is not installed (setup.sh installs systemd)"
command -v setpriv > /dev/null || bail "setpriv is not installed (util-linux)"

# The exposure figure, from a copy whose ExecStart exists (the built unit names the install path).
sed "s|^ExecStart=[^ ]*|ExecStart=$PREALLOC|" "$UNIT" > "$TMP/prealloc-warm.service"
(cd / && systemd-analyze security --offline=yes "$TMP/prealloc-warm.service") > "$TMP/security" 2>&1
exposure=$(sed -n 's/.*Overall exposure level for prealloc-warm.service: \([0-9.]*\).*/\1/p' "$TMP/security")
check "systemd-analyze security rates the unit 5.0 or lower (${exposure:-no figure})" \
	awk -v e="${exposure:-99}" 'BEGIN { exit !(e <= 5.0) }' || tail -5 "$TMP/security" | sed 's/^/# /'

# A probe in the daemon's place: what the sandbox lets it see and do.
cat > "$TMP/probe" <<'EOF'
#!/bin/sh
grep -E '^(Seccomp|NoNewPrivs|CapBnd):' /proc/self/status
touch /etc/prealloc-service-probe 2> /dev/null && echo "etc writable"
touch "$PREALLOC_STATE_DIR/probe" && echo "state dir writable"
ls -A /root | head -1 | sed 's/^/root has /'
python3 -c 'import socket; socket.socket(socket.AF_INET)' 2> /dev/null && echo "inet allowed"
python3 -c 'import socket; socket.socket(socket.AF_UNIX)' && echo "unix allowed"
python3 -c 'import mmap; mmap.mmap(-1, 4096, prot=mmap.PROT_WRITE | mmap.PROT_EXEC)' 2> /dev/null &&
	echo "write-execute mapping allowed"
cat /proc/self/mountinfo > /dev/null && ls /proc/1/ > /dev/null && echo "proc in full"
EOF
chmod +x "$TMP/probe"
PREALLOC_REAL=$TMP/probe "$RUN" warm serve > "$TMP/probe.out" 2>&1
# The unit's set, less what this host's own bounding set lacks (a container's).
host_caps=$(capsh --decode="$(sed -n 's/^CapBnd:\s*//p' /proc/self/status)" | sed 's/.*=//' |
	tr ',' '\n' | tr a-z A-Z)
want_caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT" | tr ' ' '\n' | grep -xF "$host_caps" |
	sort | paste -sd, -)
got_caps=$(capsh --decode="$(sed -n 's/^CapBnd:\s*//p' "$TMP/probe.out")" 2> /dev/null |
	sed 's/.*=//' | tr ',' '\n' | tr a-z A-Z | sort | paste -sd, -)
check "the daemon's bounding set is the unit's ($want_caps)" [ "$got_caps" = "$want_caps" ] ||
	echo "# got $got_caps"
check "it runs under a seccomp filter with no new privileges" all_of \
	"grep -qx 'Seccomp:\s*2' '$TMP/probe.out' && grep -qx 'NoNewPrivs:\s*1' '$TMP/probe.out'"
check "the file system is read-only but the state directory" all_of \
	"! grep -q 'etc writable' '$TMP/probe.out' && grep -q 'state dir writable' '$TMP/probe.out'"
check "/root is empty (ProtectHome)" all_of "! grep -q 'root has' '$TMP/probe.out'"
check "AF_INET refused, AF_UNIX allowed (RestrictAddressFamilies)" all_of \
	"! grep -q 'inet allowed' '$TMP/probe.out' && grep -q 'unix allowed' '$TMP/probe.out'"
check "a writable and executable mapping refused (MemoryDenyWriteExecute)" \
	all_of "! grep -q 'write-execute mapping allowed' '$TMP/probe.out'"
check "/proc is there in full" grep -q "proc in full" "$TMP/probe.out" || sed 's/^/# /' "$TMP/probe.out"

# The daemon's own test, its daemon in the sandbox.
start=$SECONDS
PREALLOC=$(realpath "$RUN") "$BASH" "$(dirname "$0")/test-warm-serve.sh" > "$TMP/serve.tap" 2>&1
rc=$?
total=$(grep -c '^ok \|^not ok ' "$TMP/serve.tap")
failed=$(grep -c '^not ok ' "$TMP/serve.tap")
check "test-warm-serve passes with its daemon under the unit's sandbox ($((total - failed)) of $total, $((SECONDS - start)) s)" \
	all_of '[ "$rc" = 0 ] && [ "$total" -gt 20 ]' || grep '^not ok \|^#' "$TMP/serve.tap" | head -20 | sed 's/^/# /'
finish
