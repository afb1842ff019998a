#!/bin/bash
# SPDX-License-Identifier: MIT
# warm fill after a give, the two ways a file comes back to the pool, side by
# side in one run (docs/warm.md, "Threat model"): renewed (the default: a
# new file made and populated on its node, verified, the old one unlinked)
# against cleared in place (a tenant's file given back to itself: the NT
# kernels over the same pages, under a write lease, verified). Each round
# takes the one file (with the tenant for the in-place leg), fills it with
# a pattern, gives it back and times `warm fill` whole (the process, as
# serve or cron runs it); the legs alternate which goes first. GB/s is the
# file's bytes over that time; also fill's own figure for its step. Medians
# of REPEAT after a warm-up round of each. Root (it mounts, reserves 2M pages
# and gives them back). It reports; it does not pass or fail.
#
#   tests/bench/bench-warm-fill.sh BUILD_DIR [SIZE_MiB] [PAGE] [REPEAT]
set -eu
build=${1:?usage: bench-warm-fill.sh BUILD_DIR [SIZE_MiB] [PAGE] [REPEAT]}
mib=${2:-4096}
page=${3:-2M}
repeat=${4:-5}
P=$(cd "$build" && pwd)/prealloc/cli/prealloc
[ "$(id -u)" -eq 0 ] || { echo "bench-warm-fill.sh: needs root (mounts, pools)" >&2; exit 1; }
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
	# The file, and room for its replacement while a holder would keep the old pages.
	echo $((pool + 2 * mib / 2 + 8)) > /proc/sys/vm/nr_hugepages
fi
printf 'node0.%s = %sM @ %s\nmax_share = 95%%\n' "$page" "$mib" "$mnt" > "$PREALLOC_WARM_CONF"
"$P" warm fill > /dev/null

# leg MODE: one give and the fill after it; prints "<seconds> <fill's own GB/s>".
leg() {
	local ten=() t0 t1 line
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
	line=$("$P" warm fill)
	t1=$(date +%s.%N)
	case $1 in
	inplace) line=${line#*renewed*cleared (} ;;
	*) line=${line#*renewed (} ;;
	esac
	echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}') ${line%% GB/s*}"
}

leg fresh > /dev/null	# warm-up: the hypervisor backs the pages once
leg inplace > /dev/null
: > "$out/fresh"
: > "$out/inplace"
for ((i = 0; i < repeat; i++)); do
	if ((i % 2)); then order="inplace fresh"; else order="fresh inplace"; fi
	for m in $order; do leg $m >> "$out/$m"; done
done
med() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
printf '# %s MiB of %s pages, medians of %s, %s\n' "$mib" "$page" "$repeat" "$(date -u +%FT%TZ)"
printf '%-10s %10s %10s %14s\n' way seconds GB/s "fill's GB/s"
for m in fresh inplace; do
	s=$(cut -d' ' -f1 "$out/$m" | med)
	g=$(cut -d' ' -f2 "$out/$m" | med)
	printf '%-10s %10.3f %10.2f %14.2f\n' "$m" "$s" "$(awk -v m="$mib" -v s="$s" 'BEGIN {print m * 1048576 / s / 1e9}')" "$g"
done
printf 'fresh/inplace time: %.2f\n' "$(awk -v a="$(cut -d' ' -f1 "$out/fresh" | med)" -v b="$(cut -d' ' -f1 "$out/inplace" | med)" 'BEGIN {print a / b}')"
