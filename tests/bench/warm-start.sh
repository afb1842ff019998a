#!/bin/bash
# SPDX-License-Identifier: MIT
# How long a libvirt guest's start takes, and how much of it grows with the
# guest's memory, in three modes side by side (docs/warm.md, "Warm starts
# under libvirt"):
#   nohook    our hook not run (not executable), the 2M pool preset with
#             the guest's pages free: QEMU's own prealloc faults them;
#   prefault  the hook pre-faults the file at start begin (pool preset too);
#   warm      the hook reserves a READY warm file at prepare begin and
#             links it at start begin (the file made and cleared by `warm
#             fill` between runs, off the timed path).
# Each start is timed from the 00-probe's `prepare begin` to the zz-probe's
# `started begin` (hooks around ours, lib-libvirt.sh), a shared file-backed
# 2M guest with <allocation mode='immediate'/> under TCG. Rounds alternate
# every size and mode; the first round is a warm-up and is discarded.
# Reports medians and IQRs, the memory part (start(S) - start(smallest)
# in the same mode) and the ratios; it does not pass or fail.
#
#   tests/bench/warm-start.sh BUILD_DIR [SIZES_MiB] [ROUNDS]
#
# SIZES_MiB defaults to "64 1024 4096", ROUNDS to 10 (9 kept). Root, a
# libvirtd it may start (none running), as tests/libvirt's suite.
set -u
if [ -z "${PREALLOC_INSTALLED_DEST:-}" ]; then
	build=$(cd "${1:?usage: warm-start.sh BUILD_DIR [SIZES_MiB] [ROUNDS]}" && pwd)
	opt() { meson introspect --buildoptions "$build" |
		python3 -c "import json,sys; print([o['value'] for o in json.load(sys.stdin) if o['name'] == '$1'][0])"; }
	export BUILD_ROOT=$build PREFIX=$(opt prefix)
	export BINDIR=$PREFIX/$(opt bindir) LIBEXECDIR=$PREFIX/$(opt libexecdir)
fi
. "$(dirname "$0")/../integration/lib-installed.sh"
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/../libvirt/lib-libvirt.sh"
on_exit installed_cleanup
SIZES=(${2:-64 1024 4096})
ROUNDS=${3:-10}
MODES=(nohook prefault warm)
lv_setup
printf 'hugetlbfs_mount = "%s"\n' "$MNT" >> "$QCONF"
lv_start
out=$("$PREALLOC" hook install 2>&1) || bail "hook install: $out"
sleep 1
export PREALLOC_WARM_CONF=$TMP/warm.conf
SHARED="<source type='file'/><access mode='shared'/><allocation mode='immediate'/>"
meta() { echo "<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' prefault='$1' warm='$2'/></metadata>"; }
for s in "${SIZES[@]}"; do
	define "ws-nohook-$s" "$s" "$(meta no no)" "$SHARED"
	define "ws-prefault-$s" "$s" "$(meta yes no)" "$SHARED"
	define "ws-warm-$s" "$s" "$(meta no yes)" "$SHARED"
done
H=/sys/devices/system/node/node0/hugepages/hugepages-2048kB
# preset PAGES: at least that many free 2M pages on node 0.
preset() {
	local f n
	f=$(cat $H/free_hugepages) n=$(cat $H/nr_hugepages)
	[ "$f" -ge "$1" ] || echo $((n + $1 - f)) > $H/nr_hugepages
	[ "$(cat $H/free_hugepages)" -ge "$1" ] || bail "node 0 cannot hold $1 free 2M pages"
}
# one MODE MiB: one start, timed from the probes; its seconds appended to $TMP/MODE-MiB.
one() {
	local d=ws-$1-$2 t
	case $1 in
	nohook) chmod 644 "$HOOKDST"; preset $(($2 / 2)) ;;
	prefault) chmod 755 "$HOOKDST"; preset $(($2 / 2)) ;;
	warm)	chmod 755 "$HOOKDST"
		echo "node0.2M = 1 x ${2}M @ $MB" > "$PREALLOC_WARM_CONF"
		"$PREALLOC" warm fill > /dev/null 2>&1 || bail "warm fill of ${2} MiB failed" ;;
	esac
	out=$($V start "$d" 2>&1) || bail "$d did not start: $out"
	[ "$1" != nohook ] || [ "$(holders)" -eq 0 ] || bail "our hook ran for $d (it claimed pages)"
	t=$(awk -v a="$(probe_field 00-prealloc-test-probe "$d" "prepare begin" 5)" \
		-v b="$(probe_field zz-prealloc-test-probe "$d" "started begin" 5)" 'BEGIN { printf "%.4f", b - a }')
	$V destroy "$d" > /dev/null
	echo "$t" >> "$TMP/$1-$2"
	echo "# round $r: $1 $2 MiB: $t s"
}
for ((r = 0; r < ROUNDS; r++)); do
	for s in "${SIZES[@]}"; do
		for m in "${MODES[@]}"; do
			one "$m" "$s"
			[ "$r" -gt 0 ] || rm -f "$TMP/$m-$s"	# the warm-up round
		done
	done
done
chmod 755 "$HOOKDST"
echo "node0.2M = 0 @ $MB" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > /dev/null 2>&1
python3 - "$TMP" "${SIZES[*]}" "$((ROUNDS - 1))" <<'PY'
import statistics, sys
tmp, sizes, runs = sys.argv[1], [int(s) for s in sys.argv[2].split()], sys.argv[3]
modes = ["nohook", "prefault", "warm"]
def q(v, p):
    v = sorted(v); k = (len(v) - 1) * p; f = int(k)
    return v[f] + (v[min(f + 1, len(v) - 1)] - v[f]) * (k - f)
t = {(m, s): [float(x) for x in open(f"{tmp}/{m}-{s}")] for m in modes for s in sizes}
med = {k: statistics.median(v) for k, v in t.items()}
iqr = {k: q(v, .75) - q(v, .25) for k, v in t.items()}
print(f"start, prepare begin -> started begin, median (IQR) of {runs} runs, seconds:")
print("| MiB | " + " | ".join(modes) + " |")
print("|---|" + "---|" * len(modes))
for s in sizes:
    print(f"| {s} | " + " | ".join(f"{med[m, s]:.3f} ({iqr[m, s]:.3f})" for m in modes) + " |")
lo, hi = sizes[0], sizes[-1]
print(f"\nmemory part, start({hi} MiB) - start({lo} MiB), same mode:")
mem = {m: med[m, hi] - med[m, lo] for m in modes}
for m in modes:
    noise = max(iqr[m, hi], iqr[m, lo])
    print(f"  {m}: {mem[m]:.3f} s (noise: the larger IQR {noise:.3f} s)"
          + ("  <- within the noise" if abs(mem[m]) <= noise else ""))
if mem["nohook"] > 0:
    print(f"warm memory part / nohook memory part at {hi} MiB: {mem['warm'] / mem['nohook']:.3f} (target <= 0.15)")
    print(f"prefault memory part / nohook memory part at {hi} MiB: {mem['prefault'] / mem['nohook']:.3f}")
print(f"warm start({hi} MiB) / warm start({lo} MiB): {med['warm', hi] / med['warm', lo]:.3f} (target <= 1.1)")
PY
finish
