#!/bin/bash
# SPDX-License-Identifier: MIT
#
# run-populate.sh: the populate benchmark in one go, by hand, as root.
# Builds build-bench/, runs bench-populate (prealloc vs raw parallel
# MADV_POPULATE_WRITE vs one thread on 4K, THP and 2M hugetlb) and
# bench-qemu.sh (prealloc vs QEMU's prealloc-threads), and writes one markdown
# file with the machine, the command and the tables (plus JSON beside it).
# It reserves the 2M hugepages it needs and turns the guest's free page
# reporting off while it measures; both are restored at exit.
#
# Usage: tests/bench/run-populate.sh [--size 4G] [--reps 5] [--qemu-reps 3]
#                                    [--threads 1,2] [--out FILE]
set -u

src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build-bench
size=4G
reps=5
qemu_reps=3
threads=
out=$build/bench-populate.md

while [ $# -gt 0 ]; do
	case $1 in
	--size) size=$2; shift ;;
	--reps) reps=$2; shift ;;
	--qemu-reps) qemu_reps=$2; shift ;;
	--threads) threads=$2; shift ;;
	--out) out=$2; shift ;;
	-h|--help) sed -n '3,14p' "$0"; exit 0 ;;
	*) echo "run-populate.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

die() { echo "run-populate.sh: $*" >&2; exit 1; }
log() { echo "run-populate.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || die "run as root (hugetlb pool, page reporting)"
case $size in
*G) bytes=$(( ${size%G} << 30 )) ;;
*M) bytes=$(( ${size%M} << 20 )) ;;
*) die "--size wants NG or NM" ;;
esac

# ---- build -------------------------------------------------------------
if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" "$src" >/dev/null || die "meson setup failed"
fi
ninja -C "$build" tests/bench/bench-populate >/dev/null || die "build failed"
bench=$build/tests/bench/bench-populate

# ---- machine state we change, and give back at exit ----------------------
. "$src/tests/bench/machine-state.sh"
trap restore_machine EXIT
trap 'exit 130' INT TERM
reporting_off
reserve_hugepages "$bytes" || log "could not free $(( bytes >> 21 )) 2M hugepages; the hugetlb rows may fail"

# ---- run ---------------------------------------------------------------
mkdir -p "$(dirname "$out")"
tmp_pop=$(mktemp) tmp_qemu=$(mktemp)
trap 'rm -f "$tmp_pop" "$tmp_qemu"; restore_machine' EXIT
bench_args=(--size "$size" --reps "$reps" --no-placement --json "${out%.md}.json")
[ -n "$threads" ] && bench_args+=(--threads "$threads")
t0=$(date +%s)
log "bench-populate ${bench_args[*]}"
"$bench" "${bench_args[@]}" > "$tmp_pop" || die "bench-populate failed"
release_hugepages

qemu_args=(--bench "$bench" --size "$size" --reps "$qemu_reps")
[ -n "$threads" ] && qemu_args+=(--threads "${threads//,/ }")
log "bench-qemu.sh ${qemu_args[*]}"
"$src/tests/bench/bench-qemu.sh" "${qemu_args[@]}" > "$tmp_qemu" || die "bench-qemu.sh failed"

{
	echo "# populate benchmark results"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); took $(( $(date +%s) - t0 )) s"
	echo "- command: tests/bench/run-populate.sh --size $size --reps $reps --qemu-reps $qemu_reps${threads:+ --threads $threads}"
	echo "- machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)," \
		"$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
		"kernel $(uname -r), hypervisor: $(lscpu | sed -n "s/^Hypervisor vendor: *//p")"
	echo "- free page reporting turned off for the run (was order ${pr_old:-unchanged})"
	echo
	cat "$tmp_pop"
	echo
	cat "$tmp_qemu"
} > "$out"
log "results in $out"
cat "$out"
