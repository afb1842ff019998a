#!/bin/bash
# SPDX-License-Identifier: MIT
# warm fill after a give, the two ways a file comes back to the pool, side by
# side in one run with the raw populate they are measured against (docs/warm.md,
# "Threat model" and "Renewal's speed"):
#   fresh    renewed (the default: a new file made and populated on its node,
#            each step read back zero, the old one let go);
#   inplace  cleared in place (a tenant's file given back to itself: the NT
#            kernels over the same pages, under a write lease, verified);
#   raw      MADV_POPULATE_WRITE of the same size and page size by THREADS
#            pinned threads on memory of their own (bench-populate --raw-only:
#            a hugetlb memfd for 2M, a shmem memfd for 4k), nothing verified.
# Each round takes the one file (with the tenant for the in-place leg), fills
# it with a pattern, gives it back and times `warm fill --json --threads
# THREADS` whole (the process, as serve or cron runs it); the legs rotate
# which goes first. Medians of REPEAT after a warm-up round of each.
#
#   renew/raw R = raw populate seconds / (fill's populate + verify seconds)
#
# is the renewal's speed against the kernel's (target 0.90: issue 52); the
# phases say where the rest of a renewal went. Then the fixed cost: a pass
# renewing a 16 MiB file, whole process, median of REPEAT. Root (it mounts,
# reserves 2M pages and gives them back). It reports; it does not fail.
#
#   tests/bench/bench-warm-fill.sh BUILD_DIR [SIZE_MiB] [PAGE] [REPEAT] [THREADS]
set -eu
build=${1:?usage: bench-warm-fill.sh BUILD_DIR [SIZE_MiB] [PAGE] [REPEAT] [THREADS]}
mib=${2:-4096}
page=${3:-2M}
repeat=${4:-5}
threads=${5:-$(nproc)}
P=$(cd "$build" && pwd)/prealloc/cli/prealloc
BP=$(cd "$build" && pwd)/tests/bench/bench-populate
[ "$(id -u)" -eq 0 ] || { echo "bench-warm-fill.sh: needs root (mounts, pools)" >&2; exit 1; }
case $page in
2M) backing=hugetlb2m ;;
4k) backing=memfd4k ;;
*) echo "bench-warm-fill.sh: PAGE is 2M or 4k" >&2; exit 2 ;;
esac
out=$(mktemp -d /tmp/prealloc-bench-fill.XXXXXX)
export PREALLOC_STATE_DIR=$out/state PREALLOC_WARM_CONF=$out/warm.conf
mnt=$out/mnt
mkdir -p "$mnt"
pool=$(cat /proc/sys/vm/nr_hugepages)
cleanup() {
	printf 'node0.%s = 0 @ %s\n' "$page" "$mnt" > "$PREALLOC_WARM_CONF"
	"$P" warm give --holder bench > /dev/null 2>&1 || true
	"$P" warm fill > /dev/null 2>&1 || true
	"$P" gc > /dev/null 2>&1 || true
	umount "$mnt" 2> /dev/null || true
	[ "$page" = 4k ] || echo "$pool" > /proc/sys/vm/nr_hugepages
	rm -rf "$out"
}
trap cleanup EXIT
if [ "$page" = 4k ]; then
	mount -t tmpfs -o size=$((2 * mib + 64))M none "$mnt"
else
	mount -t hugetlbfs -o pagesize="$page" none "$mnt"
	# The file, and room for its replacement while a holder would keep the
	# old pages (the raw leg uses that room between renewals).
	echo $((pool + 2 * mib / 2 + 8)) > /proc/sys/vm/nr_hugepages
fi
printf 'node0.%s = %sM @ %s\nmax_share = 95%%\n' "$page" "$mib" "$mnt" > "$PREALLOC_WARM_CONF"
"$P" warm fill --threads "$threads" > /dev/null

# phases JSON WAY: from fill's --json, "<step s> <admit> <populate> <verify> <commit>
# <retire>", the step being populate + verify for a renewal, the clear for inplace.
phases() {
	python3 -c 'import json, sys
p = json.load(open(sys.argv[1]))["phases"]
step = p["clear"] if sys.argv[2] == "inplace" else p["populate"] + p["verify"]
print("%.4f" % step, *(p[k] for k in ("admit", "populate", "verify", "commit", "retire")))' "$1" "$2"
}

# leg MODE: one give and the fill after it; prints "<seconds> <populate+verify s> <admit>
# <populate> <verify> <commit> <retire>" (raw: its populate seconds in the first two).
leg() {
	local ten=() t0 t1
	if [ "$1" = raw ]; then
		"$BP" --raw-only --backing "$backing" --size "${mib}M" --threads "$threads" \
			--reps 1 --warmup 0 --json "$out/raw.json" > /dev/null 2>&1
		t0=$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["backings"][0]["methods"][0]["median_s"])' "$out/raw.json")
		echo "$t0 $t0 0 $t0 0 0 0"
		return
	fi
	[ "$1" = inplace ] && ten=(--tenant bench)
	# Taken by the tenant always (a file cleared for it is its alone), given
	# back with it only for the in-place leg.
	"$P" warm take --node 0 --page-size "$page" --mount "$mnt" --to "$mnt/g" --holder bench \
		--tenant bench "${mib}M" > /dev/null
	python3 -c "
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR); n = os.fstat(fd).st_size
m = mmap.mmap(fd, n); step = 1 << 20; blk = b'\xa5' * step
for o in range(0, n, step): m[o:o + step] = blk
m.close(); os.close(fd)" "$mnt/g"
	"$P" warm give --holder bench "${ten[@]}" > /dev/null
	t0=$(date +%s.%N)
	"$P" warm fill --json --threads "$threads" > "$out/fill.json"
	t1=$(date +%s.%N)
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}')" \
		"$(phases "$out/fill.json" "$1")"
}

legs=(fresh inplace raw)
for m in "${legs[@]}"; do leg "$m" > /dev/null; done	# warm-up: the hypervisor backs the pages once
for m in "${legs[@]}"; do : > "$out/$m"; done
for ((i = 0; i < repeat; i++)); do
	for ((k = 0; k < ${#legs[@]}; k++)); do
		m=${legs[$(((i + k) % ${#legs[@]}))]}
		leg "$m" >> "$out/$m"
	done
done
med() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
col() { cut -d' ' -f"$2" "$out/$1" | med; }
gbs() { awk -v m="$mib" -v s="$1" 'BEGIN {printf "%.2f", (s > 0 ? m * 1048576 / s / 1e9 : 0)}'; }
printf '# %s MiB of %s pages, %s threads, medians of %s, %s, %s\n' "$mib" "$page" "$threads" \
	"$repeat" "$(uname -r)" "$(date -u +%FT%TZ)"
printf '%-8s %9s %8s %11s %8s\n' way seconds GB/s "step s" "step GB/s"
for m in "${legs[@]}"; do
	printf '%-8s %9.3f %8s %11.3f %8s\n' "$m" "$(col "$m" 1)" "$(gbs "$(col "$m" 1)")" \
		"$(col "$m" 2)" "$(gbs "$(col "$m" 2)")"
done
printf 'fresh phases (median s): admit %.3f populate %.3f verify %.3f commit %.3f retire %.3f\n' \
	"$(col fresh 3)" "$(col fresh 4)" "$(col fresh 5)" "$(col fresh 6)" "$(col fresh 7)"
printf 'fresh/inplace time: %.2f\n' "$(awk -v a="$(col fresh 1)" -v b="$(col inplace 1)" 'BEGIN {print a / b}')"
printf 'renew/raw %s %.3f\n' "$page" "$(awk -v r="$(col raw 2)" -v f="$(col fresh 2)" 'BEGIN {print r / f}')"

# The fixed cost: a pass renewing a 16 MiB file, whole process.
printf 'node0.%s = 16M @ %s\nmax_share = 95%%\n' "$page" "$mnt" > "$PREALLOC_WARM_CONF"
"$P" warm fill --threads "$threads" > /dev/null	# the big file given back, a 16 MiB one made
mib=16
leg fresh > /dev/null
: > "$out/small"
for ((i = 0; i < repeat; i++)); do leg fresh >> "$out/small"; done
printf 'fixed cost: a 16 MiB renewal pass, whole process: %.1f ms (phases: admit %.1f populate %.1f verify %.1f commit %.1f retire %.1f ms)\n' \
	"$(awk -v s="$(col small 1)" 'BEGIN {print s * 1000}')" \
	"$(awk -v s="$(col small 3)" 'BEGIN {print s * 1000}')" "$(awk -v s="$(col small 4)" 'BEGIN {print s * 1000}')" \
	"$(awk -v s="$(col small 5)" 'BEGIN {print s * 1000}')" "$(awk -v s="$(col small 6)" 'BEGIN {print s * 1000}')" \
	"$(awk -v s="$(col small 7)" 'BEGIN {print s * 1000}')"
