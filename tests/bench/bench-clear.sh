#!/bin/bash
# SPDX-License-Identifier: MIT
# Clear-kernel benchmark for docs/kernels.md: `prealloc bench` (every kernel
# by size single-threaded and by thread count at a large size, memset
# alongside, auto's choice built-in and calibrated), then `prealloc clear`
# against a fresh populate of the same file (2M hugetlbfs and 4k tmpfs),
# then a plot. Root (it mounts hugetlbfs and reserves 2M pages, both given
# back at exit). It reports; it does not pass or fail.
#
#   tests/bench/bench-clear.sh BUILD_DIR [OUT_DIR] [SIZE_MiB]
#
# Any saved calibration (/var/lib/prealloc/calibration) is restored after.
set -eu
build=${1:?usage: bench-clear.sh BUILD_DIR [OUT_DIR] [SIZE_MiB]}
out=${2:-$(mktemp -d /tmp/prealloc-bench.XXXXXX)}
mib=${3:-2048}
here=$(cd "$(dirname "$0")" && pwd)
P=$(cd "$build" && pwd)/prealloc/cli/prealloc
mkdir -p "$out"
[ "$(id -u)" -eq 0 ] || { echo "bench-clear.sh: needs root (hugetlbfs, pools)" >&2; exit 1; }

cal=$("$P" info --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["clear"]["calibration"]["path"])')
saved_cal=
mnt=
tmpfs=
pool=$(cat /proc/sys/vm/nr_hugepages)
export PREALLOC_STATE_DIR=$out/state
cleanup() {
	[ -n "$mnt" ] && { rm -f "$mnt"/*; umount "$mnt"; rmdir "$mnt"; }
	[ -n "$tmpfs" ] && { rm -f "$tmpfs"/*; umount "$tmpfs"; rmdir "$tmpfs"; }
	echo "$pool" > /proc/sys/vm/nr_hugepages
	if [ -n "$saved_cal" ]; then mv "$saved_cal" "$cal"; else rm -f "$cal"; fi
}
[ -e "$cal" ] && { saved_cal=$out/calibration.saved; cp -p "$cal" "$saved_cal"; }
trap cleanup EXIT

lscpu > "$out/lscpu.txt" 2>/dev/null || true
"$P" info > "$out/info.txt"
echo "== prealloc bench --save --json" >&2
"$P" bench --repeat 7 --save --json > "$out/bench.json"

# median of a JSON field over runs: med FILE...
med() { python3 -c 'import json,sys,statistics as s; print(round(s.median(json.load(open(f))["gb_per_s"] for f in sys.argv[1:]),2))' "$@"; }

# populate_vs_clear LABEL DIR PAGE: 3 fresh populates, 3 clears of the same file.
populate_vs_clear() {
	local label=$1 dir=$2 page=$3 i
	for i in 1 2 3; do
		"$P" --page-size "$page" --file "$dir/guest" --json "${mib}M" > "$out/pop-$label-$i.json"
		[ "$i" -lt 3 ] && "$P" rm "$dir/guest"
	done
	for i in 1 2 3; do
		"$P" clear --json "$dir/guest" > "$out/clear-$label-$i.json"
	done
	"$P" clear --json --method c "$dir/guest" > "$out/clear-memset-$label.json"
	"$P" rm "$dir/guest"
	echo "$label $(med "$out"/pop-"$label"-*.json) $(med "$out"/clear-"$label"-*.json)" \
		"$(med "$out/clear-memset-$label.json")" \
		"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["clear_kernel"])' "$out/clear-$label-1.json")"
}

echo "# backing populate_GBps clear_GBps clear_memset_GBps clear_kernel (${mib} MiB, every CPU)" > "$out/populate-vs-clear.txt"
mnt=$(mktemp -d /tmp/prealloc-bench-hugetlbfs.XXXXXX)
mount -t hugetlbfs -o pagesize=2M none "$mnt"
echo $((pool + mib / 2)) > /proc/sys/vm/nr_hugepages
populate_vs_clear hugetlbfs-2M "$mnt" 2M >> "$out/populate-vs-clear.txt"
tmpfs=$(mktemp -d /tmp/prealloc-bench-tmpfs.XXXXXX)
mount -t tmpfs -o size=$((mib + 64))M none "$tmpfs"
populate_vs_clear tmpfs-4k "$tmpfs" 4k >> "$out/populate-vs-clear.txt"
cat "$out/populate-vs-clear.txt"

# Markdown tables for docs/kernels.md.
python3 - "$out/bench.json" "$out/populate-vs-clear.txt" > "$out/tables.md" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
ks = b["kernels"]
name = lambda k: "c (memset)" if k == "c" else k
def table(rows, first, key):
    print("| %s | %s | best | auto (rules) | auto/best | auto (calibrated) | cal/best |" %
          (first, " | ".join(name(k) for k in ks)))
    print("|" + "---|" * (len(ks) + 6))
    for r in rows:
        print("| %s | %s | %s | %s | %.2f | %s | %s |" % (key(r),
              " | ".join("%.1f" % r["gb_per_s"][k] for k in ks), name(r["best"]), name(r["auto"]),
              r["auto_to_best"], name(r.get("auto_calibrated", "-")),
              "%.2f" % r["auto_calibrated_to_best"] if "auto_calibrated_to_best" in r else "-"))
print("Single thread, GB/s by size (median of %d):\n" % b["repeat"])
table(b["single_thread"], "size", lambda r: "%d MiB" % (r["size"] >> 20))
print("\n%d MiB, GB/s by threads:\n" % (b["threads_size"] >> 20))
table(b["by_threads"], "threads", lambda r: str(r["threads"]))
print("\nSaved calibration:", ", ".join("%s up to %s" % (c["kernel"],
      "any size" if c["max_bytes"] >= 2**63 else "%.1f MiB" % (c["max_bytes"] / 2**20))
      for c in b.get("calibration", {}).get("classes", [])))
print("\n| backing | fresh populate GB/s | prealloc clear GB/s (auto: kernel) | clear/populate | clear --method c GB/s |")
print("|---|---|---|---|---|")
for l in open(sys.argv[2]):
    if l.startswith("#") or not l.strip():
        continue
    f = l.split()
    print("| %s | %s | %s (%s) | %.1fx | %s |" % (f[0], f[1], f[2], f[4],
          float(f[2]) / float(f[1]), f[3]))
PY
cat "$out/tables.md"

# Debian's matplotlib (a python3 earlier in PATH may lack it).
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if ! "$py" -c 'import matplotlib' 2>/dev/null; then
	apt-get install -y python3-matplotlib > "$out/apt.log" 2>&1 || true
fi
"$py" "$here/plot-kernels.py" "$out/bench.json" "$out/populate-vs-clear.txt" "$out/kernels.png"
echo "results in $out (plot: $out/kernels.png)" >&2
