#!/bin/bash
# SPDX-License-Identifier: MIT
# The warm pool against a cold start, side by side in one run (docs/warm.md):
# the time a guest's memory takes to be ready with `prealloc warm take` of
# a READY file against `prealloc --node 0 SIZE` populating it then, and the
# time `warm fill` takes to clear a given-back file against that populate.
# Each is the whole process, as a user runs it; medians of REPEAT after a
# warm-up round. Root (it mounts hugetlbfs and reserves 2M pages, given back
# at exit). It reports; it does not pass or fail.
#
#   tests/bench/bench-warm.sh BUILD_DIR [SIZE_MiB] [PAGE] [REPEAT]
#
# SIZE_MiB defaults to 4096 (4 GiB), PAGE to 2M (4k: a private tmpfs).
set -eu
build=${1:?usage: bench-warm.sh BUILD_DIR [SIZE_MiB] [PAGE] [REPEAT]}
mib=${2:-4096}
page=${3:-2M}
repeat=${4:-5}
P=$(cd "$build" && pwd)/prealloc/cli/prealloc
[ "$(id -u)" -eq 0 ] || { echo "bench-warm.sh: needs root (mounts, pools)" >&2; exit 1; }
out=$(mktemp -d /tmp/prealloc-bench-warm.XXXXXX)
export PREALLOC_STATE_DIR=$out/state PREALLOC_WARM_CONF=$out/warm.conf
mnt=$out/mnt
mkdir -p "$mnt"
pool=$(cat /proc/sys/vm/nr_hugepages)
cleanup() {
	printf 'node0.%s = 0 @ %s\n' "$page" "$mnt" > "$PREALLOC_WARM_CONF"
	"$P" warm give --holder bench > /dev/null 2>&1 || true
	"$P" warm fill > /dev/null 2>&1 || true
	rm -f "$mnt"/cold "$mnt"/warm
	"$P" gc > /dev/null 2>&1 || true
	umount "$mnt" 2> /dev/null || true
	[ "$page" = 4k ] || echo "$pool" > /proc/sys/vm/nr_hugepages
	rm -rf "$out"
}
trap cleanup EXIT
if [ "$page" = 4k ]; then
	mount -t tmpfs -o size=$((2 * mib + 64))M none "$mnt"	# the warm file and the cold one
else
	mount -t hugetlbfs -o pagesize="$page" none "$mnt"
	echo $((pool + mib + 8)) > /proc/sys/vm/nr_hugepages	# both files
fi
printf 'node0.%s = %sM @ %s\n' "$page" "$mib" "$mnt" > "$PREALLOC_WARM_CONF"

now() { date +%s.%N; }
med() { python3 -c 'import statistics,sys; print("%.4f" % statistics.median(map(float, sys.argv[1:])))' "$@"; }
cold=() warm=() fill=()
"$P" warm fill > /dev/null	# the pool's file, populated once
for ((i = 0; i <= repeat; i++)); do
	t0=$(now)
	"$P" --node 0 --page-size "$page" --file "$mnt/cold" -q "${mib}M"
	t1=$(now)
	"$P" rm "$mnt/cold"
	t2=$(now)
	"$P" warm take --node 0 --page-size "$page" --mount "$mnt" --to "$mnt/warm" \
		--holder bench "${mib}M" > /dev/null
	t3=$(now)
	"$P" warm give --holder bench > /dev/null
	t4=$(now)
	"$P" warm fill > /dev/null	# clears and verifies the given-back file
	t5=$(now)
	[ "$i" -eq 0 ] && continue	# warm-up
	cold+=("$(echo "$t1 - $t0" | bc)") warm+=("$(echo "$t3 - $t2" | bc)")
	fill+=("$(echo "$t5 - $t4" | bc)")
done
c=$(med "${cold[@]}") w=$(med "${warm[@]}") f=$(med "${fill[@]}")
echo "# ${mib} MiB, ${page} pages, node 0, medians of $repeat (whole processes)"
echo "prealloc --node 0 ${mib}M (cold populate)   ${c} s"
echo "prealloc warm take ${mib}M (a READY file)   ${w} s"
echo "prealloc warm fill (clear + verify it)       ${f} s"
python3 -c "import sys; c,w,f=map(float,sys.argv[1:]); print('take/cold %.4f (cold %.0fx the take); fill/cold %.2f' % (w/c, c/w, f/c))" "$c" "$w" "$f"
