#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scaling.sh: populate and clear, side by side, at 1, 2, 4, 8 and 16 threads
# (capped at the CPUs present), in one run, as root; writes markdown and JSON.
#
#   populate  bench-populate: prealloc vs raw parallel MADV_POPULATE_WRITE,
#             on 2M hugetlb (pool reserved, given back), THP and 4k;
#             bench-qemu.sh: prealloc vs QEMU 7.2 prealloc-threads.
#   clear     prealloc bench: auto vs every kernel vs memset (c), with no
#             calibration file (the built-in rules), below the LLC
#             (a footprint of --below in all) and above it (--above in all).
#
# Static binaries come from a separate meson build (--default-library=static
# -Dprefer_static=true -Dc_link_args=-static), as tests/vm/run-vm.sh builds
# them. --make-bundle DIR puts them, these scripts and QEMU with its shared
# libraries, loader and modules into DIR; on a machine with nothing installed
# run DIR/scaling.sh there (it finds DIR/bin and DIR/qemu beside itself).
#
# Sized for a 16-core, 128 GiB machine in under 8 minutes: 4 GiB regions
# (2 GiB on machines under 64 GiB), 3 repetitions, 1 warm-up, QEMU 3
# repetitions (see docs/benchmarks.md, "Scaling").
#
# Usage: tests/bench/scaling.sh [--threads 1,2,4,8,16] [--size 4G] [--reps 3]
#          [--qemu-reps 3] [--below 16M] [--above 2G] [--out FILE.md]
#          [--build DIR] [--make-bundle DIR] [--no-qemu]
set -u

here=$(cd "$(dirname "$0")" && pwd)
threads_req=1,2,4,8,16
size= reps=3 qemu_reps=3 below=16M above=2G out= build= bundle_out= no_qemu=0

while [ $# -gt 0 ]; do
	case $1 in
	--threads) threads_req=$2; shift ;;
	--size) size=$2; shift ;;
	--reps) reps=$2; shift ;;
	--qemu-reps) qemu_reps=$2; shift ;;
	--below) below=$2; shift ;;
	--above) above=$2; shift ;;
	--out) out=$2; shift ;;
	--build) build=$2; shift ;;
	--make-bundle) bundle_out=$2; shift ;;
	--no-qemu) no_qemu=1 ;;
	-h|--help) sed -n '3,26p' "$0"; exit 0 ;;
	*) echo "scaling.sh: unknown argument $1" >&2; exit 2 ;;
	esac
	shift
done

die() { echo "scaling.sh: $*" >&2; exit 1; }
log() { echo "scaling.sh: $*" >&2; }

# ---- binaries: a bundle beside this script, else a static build ------------
static_build() {
	local src
	src=$(cd "$here/../.." && pwd)
	build=${build:-$src/build-scaling-static}
	if [ ! -f "$build/build.ninja" ]; then
		log "configuring the static build in $build"
		meson setup "$build" "$src" --default-library=static -Dprefer_static=true \
			-Dc_link_args=-static -Dbuildtype=release >"$build.log" 2>&1 ||
			{ cat "$build.log"; die "meson setup of the static build failed"; }
	fi
	ninja -C "$build" prealloc/cli/prealloc tests/bench/bench-populate >"$build.log" 2>&1 ||
		{ cat "$build.log"; die "static build failed"; }
	cli=$build/prealloc/cli/prealloc bench=$build/tests/bench/bench-populate
	scripts=$here
}

# QEMU, its libraries (with the loader) and modules; run through that loader.
# The machine's own QEMU: qemu-system-x86_64 or qemu-system-aarch64.
qemu_name=qemu-system-$(uname -m)
bundle_qemu() { # dir
	local q mods lib loader
	q=$(command -v "$qemu_name") || die "no $qemu_name to bundle"
	mkdir -p "$1/qemu/lib" "$1/qemu/modules"
	cp "$q" "$1/qemu/$qemu_name.bin"
	mods=$(dirname "$(readlink -f "$q")")/../lib/$(uname -m)-linux-gnu/qemu
	[ -d "$mods" ] && cp "$mods"/*.so "$1/qemu/modules/" 2>/dev/null
	for lib in $( { ldd "$q"; ldd "$1"/qemu/modules/*.so 2>/dev/null; } |
		awk '/=> \// { print $3 } /^\t\/.*ld-linux/ { print $1 }' | sort -u); do
		cp -L "$lib" "$1/qemu/lib/"
	done
	loader=$(cd "$1/qemu/lib" && ls ld-linux-*.so.* | head -n1)
	[ -n "$loader" ] || die "ldd $q named no ld-linux loader"
	cat > "$1/qemu/$qemu_name" <<EOF
#!/bin/sh
# QEMU from this bundle: its own loader, libraries and modules.
d=\$(cd "\$(dirname "\$0")" && pwd)
export QEMU_MODULE_DIR="\$d/modules" LD_LIBRARY_PATH="\$d/lib"
exec "\$d"/lib/$loader --library-path "\$d/lib" "\$d/$qemu_name.bin" "\$@"
EOF
	chmod +x "$1/qemu/$qemu_name"
}

if [ -x "$here/bin/prealloc" ]; then
	cli=$here/bin/prealloc bench=$here/bin/bench-populate scripts=$here
else
	static_build
fi
if [ -n "$bundle_out" ]; then
	mkdir -p "$bundle_out/bin" || die "cannot create $bundle_out"
	cp "$cli" "$bench" "$bundle_out/bin/"
	cp "$here/scaling.sh" "$here/bench-qemu.sh" "$here/machine-state.sh" "$bundle_out/"
	bundle_qemu "$bundle_out"
	log "bundle in $bundle_out ($(du -sh "$bundle_out" | cut -f1)); run $bundle_out/scaling.sh there as root"
	exit 0
fi
qemu=$here/qemu/$qemu_name
[ -x "$qemu" ] || qemu=$(command -v "$qemu_name" || true)
[ "$(id -u)" = 0 ] || die "run as root (hugetlb pool, page reporting)"

# ---- what this machine allows ----------------------------------------------
cpus=$(nproc)
mem_gib=$(awk '/MemTotal/ { print int($2 / 1048576) }' /proc/meminfo)
[ -n "$size" ] || { if (( mem_gib >= 64 )); then size=4G; else size=2G; fi; }
case $size in
*G) bytes=$(( ${size%G} << 30 )) ;;
*M) bytes=$(( ${size%M} << 20 )) ;;
*) die "--size wants NG or NM" ;;
esac
threads= capped=
for t in ${threads_req//,/ }; do
	if (( t <= cpus )); then threads+="${threads:+,}$t"; else capped+="${capped:+,}$t"; fi
done
[ -n "$threads" ] || die "no thread count fits $cpus CPUs"
[ -n "$capped" ] && log "only $cpus CPUs: thread counts $capped skipped"

out=${out:-$PWD/scaling.md}
json=${out%.md}.json
work=$(mktemp -d)
mkdir -p "$(dirname "$out")" || die "cannot create the directory of $out"
. "$scripts/machine-state.sh"
trap 'restore_machine; rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
reporting_off
t0=$(date +%s)

# ---- populate ------------------------------------------------------------------
# One backing at a time, so a pool others hold (hugetlb) costs only its rows.
for b in hugetlb2m thp anon4k; do
	if [ $b = hugetlb2m ] && ! reserve_hugepages "$bytes"; then
		echo "hugetlb2m: skipped, $(( bytes >> 21 )) free 2M hugepages could not be had" >> "$work/populate.md"
		release_hugepages
		continue
	fi
	log "populate: bench-populate --backing $b --size $size --threads $threads"
	"$bench" --size "$size" --reps "$reps" --warmup 1 --threads "$threads" --backing $b \
		--json "$work/populate-$b.json" >> "$work/populate.md" ||
		echo "$b: bench-populate failed (see stderr)" >> "$work/populate.md"
	release_hugepages
done
if [ $no_qemu = 0 ] && [ -n "$qemu" ]; then
	log "populate: QEMU prealloc-threads against prealloc"
	"$scripts/bench-qemu.sh" --bench "$bench" --qemu "$qemu" --size "$size" --reps "$qemu_reps" \
		--threads "${threads//,/ }" --keep-reporting > "$work/qemu.md" ||
		echo "bench-qemu.sh failed; see stderr" > "$work/qemu.md"
else
	echo "QEMU not run (--no-qemu or none found)" > "$work/qemu.md"
fi

# ---- clear ------------------------------------------------------------------
# No calibration file: auto stands on its built-in rules.
export PREALLOC_CALIBRATION=$work/calibration
# Below the LLC each point repeats until auto/best is known to 1 % (7-31
# runs: a pass there takes microseconds and samples spread most); above it,
# where one pass of 2 GiB takes a tenth of a second and samples spread 2 %,
# --reps runs.
for where in below above; do
	total=$([ $where = below ] && echo "$below" || echo "$above")
	rep=()
	[ $where = above ] && rep=(--repeat "$reps")
	log "clear: prealloc bench, $total in all ($where the LLC), threads $threads"
	"$cli" bench --sizes "$total" --threads "$threads" --large "$total" "${rep[@]}" \
		> "$work/clear-$where.txt" 2>&1 || log "prealloc bench ($where) failed"
	"$cli" bench --sizes "$total" --threads "$threads" --large "$total" "${rep[@]}" --json \
		> "$work/clear-$where.json" 2>/dev/null || echo null > "$work/clear-$where.json"
done
took=$(( $(date +%s) - t0 ))

# ---- report ----------------------------------------------------------------
machine="$cpus CPUs, ${mem_gib} GiB, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), kernel $(uname -r)"
{
	echo "# scaling: populate and clear by threads"
	echo
	echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC'); took $took s (measuring, without the build)"
	echo "- machine: $machine"
	echo "- threads: $threads${capped:+ (asked also $capped: more than the $cpus CPUs present, skipped)}"
	echo "- populate: $size per region, $reps repetitions (QEMU $qemu_reps); clear: $below in all (7-31 repetitions a point) and $above ($reps repetitions), no calibration file"
	echo
	cat "$work/populate.md"
	echo
	cat "$work/qemu.md"
	echo
	for where in below above; do
		echo "## clear, $where the LLC"
		echo
		echo '```'
		cat "$work/clear-$where.txt"
		echo '```'
		echo
	done
} > "$out"
{
	printf '{"machine": "%s", "threads": [%s], "capped": [%s], "seconds": %s,\n' \
		"$machine" "$threads" "$capped" "$took"
	for b in hugetlb2m thp anon4k; do
		printf ' "populate_%s": ' $b; cat "$work/populate-$b.json" 2>/dev/null || echo null
		printf ',\n'
	done
	printf ' "qemu_markdown": "%s",\n' "$(sed 's/\\/\\\\/g; s/"/\\"/g' "$work/qemu.md" | awk '{ printf "%s\\n", $0 }')"
	printf ' "clear_below_llc": '; cat "$work/clear-below.json"
	printf ', "clear_above_llc": '; cat "$work/clear-above.json"
	echo '}'
} > "$json"
log "took $took s; results in $out and $json"
cat "$out"
