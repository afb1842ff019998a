#!/bin/bash
# SPDX-License-Identifier: MIT
# `prealloc clear` of a populated 2M hugetlbfs file against the plain loop
# it is held to (clear-loop: open, map, THREADS pinned threads each clearing
# its share with the same kernel, timed from open() to the last store),
# alternating, medians of REPS after one warm-up of each. prealloc's figure
# from open() to the last store is its JSON map_seconds + clear_seconds;
# its whole process (exec to exit) and its phases are shown beside it.
# Root (a private hugetlbfs, 2M pages reserved and given back at exit). It
# reports the ratios; it does not pass or fail.
#
#   tests/bench/clear-vs-loop.sh BUILD_DIR [SIZE_MiB] [THREADS] [REPS]
#
# SIZE_MiB defaults to 4096, THREADS to 2, REPS to 7. KERNEL: the one
# `prealloc clear` picks for the file (auto), named to both.
set -eu
build=$(cd "${1:?usage: clear-vs-loop.sh BUILD_DIR [SIZE_MiB] [THREADS] [REPS]}" && pwd)
mib=${2:-4096}
threads=${3:-2}
reps=${4:-7}
P=$build/prealloc/cli/prealloc
L=$build/tests/bench/clear-loop
[ "$(id -u)" -eq 0 ] || { echo "clear-vs-loop.sh: needs root (hugetlbfs, pools)" >&2; exit 1; }
out=$(mktemp -d /tmp/prealloc-clear-vs-loop.XXXXXX)
export PREALLOC_STATE_DIR=$out/state
mnt=$out/mnt
mkdir -p "$mnt"
pool=$(cat /proc/sys/vm/nr_hugepages)
cleanup() {
	"$P" rm "$mnt/guest" > /dev/null 2>&1 || true
	umount "$mnt" 2> /dev/null || true
	echo "$pool" > /proc/sys/vm/nr_hugepages
	rm -rf "$out"
}
trap cleanup EXIT
mount -t hugetlbfs -o pagesize=2M none "$mnt"
echo $((pool + mib / 2)) > /proc/sys/vm/nr_hugepages
"$P" --page-size 2M --file "$mnt/guest" "${mib}M" > /dev/null
kernel=$("$P" clear --json --threads "$threads" "$mnt/guest" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["clear_kernel"])')
"$L" "$mnt/guest" "$threads" "$kernel" > /dev/null	# the loop's warm-up
echo "# ${mib} MiB 2M file, $threads threads, kernel $kernel, $reps runs each, alternating"
for ((i = 0; i < reps; i++)); do
	"$L" "$mnt/guest" "$threads" "$kernel" | awk '{ print $2 }' >> "$out/loop"
	t0=$(date +%s.%N)
	"$P" clear --json --threads "$threads" --method "$kernel" "$mnt/guest" > "$out/clear.json"
	t1=$(date +%s.%N)
	python3 - "$out/clear.json" "$t0" "$t1" >> "$out/prealloc" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["map_seconds"] + d["clear_seconds"], float(sys.argv[3]) - float(sys.argv[2]),
      d["check_seconds"], d["map_seconds"], d["clear_seconds"], d["seconds"])
PY
done
python3 - "$out/loop" "$out/prealloc" "$mib" <<'PY'
import statistics as st, sys
loop = [float(l) for l in open(sys.argv[1])]
rows = [[float(x) for x in l.split()] for l in open(sys.argv[2])]
gb = int(sys.argv[3]) * 2**20 / 1e9
m = lambda v: st.median(v)
col = lambda k: [r[k] for r in rows]
lo, inner, whole = m(loop), m(col(0)), m(col(1))
print(f"loop, open -> last store:          {lo:.4f} s  {gb / lo:6.2f} GB/s")
print(f"prealloc clear, open -> last store: {inner:.4f} s  {gb / inner:6.2f} GB/s"
      f"  (map {m(col(3)):.4f} + job {m(col(4)):.4f}; its op alone {m(col(5)):.4f})")
print(f"prealloc clear, whole process:      {whole:.4f} s  (checks before open {m(col(2)):.4f})")
print(f"ratio loop / prealloc (open -> last store): {lo / inner:.3f}  (target >= 0.85)")
print(f"ratio loop / prealloc (whole process):      {lo / whole:.3f}")
q = lambda v: (st.quantiles(v, n=4)[2] - st.quantiles(v, n=4)[0]) / st.median(v) if len(v) > 1 else 0
print(f"noise: IQR/median loop {q(loop):.3f}, prealloc {q(col(0)):.3f}")
PY
