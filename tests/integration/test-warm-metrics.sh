#!/bin/bash
# SPDX-License-Identifier: MIT
# The warm pool's Prometheus metrics (docs/operations.md):
#  - a known pool (a store written here, a file in every state, each state
#    its own count and bytes, and a counters file of distinct values):
#    `prealloc warm status --format=prometheus` passes `promtool check
#    metrics` and says every value the pool holds, by state and result;
#    the table shows the pressure give-backs;
#  - as root, on a private tmpfs with 4k files: real takes (full, cut, two
#    misses), a give and the fill that renews it are counted in the
#    state directory by the processes that did them, so that a one-shot
#    status reports them; `warm serve --metrics FILE` writes the file
#    (whole, mode 0644) and promtool accepts it.
TAP=1
. "$(dirname "$0")/lib.sh"

command -v promtool > /dev/null || bail "promtool is not installed (Debian's prometheus package; setup.sh installs it)"
export PREALLOC_WARM_CONF=$TMP/warm.conf
M=$TMP/m
mkdir -p "$M/.prealloc" "$PREALLOC_STATE_DIR"
chmod 700 "$PREALLOC_STATE_DIR"
DEV=$(stat -c %d "$M")
MIB=1048576
STATES=(populating ready handed returning dirty clearing quarantined)
echo "node0.4k = 3 x 1M @ $M" > "$PREALLOC_WARM_CONF"

# The store: state i (0-based) holds i+1 files of (i+1) MiB each.
python3 - "$PREALLOC_STATE_DIR/store" "$M" "$DEV" <<'PY'
import sys
path, mnt, dev = sys.argv[1], sys.argv[2], sys.argv[3]
enc = lambda p: "".join(c if c.isalnum() or c == "/" else "%%%02X" % ord(c) for c in p)
states = ["populating", "ready", "handed", "returning", "dirty", "clearing", "quarantined"]
lines, n = ["prealloc-store 3\n"], 0
for i, st in enumerate(states):
    for k in range(i + 1):
        n += 1
        rid = "%016x" % (0x1000 + n)
        lines.append("rec %s ready none fc %s %d 0.000000000 %d 4096 %s/vm%d %s/.prealloc/%s\n"
                     % (rid, dev, 100 + n, (i + 1) << 20, enc(mnt), n, enc(mnt), rid))
        lines.append("warm %s 0\n" % st)
text = "".join(lines)
h = 0xcbf29ce484222325
for b in text.encode():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
open(path, "w").write(text + "end %d %016x\n" % (len(lines), h))
PY
chmod 600 "$PREALLOC_STATE_DIR/store"
cat > "$PREALLOC_STATE_DIR/warm-counters" <<EOF
$DEV 0 4096 take_full 11
$DEV 0 4096 take_cut 12
$DEV 0 4096 take_partial 13
$DEV 0 4096 take_cold 14
$DEV 0 4096 take_miss 15
$DEV 0 4096 take_refused 16
$DEV 0 4096 renewals 17
$DEV 0 4096 pressure_files 18
$DEV 0 4096 pressure_bytes 19922944
$DEV 0 4096 fill_bytes_per_second 2500000000
$DEV 0 4096 gives 23
$DEV 0 4096 created 29
$DEV 0 4096 inplace_clears 31
$DEV 0 4096 take_le_0.001 2
$DEV 0 4096 take_le_0.01 3
$DEV 0 4096 take_le_inf 5
$DEV 0 4096 take_us 4250000
$DEV 0 4096 last_pass 1700000000
$DEV 0 4096 unmet_bytes 1073741824
$DEV 5 4096 take_miss 7
EOF
echo "$DEV 0 4096 1.500" > "$PREALLOC_STATE_DIR/warm-clears"
chmod 600 "$PREALLOC_STATE_DIR/warm-counters" "$PREALLOC_STATE_DIR/warm-clears"

PROM=$TMP/status.prom
"$PREALLOC" warm status --format=prometheus > "$PROM" 2> "$TMP/status.err"
check "warm status --format=prometheus exits 0" [ $? = 0 ] || sed 's/^/# /' "$TMP/status.err"
promtool check metrics < "$PROM" > "$TMP/promtool.out" 2>&1
check "promtool check metrics accepts it" [ $? = 0 ] || sed 's/^/# /' "$TMP/promtool.out"

# value NAME EXTRA_LABELS: the sample of the pool's entry (node 0, 4k, $M), or "none".
value() {
	local want="$1{node=\"0\",page_size=\"4096\",mount=\"$M\"${2:+,$2}}"
	awk -v w="$want" '$1 == w { print $2; found = 1 } END { if (!found) print "none" }' "$PROM"
}
# expect WHAT NAME LABELS VALUE: the sample is VALUE (numerically).
expect() {
	local got
	got=$(value "$2" "$3")
	check "$1: $2{$3} is $4" awk -v g="$got" -v w="$4" 'BEGIN { exit !(g != "none" && g + 0 == w + 0) }' ||
		echo "# got '$got'"
}
bad=
for i in "${!STATES[@]}"; do
	n=$((i + 1))
	b=$(value prealloc_warm_bytes "state=\"${STATES[$i]}\"")
	f=$(value prealloc_warm_files "state=\"${STATES[$i]}\"")
	[ "$b" = $((n * n * MIB)) ] && [ "$f" = $n ] || bad+=" ${STATES[$i]}: $b bytes, $f files;"
done
check "every state's bytes and files as the store holds them (state i: i+1 files of i+1 MiB)" [ -z "$bad" ] ||
	echo "# wrong:$bad"
expect "target" prealloc_warm_target_bytes "" $((3 * MIB))
expect "last clear" prealloc_warm_last_clear_bytes_per_second "" 1500000000
expect "last fill" prealloc_warm_last_fill_bytes_per_second "" 2500000000
i=11
for r in full cut partial cold miss; do
	expect "takes" prealloc_warm_takes_total "result=\"$r\"" $i
	i=$((i + 1))
done
expect "refusals" prealloc_warm_take_refusals_total "" 16
expect "renewals" prealloc_warm_renewals_total "" 17
expect "pressure files" prealloc_warm_pressure_shrinks_total "" 18
expect "pressure bytes" prealloc_warm_pressure_shrunk_bytes_total "" 19922944
expect "gives" prealloc_warm_gives_total "" 23
expect "files made" prealloc_warm_files_made_total "" 29
expect "in-place clears" prealloc_warm_inplace_clears_total "" 31
# The histogram's buckets are cumulative: 2 at 1 ms, 5 by 10 ms, 10 in all.
i=0
for b in 0.001:2 0.005:2 0.01:5 0.05:5 0.1:5 0.5:5 1:5 5:5 30:5 +Inf:10; do
	expect "take histogram" prealloc_warm_take_duration_seconds_bucket "le=\"${b%%:*}\"" "${b#*:}"
done
expect "take histogram" prealloc_warm_take_duration_seconds_count "" 10
expect "take histogram" prealloc_warm_take_duration_seconds_sum "" 4.25
expect "last pass" prealloc_warm_last_pass_timestamp_seconds "" 1700000000
expect "unmet target" prealloc_warm_target_unmet_bytes "" 1073741824
got=$(awk -v w="prealloc_warm_takes_total{node=\"5\",page_size=\"4096\",mount=\"$M\",result=\"miss\"}" \
	'$1 == w { print $2 }' "$PROM")
check "misses on a node no target or file names are exported (node 5: 7)" [ "$got" = 7 ] ||
	echo "# got '$got'"
check "docs/operations.md names the metrics file's temporary name as the code makes it (FILE.XXXXXX)" \
	all_of "grep -qF 'FILE.XXXXXX' '$(dirname "$0")/../../docs/operations.md' &&
		! grep -q 'PID\.tmp' '$(dirname "$0")/../../docs/operations.md'"
check "prealloc_build_info names the version, value 1" \
	grep -qE '^prealloc_build_info\{version="[0-9][^"]*"\} 1$' "$PROM"
check "counters are TYPE counter and end in _total" all_of \
	"[ \$(grep -c '^# TYPE .* counter\$' '$PROM') -ge 5 ] && ! grep '^# TYPE .* counter\$' '$PROM' | grep -qv '_total counter\$'"
"$PREALLOC" warm status > "$TMP/table" 2>&1
check "the table shows serve's pressure give-backs" \
	grep -qF "18 given back under pressure (19 MiB)" "$TMP/table" || sed 's/^/# /' "$TMP/table"
"$PREALLOC" warm status --format=json > /dev/null 2>&1
check "an unknown --format is a usage error (exit 2)" [ $? = 2 ]

# ---- real counts: root, a private tmpfs, 4k files ----------------------------
if [ "$(id -u)" -ne 0 ]; then
	echo "ok $((COUNT + 1)) # SKIP the counted takes need root (a private tmpfs, files chowned)"
	COUNT=$((COUNT + 1))
	finish
	exit
fi
rm -rf "$PREALLOC_STATE_DIR"
T=$TMP/tmpfs
mkdir -p "$T"
mount -t tmpfs -o size=64m,mode=755 prealloc-metrics "$T" || bail "cannot mount a tmpfs at $T"
track_mount "$T"
echo "node0.4k = 2 x 4M @ $T" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 || bail "warm fill failed: $(cat "$TMP/fill.out")"
take() { "$PREALLOC" warm take --node 0 --page-size 4k --mount "$T" "$@"; }
take --to "$T/vm1" 4M > /dev/null 2>&1 || bail "the full take failed"
take --to "$T/vm2" 2M > /dev/null 2>&1 || bail "the cut take failed"
take --to "$T/vm3" 2M > /dev/null 2>&1
check "a take with no READY file left is refused (exit 3)" [ $? = 3 ]
take --to "$T/vm3" 1M > /dev/null 2>&1
check "... and a second one (exit 3)" [ $? = 3 ]
"$PREALLOC" warm give "$T/vm1" > /dev/null 2>&1 || bail "give failed"
"$PREALLOC" warm fill > "$TMP/fill2.out" 2>&1
# The caller's errors are no refusal: a path on another mount, a path that exists.
take --to /dev/shm/prealloc-metrics-$$ 1M > /dev/null 2>&1
check "a take --to another mount is refused (exit 4)" [ $? = 4 ]
take --to "$T/vm2" 4M > /dev/null 2>&1
check "a take --to a path that exists is refused (exit 4)" [ $? = 4 ]
# One start through a front end, one take: prealloc qemu reserves then links.
"$PREALLOC" qemu --warm --page-size 4k --dir "$T" --id g1 4M -- true > /dev/null 2> "$TMP/q1.err"
check "a warm start through prealloc qemu (exit 0)" [ $? = 0 ] || sed 's/^/# /' "$TMP/q1.err"
"$PREALLOC" qemu --warm --page-size 4k --dir "$T" --id g2 4M -- true > /dev/null 2> "$TMP/q2.err"
check "a cold start through prealloc qemu, no READY file left (exit 0)" [ $? = 0 ] ||
	sed 's/^/# /' "$TMP/q2.err"
# A miss on a mount no target names: exported under that mount.
T2=$TMP/tmpfs2
mkdir -p "$T2"
mount -t tmpfs -o size=16m,mode=755 prealloc-metrics2 "$T2" || bail "cannot mount a tmpfs at $T2"
track_mount "$T2"
"$PREALLOC" warm take --node 0 --page-size 4k --mount "$T2" --to "$T2/vm" 1M > /dev/null 2>&1
check "a take on an untargeted mount misses (exit 3)" [ $? = 3 ]
PROM=$TMP/real.prom
M=$T
"$PREALLOC" warm status --format=prometheus > "$PROM" 2>&1
promtool check metrics < "$PROM" > "$TMP/promtool.out" 2>&1
check "promtool accepts the real pool's metrics" [ $? = 0 ] || sed 's/^/# /' "$TMP/promtool.out"
expect "counted by take (the warm start's once)" prealloc_warm_takes_total 'result="full"' 2
expect "counted by take" prealloc_warm_takes_total 'result="cut"' 1
expect "counted by take (the cold start's once)" prealloc_warm_takes_total 'result="miss"' 3
expect "counted by take (no caller's error)" prealloc_warm_take_refusals_total "" 0
expect "counted by take" prealloc_warm_takes_total 'result="partial"' 0
expect "counted by fill" prealloc_warm_renewals_total "" 1
expect "counted by give (warm give, qemu's)" prealloc_warm_gives_total "" 2
expect "counted by fill (2 made, 1 renewed)" prealloc_warm_files_made_total "" 3
expect "counted by take" prealloc_warm_take_duration_seconds_count "" 3
expect "counted by fill (none declared)" prealloc_warm_inplace_clears_total "" 0
last=$(value prealloc_warm_last_pass_timestamp_seconds)
check "the last pass is a time of today" awk -v g="$last" -v n="$(date +%s)" \
	'BEGIN { exit !(g > n - 600 && g <= n) }' || echo "# got '$last'"
M=$T2
expect "an untargeted mount's miss" prealloc_warm_takes_total 'result="miss"' 1
M=$T
fill_rate=$(value prealloc_warm_last_fill_bytes_per_second)
check "the last fill's rate is there (above 0)" awk -v g="$fill_rate" 'BEGIN { exit !(g > 0) }' ||
	echo "# got '$fill_rate'"

# serve --metrics: the file written whole after its first pass, readable by the collector.
# Its directory may be one others write: a link planted at a name they can
# guess (the daemon's pid) must never be written through. serve is started
# stopped, so that its pid is known before it runs.
echo "a file the daemon must not touch" > "$TMP/victim"
bash -c 'kill -STOP $$; exec "$@"' serve "$PREALLOC" warm serve --metrics "$TMP/serve.prom" \
	> "$TMP/serve.log" 2>&1 &
SERVE=$!
on_exit "kill -CONT $SERVE; kill $SERVE; wait $SERVE"
for _ in $(seq 100); do [ "$(ps -o stat= -p $SERVE)" = T ] && break; sleep 0.05; done
ln -s "$TMP/victim" "$TMP/serve.prom.$SERVE.tmp"
kill -CONT $SERVE
for _ in $(seq 100); do [ -s "$TMP/serve.prom" ] && break; sleep 0.1; done
check "warm serve --metrics wrote its file, mode 0644" \
	[ "$(stat -c %a "$TMP/serve.prom" 2> /dev/null)" = 644 ] || sed 's/^/# /' "$TMP/serve.log"
promtool check metrics < "$TMP/serve.prom" > "$TMP/promtool.out" 2>&1
check "promtool accepts serve's file" [ $? = 0 ] || sed 's/^/# /' "$TMP/promtool.out"
PROM=$TMP/serve.prom
expect "serve's file" prealloc_warm_takes_total 'result="full"' 2
check "no temporary file left beside it" [ -z "$(ls "$TMP" | grep -v "serve\.prom\.$SERVE\.tmp" | grep 'serve\.prom\.')" ]
check "a link planted at serve.prom.<its pid>.tmp was not written through" \
	[ "$(cat "$TMP/victim")" = "a file the daemon must not touch" ]

# A target its node cannot hold (3 x 128G on this host's node 0): fill says so, exit 0,
# and the gauge has its bytes.
printf 'node0.4k = 2 x 4M @ %s\nnode0.4k = 3 x 128G @ %s\n' "$T" "$T2" > "$TMP/big.conf"
"$PREALLOC" warm fill --conf "$TMP/big.conf" > "$TMP/big.out" 2> "$TMP/big.err"
rc=$?
check "fill with a target that cannot be met: exit 0, and it says why" all_of \
	"[ $rc = 0 ] && grep -q 'node0.4k (line 2) cannot be met: 3 x 128 GiB asked' '$TMP/big.err'" ||
	sed 's/^/# /' "$TMP/big.err"
PROM=$TMP/big.prom M=$T2
"$PREALLOC" warm status --conf "$TMP/big.conf" --format=prometheus > "$PROM" 2>&1
expect "the target that cannot be met" prealloc_warm_target_unmet_bytes "" $((3 * 128 << 30))
M=$T
expect "a target that can" prealloc_warm_target_unmet_bytes "" 0
finish
