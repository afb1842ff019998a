# shellcheck shell=bash
# shellcheck disable=SC2016,SC2154 # all_of expands its check when run; guest-libvirt.sh sets T, V, J, sysnode...
# SPDX-License-Identifier: MIT
#
# (g) A guest with a passed-through device, through libvirt, on warm memory
# (docs/testing.md, "libvirt on two nodes"; docs/libvirt.md, "Guests with a
# passed-through device"). Sourced by guest-libvirt.sh after (d), with its
# helpers and state: libvirtd up with memory_backing_dir a 2M hugetlbfs
# ($MB2), one READY 64 MiB warm file per node. The rig's edu device
# (1234:11e8, alone in its IOMMU group behind the emulated intel-iommu) is
# each guest's <hostdev managed='yes'>: libvirt binds it to vfio-pci, and
# the L2 QEMU maps all guest RAM for its DMA when the device is realized.
# QEMU's own trace events time that map: vfio_listener_region_add_ram
# before each RAM section's map, vfio_get_device right after the last
# (pid@seconds stamps: libvirt passes -msg timestamp=on).

step "(g) a passed-through device"
edu=
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x1234:0x11e8 ] && [ -e "$d/iommu_group" ] &&
		{ edu=${d##*/}; break; }
done
IFS=':.' read -r pd pb ps pf <<< "${edu:-0:0:0.0}"
HOSTDEV="<hostdev mode='subsystem' type='pci' managed='yes'><source><address domain='0x$pd' bus='0x$pb' slot='0x$ps' function='0x$pf'/></source></hostdev>"
check "g: the edu device $edu is in an IOMMU group ($(basename "$(readlink "/sys/bus/pci/devices/$edu/iommu_group" 2> /dev/null)"))" \
	"no edu device behind the IOMMU" [ -n "$edu" ]

# hdefine NAME MiB VCPUS EXTRA: a diskless TCG domain with the edu device,
# shared file-backed memory in memory_backing_dir (2M), no preallocation by
# QEMU, and the two trace events that bracket its VFIO map.
hdefine() {
	cat > "$T/$1.xml" <<EOX
<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'><name>$1</name>
<memory unit='MiB'>$2</memory><vcpu>$3</vcpu>
<memoryBacking><source type='file'/><access mode='shared'/></memoryBacking>
<os><type arch='x86_64' machine='pc'>hvm</type></os>
<features><tcg><tb-cache unit='MiB'>16</tb-cache></tcg></features>$4
<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/>$HOSTDEV</devices>
<qemu:commandline><qemu:arg value='-trace'/><qemu:arg value='vfio_listener_region_add_ram'/>
<qemu:arg value='-trace'/><qemu:arg value='vfio_get_device'/></qemu:commandline>
</domain>
EOX
	$V define "$T/$1.xml" > "$T/define.out" 2>&1 || { sed 's/^/    /' "$T/define.out"; return 1; }
}
meta() { echo "<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' $1/></metadata>"; }
ON0="<numatune><memory mode='strict' nodeset='0'/></numatune>"
ON1="<numatune><memory mode='strict' nodeset='1'/></numatune>"

# hstart NAME: virsh start (the guest running), timed; then from its QEMU:
# MAP_MS (first RAM section's map to the device's fd, the trace), MAPPED_KB
# (the RAM sections mapped from 1 MiB up to the PCI hole: guest RAM, not
# the BIOS below 4 GiB), VMLCK (kB pinned, type1's charge) and MEMLOCK
# (its RLIMIT_MEMLOCK, bytes: what libvirt set).
hstart() {
	local log=/var/log/libvirt/qemu/$1.log t0 t1 s e pid
	t0=$EPOCHREALTIME
	start "$1" || { qemu_log "$1"; return 1; }
	t1=$EPOCHREALTIME
	START_MS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
	# This QEMU's trace lines only (pid@seconds:event): the log keeps earlier starts'.
	pid=$(qpid "$1")
	grep -a "^$pid@[0-9.]*:vfio_" "$log" > "$T/trace.txt"
	MAP_MS=$(awk -F'[@:]' '$3 ~ /^vfio_listener_region_add_ram / && !s { s = $2 }
		$3 ~ /^vfio_get_device / && s { printf "%.0f", ($2 - s) * 1000; exit }' "$T/trace.txt")
	MAPPED_KB=0
	# (a file, not <(...): the chroot's /dev has no /dev/fd)
	sed -n 's/.*vfio_listener_region_add_ram region_add \[ram\] \(0x[0-9a-f]*\) - \(0x[0-9a-f]*\) .*/\1 \2/p' \
		"$T/trace.txt" > "$T/map.txt"
	while read -r s e; do
		[ $((s)) -ge $((1 << 20)) ] && [ $((e)) -lt $((0xe0000000)) ] &&
			MAPPED_KB=$((MAPPED_KB + ((e - s + 1) >> 10)))
	done < "$T/map.txt"
	VMLCK=$(awk '/^VmLck/ { print $2 }' "/proc/$pid/status")
	MEMLOCK=$(awk '/^Max locked memory/ { print $4 }' "/proc/$pid/limits")
}
# pinned NAME MiB: all guest RAM above the legacy window below 1 MiB mapped
# for the device (the trace) and pinned (VmLck), within libvirt's memlock limit.
pinned() {
	local want=$((($2 - 1) << 10))
	[ -n "$MAP_MS" ] && [ "$MAPPED_KB" -eq "$want" ] && [ "${VMLCK:-0}" -ge "$want" ] &&
		[ "$MEMLOCK" != unlimited ] && [ "$MEMLOCK" -ge $((VMLCK << 10)) ]
}
# record PATH: the state of the store's record of PATH ("ready": prealloc made
# it, the hook's pre-fault), "none", or "unread" when the store cannot be
# listed (so that "none" is never an error taken for an answer).
record() {
	local i=0 n
	if ! "$PREALLOC" pool --json > "$T/pool.json" 2> /dev/null ||
		! n=$("$J" "$T/pool.json" records/# 2> /dev/null); then
		echo unread
		return
	fi
	while [ "$i" -lt "$n" ]; do
		[ "$("$J" "$T/pool.json" "records/$i/path")" = "$1" ] &&
			{ "$J" "$T/pool.json" "records/$i/state"; return; }
		i=$((i + 1))
	done
	echo none
}
ready_inodes() { find "$MB2/.prealloc" -maxdepth 1 -type f -exec stat -c %i {} + | sort | tr '\n' ' '; }
edu_driver() { local l; l=$(readlink "/sys/bus/pci/devices/$edu/driver" 2> /dev/null); echo "${l##*/}"; }

# ---- three starts side by side: cold, the hook's prefault, warm -----------
# cold: the hook told to do nothing (what libvirt alone does; the test makes
# the free pages): the pin faults and zeroes every page. prefault: no warm
# file asked for; the guest is pinned at start, so the hook pre-faults its
# file (prefault_pinned). warm: the node's READY file. 5 rounds, rotating.
hdefine hc 64 1 "$ON0$(meta "grow_pools='no' prefault='no' warm='no'")" || fail "hc define" "virsh define"
hdefine hp 64 1 "$ON0$(meta "warm='no'")" || fail "hp define" "virsh define"
hdefine hw 64 1 "$ON0$(meta "warm='yes'")" || fail "hw define" "virsh define"
"$PREALLOC_DOMAIN" hp --json > "$T/pd.json" 2> "$T/pd.err"
check "g: prealloc-domain: $edu passed through, RAM pinned at start ($("$J" "$T/pd.json" passthrough/devices/0) $("$J" "$T/pd.json" passthrough/pinned_at_start)); no warm file asked: pre-faulted ($(backend hp pc.ram start))" \
	"$(cat "$T/pd.json" "$T/pd.err")" all_of '[ "$("$J" "$T/pd.json" passthrough/devices/0)" = "$edu" ] &&
		[ "$("$J" "$T/pd.json" passthrough/pinned_at_start)" = true ] &&
		[ "$(backend hp pc.ram start)" = prefault ]'
check "g: prealloc-domain: hw starts warm, hc cold, its pin zeroing ($(backend hw pc.ram start), $(backend hc pc.ram start): $(backend hc pc.ram pin))" \
	"$(backend hw pc.ram warm_why)" all_of '[ "$(backend hw pc.ram start) $(backend hc pc.ram start)" = "warm qemu" ] &&
		grep -q "pin faults and zeroes" <<< "$(backend hc pc.ram pin)"'
g0=$(nr 0)
echo $((g0 + 32)) > "$sysnode/node0/hugepages/hugepages-2048kB/nr_hugepages"	# room: cold, prefault
rm -f "$T"/g-*.ms
lims=
for order in "hc hp hw" "hp hw hc" "hw hc hp" "hc hw hp" "hp hc hw"; do
	for k in $order; do
		ready=$(ready_inodes) before=$(pools)
		if ! hstart "$k"; then
			fail "g: $k start" "$(tail -1 "$T/start.out")"
			destroy "$k"
			continue
		fi
		echo "    $k: start $START_MS ms, VFIO map $MAP_MS ms, mapped $MAPPED_KB kB, VmLck $VMLCK kB, memlock $MEMLOCK"
		echo "$START_MS $MAP_MS" >> "$T/g-$k.ms"
		lims="$lims $MEMLOCK"
		D=$(ls -d "$MB2"/libvirt/qemu/*-"$k")
		i=$(stat -c %i "$D/pc.ram")
		n0=$(pages "$k" "$D/pc.ram" 0) n1=$(pages "$k" "$D/pc.ram" 1)
		check "g: $k ($order): running, the edu device on $(edu_driver), all guest RAM but the first MiB mapped for it and pinned ($MAPPED_KB kB, VmLck $VMLCK kB, memlock $MEMLOCK)" \
			"not pinned: $(head -4 "$T/trace.txt")" \
			all_of '[ "$($V domstate "$k")" = running ] && [ "$(edu_driver)" = vfio-pci ] && pinned "$k" 64'
		case $k in
		hw) check "g: hw: the READY warm file ($i of $ready), no new page ($before -> $(pools)), its 32 pages on node 0 ($n0, $n1 on 1)" \
			"not warm" all_of 'grep -qw "$i" <<< "$ready" && [ "$(pools)" = "$before" ] && [ "$n0 $n1" = "32 0" ]' ;;
		hp) check "g: hp: pre-faulted by the hook (a ready record of the store), not a warm file; its 32 pages on node 0 ($n0, $n1 on 1; READY $(wstat 0 ready_bytes) $(wstat 1 ready_bytes))" \
			"not pre-faulted" all_of '[ "$(record "$D/pc.ram")" = ready ] && [ -n "$ready" ] && ! grep -qw "$i" <<< "$ready" &&
				[ "$n0 $n1" = "32 0" ] &&
				[ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ]' ;;
		hc) check "g: hc: cold, QEMU's own file (no record), its 32 pages on node 0 ($n0, $n1 on 1)" \
			"pages elsewhere" all_of '[ "$(record "$D/pc.ram")" = none ] && [ -n "$ready" ] && ! grep -qw "$i" <<< "$ready" &&
				[ "$n0 $n1" = "32 0" ]' ;;
		esac
		destroy "$k"
		if [ "$k" = hw ]; then
			"$PREALLOC" warm fill > "$T/fill.out" 2>&1
			check "g: hw destroyed: its file READY again after a fill ($(wstat 0 ready_bytes) MiB)" \
				"$(cat "$T/fill.out")" [ "$(wstat 0 ready_bytes)" = 64 ]
		fi
	done
done
# shellcheck disable=SC2086 # one word per start
check "g: the memlock limit is libvirt's for a VFIO guest (its memory + 1 GiB) in every start, the hook's as the others' ($lims)" \
	"not libvirt's" all_of '[ "$(tr " " "\n" <<< "$lims" | sort -u | tr -d "\n")" = $(((64 + 1024) << 20)) ]'
# The figure (docs/benchmarks.md): medians of the three, and the map's share.
med() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
if [ -s "$T/g-hc.ms" ] && [ -s "$T/g-hp.ms" ] && [ -s "$T/g-hw.ms" ]; then
	for k in hc hp hw; do
		eval "s_$k=$(cut -d' ' -f1 "$T/g-$k.ms" | med) m_$k=$(cut -d' ' -f2 "$T/g-$k.ms" | med)"
		echo "LIBVIRT-VFIO: $k starts (ms, VFIO map ms): $(tr '\n' ',' < "$T/g-$k.ms" | sed 's/,$//')"
	done
	# shellcheck disable=SC2154 # s_hc... set by the eval above
	awk -v sc="$s_hc" -v sp="$s_hp" -v sw="$s_hw" -v mc="$m_hc" -v mp="$m_hp" -v mw="$m_hw" 'BEGIN {
		printf "LIBVIRT-VFIO: 64 MiB 2M, median virsh start: cold %d ms (map %d, %.1f%%), prefault %d ms (map %d, %.1f%%), warm %d ms (map %d, %.1f%%)\n",
			sc, mc, 100 * mc / sc, sp, mp, 100 * mp / sp, sw, mw, 100 * mw / sw
		printf "LIBVIRT-VFIO: warm/cold start %.2f, prefault/cold %.2f; map warm/cold %.3f, prefault/cold %.3f\n",
			sw / sc, sp / sc, mw / mc, mp / mc }'
fi
echo "$g0" > "$sysnode/node0/hugepages/hugepages-2048kB/nr_hugepages"

# ---- two cells on two nodes, one device -------------------------------------
step "(g) two cells, one device"
hdefine h2 128 2 "$(cells 64)$(meta "warm='yes'")" || fail "h2 define" "virsh define"
ready=$(ready_inodes) before=$(pools)
if hstart h2; then
	D=$(ls -d "$MB2"/libvirt/qemu/*-h2)
	i0=$(stat -c %i "$D/ram-node0") i1=$(stat -c %i "$D/ram-node1")
	n00=$(pages h2 "$D/ram-node0" 0) n01=$(pages h2 "$D/ram-node0" 1)
	n10=$(pages h2 "$D/ram-node1" 0) n11=$(pages h2 "$D/ram-node1" 1)
	check "g: h2: each cell's file a READY warm file of its node ($i0 $i1 of $ready), no new page ($before -> $(pools)), ram-node0 on 0 ($n00/$n01), ram-node1 on 1 ($n11/$n10)" \
		"not warm per node" all_of 'grep -qw "$i0" <<< "$ready" && grep -qw "$i1" <<< "$ready" && [ "$i0" != "$i1" ] &&
			[ "$(pools)" = "$before" ] && [ "$n00 $n01 $n10 $n11" = "32 0 0 32" ]'
	check "g: h2: the map covers both cells ($MAPPED_KB kB from 1 MiB up, VmLck $VMLCK kB)" \
		"$(grep -c vfio_listener_region_add_ram "$T/trace.txt") sections" pinned h2 128
else
	fail "g: h2 start" "$(tail -1 "$T/start.out")"
fi
destroy h2
"$PREALLOC" warm fill > "$T/fill.out" 2>&1
check "g: h2 destroyed: both files READY again after a fill ($(wstat 0 ready_bytes) $(wstat 1 ready_bytes))" \
	"$(cat "$T/fill.out")" [ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ]

# ---- no READY file on its node: never another node's; pre-faulted ----------
# Node 1's only READY file taken by another holder; node 0's stays READY.
step "(g) no warm file on its node"
"$PREALLOC" warm take --node 1 --page-size 2M 64M --mount "$MB2" --to "$MB2/held1" --holder rig-g > "$T/take.out" 2>&1 ||
	fail "g: warm take of node 1's file" "$(cat "$T/take.out")"
hdefine h1 64 1 "$ON1$(meta "warm='yes'")" || fail "h1 define" "virsh define"
check "g: prealloc-domain: h1 (node 1, warm='yes') has no READY file on node 1: pre-faulted ($(backend h1 pc.ram start): $(backend h1 pc.ram warm_why); $(backend h1 pc.ram pin))" \
	"$(cat "$T/pd.err")" all_of '[ "$(backend h1 pc.ram start)" = prefault ] &&
		grep -q "^0 READY warm file(s) of 2M pages on node 1" <<< "$(backend h1 pc.ram warm_why)"'
ready=$(ready_inodes) b1=$(nr 1)
if hstart h1; then
	D=$(ls -d "$MB2"/libvirt/qemu/*-h1)
	i=$(stat -c %i "$D/pc.ram")
	n0=$(pages h1 "$D/pc.ram" 0) n1=$(pages h1 "$D/pc.ram" 1)
	rec=$(record "$D/pc.ram")
	check "g: h1: not node 0's READY file ($i of $ready; READY $(wstat 0 ready_bytes) on 0), pre-faulted on node 1 (record $rec; $n1, $n0 on 0; node 1's pool $b1 -> $(nr 1)), pinned ($MAPPED_KB kB mapped, VmLck $VMLCK kB)" \
		"another node's file: $(grep -A1 '"path"' "$T/pool.json" | tr -d ' \n' | head -c 600)" all_of '[ -n "$ready" ] && ! grep -qw "$i" <<< "$ready" && [ "$(wstat 0 ready_bytes)" = 64 ] && [ "$rec" = ready ] &&
			[ "$n0 $n1" = "0 32" ] && [ "$(nr 1)" -eq $((b1 + 32)) ] && pinned h1 64'
else
	fail "g: h1 start" "$(tail -1 "$T/start.out")"
fi
destroy h1
check "g: h1 destroyed: node 1's pool as before ($b1 -> $(nr 1))" "pool left" [ "$(nr 1)" = "$b1" ]
"$PREALLOC" warm give "$MB2/held1" > "$T/give.out" 2>&1
"$PREALLOC" warm fill > "$T/fill.out" 2>&1
check "g: the held file given back, READY again ($(wstat 0 ready_bytes) $(wstat 1 ready_bytes))" \
	"$(cat "$T/give.out" "$T/fill.out")" [ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ]
check "g: the edu device given back by libvirt after the guests (driver now '$(edu_driver)')" \
	"still on vfio-pci" [ "$(edu_driver)" != vfio-pci ]
