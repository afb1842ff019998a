#!/bin/bash
# SPDX-License-Identifier: MIT
# What `prealloc warm serve` costs its neighbours (docs/warm.md, issue 25):
# a STREAM-like copy loop (stream-copy, one process, 2 x 256 MiB arrays)
# runs throughout; serve keeps SIZE of 2M warm files, both are taken and
# given back, and serve clears and verifies them in the background. The
# loop's median rate while serve clears, against its median rate in the
# quiet seconds just before, in the same run: at 1 and 2 clear threads with
# the default clear_rate, and at 2 threads with no cap (clear_rate = 0) for
# what the cap buys. Root (mounts hugetlbfs, grows the 2M pool, given back
# at exit). It reports; it does not pass or fail.
#
#   tests/bench/bench-warm-serve.sh BUILD_DIR [SIZE_MiB] [REPEAT]
#
# SIZE_MiB defaults to 4096 (4 GiB, two files), REPEAT to 3 clears per setting.
set -eu
build=${1:?usage: bench-warm-serve.sh BUILD_DIR [SIZE_MiB] [REPEAT]}
mib=${2:-4096}
repeat=${3:-3}
B=$(cd "$build" && pwd)
P=$B/prealloc/cli/prealloc
COPY=$B/tests/bench/stream-copy
[ "$(id -u)" -eq 0 ] || { echo "bench-warm-serve.sh: needs root (mounts, pools)" >&2; exit 1; }
out=$(mktemp -d /tmp/prealloc-bench-serve.XXXXXX)
export PREALLOC_STATE_DIR=$out/state PREALLOC_WARM_CONF=$out/warm.conf
mnt=$out/mnt
mkdir -p "$mnt"
pool=$(cat /proc/sys/vm/nr_hugepages)
SERVE= LOOP=
cleanup() {
	[ -n "$LOOP" ] && kill "$LOOP" 2> /dev/null
	[ -n "$SERVE" ] && kill "$SERVE" 2> /dev/null && wait "$SERVE" 2> /dev/null
	printf 'node0.2M = 0 @ %s\n' "$mnt" > "$PREALLOC_WARM_CONF"
	"$P" warm give --holder bench > /dev/null 2>&1 || true
	"$P" warm fill > /dev/null 2>&1 || true
	"$P" gc > /dev/null 2>&1 || true
	umount "$mnt" 2> /dev/null || true
	echo "$pool" > /proc/sys/vm/nr_hugepages
	rm -rf "$out"
}
trap cleanup EXIT
mount -t hugetlbfs -o pagesize=2M none "$mnt"
half=$((mib / 2))

status_ready() {
	"$P" warm status --json | python3 -c "
import json, sys
print(sum(e['ready_bytes'] for e in json.load(sys.stdin) if e['mount'] == sys.argv[1]))" "$mnt"
}
wait_ready() {	# wait_ready BYTES: until that much is READY; prints when (epoch seconds)
	local end=$((SECONDS + 600))
	until [ "$(status_ready)" -ge "$1" ]; do
		[ $SECONDS -ge $end ] && { echo "bench-warm-serve.sh: not READY in 600 s" >&2; exit 1; }
		sleep 0.05
	done
	date +%s.%N
}
sub() { python3 -c 'import sys; print("%.3f" % (float(sys.argv[1]) - float(sys.argv[2])))' "$1" "$2"; }
# window_median FROM TO: the loop's median rate over intervals that ended within (FROM, TO].
window_median() {
	python3 - "$out/loop.txt" "$1" "$2" <<'PY'
import statistics, sys
a, b = float(sys.argv[2]), float(sys.argv[3])
r = [float(l.split()[1]) for l in open(sys.argv[1]) if len(l.split()) == 2 and a < float(l.split()[0]) <= b]
print("%.3f %d" % (statistics.median(r), len(r)) if r else "0 0")
PY
}

# setting THREADS RATE LABEL: REPEAT clears of SIZE under serve, the loop's rates around each.
setting() {
	local threads=$1 rate=$2 label=$3 i q d t0 t1 ratios=() quiet=() during=() secs=()
	printf 'node0.2M = 2 x %sM @ %s\nclear_threads = %s\n%spressure = off\ncheck_interval = 60s\n' \
		"$half" "$mnt" "$threads" "${rate:+clear_rate = $rate$'\n'}" > "$PREALLOC_WARM_CONF"
	"$P" warm serve 2> "$out/serve.log" &
	SERVE=$!
	wait_ready $((mib << 20)) > /dev/null
	for ((i = 0; i < repeat; i++)); do
		sleep 3	# quiet seconds for the loop's own rate
		q=$(date +%s.%N)
		"$P" warm take --node 0 --page-size 2M --mount "$mnt" --to "$mnt/a" --holder bench "${half}M" > /dev/null
		"$P" warm take --node 0 --page-size 2M --mount "$mnt" --to "$mnt/b" --holder bench "${half}M" > /dev/null
		t0=$(date +%s.%N)
		"$P" warm give --holder bench > /dev/null
		t1=$(wait_ready $((mib << 20)))
		read -r qm _ <<< "$(window_median "$(sub "$q" 2.5)" "$q")"
		read -r dm dn <<< "$(window_median "$t0" "$t1")"
		quiet+=("$qm") during+=("$dm")
		secs+=("$(sub "$t1" "$t0")")
		ratios+=("$(python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) / float(sys.argv[1]) if float(sys.argv[1]) else 0))" "$qm" "$dm")")
		[ "$dn" -ge 3 ] || echo "# (clear $i: only $dn loop intervals inside it)"
	done
	kill "$SERVE"
	wait "$SERVE" 2> /dev/null || true
	SERVE=
	python3 - "$label" "${#quiet[@]}" "${quiet[@]}" "${during[@]}" "${ratios[@]}" "${secs[@]}" "$mib" <<'PY'
import statistics, sys
label, n = sys.argv[1], int(sys.argv[2])
v = list(map(float, sys.argv[3:3 + 4 * n]))
q, d, r, s = v[:n], v[n:2 * n], v[2 * n:3 * n], v[3 * n:4 * n]
mib = int(sys.argv[3 + 4 * n])
print("%-34s loop quiet %6.2f GB/s  during clear %6.2f GB/s  ratio %.3f  clear+verify %5.2f s (%.2f GB/s of %d MiB)"
      % (label, statistics.median(q), statistics.median(d), statistics.median(r), statistics.median(s),
         mib * 1048576 / statistics.median(s) / 1e9, mib))
PY
}

echo $((pool + mib / 2 + 8)) > /proc/sys/vm/nr_hugepages
"$COPY" 256 100000 200 > "$out/loop.txt" &
LOOP=$!
sleep 3	# the loop's arrays faulted, its rate settled
echo "# ${mib} MiB of 2M warm files cleared by serve while a copy loop runs; medians of $repeat"
echo "# (ratio: the loop's rate while serve clears over its rate just before; 1.0 = untouched)"
setting 1 "" "clear_threads 1, clear_rate default"
setting 2 "" "clear_threads 2, clear_rate default"
setting 2 0 "clear_threads 2, clear_rate 0 (no cap)"
