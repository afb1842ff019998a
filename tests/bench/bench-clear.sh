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
echo "== prealloc bench --save" >&2
"$P" bench --repeat 7 --save > "$out/bench.txt"
"$P" bench --repeat 7 --save --json > "$out/bench.json"
cat "$out/bench.txt"

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

if ! python3 -c 'import matplotlib' 2>/dev/null; then
	apt-get install -y python3-matplotlib > "$out/apt.log" 2>&1 || true
fi
python3 "$here/plot-kernels.py" "$out/bench.json" "$out/populate-vs-clear.txt" "$out/kernels.png"
echo "results in $out (plot: $out/kernels.png)" >&2
