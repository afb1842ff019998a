#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The libvirt-two-node rig's checks (docs/testing.md, "libvirt on two
# nodes"): run by guest-tests.sh inside the two-node guest, chrooted into
# the host's root (9p, read-only) under a tmpfs overlay, with the tree's
# `meson install` laid on top. A real libvirtd (Debian's) with prealloc's
# hook starts small TCG L2 guests through virsh; every check reads the
# guest's per-node sysfs pools and the L2 QEMU's /proc/PID/numa_maps.
# Prints VM-TEST: PASS|FAIL lines like guest-tests.sh.
# shellcheck disable=SC1091,SC2016,SC2317 # a file of the guest; all_of expands its check when run
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LANG=C.UTF-8
. /tmp/rig/libvirt.env	# PREALLOC, HOOK, PREALLOC_DOMAIN: the tree's installed programs
J=/tmp/rig/vm_json_get
V="virsh -q -c qemu:///system"
sysnode=/sys/devices/system/node
HP=/dev/hugepages	# libvirt's hugetlbfs (<hugepages/>)
MB2=/mnt/mb2m		# memory_backing_dir, 2M hugetlbfs
MB4=/mnt/mb4k		# memory_backing_dir, tmpfs (4k), case (e)
T=/tmp/lv
mkdir -p "$T" "$MB2" "$MB4"

pass() { echo "VM-TEST: PASS $1"; }
fail() { echo "VM-TEST: FAIL $1: $2"; }
# check NAME WHY CMD...: PASS when CMD succeeds, else FAIL with WHY.
check() {
	local name=$1 why=$2
	shift 2
	if "$@"; then pass "$name"; else fail "$name" "$why"; return 1; fi
}
all_of() { eval "$1"; }
step() { echo "libvirt-rig: [$(cut -d' ' -f1 /proc/uptime)s] $*"; }

# nr NODE [FIELD] [PAGEKB]: a node's hugepage pool counter.
nr() { cat "$sysnode/node$1/hugepages/hugepages-${3:-2048}kB/${2:-nr_hugepages}"; }
pools() { echo "$(nr 0)/$(nr 0 free_hugepages) $(nr 1)/$(nr 1 free_hugepages)"; }
qpid() { cat "/run/libvirt/qemu/$1.pid" 2> /dev/null; }
# pages DOMAIN PATTERN NODE [PAGEKB]: pages of the L2 QEMU's mappings whose
# numa_maps line matches PATTERN, on NODE (N<node>=), of that page size.
pages() {
	awk -v pat="$2" -v n="N$3=" -v ps="kernelpagesize_kB=${4:-2048}" '
		$0 ~ pat && index($0, ps) { for (i = 1; i <= NF; i++)
			if (index($i, n) == 1) s += substr($i, length(n) + 1) }
		END { print s + 0 }' "/proc/$(qpid "$1")/numa_maps" 2> /dev/null
}
# wstat NODE KEY [PAGE] [MOUNT]: the warm pool's KEY (ready_bytes...) in MiB for one node.
wstat() {
	"$PREALLOC" warm status --json > "$T/ws.json" 2> /dev/null
	local i=0 n s=0
	n=$("$J" "$T/ws.json" '#' 2> /dev/null || echo 0)
	while [ "$i" -lt "$n" ]; do
		if [ "$("$J" "$T/ws.json" "$i/node")" = "$1" ] &&
			[ "$("$J" "$T/ws.json" "$i/mount")" = "${4:-$MB2}" ] &&
			[ "$("$J" "$T/ws.json" "$i/page_size")" = "${3:-2097152}" ]; then
			s=$((s + $("$J" "$T/ws.json" "$i/$2")))
		fi
		i=$((i + 1))
	done
	echo $((s >> 20))
}
# backend DOMAIN ALIAS KEY: prealloc-domain's backends[alias=ALIAS].KEY.
backend() {
	"$PREALLOC_DOMAIN" "$1" --json > "$T/pd.json" 2> "$T/pd.err"
	local i=0 n
	n=$("$J" "$T/pd.json" backends/# 2> /dev/null || echo 0)
	while [ "$i" -lt "$n" ]; do
		[ "$("$J" "$T/pd.json" "backends/$i/alias")" = "$2" ] &&
			{ "$J" "$T/pd.json" "backends/$i/$3"; return; }
		i=$((i + 1))
	done
}
# need DOMAIN NODE: the 2M pages prealloc-domain says the domain needs on NODE.
need() {
	"$PREALLOC_DOMAIN" "$1" --json > "$T/pd.json" 2> "$T/pd.err"
	local i=0 n s=0
	n=$("$J" "$T/pd.json" needs/# 2> /dev/null || echo 0)
	while [ "$i" -lt "$n" ]; do
		[ "$("$J" "$T/pd.json" "needs/$i/node")" = "$2" ] &&
			[ "$("$J" "$T/pd.json" "needs/$i/page_size")" = 2097152 ] &&
			s=$((s + $("$J" "$T/pd.json" "needs/$i/pages")))
		i=$((i + 1))
	done
	echo "$s"
}
# define NAME MEMORY-MiB VCPUS EXTRA [MEMORYBACKING]: a diskless TCG domain.
define() {
	cat > "$T/$1.xml" <<EOX
<domain type='qemu'><name>$1</name><memory unit='MiB'>$2</memory><vcpu>$3</vcpu>
<memoryBacking>${5:-<hugepages/>}</memoryBacking>
<os><type arch='x86_64' machine='pc'>hvm</type></os>
<features><tcg><tb-cache unit='MiB'>16</tb-cache></tcg></features>$4
<devices><emulator>/usr/bin/qemu-system-x86_64</emulator><memballoon model='none'/></devices>
</domain>
EOX
	$V define "$T/$1.xml" > "$T/define.out" 2>&1 || { sed 's/^/    /' "$T/define.out"; return 1; }
}
# cells MiB0 [MiB1]: two guest cells, cell N bound strictly to host node N.
cells() {
	echo "<cpu><numa><cell id='0' cpus='0' memory='$1' unit='MiB'/>"
	echo "<cell id='1' cpus='1' memory='${2:-$1}' unit='MiB'/></numa></cpu>"
	echo "<numatune><memnode cellid='0' mode='strict' nodeset='0'/>"
	echo "<memnode cellid='1' mode='strict' nodeset='1'/></numatune>"
}
start() {
	$V start "$@" > "$T/start.out" 2>&1 && return 0
	sed 's/^/    /' "$T/start.out"
	return 1
}
destroy() { $V destroy "$1" > /dev/null 2>&1; }
qemu_log() { sed 's/^/    /' "/var/log/libvirt/qemu/$1.log" 2> /dev/null | tail -20; }

# ---- the root: libvirt's and prealloc's settings, mounts, the daemon ------
step "settings"
for d in "$PREALLOC" "$HOOK" "$PREALLOC_DOMAIN"; do
	[ -x "$d" ] || { fail setup "$d is not installed in the guest's root"; exit 0; }
done
lib=$(ldd "$PREALLOC" | awk '/libprealloc/ { print $3 }')
check "the tree's prealloc runs: $PREALLOC with $lib" "not the tree's library" \
	all_of '[ "${lib#"${PREFIX:?}"}" != "$lib" ]'
mount -t hugetlbfs -o pagesize=2M none "$HP"
mount -t hugetlbfs -o pagesize=2M none "$MB2"
mount -t tmpfs -o size=256M,mode=755 none "$MB4"
chmod 755 "$MB2"
# Nothing of the host's libvirt state: its domains, networks, hooks.
rm -rf /etc/libvirt/qemu /etc/libvirt/hooks /etc/libvirt/storage/autostart \
	/var/lib/libvirt/qemu/* /var/cache/libvirt/qemu/* /var/log/libvirt/*
# Only the emulator the L2 guests use: libvirtd probes every qemu-system-*
# it finds, each probe a QEMU start under nested TCG.
for q in /usr/bin/qemu-system-*; do [ "$q" = /usr/bin/qemu-system-x86_64 ] || rm -f "$q"; done
mkdir -p /etc/libvirt/qemu/networks /etc/libvirt/hooks/qemu.d /etc/prealloc /var/log/libvirt/qemu
# No namespaces or seccomp (the rig kernel has neither); QEMU's stdio to a
# file: no virtlogd. A QEMU capability probe under nested TCG is slow.
qconf() {
	cat > /etc/libvirt/qemu.conf <<EOC
hugetlbfs_mount = "$HP"
memory_backing_dir = "$1"
namespaces = [ ]
seccomp_sandbox = 0
stdio_handler = "file"
EOC
}
qconf "$MB2"
cat > /etc/prealloc/warm.conf <<EOC
node0.2M = 1 x 64M @ $MB2
node1.2M = 1 x 64M @ $MB2
node1.4k = 1 x 64M @ $MB4
EOC
: > /etc/prealloc/libvirt.conf
echo 'log_outputs = "3:file:/var/log/libvirt/libvirtd.log"' >> /etc/libvirt/libvirtd.conf
out=$("$PREALLOC" hook install 2>&1)
check "prealloc hook install" "$out" cmp -s "$HOOK" /etc/libvirt/hooks/qemu.d/prealloc
mkdir -p /sys/fs/cgroup
mount -t cgroup2 none /sys/fs/cgroup
echo "+cpuset +cpu +memory +pids +hugetlb" > /sys/fs/cgroup/cgroup.subtree_control
step "libvirtd"
libvirtd_up() {
	env -i PATH="$PATH" LANG=C.UTF-8 libvirtd -d || return 1
	for _ in $(seq 600); do $V list > /dev/null 2>&1 && return 0; sleep 0.2; done
	return 1
}
if ! libvirtd_up; then
	fail libvirtd "did not answer within 120 s"
	tail -20 /var/log/libvirt/libvirtd.log 2> /dev/null
	exit 0
fi
pass "libvirtd answers (its hook: $(ls /etc/libvirt/hooks/qemu.d))"
# Every check below leaves the pools as it found them.
echo 0 > "$sysnode/node0/hugepages/hugepages-2048kB/nr_hugepages"
echo 0 > "$sysnode/node1/hugepages/hugepages-2048kB/nr_hugepages"

# ---- (a) two cells, one per node --------------------------------------------
# QEMU's own prealloc over hugetlbfs: the hook grows each node's pool at
# prepare by its cell's pages; every page of cell N is on node N.
step "(a) two cells on <hugepages/>"
define a 192 2 "$(cells 64 128)" || fail "a define" "virsh define"
p0=$(nr 0) p1=$(nr 1)
check "a: prealloc-domain: 32 2M pages needed on node 0 ($(need a 0)), 64 on node 1 ($(need a 1))" \
	"$(cat "$T/pd.err")" all_of '[ "$(need a 0) $(need a 1)" = "32 64" ]'
if start a --paused; then
	pass "a: a two-cell guest bound to nodes 0 and 1 starts"
	check "a: its QEMU runs in libvirt's cgroup ($(cat "/proc/$(qpid a)/cgroup"))" "no cgroup" \
		grep -q "^0::/machine/" "/proc/$(qpid a)/cgroup"
	check "a: node 0's 2M pool grew by cell 0's 32 pages, node 1's by cell 1's 64 ($p0 $p1 -> $(nr 0) $(nr 1))" \
		"per node" all_of '[ "$(nr 0)" -eq $((p0 + 32)) ] && [ "$(nr 1)" -eq $((p1 + 64)) ]'
	n00=$(pages a ram-node0 0) n01=$(pages a ram-node0 1)
	n10=$(pages a ram-node1 0) n11=$(pages a ram-node1 1)
	check "a: numa_maps: ram-node0 32 pages on node 0 ($n00), none on node 1 ($n01); ram-node1 64 on node 1 ($n11), none on 0 ($n10)" \
		"pages on the wrong node" all_of '[ "$n00 $n01 $n10 $n11" = "32 0 0 64" ]' ||
		grep ram-node "/proc/$(qpid a)/numa_maps"
else
	fail "a: start" "$(tail -1 "$T/start.out")"
	qemu_log a
fi
destroy a
check "a: destroy gives each node's pages back ($(pools))" "pool left" \
	all_of '[ "$(nr 0) $(nr 1)" = "$p0 $p1" ]'

# The hook's own pre-fault: a shared file per cell in memory_backing_dir,
# made and populated by the hook at start begin on its cell's node.
step "(a) two cells, the hook's prefault"
PF="<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' prefault='yes'/></metadata>"
SHARED="<source type='file'/><access mode='shared'/><allocation mode='immediate'/>"
define af 192 2 "$(cells 64 128)$PF" "$SHARED" || fail "af define" "virsh define"
if start af --paused; then
	D=$(ls -d "$MB2"/libvirt/qemu/*-af)
	check "af: the hook pre-faulted each cell's file: node 0 32 pages in use, node 1 64 ($(pools))" \
		"per node" all_of '[ $(($(nr 0) - $(nr 0 free_hugepages))) -eq 32 ] &&
			[ $(($(nr 1) - $(nr 1 free_hugepages))) -eq 64 ] &&
			[ "$(stat -c %b "$D/ram-node0")" -eq $((64 << 11)) ]'
	n00=$(pages af "$D/ram-node0" 0) n01=$(pages af "$D/ram-node0" 1)
	n10=$(pages af "$D/ram-node1" 0) n11=$(pages af "$D/ram-node1" 1)
	check "af: numa_maps: ram-node0 32 on node 0 ($n00) and $n01 on 1, ram-node1 64 on node 1 ($n11) and $n10 on 0" \
		"pages on the wrong node" all_of '[ "$n00 $n01 $n10 $n11" = "32 0 0 64" ]' ||
		grep ram-node "/proc/$(qpid af)/numa_maps"
else
	fail "af: start" "$(tail -1 "$T/start.out")"
	qemu_log af
fi
destroy af
check "af: destroy gives each node's pages back ($(pools))" "pool left" \
	all_of '[ "$(nr 0) $(nr 1)" = "$p0 $p1" ] && [ -z "$(find "$MB2" -type f)" ]'

# ---- (b) node 1 short, node 0 with room -------------------------------------
step "(b) node 1 short"
short=$((($(awk '/MemTotal/ { print int($4 / 1024) }' "$sysnode/node1/meminfo") + 256) / 2 * 2))
define b $((64 + short)) 2 "$(cells 64 "$short")" || fail "b define" "virsh define"
before="$(pools)"
if start b --paused; then
	fail "b: refused" "a guest whose cell 1 ($short MiB) is more than node 1 has started"
	destroy b
else
	check "b: refused, the hook naming node 1 ($(grep -o 'host node [0-9]*' "$T/start.out" | head -1))" \
		"$(cat "$T/start.out")" grep -q "hugepages on host node 1" "$T/start.out"
fi
check "b: node 0 (and node 1) exactly as before ($before -> $(pools))" "pools changed" \
	[ "$(pools)" = "$before" ]

# ---- (c) two guests at the same instant, one per node -----------------------
step "(c) two guests at once"
define c0 64 1 "<numatune><memory mode='strict' nodeset='0'/></numatune>" || fail "c0 define" "virsh define"
define c1 64 1 "<numatune><memory mode='strict' nodeset='1'/></numatune>" || fail "c1 define" "virsh define"
$V start c0 > "$T/c0.out" 2>&1 & c0=$!
$V start c1 > "$T/c1.out" 2>&1 & c1=$!
wait $c0; r0=$?
wait $c1; r1=$?
check "c: both started at once run ($r0 $($V domstate c0 2>&1), $r1 $($V domstate c1 2>&1))" \
	"$(cat "$T/c0.out" "$T/c1.out")" \
	all_of '[ "$($V domstate c0) $($V domstate c1)" = "running running" ]'
check "c: node 0's pool grew by c0's 32 pages, node 1's by c1's 32 ($p0 $p1 -> $(nr 0) $(nr 1))" \
	"per node" all_of '[ "$(nr 0) $(nr 1)" = "$((p0 + 32)) $((p1 + 32))" ]'
check "c: numa_maps: c0's 32 pages on node 0 ($(pages c0 pc.ram 0)/$(pages c0 pc.ram 1)), c1's on node 1 ($(pages c1 pc.ram 1)/$(pages c1 pc.ram 0))" \
	"pages on the wrong node" all_of '[ "$(pages c0 pc.ram 0) $(pages c0 pc.ram 1) $(pages c1 pc.ram 1) $(pages c1 pc.ram 0)" = "32 0 32 0" ]'
destroy c0
destroy c1
check "c: destroying both gives everything back ($(pools))" "pool left" \
	all_of '[ "$(nr 0) $(nr 1)" = "$p0 $p1" ]'

# ---- (d) warm: one READY file per node ---------------------------------------
step "(d) warm, two cells"
export PREALLOC_WARM_CONF=/etc/prealloc/warm.conf
WARM="<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' warm='yes'/></metadata>"
"$PREALLOC" warm fill > "$T/fill.out" 2>&1
check "d: warm fill: a READY 64 MiB file on each node ($(wstat 0 ready_bytes) $(wstat 1 ready_bytes))" \
	"$(cat "$T/fill.out")" all_of '[ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ]'
ready=$(find "$MB2/.prealloc" -maxdepth 1 -type f -exec stat -c %i {} + | sort | tr '\n' ' ')
define wx 64 1 "<numatune><memory mode='interleave' nodeset='0-1'/></numatune>$WARM" "$SHARED" ||
	fail "wx define" "virsh define"
wxwhy=$(backend wx pc.ram warm_why)
check "d: prealloc-domain: a backend bound to nodes 0-1 takes no warm file ($(backend wx pc.ram start): $wxwhy)" \
	"$(cat "$T/pd.err")" all_of '[ "$(backend wx pc.ram start)" != warm ] &&
		grep -q "bound to 2 host nodes" <<< "$wxwhy"'
# Free pages for wx's claim (16 per node): a node short of free pages would
# cut the READY files to cover it (docs/admission.md), by design.
wp0=$(nr 0) wp1=$(nr 1)
echo $((wp0 + 16)) > "$sysnode/node0/hugepages/hugepages-2048kB/nr_hugepages"
echo $((wp1 + 16)) > "$sysnode/node1/hugepages/hugepages-2048kB/nr_hugepages"
if start wx --paused; then
	D=$(ls -d "$MB2"/libvirt/qemu/*-wx)
	check "d: ... and started, it holds no warm file (READY $(wstat 0 ready_bytes) $(wstat 1 ready_bytes))" \
		"a warm file was taken" all_of '[ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ] &&
			! grep -qw "$(stat -c %i "$D/pc.ram")" <<< "$ready"'
else
	fail "d: wx start" "$(tail -1 "$T/start.out")"
fi
destroy wx
echo "$wp0" > "$sysnode/node0/hugepages/hugepages-2048kB/nr_hugepages"
echo "$wp1" > "$sysnode/node1/hugepages/hugepages-2048kB/nr_hugepages"
define wd 128 2 "$(cells 64)$WARM" "$SHARED" || fail "wd define" "virsh define"
check "d: prealloc-domain: each cell would start warm ($(backend wd ram-node0 start) $(backend wd ram-node1 start))" \
	"$(backend wd ram-node1 warm_why)" all_of '[ "$(backend wd ram-node0 start) $(backend wd ram-node1 start)" = "warm warm" ]'
w0="$(pools)"
if start wd --paused; then
	D=$(ls -d "$MB2"/libvirt/qemu/*-wd)
	i0=$(stat -c %i "$D/ram-node0") i1=$(stat -c %i "$D/ram-node1")
	check "d: each cell's file is a READY warm file ($i0 $i1 of $ready), one per node handed ($(wstat 0 handed_bytes) $(wstat 1 handed_bytes))" \
		"not the warm files" all_of 'grep -qw "$i0" <<< "$ready" && grep -qw "$i1" <<< "$ready" &&
			[ "$i0" != "$i1" ] && [ "$(wstat 0 handed_bytes) $(wstat 1 handed_bytes)" = "64 64" ]'
	check "d: no new page on either node ($w0 -> $(pools))" "pools changed" [ "$(pools)" = "$w0" ]
	n00=$(pages wd "$D/ram-node0" 0) n01=$(pages wd "$D/ram-node0" 1)
	n10=$(pages wd "$D/ram-node1" 0) n11=$(pages wd "$D/ram-node1" 1)
	check "d: numa_maps: ram-node0's 32 pages on node 0 ($n00, $n01 on 1), ram-node1's on node 1 ($n11, $n10 on 0)" \
		"pages on the wrong node" all_of '[ "$n00 $n01 $n10 $n11" = "32 0 0 32" ]' ||
		grep ram-node "/proc/$(qpid wd)/numa_maps"
else
	fail "d: wd start" "$(tail -1 "$T/start.out")"
	qemu_log wd
fi
destroy wd
check "d: after destroy each file is back on its node ($(wstat 0 dirty_bytes) $(wstat 1 dirty_bytes) MiB dirty)" \
	"not given back" all_of '[ "$(wstat 0 dirty_bytes) $(wstat 1 dirty_bytes)" = "64 64" ]'
"$PREALLOC" warm fill > "$T/fill.out" 2>&1
check "d: ... and READY after fill ($(wstat 0 ready_bytes) $(wstat 1 ready_bytes))" \
	"$(cat "$T/fill.out")" all_of '[ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ]'

# ---- (g) a passed-through device, cold, pre-faulted and warm -----------------
. /tmp/rig/guest-libvirt-vfio.sh

# ---- (e) 4k warm start on node 1 (tmpfs memory_backing_dir) ------------------
step "(e) 4k warm on node 1"
kill "$(cat /run/libvirtd.pid)"
for _ in $(seq 100); do [ -e /run/libvirtd.pid ] || break; sleep 0.1; done
qconf "$MB4"
libvirtd_up || fail "e: libvirtd restart" "did not answer"
check "e: warm fill: a READY 4k file on node 1 ($(wstat 1 ready_bytes 4096 "$MB4") MiB)" \
	"$(cat "$T/fill.out")" [ "$(wstat 1 ready_bytes 4096 "$MB4")" = 64 ]
define we 64 1 "<numatune><memory mode='strict' nodeset='1'/></numatune>$WARM" "$SHARED" ||
	fail "we define" "virsh define"
check "e: prealloc-domain: pc.ram would start warm ($(backend we pc.ram start))" \
	"$(backend we pc.ram warm_why)" [ "$(backend we pc.ram start)" = warm ]
if start we --paused; then
	D=$(ls -d "$MB4"/libvirt/qemu/*-we)
	check "e: pc.ram is the warm file, handed ($(wstat 1 handed_bytes 4096 "$MB4") MiB)" \
		"not taken" all_of '[ "$(wstat 1 handed_bytes 4096 "$MB4")" = 64 ] &&
			[ -n "$(find "$MB4"/.prealloc* -maxdepth 1 -inum "$(stat -c %i "$D/pc.ram")")" ]'
	n1=$(pages we "$D/pc.ram" 1 4) n0=$(pages we "$D/pc.ram" 0 4)
	check "e: numa_maps: its 16384 4k pages on node 1 ($n1), none on node 0 ($n0)" \
		"pages on the wrong node" [ "$n1 $n0" = "16384 0" ] || grep pc.ram "/proc/$(qpid we)/numa_maps"
else
	fail "e: we start" "$(tail -1 "$T/start.out")"
	qemu_log we
fi
destroy we
"$PREALLOC" warm fill > "$T/fill.out" 2>&1
check "e: after destroy and fill the file is READY on node 1 again ($(wstat 1 ready_bytes 4096 "$MB4") MiB)" \
	"$(cat "$T/fill.out")" [ "$(wstat 1 ready_bytes 4096 "$MB4")" = 64 ]
# ---- (f) plain QEMU on two nodes: prealloc qemu --node 0,1 ------------------
# The front end of plain QEMU gives the guest one file per host node and a
# -numa node each; no libvirt. Prepared (--grow-pools), then warm.
step "(f) prealloc qemu --node 0,1"
qmp() {	# qmp CMD: one QMP command to the L2 QEMU's socket
	python3 - "$T/qmp.sock" "$1" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rw')
f.readline()
for cmd in ('qmp_capabilities', sys.argv[2]):
    f.write(json.dumps({'execute': cmd}) + '\n'); f.flush()
    while 'return' not in json.loads(f.readline()): pass
PY
}
# pq ARGS...: prealloc qemu ARGS... 128M over two nodes, QEMU paused, in the
# background (PQ); its QEMU in QP once QMP answers.
pq() {
	rm -f "$T/qmp.sock"
	"$PREALLOC" qemu --node 0,1 --dir "$MB2" --id pq "$@" 128M -- /usr/bin/qemu-system-x86_64 \
		-machine pc -accel tcg,tb-size=16 -display none -nodefaults -S -m 128M -smp 2 \
		-qmp "unix:$T/qmp.sock,server=on,wait=off" > "$T/pq.out" 2> "$T/pq.err" &
	PQ=$!
	for _ in $(seq 300); do [ -S "$T/qmp.sock" ] && break; sleep 0.2; done
	QP=$(pgrep -P "$PQ" | head -1)
	[ -n "$QP" ] && qmp query-status
}
# placed FILE NODE: every page of FILE allocated, on NODE (vm_placement_check).
placed() { /tmp/rig/vm_placement_check "$1" "$2" > "$T/placed" 2>&1 || { sed 's/^/    /' "$T/placed"; return 1; }; }
# Backend ids name the host node, not the guest node's index: --node 1,0
# gives guest node 0 the backend of host node 1 (pq-node1, bound there).
"$PREALLOC" qemu --dry-run --node 1,0 --dir "$MB2" --id pq 128M -- /usr/bin/qemu-system-x86_64 \
	-m 128M > "$T/dry.out" 2> "$T/dry.err"
check "f: --node 1,0 --dry-run: pq-node1 bound to host node 1 is guest node 0's, pq-node0 guest node 1's" \
	"$(cat "$T/dry.out" "$T/dry.err")" all_of 'grep -q "id=pq-node1,mem-path=$MB2/pq-node1,size=67108864,share=on,prealloc=off,host-nodes=1,policy=bind" "$T/dry.out" &&
		grep -q "id=pq-node0,mem-path=$MB2/pq-node0,size=67108864,share=on,prealloc=off,host-nodes=0,policy=bind" "$T/dry.out" &&
		grep -q -- "-numa node,nodeid=0,memdev=pq-node1 -numa node,nodeid=1,memdev=pq-node0$" "$T/dry.out"'
# Warm first: the READY files (d) left, one per node, become the guest's.
f0="$(pools)"
ready=$(find "$MB2/.prealloc" -maxdepth 1 -type f -exec stat -c %i {} + | sort | tr '\n' ' ')
if pq --warm --print; then
	check "f: one -object per node and a -numa node each ($(tr ' ' '\n' < "$T/pq.out" | grep -c '^-numa') -numa)" \
		"$(cat "$T/pq.out")" all_of 'grep -q "id=pq-node0,mem-path=$MB2/pq-node0,size=67108864,share=on,prealloc=off,host-nodes=0,policy=bind" "$T/pq.out" &&
			grep -q "id=pq-node1,mem-path=$MB2/pq-node1,size=67108864,share=on,prealloc=off,host-nodes=1,policy=bind" "$T/pq.out" &&
			grep -q -- "-numa node,nodeid=0,memdev=pq-node0 -numa node,nodeid=1,memdev=pq-node1$" "$T/pq.out"'
	i0=$(stat -c %i "$MB2/pq-node0") i1=$(stat -c %i "$MB2/pq-node1")
	check "f: --warm: each node's file is a READY warm file ($i0 $i1 of $ready), handed, no new page ($f0 -> $(pools))" \
		"$(cat "$T/pq.err")" all_of 'grep -qw "$i0" <<< "$ready" && grep -qw "$i1" <<< "$ready" && [ "$i0" != "$i1" ] &&
			[ "$(wstat 0 handed_bytes) $(wstat 1 handed_bytes)" = "64 64" ] && [ "$(pools)" = "$f0" ]'
	check "f: --warm: QEMU maps both (bind:0, bind:1), pq-node0's pages on node 0, pq-node1's on node 1" \
		"$(grep pq-node "/proc/$QP/numa_maps")" all_of 'grep -q "bind:0 file=$MB2/pq-node0 " "/proc/$QP/numa_maps" &&
			grep -q "bind:1 file=$MB2/pq-node1 " "/proc/$QP/numa_maps" &&
			placed "$MB2/pq-node0" 0 && placed "$MB2/pq-node1" 1'
	qmp quit
	wait "$PQ"
	rc=$?
	"$PREALLOC" warm fill > "$T/fill.out" 2>&1
	check "f: --warm: QEMU quit ($rc): the links gone, each file READY again after fill ($(wstat 0 ready_bytes) $(wstat 1 ready_bytes)), pools as before" \
		"$(cat "$T/pq.err" "$T/fill.out")" all_of '[ $rc -eq 0 ] && [ ! -e "$MB2/pq-node0" ] && [ ! -e "$MB2/pq-node1" ] &&
			[ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ] && [ "$(pools)" = "$f0" ]'
else
	fail "f: prealloc qemu --warm --node 0,1" "$(cat "$T/pq.err")"
	kill -9 "$PQ" 2> /dev/null
fi
# Prepared: 32 free pages made on each node first, or admission would cut
# the READY files to cover the claim (docs/admission.md), by design.
fp0=$(nr 0) fp1=$(nr 1)
echo $((fp0 + 32)) > "$sysnode/node0/hugepages/hugepages-2048kB/nr_hugepages"
echo $((fp1 + 32)) > "$sysnode/node1/hugepages/hugepages-2048kB/nr_hugepages"
f1="$(pools)"
if pq; then
	check "f: prepared: each node's 32 free pages in use, the READY files untouched ($f1 -> $(pools), READY $(wstat 0 ready_bytes) $(wstat 1 ready_bytes))" \
		"$(cat "$T/pq.err")" all_of '[ "$(nr 0 free_hugepages) $(nr 1 free_hugepages)" = "0 0" ] &&
			[ "$(wstat 0 ready_bytes) $(wstat 1 ready_bytes)" = "64 64" ]'
	check "f: prepared: pq-node0's 32 pages allocated on node 0, pq-node1's on node 1; QEMU binds each there" \
		"$(grep pq-node "/proc/$QP/numa_maps")" all_of 'placed "$MB2/pq-node0" 0 && placed "$MB2/pq-node1" 1 &&
			grep -q "bind:0 file=$MB2/pq-node0 " "/proc/$QP/numa_maps" &&
			grep -q "bind:1 file=$MB2/pq-node1 " "/proc/$QP/numa_maps"'
	kill -TERM "$PQ"
	wait "$PQ"
	rc=$?
	check "f: prepared: SIGTERM (passed on, $rc): both files gone, each node's pages free again ($f1 -> $(pools))" \
		"$(cat "$T/pq.err")" all_of '[ $rc -eq 143 ] && [ ! -e "$MB2/pq-node0" ] && [ ! -e "$MB2/pq-node1" ] &&
			[ "$(pools)" = "$f1" ]'
else
	fail "f: prealloc qemu --node 0,1" "$(cat "$T/pq.err")"
	kill -9 "$PQ" 2> /dev/null
fi
echo "$fp0" > "$sysnode/node0/hugepages/hugepages-2048kB/nr_hugepages"
echo "$fp1" > "$sysnode/node1/hugepages/hugepages-2048kB/nr_hugepages"
step "done"
kill "$(cat /run/libvirtd.pid)"
exit 0
