#!/bin/bash
# SPDX-License-Identifier: MIT
# The libvirt hook against a real libvirtd 9 + QEMU TCG (docs/libvirt.md).
# Starts virtlogd and libvirtd itself when none runs, and stops only those;
# installs the hook, a private 2M hugetlbfs for libvirt and a libvirt.conf
# pointing at a private record store, and puts every file back after.
# Everything runs as installed (lib-installed.sh: `meson install` laid over
# the prefix in a private mount namespace, a clean environment): the CLI
# and prealloc-domain from the prefix, the hook from the copy `prealloc hook
# install` puts under /etc, run by a libvirtd started with `env -i`, so no
# LD_LIBRARY_PATH of the test runner's can reach it through libvirt.
set -u
. "$(dirname "$0")/../integration/lib-installed.sh"
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib-libvirt.sh"
on_exit installed_cleanup
lv_setup
# 1G pages: a private 1G hugetlbfs for libvirt where node 0 can allocate one
# now (tried and read back; lib.sh restores every pool at exit), else the
# 1G case is skipped with the cause.
G1=/sys/devices/system/node/node0/hugepages/hugepages-1048576kB
MNT1G= NO1G=
if [ ! -d "$G1" ]; then
	NO1G="this kernel has no 1G hstate (no $G1)"
else
	g1=$(cat "$G1/nr_hugepages")
	echo $((g1 + 1)) > "$G1/nr_hugepages" 2> /dev/null
	g1got=$(cat "$G1/nr_hugepages")
	echo 0 > "$G1/nr_hugepages"
	[ "$g1got" -gt "$g1" ] ||
		NO1G="node 0 cannot allocate a 1G page now: wrote $((g1 + 1)) to its nr_hugepages, read back $g1got"
	[ "$(cat "$G1/nr_hugepages")" -eq 0 ] || NO1G="node 0's 1G pool did not shrink to 0 (pages in use)"
fi
if [ -z "$NO1G" ]; then
	MNT1G=$(mktemp -d /tmp/prealloc-hugetlbfs1g.XXXXXX) && track_dir "$MNT1G"
	mount -t hugetlbfs -o pagesize=1G none "$MNT1G" || bail "cannot mount 1G hugetlbfs on $MNT1G"
	track_mount "$MNT1G"
	chmod 755 "$MNT1G"
	# libvirt 9 gives <hugepages/> the SECOND mount of a list (qemu_conf.c
	# marks all but the first as default): 2M there, as the hook computes.
	printf 'hugetlbfs_mount = ["%s", "%s"]\n' "$MNT1G" "$MNT" >> "$QCONF"
else
	printf 'hugetlbfs_mount = "%s"\n' "$MNT" >> "$QCONF"
fi
lv_start

# Case: `prealloc hook install` into a root of our own, then the real one.
R=$TMP/root
mkdir -p "$R/etc/prealloc"
"$PREALLOC" hook install --root "$R" > "$TMP/inst.out" 2>&1
check "hook install --root: the hook, 0755, the example settings" \
	all_of 'cmp -s "$HOOK" "$R$HOOKDST" && [ "$(stat -c %a "$R$HOOKDST")" = 755 ] &&
		grep -q "^#grow_pools = yes" "$R$CONF"' || sed 's/^/# /' "$TMP/inst.out"
check "the example settings parse: the hook runs with them" \
	env -C / "$R$HOOKDST" x restore begin - < /dev/null
echo "prefault = yes" > "$R$CONF"
"$PREALLOC" hook install --root "$R" > "$TMP/inst.out" 2>&1
check "a second install keeps existing settings" [ "$(cat "$R$CONF")" = "prefault = yes" ]
check "--root signals no daemon" [ -z "$(grep SIGHUP "$TMP/inst.out")" ]
"$PREALLOC" hook uninstall --root "$R" > /dev/null 2>&1
check "hook uninstall --root removes the hook, keeps the settings" [ ! -e "$R$HOOKDST" -a -e "$R$CONF" ]
out=$("$PREALLOC" hook install 2>&1)
check "hook install: $HOOKDST is the hook, the test's settings kept" \
	all_of 'cmp -s "$HOOK" "$HOOKDST" && grep -q "^state_dir = $STATE" "$CONF"' || echo "# $out"
check "hook install sent our libvirtd SIGHUP" \
	grep -q "libvirtd (pid $(cat /run/libvirtd.pid)) rescans its hooks" <<< "$out" || echo "# $out"
sleep 1	# libvirtd rescans in its event loop: the starts below prove it did

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
"$PREALLOC" gc > /dev/null 2>&1
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

# Case: a shared file-backed guest that opts in to prefault, against the
# same guest without it (the hook then only sizes the pool and QEMU faults
# the memory itself: <allocation mode='immediate'/>, QEMU's prealloc).
PF="<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' prefault='yes'/></metadata>"
NOPF="<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' prefault='no'/></metadata>"
SHARED="<source type='file'/><access mode='shared'/><allocation mode='immediate'/>"
define pf 1024 "$PF" "$SHARED"
define pn 1024 "$NOPF" "$SHARED"
# Each timed start grows the pool from scratch (free pages dropped first):
# neither gets pages another run has just touched.
echo 0 > /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
t0=$(date +%s.%N)
out=$($V start pf 2>&1); rc=$?
t1=$(date +%s.%N)
check "the prefault guest starts" [ $rc -eq 0 ] || echo "# $out"
check "the prefault guest runs" [ "$($V domstate pf)" = running ]
nr_b=$(probe_field 00-prealloc-test-probe pf "start begin" 6)
fr_b=$(probe_field 00-prealloc-test-probe pf "start begin" 7)
nr_a=$(probe_field zz-prealloc-test-probe pf "start begin" 6)
fr_a=$(probe_field zz-prealloc-test-probe pf "start begin" 7)
blocks=$(probe_field zz-prealloc-test-probe pf "start begin" 8)
bsize=$(probe_field zz-prealloc-test-probe pf "start begin" 9)
fsize=$(probe_field zz-prealloc-test-probe pf "start begin" 10)
check "at start begin, before QEMU, pc.ram exists at its full size ($fsize)" \
	[ "$fsize" = $((1024 << 20)) ]
check "at start begin pc.ram is fully populated (st_blocks $blocks x $bsize)" \
	all_of '[ -n "$blocks" ] && [ $((blocks * bsize)) -eq $((1024 << 20)) ]'
check "at start begin pc.ram belongs to the guest's DAC user, mode 600" \
	[ "$(probe_field zz-prealloc-test-probe pf "start begin" 11)" = libvirt-qemu -a \
	  "$(probe_field zz-prealloc-test-probe pf "start begin" 12)" = 600 ]
check "node 0 faulted its 512 pages in our hook ($nr_b/$fr_b -> $nr_a/$fr_a)" \
	all_of '[ -n "$nr_a" ] && [ $(((nr_a - fr_a) - (nr_b - fr_b))) -eq 512 ]'
check "QEMU mapped it without a new page (pool $nr_a/$fr_a -> $(pool)/$(pool_free))" \
	[ "$(pool)" = "$nr_a" -a "$(pool_free)" = "$fr_a" ]
echo 0 > /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
t2=$(date +%s.%N)
out=$($V start pn 2>&1); rc=$?
t3=$(date +%s.%N)
check "the same guest without prefault starts" [ $rc -eq 0 ] || echo "# $out"
# QEMU's own start: from the last start-begin hook to the first started-begin hook.
qemu_pf=$(awk -v a="$(probe_field zz-prealloc-test-probe pf "start begin" 5)" \
	-v b="$(probe_field 00-prealloc-test-probe pf "started begin" 5)" 'BEGIN { print b - a }')
qemu_pn=$(awk -v a="$(probe_field zz-prealloc-test-probe pn "start begin" 5)" \
	-v b="$(probe_field 00-prealloc-test-probe pn "started begin" 5)" 'BEGIN { print b - a }')
hook_pf=$(awk -v a="$(probe_field 00-prealloc-test-probe pf "start begin" 5)" \
	-v b="$(probe_field zz-prealloc-test-probe pf "start begin" 5)" 'BEGIN { print b - a }')
awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" -v q="$qemu_pf" -v r="$qemu_pn" -v h="$hook_pf" 'BEGIN {
	printf "# the hook pre-faulted 1 GiB at start begin in %.3f s\n", h
	printf "# 1 GiB guest, virsh start: %.3f s with prefault (hook included), %.3f s without: ratio %.2f\n", b - a, d - c, (b - a) / (d - c)
	printf "# QEMU own start (start begin -> started begin): %.3f s with prefault, %.3f s without: ratio %.2f\n", q, r, q / r }'
$V destroy pf > /dev/null; $V destroy pn > /dev/null
check "destroying them gives everything back ($(pool), $(holders) holders)" \
	[ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]
check "no file is left in memory_backing_dir" [ -z "$(find "$MB" -type f)" ]

# Case: a private file backing that opts in is refused at prepare.
define pp 64 "$PF" "<source type='file'/><access mode='private'/>"
out=$($V start pp 2>&1)
check "a private file-backed guest with prefault is refused" [ $? -ne 0 ]
check "virsh shows the hook's refusal" grep -q "prefault needs <access mode='shared'/>" <<< "$out" ||
	echo "# $out"
check "nothing leaked after it" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]

# Case: the staged file cannot be swapped before it takes its place. The
# hook is run by hand at start begin and stopped once it has made the file
# (PREALLOC_TEST_PAUSE=after-create); the guest's uid then tries what it
# could when the file sat in its directory before commit: move the hidden
# file away and put its own (AAAA...) under the same name. The file QEMU
# would open must be prealloc's, zero, and the guest's only once linked.
QUID=$(id -u libvirt-qemu) QGID=$(id -g libvirt-qemu)
DD=$MB/libvirt/qemu/77-pswap
mkdir -p "$DD" && chown "$QUID:$QGID" "$DD" && chmod 750 "$DD"
$V dumpxml pf | perl -0pe "s/<domain /<domain id='77' /; s|<name>pf</name>|<name>pswap</name>|;
	s|<uuid>[^<]*</uuid>|<uuid>77777777-7777-7777-7777-777777777777</uuid>|;
	s|</devices>|</devices><seclabel type='dynamic' model='dac' relabel='yes'><label>+$QUID:+$QGID</label></seclabel>|;
	s|<memory unit='KiB'>[0-9]*</memory>|<memory unit='KiB'>65536</memory>|;
	s|<currentMemory unit='KiB'>[0-9]*</currentMemory>|<currentMemory unit='KiB'>65536</currentMemory>|" \
	> "$TMP/pswap.xml"
PREALLOC_TEST_PAUSE=after-create "$HOOK" pswap start begin - < "$TMP/pswap.xml" 2> "$TMP/pswap.err" &
HP=$!
on_exit "kill -9 $HP"
wait_stopped $HP || bail "the hook run by hand never stopped after creating the file ($(cat "$TMP/pswap.err"))"
check "staged: nothing in the guest's directory before commit ($(ls -A "$DD"))" [ -z "$(ls -A "$DD")" ]
as_guest() { setpriv --reuid="$QUID" --regid="$QGID" --clear-groups "$@"; }
check "staged: the staging directory is closed to the guest's uid" \
	sh -c '! "$@" > /dev/null 2>&1' sh as_guest ls "$MB/.prealloc"
as_guest sh -c \
	'cd "$1" && for f in .prealloc* pc.ram.*; do [ -e "$f" ] || continue
		mv "$f" "stolen.$f" && head -c 4096 /dev/zero | tr "\\0" A > "$f"; done' sh "$DD"
kill -CONT $HP
wait $HP
rc=$?
check "staged: the hook exits 0 ($rc: $(cat "$TMP/pswap.err"))" [ $rc -eq 0 ]
check "staged: pc.ram is the guest's, mode 600" \
	[ "$(stat -c '%u:%g %a' "$DD/pc.ram" 2>&1)" = "$QUID:$QGID 600" ]
check "staged: pc.ram starts with zeroes, not the guest uid's bytes" \
	[ "$(head -c 4 "$DD/pc.ram" 2> /dev/null | od -An -tx1 | tr -d ' ')" = 00000000 ]
check "staged: pc.ram is the inode the store names" \
	awk -v ino="$(stat -c %i "$DD/pc.ram")" '$1 == "rec" && $7 == ino { f = 1 } END { exit !f }' \
	"$STATE/store"
"$HOOK" pswap release end - < "$TMP/pswap.xml"
check "staged: release end removes it, nothing leaked (pool $(pool), $(holders) holders)" \
	[ ! -e "$DD/pc.ram" -a "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]
rm -rf "$DD"

# Case: libvirtd killed during two starts: pa after our prepare hook claimed
# its pages (the hook run by hand), pk at start begin after our hook
# pre-faulted its file (the zz- probe kills libvirtd). Neither QEMU ran.
define pk 64 "$PF" "<source type='file'/><access mode='shared'/>"
$V dumpxml pa > "$TMP/pa.live.xml"
t0=$(date +%s.%N)
"$HOOK" pa prepare begin - < "$TMP/pa.live.xml"
check "a claim made at prepare is held" [ "$(pool)" -eq $((p0 + 32)) -a "$(holders)" -eq 1 ]
# Its expiry is start_grace (15 s) from the prepare, not from the epoch (issue 42).
exp=$(awk '$1 == "rec" && $4 ~ /^holder:/ { n = split($4, a, ":"); print a[n]; exit }' "$STATE/store")
check "the claim expires start_grace from its prepare (expires ${exp:-none}, prepared at ${t0%.*})" \
	awk -v e="${exp:-0}" -v t="$t0" 'BEGIN { exit !(e >= int(t) + 14 && e <= int(t) + 17) }'
echo pk > "$TMP/kill-at"
$V start pk > /dev/null 2>&1
rm -f "$TMP/kill-at"
pidof libvirtd > /dev/null && bail "the probe did not kill libvirtd at pk's start begin"
kfile=$(find "$MB" -type f -name pc.ram)
check "pk's file was pre-faulted when libvirtd died ($kfile)" \
	all_of '[ -n "$kfile" ] && [ "$(pool)" -eq $((p0 + 64)) -a "$(holders)" -eq 2 ]'
sleep 0.5; rm -f /run/libvirtd.pid
start_libvirtd
check "pk did not run" [ "$($V domstate pk)" = "shut off" ]
"$PREALLOC" gc > /dev/null 2>&1
check "gc within the start grace keeps both claims ($(pool), $(holders) holders)" \
	[ "$(pool)" -eq $((p0 + 64)) -a "$(holders)" -eq 2 ]
# The claims' grace (start_grace = 15 s) runs from their hook: wait out the rest of it.
sleep "$(awk -v t0="$t0" -v now="$(date +%s.%N)" 'BEGIN { r = t0 + 16 - now; print (r > 0 ? r : 0) }')"
"$PREALLOC" gc > /dev/null 2>&1
check "gc after the grace restores the pool ($(pool), $(holders) holders)" \
	[ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]
check "gc removed the pre-faulted file of the guest that never ran" [ ! -e "$kfile" ]

# Case: a 1G-page guest: prepare sizes node 0's 1G pool (empty before).
define pg 1024 "" "<hugepages><page size='1' unit='GiB'/></hugepages>"
if [ -n "$NO1G" ]; then
	skip_check "a 1G-page guest's prepare sizes the 1G pool" "$NO1G"
else
	out=$($V start pg 2>&1); rc=$?
	check "a 1G-page guest starts with node 0's 1G pool grown to $(cat "$G1/nr_hugepages")" \
		all_of '[ $rc -eq 0 ] && [ "$(cat "$G1/nr_hugepages")" -eq 1 -a "$(holders)" -eq 1 ]' ||
		echo "# $out"
	$V destroy pg > /dev/null 2>&1
	check "destroying it gives the 1G page back" [ "$(cat "$G1/nr_hugepages")" -eq 0 ]
	# <hugepages/> follows libvirt's default mount: with the list the other
	# way round, libvirt 9 maps the guest with 1G pages, so the hook claims 1G.
	printf 'hugetlbfs_mount = ["%s", "%s"]\n' "$MNT" "$MNT1G" > "$TMP/qemu-1g.conf"
	cp "$CONF" "$TMP/conf.saved"
	echo "qemu_conf = $TMP/qemu-1g.conf" >> "$CONF"
	$V dumpxml pg | perl -0pe "s/<domain /<domain id='99' /;
		s|<memoryBacking>.*</memoryBacking>|<memoryBacking><hugepages/></memoryBacking>|s" \
		> "$TMP/pg-default.xml"
	( cd / && "$HOOK" pg prepare begin - < "$TMP/pg-default.xml" )
	check "<hugepages/> under a [2M, 1G] mount list claims 1G, as libvirt maps it" \
		[ "$(cat "$G1/nr_hugepages")" -eq 1 ]
	( cd / && "$HOOK" pg release end - < "$TMP/pg-default.xml" )
	cp "$TMP/conf.saved" "$CONF"
	check "release end gives it back" [ "$(cat "$G1/nr_hugepages")" -eq 0 -a "$(holders)" -eq 0 ]
fi

# Case: release end alone gives a claim back. A start refused after our
# prepare begin (by another hook, say) runs release end, and for a guest
# that never ran there is no stopped end first: release end must give back
# the claim by itself. Run by hand: prepare begin, then release end.
$V dumpxml pa | perl -0pe "s/<domain /<domain id='98' /" > "$TMP/pa-rel.xml"
( cd / && "$HOOK" pa prepare begin - < "$TMP/pa-rel.xml" )
check "prepare begin alone claims pa's 32 pages (pool $(pool), $(holders) holders)" \
	[ "$(pool)" -eq $((p0 + 32)) -a "$(holders)" -eq 1 ]
# A second prepare of a guest holding exactly its need claims nothing more (issue 42's edge).
nrec=$(grep -c '^rec' "$STATE/store")
( cd / && "$HOOK" pa prepare begin - < "$TMP/pa-rel.xml" ); rc=$?
check "a second prepare, exactly its need held: exit 0, nothing more claimed (rc $rc, pool $(pool), $(holders) holders, records $nrec -> $(grep -c '^rec' "$STATE/store"))" \
	all_of '[ $rc -eq 0 -a "$(pool)" -eq $((p0 + 32)) -a "$(holders)" -eq 1 ] &&
		[ "$(grep -c "^rec" "$STATE/store")" -eq "$nrec" ]'
( cd / && "$HOOK" pa release end - < "$TMP/pa-rel.xml" )
check "release end alone gives them back (pool $(pool), $(holders) holders)" \
	[ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]

# Case: prealloc-domain: plan, --claim then start uses the claimed pages, --release;
# --reserve, --claim's name before, still claims.
plan=$("$PREALLOC_DOMAIN" pa --json)
check "the plan: 32 2M pages on node 0" grep -Eq '"pages": *32' <<< "$plan"
"$PREALLOC_DOMAIN" pa --claim --for 60 > /dev/null
check "--claim grew the pool by 32" [ "$(pool)" -eq $((p0 + 32)) ]
$V start pa > /dev/null
check "the start used the claimed pages (pool $(pool))" [ "$(pool)" -eq $((p0 + 32)) ]
$V destroy pa > /dev/null
check "stopping gives the claim back" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]
"$PREALLOC_DOMAIN" pa --reserve --for 60 > /dev/null
check "--reserve, --claim's older name, claims too" [ "$(pool)" -eq $((p0 + 32)) ]
"$PREALLOC_DOMAIN" pa --release > /dev/null
check "--release gives it back" [ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ]

# Case: names libvirt cuts. The per-domain directory is <id>-<name cut at
# 20>: at 20 characters when libvirtd runs under a UTF-8 locale, at 20 bytes
# under C; a hook runs with LC_ALL=C whatever the daemon's locale. Multibyte
# names at and around the limit, both ways. (Under C, libvirt itself cannot
# start a name whose 20th byte is inside a character: its QMP rejects the
# cut name; so that one runs under C.UTF-8 only.)
starts_with_names() {	# starts_with_names LOCALE MiB NAME...
	local what=$1 mib=$2 n out rc blocks
	shift 2
	for n in "$@"; do
		define "$n" "$mib" "$PF" "$SHARED"
		out=$($V start "$n" 2>&1)
		rc=$?
		blocks=$(find "$MBD/libvirt/qemu" -path "*/[0-9]*-*/pc.ram" -printf '%b\n' 2> /dev/null | head -1)
		check "$what: '$n' ($(printf %s "$n" | wc -c) bytes) starts, pre-faulted ($((${blocks:-0} * 512 >> 20)) MiB)" \
			all_of '[ $rc -eq 0 ] && [ "$((${blocks:-0} * 512))" -eq $((mib << 20)) ]' ||
			echo "# $out"
		$V destroy "$n" > /dev/null 2>&1
		$V undefine "$n" > /dev/null 2>&1
	done
	check "$what: nothing leaked (pool $(pool), $(holders) holders)" \
		[ "$(pool)" -eq "$p0" -a "$(holders)" -eq 0 ] || "$PREALLOC" pool 2>&1 | sed 's/^/# /'
}
MBD=$MB
starts_with_names "libvirtd under C.UTF-8" 64 "größe-datenbank-prod" "größe-datenbank-pro" \
	"größe-datenbank-prod1" "aäääääääääää"

# Then libvirtd under LANG=C with memory_backing_dir on a tmpfs (4K pages):
# the same names, and a link put at the per-domain directory. hugetlbfs
# cannot hold a symbolic link at all; tmpfs can, and /dev/shm or /run are
# tmpfs. The guest's uid can write in libvirt's memory directories: between
# libvirt making the per-domain directory and our hook, it puts a link there
# to a directory of its choice on the same tmpfs. The hook must not follow
# it: the start is refused and nothing is made where the link points.
MBT=$(mktemp -d /tmp/prealloc-backing-tmpfs.XXXXXX) && track_dir "$MBT"
mount -t tmpfs -o size=256M none "$MBT" || bail "cannot mount a tmpfs on $MBT"
track_mount "$MBT"
chmod 755 "$MBT"
kill "$(cat /run/libvirtd.pid)"
for _ in $(seq 50); do pidof libvirtd > /dev/null || break; sleep 0.1; done
rm -f /run/libvirtd.pid
sed -i "s|^memory_backing_dir = .*|memory_backing_dir = \"$MBT\"|" "$QCONF"
start_libvirtd C
MBD=$MBT
starts_with_names "libvirtd under C" 16 "größe-datenbank-prod" "größe-datenbank-pro" \
	"größe-datenbank-prod1"
define psym 16 "$PF" "$SHARED"
mkdir -p "$MBT/elsewhere"
echo "$MBT/elsewhere" > "$TMP/swap-to"
echo psym > "$TMP/swap-at"
out=$($V start psym 2>&1)
rc=$?
rm -f "$TMP/swap-at"
check "a link at the per-domain directory: the start is refused" [ $rc -ne 0 ] || echo "# $out"
check "... the hook saying it would not follow it" grep -q "symbolic link" <<< "$out" ||
	{ echo "# $out"; sed 's/^/# /' "$TMP/swap.log"; }
check "... and nothing made where it pointed ($(ls -A "$MBT/elsewhere"))" \
	[ -z "$(ls -A "$MBT/elsewhere")" ]
check "... nothing left behind ($(holders) holders)" [ "$(holders)" -eq 0 ]

# Case: hook uninstall: the hook goes, the settings stay, libvirtd rescans.
out=$("$PREALLOC" hook uninstall 2>&1)
check "hook uninstall removes $HOOKDST, keeps $CONF, signals libvirtd" \
	all_of '[ ! -e "$HOOKDST" -a -e "$CONF" ] && grep -q "rescans its hooks" <<< "$out"' ||
	echo "# $out"
finish
