#!/bin/bash
# SPDX-License-Identifier: MIT
#
# bench-qemu.sh: QEMU's prealloc against prealloc's, same backing, size and
# thread count, both timed as whole processes.
#
#   QEMU      qemu-system-$(uname -m) -machine none ... -object <backend>,prealloc=on,
#             prealloc-threads=N, fed "quit" on its monitor; minus the same
#             command with prealloc=off (process start and exit cancel out).
#   prealloc  bench-populate --oneshot (prealloc_region_new + prealloc_run,
#             default flags, so the placement query is included), minus
#             bench-populate --oneshot --skip-populate; and "noplace", the
#             same with PREALLOC_JOB_NO_PLACEMENT.
# Both "on" runs include unmapping the memory at exit; the "off" runs do not.
# The two compared "on" runs go back to back, which first alternating; the
# paired ratio is theirs per repetition, and QEMU's spread the noise.
#
# Backings: hugetlb2m = memory-backend-memfd,hugetlb=on,hugetlbsize=2M,share=on
# against a 2M hugetlb memfd; thp = memory-backend-ram (QEMU madvises it
# MADV_HUGEPAGE) against anonymous THP; memfd4k = memory-backend-memfd
# (shmem, 4K unless shmem THP is on) against a 4K memfd.
#
# Run by hand as root (hugetlb needs the pool; the script reserves what is
# missing and gives it back at exit). Prints markdown on stdout.
# Usage: bench-qemu.sh [--bench PATH] [--qemu PATH] [--size 4G] [--reps 3]
#                      [--threads "1 2"] [--backing "hugetlb2m thp memfd4k"]
#                      [--keep-reporting]
set -u

here=$(cd "$(dirname "$0")" && pwd)
bench=${BENCH_POPULATE:-$here/../../build-bench/tests/bench/bench-populate}
qemu="qemu-system-$(uname -m)"	# x86_64, aarch64: -machine none exists on both
size=4G
reps=3
threads="1 $(nproc)"
backings="hugetlb2m thp memfd4k"
keep_reporting=0

while [ $# -gt 0 ]; do
	case $1 in
	--bench) bench=$2; shift ;;
	--qemu) qemu=$2; shift ;;
	--size) size=$2; shift ;;
	--reps) reps=$2; shift ;;
	--threads) threads=$2; shift ;;
	--backing) backings=$2; shift ;;
	--keep-reporting) keep_reporting=1 ;;
	-h|--help) sed -n '3,27p' "$0"; exit 0 ;;
	*) echo "bench-qemu.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done
[ "$threads" = "1 1" ] && threads=1

die() { echo "bench-qemu.sh: $*" >&2; exit 1; }
log() { echo "bench-qemu.sh: $*" >&2; }

[ -x "$bench" ] || die "no bench-populate at $bench (build it: meson setup build-bench && ninja -C build-bench)"
command -v "$qemu" >/dev/null || die "no $qemu"
[ "$(id -u)" = 0 ] || die "run as root (hugetlb pool, page reporting)"

case $size in
*G) bytes=$(( ${size%G} << 30 )) ;;
*M) bytes=$(( ${size%M} << 20 )) ;;
*) die "--size wants NG or NM" ;;
esac
(( bytes % (2 << 20) == 0 )) || die "--size must be a multiple of 2M"
mib=$(( bytes >> 20 ))

# ---- machine state we change, and give back at exit ----------------------
. "$(dirname "$0")/machine-state.sh"
trap restore_machine EXIT
trap 'exit 130' INT TERM
if [ $keep_reporting = 0 ]; then reporting_off; fi

# ---- one timed process ---------------------------------------------------
# Prints the seconds the command took; fails the script if it fails.
time_cmd() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null 2>/tmp/bench-qemu.$$.err
	local rc=$?
	t1=$(date +%s%N)
	if [ $rc != 0 ]; then
		cat /tmp/bench-qemu.$$.err >&2
		rm -f /tmp/bench-qemu.$$.err
		die "failed ($rc): $*"
	fi
	rm -f /tmp/bench-qemu.$$.err
	awk -v d=$(( t1 - t0 )) 'BEGIN { printf "%.6f\n", d / 1e9 }'
}

qemu_backend() { # backing prealloc threads
	case $1 in
	hugetlb2m) echo "memory-backend-memfd,id=m,size=${mib}M,hugetlb=on,hugetlbsize=2M,share=on,prealloc=$2,prealloc-threads=$3" ;;
	thp) echo "memory-backend-ram,id=m,size=${mib}M,prealloc=$2,prealloc-threads=$3" ;;
	memfd4k) echo "memory-backend-memfd,id=m,size=${mib}M,share=on,prealloc=$2,prealloc-threads=$3" ;;
	esac
}

run_qemu() { # backing on|off threads
	echo quit | "$qemu" -machine none -nodefaults -display none -S -monitor stdio \
		-object "$(qemu_backend "$1" "$2" "$3")"
}

run_prealloc() { # backing populate|skip|noplace threads
	local extra=
	case $2 in
	skip) extra=--skip-populate ;;
	noplace) extra=--no-placement ;;
	esac
	"$bench" --oneshot --backing "$1" --size "$size" --threads "$3" $extra
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
gbps() { awk -v b=$bytes -v s=$1 'BEGIN { printf "%.2f", (s > 0 ? b / s / 1e9 : 0) }'; }
# Throughput ratio a/b from the times of a and b.
ratio() { awk -v a=$1 -v b=$2 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }'; }
# Per repetition, (q - qoff) / (p - poff): "median (lowest-highest)".
paired() { # "q1 q2 .." qoff "p1 p2 .." poff
	local r
	r=$(awk -v q="$1" -v qo=$2 -v p="$3" -v po=$4 'BEGIN {
		n = split(q, a, " "); split(p, b, " ")
		for (i = 1; i <= n; i++) if (b[i] - po > 0) printf "%.6f\n", (a[i] - qo) / (b[i] - po) }' | sort -g)
	awk -v m="$(echo "$r" | median)" '{ v[NR] = $1 } END { printf "%.3f (%.3f-%.3f)", m, v[1], v[NR] }' <<< "$r"
}
# (highest - lowest) / median of the given times, in percent.
spread() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
	printf "%.0f%%", (m > 0 ? 100 * (v[NR] - v[1]) / m : 0) }'; }

echo "## bench-qemu"
echo
echo "- $("$qemu" --version | head -1); size $size; $reps repetitions, interleaved; threads: $threads"
echo "- shmem THP: $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled); anon THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)"
echo "- seconds: whole process with prealloc on, minus the median of the same process with prealloc off"
echo
echo "- CPU pressure: share of the backing's run time in which a runnable task waited for a CPU (PSI some); other work on these CPUs shows here"
echo
echo "- paired: prealloc/QEMU of each repetition's own two runs (run one after the other), median (lowest-highest); QEMU spread: its own runs' range over their median, the noise either ratio carries"
echo
echo "| backing | threads | QEMU s | QEMU GB/s | prealloc s | prealloc GB/s | noplace s | noplace GB/s | prealloc/QEMU | noplace/QEMU | paired prealloc/QEMU | QEMU spread | CPU pressure |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"

# Microseconds some runnable task has waited for a CPU since boot.
psi_us() { sed -n 's/^some .*total=\([0-9]*\)/\1/p' /proc/pressure/cpu 2>/dev/null || echo 0; }

for b in $backings; do
	if [ $b = hugetlb2m ] && ! reserve_hugepages "$bytes"; then
		echo "| $b | - | skipped: not enough 2M hugepages | | | | | | | | |"
		continue
	fi
	psi0=$(psi_us) t_b=$(date +%s%N)
	log "$b: warm-up"
	for t in $threads; do
		time_cmd run_qemu $b on $t >/dev/null
		time_cmd run_prealloc $b populate $t >/dev/null
	done
	declare -A s=()
	for ((r = 0; r < reps; r++)); do
		for t in $threads; do
			# The two compared runs back to back, first one then the other.
			pair="qemu-on pre-on"
			(( r % 2 )) && pair="pre-on qemu-on"
			for what in $pair qemu-off pre-np pre-off; do
				case $what in
				qemu-on) v=$(time_cmd run_qemu $b on $t) ;;
				qemu-off) v=$(time_cmd run_qemu $b off $t) ;;
				pre-on) v=$(time_cmd run_prealloc $b populate $t) ;;
				pre-np) v=$(time_cmd run_prealloc $b noplace $t) ;;
				pre-off) v=$(time_cmd run_prealloc $b skip $t) ;;
				esac
				s[$what.$t]+="$v "
			done
		done
	done
	busy=$(awk -v p=$(( $(psi_us) - psi0 )) -v t=$(( $(date +%s%N) - t_b )) \
		'BEGIN { printf "%.0f%%", (t > 0 ? 100 * p * 1000 / t : 0) }')
	for t in $threads; do
		m() { echo ${s[$1.$t]} | tr ' ' '\n' | median; }
		q=$(awk -v a="$(m qemu-on)" -v b="$(m qemu-off)" 'BEGIN { printf "%.6f", a - b }')
		p=$(awk -v a="$(m pre-on)" -v b="$(m pre-off)" 'BEGIN { printf "%.6f", a - b }')
		n=$(awk -v a="$(m pre-np)" -v b="$(m pre-off)" 'BEGIN { printf "%.6f", a - b }')
		log "$b $t threads: qemu on ${s[qemu-on.$t]}/ off ${s[qemu-off.$t]}; prealloc on ${s[pre-on.$t]}/ noplace ${s[pre-np.$t]}/ off ${s[pre-off.$t]}"
		printf "| %s | %s | %.3f | %s | %.3f | %s | %.3f | %s | %s | %s | %s | %s | %s |\n" \
			$b $t $q "$(gbps $q)" $p "$(gbps $p)" $n "$(gbps $n)" \
			"$(ratio $p $q)" "$(ratio $n $q)" \
			"$(paired "${s[qemu-on.$t]}" "$(m qemu-off)" "${s[pre-on.$t]}" "$(m pre-off)")" \
			"$(spread ${s[qemu-on.$t]})" "$busy"
	done
	unset s
	release_hugepages
done
