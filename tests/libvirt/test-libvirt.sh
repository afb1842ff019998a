#!/bin/bash
# SPDX-License-Identifier: MIT
# The libvirt hook against a real libvirtd 9 + QEMU TCG (docs/libvirt.md).
# Starts virtlogd and libvirtd itself when none runs, and stops only those;
# installs the hook, a private 2M hugetlbfs for libvirt and a libvirt.conf
# pointing at a private record store, and puts every file back after.
set -u
. "$(dirname "$0")/../integration/lib.sh"
HOOK=${HOOK:?} PREALLOC_DOMAIN=${PREALLOC_DOMAIN:?}
V="virsh -q -c qemu:///system"
HOOKDST=/etc/libvirt/hooks/qemu.d/prealloc
CONF=/etc/prealloc/libvirt.conf
QCONF=/etc/libvirt/qemu.conf

private_hugetlbfs 2M
command -v libvirtd > /dev/null || skip "libvirtd is not installed (setup.sh installs it)"
command -v qemu-system-x86_64 > /dev/null || skip "qemu-system-x86_64 is not installed"
chmod 755 "$MNT"
STATE=$TMP/state
mkdir -m 700 -p "$STATE"

# backup FILE: restored (or removed) at exit.
backup() {
	if [ -e "$1" ]; then
		cp -a "$1" "$TMP/$(echo "$1" | tr / _)"
		on_exit "cp -a '$TMP/$(echo "$1" | tr / _)' '$1'"
	else
		on_exit "rm -f '$1'"
	fi
}
backup "$HOOKDST"
backup "$CONF"
backup "$QCONF"
mkdir -p /etc/libvirt/hooks/qemu.d /etc/prealloc
install -m 755 "$HOOK" "$HOOKDST"
printf 'hugetlbfs_mount = "%s"\n' "$MNT" >> "$QCONF"
cat > "$CONF" <<EOC
state_dir = $STATE
start_grace = 15
EOC
export PREALLOC_STATE_DIR=$STATE

pidof libvirtd > /dev/null && bail "a libvirtd this test did not start runs (pid $(pidof libvirtd)); stop it first"
if ! pidof virtlogd > /dev/null; then
	virtlogd -d || bail "virtlogd did not start"
	on_exit "kill $(pidof virtlogd)"
fi
start_libvirtd() {
	libvirtd -d || bail "libvirtd did not start"
	for _ in $(seq 50); do $V list > /dev/null 2>&1 && return 0; sleep 0.1; done
	bail "libvirtd did not answer"
}
start_libvirtd
on_exit 'kill $(cat /run/libvirtd.pid)'
DOMS=()
on_exit 'for d in "${DOMS[@]}"; do $V destroy $d; $V undefine $d; done'

# define NAME MiB [extra XML inside <domain>] [memoryBacking XML]
define() {
	local f=$TMP/$1.xml
	cat > "$f" <<EOX
<domain type='qemu'><name>$1</name><memory unit='MiB'>$2</memory>
<memoryBacking>${4:-<hugepages/>}</memoryBacking><vcpu>1</vcpu>
<os><type arch='x86_64' machine='pc'>hvm</type></os>$3
<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices>
</domain>
EOX
	$V define "$f" > /dev/null || bail "define $1"
	DOMS+=("$1")
}
pool() { cat /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages; }
holders() { "$PREALLOC" pool 2>/dev/null | grep -c "held by libvirt:" ; }

# Case: restore/migrate begin and unknown stages print nothing on stdout.
define pa 64 ""
xml=$TMP/pa.xml
for st in "restore begin" "migrate begin" "reconnect begin" "attach begin"; do
	out=$("$HOOK" pa $st - < "$xml")
	check "$st: exit 0, nothing on stdout" [ $? -eq 0 -a -z "$out" ]
done

# Case: two guests started at the same instant on an empty pool.
echo 0 > /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
define pb 64 ""
p0=$(pool)
$V start pa > "$TMP/a.out" 2>&1 & a=$!
$V start pb > "$TMP/b.out" 2>&1 & b=$!
wait $a; ra=$?; wait $b; rb=$?
check "both guests started at once run" [ $ra -eq 0 -a $rb -eq 0 ]
[ $ra -eq 0 -a $rb -eq 0 ] || cat "$TMP/a.out" "$TMP/b.out"
check "the pool grew by exactly both guests' pages (64: $p0 -> $(pool))" [ "$(pool)" -eq $((p0 + 64)) ]
check "the record store holds both domains" [ "$(holders)" -eq 2 ]
check "libvirt's status file exists while the guest runs" [ -e /run/libvirt/qemu/pa.xml ]
"$PREALLOC" pool --gc > /dev/null 2>&1
check "gc keeps a running guest's pages" [ "$(pool)" -eq $((p0 + 64)) -a "$(holders)" -eq 2 ]
$V destroy pa > /dev/null; $V destroy pb > /dev/null
check "destroying both gives everything back ($(pool))" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]

# Case: a guest too big for the node is refused at prepare, nothing leaked.
define pbig 2097152 ""
out=$($V start pbig 2>&1)
check "a too-big guest is refused" [ $? -ne 0 ]
check "virsh shows the hook's message" grep -q "needs 1048576 2M hugepages on host node 0" <<< "$out" ||
	echo "# $out"
check "nothing leaked after the refusal" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]

# Case: libvirtd killed during a start (the hook claimed, QEMU never ran).
$V dumpxml pa > "$TMP/pa.live.xml"
t0=$(date +%s.%N)
"$HOOK" pa prepare begin - < "$TMP/pa.live.xml"
check "a claim made at prepare is held" [ "$(pool)" -eq $((p0 + 32)) -a "$(holders)" -eq 1 ]
kill -9 "$(cat /run/libvirtd.pid)"; sleep 0.5; rm -f /run/libvirtd.pid
start_libvirtd
"$PREALLOC" pool --gc > /dev/null 2>&1
check "gc within the start grace keeps the claim" [ "$(pool)" -eq $((p0 + 32)) ]
# The claim's grace (start_grace = 15 s) runs from the prepare: wait out the rest of it.
sleep "$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { r = t0 + 15.5 - now; print (r > 0 ? r : 0) }')"
"$PREALLOC" pool --gc > /dev/null 2>&1
check "gc after the grace restores the pool ($(pool))" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]

# Case: prealloc-domain: plan, --reserve then start uses the reserved pages, --release.
plan=$("$PREALLOC_DOMAIN" pa --json)
check "the plan: 32 2M pages on node 0" grep -Eq '"pages": *32' <<< "$plan"
"$PREALLOC_DOMAIN" pa --reserve --for 60 > /dev/null
check "--reserve grew the pool by 32" [ "$(pool)" -eq $((p0 + 32)) ]
$V start pa > /dev/null
check "the start used the reserved pages (pool $(pool))" [ "$(pool)" -eq $((p0 + 32)) ]
$V destroy pa > /dev/null
check "stopping gives the reservation back" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]
"$PREALLOC_DOMAIN" pa --reserve --for 60 > /dev/null
"$PREALLOC_DOMAIN" pa --release > /dev/null
check "--release gives it back" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]
finish
