#!/bin/bash
# SPDX-License-Identifier: MIT
# Warm starts (docs/libvirt.md, "Warm starts") against a real libvirtd 9 +
# QEMU TCG, as installed (lib-libvirt.sh): a guest that opts in with
# warm='yes' gets a READY warm file reserved at prepare begin and linked at
# start begin; QEMU maps it without a new page; after the guest the file
# comes back and a new one takes its place (renewed), READY; the qemu uid,
# keeping an fd of its file in flight over a socket, never reads the next
# guest's bytes, and the next guest reads none of the last one's; a
# guest with a tenant gets its file back cleared in place, and a guest of
# no tenant is never given it; a hard link the qemu uid made to its file
# while it ran sends the file to quarantine, never to a guest.
set -u
. "$(dirname "$0")/../integration/lib-installed.sh"
. "$(dirname "$0")/../integration/lib.sh"
. "$(dirname "$0")/lib-libvirt.sh"
on_exit installed_cleanup
lv_setup
printf 'hugetlbfs_mount = "%s"\n' "$MNT" >> "$QCONF"
lv_start
out=$("$PREALLOC" hook install 2>&1) || bail "hook install: $out"
sleep 1	# libvirtd rescans its hooks in its event loop
as_guest() { setpriv --reuid="$QUID" --regid="$QGID" --clear-groups "$@"; }
export PREALLOC_WARM_CONF=$TMP/warm.conf
echo "node0.2M = 1 x 64M @ $MB" > "$PREALLOC_WARM_CONF"
WARM="<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' warm='yes'/></metadata>"
SHARED="<source type='file'/><access mode='shared'/><allocation mode='immediate'/>"
SECRET="A holder's secret"

# wstate KEY: the pool's KEY (ready_bytes, handed_bytes...) in memory_backing_dir, in MiB.
wstate() {
	"$PREALLOC" warm status --json 2> /dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
d = d if isinstance(d, list) else d.get('pools', [d])
print(sum(e['$1'] for e in d if e['mount'] == sys.argv[1]) >> 20)" "$MB"
}
# pool_link INODE: the pool's own link to that file in the staging directory, or nothing.
pool_link() { find "$MB/.prealloc" -maxdepth 1 -inum "$1" 2> /dev/null; }
claimed() {	# claimed UUID [claims]: 2M pages of node 0 the store's shares tagged with UUID hold
	# (claims: only those still promised to QEMU, not a warm file reserved for it)
	local only=True
	[ "${2:-}" = claims ] && only="o['outstanding'] > 0"
	"$PREALLOC" pool --json > "$TMP/pool.json" 2> /dev/null
	json_get "$TMP/pool.json" "sum(o['pages'] for p in d['pools'] if p['node'] == 0 and p['page_size'] == 2097152 for o in p['owners'] if '$1' in o['tag'] and $only)"
}
# plan DOMAIN: what prealloc-domain says a start now would do with pc.ram.
plan() {
	"$PREALLOC_DOMAIN" "$1" --json 2> /dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
print(' '.join(b['start'] for b in d['backends'] if b['alias'] == 'pc.ram'))"
}

define wa 64 "$WARM" "$SHARED"
check "prealloc-domain: no warm file yet, so pc.ram would start on QEMU's pages ($(plan wa))" \
	[ "$(plan wa)" = qemu ]
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "warm fill made the 64 MiB file READY ($(wstate ready_bytes) MiB)" [ "$(wstate ready_bytes)" = 64 ] ||
	sed 's/^/# /' "$TMP/fill.out"
check "prealloc-domain: pc.ram would start warm ($(plan wa))" [ "$(plan wa)" = warm ]
define wh 64 "" "$SHARED"
check "a guest without metadata follows the host: warm = no ($(plan wh))" [ "$(plan wh)" = qemu ]
echo "warm = yes" >> "$CONF"
check "... and warm = yes in libvirt.conf ($(plan wh))" [ "$(plan wh)" = warm ]
sed -i '/^warm = yes$/d' "$CONF"
wino=$(stat -c %i "$(find "$MB/.prealloc" -maxdepth 1 -type f | head -1)")
nr0=$(pool) free0=$(pool_free)

# Case: the warm start. QEMU maps the file the hook linked: no new page.
out=$($V start wa 2>&1); rc=$?
check "the warm guest starts" [ $rc -eq 0 ] || echo "# $out"
# The guest's DAC user and group, as libvirt labelled it.
IFS=: read -r QUID QGID < <($V dumpxml wa | sed -n "s|.*<label>+\([0-9]*\):+\([0-9]*\)</label>.*|\1:\2|p" | head -1)
DA=$(ls -d "$MB"/libvirt/qemu/*-wa)
got=$(stat -c '%i %u:%g %a' "$DA/pc.ram" 2>&1)
check "pc.ram is the warm file, the guest's, mode 600 ($got, want $wino $QUID:$QGID 600)" \
	[ "$got" = "$wino $QUID:$QGID 600" ]
check "at start begin, before QEMU, pc.ram was populated (st_blocks $(probe_field zz-prealloc-test-probe wa "start begin" 8))" \
	[ "$(probe_field zz-prealloc-test-probe wa "start begin" 8)" = $((64 << 11)) ]
check "prepare claimed no pages: the pool is $nr0/$free0 at start begin" \
	[ "$(probe_field zz-prealloc-test-probe wa "start begin" 6) $(probe_field zz-prealloc-test-probe wa "start begin" 7)" = "$nr0 $free0" ]
check "QEMU mapped it without a new page (pool $nr0/$free0 -> $(pool)/$(pool_free))" \
	[ "$(pool) $(pool_free)" = "$nr0 $free0" ]
check "the pool counts it handed ($(wstate handed_bytes) MiB)" [ "$(wstate handed_bytes)" = 64 ]
out=$("$PREALLOC_DOMAIN" wa --claim 2>&1); rc=$?
check "prealloc-domain --claim of the running guest is refused, nothing claimed twice ($rc: $out)" \
	all_of '[ $rc -ne 0 ] && grep -q "is running" <<< "$out" && [ "$(pool) $(pool_free)" = "$nr0 $free0" ]'
# A's data: what its guest wrote, through the same shared pages QEMU maps.
fill_pattern "$DA/pc.ram"
check "A's RAM holds A's bytes" grep -q "$SECRET" "$DA/pc.ram"
# The qemu uid keeps its file by an fd in flight over a socket: no /proc file shows it.
MARK=TOP-SECRET-OF-B-42
rm -f "$TMP/ctl"
mkfifo "$TMP/ctl"
chmod 711 "$TMP"
as_guest "$WARM_ATTACKER" hold "$DA/pc.ram" "$MARK" scm < "$TMP/ctl" > "$TMP/att.out" 2> "$TMP/att.err" &
APID=$!
on_exit "kill $APID 2> /dev/null"
exec 7> "$TMP/ctl"
for ((i = 0; i < 200; i++)); do grep -q ready "$TMP/att.out" && break; sleep 0.05; done
check "the qemu uid holds its file by an fd in flight ($(cat "$TMP/att.err"))" grep -q ready "$TMP/att.out"
$V destroy wa > /dev/null
check "after destroy the file came back, DIRTY ($(wstate dirty_bytes) MiB dirty)" \
	all_of '[ "$(wstate dirty_bytes)" = 64 ] && [ -n "$(pool_link "$wino")" ]'
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "warm fill renewed it: a new file READY in its place, A's gone from the pool ($(cat "$TMP/fill.out"))" \
	all_of '[ "$(wstate ready_bytes)" = 64 ] && [ -z "$(pool_link "$wino")" ] && grep -q " 1 renewed" "$TMP/fill.out"'

# Case: guest B on the renewed file: its RAM, dumped before it ran an
# instruction, holds none of A's bytes, and A's kept fd reads none of B's.
define wb 64 "$WARM" "$SHARED"
out=$($V start --paused wb 2>&1); rc=$?
check "B starts paused" [ $rc -eq 0 ] || echo "# $out"
DB=$(ls -d "$MB"/libvirt/qemu/*-wb)
check "B got a file that is not A's (inode $(stat -c %i "$DB/pc.ram" 2>&1), A's $wino)" \
	all_of '[ -e "$DB/pc.ram" ] && [ "$(stat -c %i "$DB/pc.ram")" != "$wino" ]'
"$WARM_ATTACKER" write "$DB/pc.ram" "$MARK"
echo go >&7
exec 7>&-
wait $APID
check "the qemu uid reads none of B's bytes through the fd it kept ($(tail -1 "$TMP/att.out"))" \
	[ "$(tail -1 "$TMP/att.out")" = own ]
python3 -c "
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR); m = mmap.mmap(fd, 64 << 20)
m[:len(sys.argv[2])] = bytes(len(sys.argv[2])); m.close()" "$DB/pc.ram" "$MARK"
DUMP=$(mktemp -d /tmp/prealloc-dump.XXXXXX) && track_dir "$DUMP"
chown "$QUID:$QGID" "$DUMP"
out=$($V qemu-monitor-command wb \
	"{\"execute\": \"pmemsave\", \"arguments\": {\"val\": 0, \"size\": $((64 << 20)), \"filename\": \"$DUMP/b.ram\"}}" 2>&1)
check "pmemsave of B's RAM: 64 MiB ($out)" [ "$(stat -c %s "$DUMP/b.ram" 2>&1)" = $((64 << 20)) ]
check "B's RAM holds none of A's bytes" [ "$(grep -c "$SECRET" "$DUMP/b.ram")" = 0 ]
rm -f "$DUMP/b.ram"
$V destroy wb > /dev/null
"$PREALLOC" warm fill > /dev/null 2>&1

# Case: a tenant. Its guest's file, given back by the hook with its tenant
# and nothing else open, is cleared in place (the same inode) and is its
# tenant's alone: a guest of no tenant would not start on it.
WARMT="<metadata><p:config xmlns:p='urn:x-prealloc:libvirt:1' warm='yes' tenant='acme'/></metadata>"
define wt 64 "$WARMT" "$SHARED"
out=$($V start wt 2>&1); rc=$?
DT=$(ls -d "$MB"/libvirt/qemu/*-wt 2> /dev/null)
tino=$(stat -c %i "$DT/pc.ram" 2>&1)
check "the tenant's guest starts warm ($rc, $(wstate handed_bytes) MiB handed)" \
	all_of '[ $rc -eq 0 ] && [ "$(wstate handed_bytes)" = 64 ]' || echo "# $out"
fill_pattern "$DT/pc.ram"
$V destroy wt > /dev/null
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1
check "its file is cleared in place, READY for it ($(cat "$TMP/fill.out"))" \
	all_of 'grep -q " 1 cleared" "$TMP/fill.out" && [ -n "$(pool_link "$tino")" ] && [ "$(wstate ready_bytes)" = 64 ]'
check "prealloc-domain: a guest of no tenant would not start on it ($(plan wb))" [ "$(plan wb)" = qemu ]
out=$($V start wt 2>&1); rc=$?
DT=$(ls -d "$MB"/libvirt/qemu/*-wt 2> /dev/null)	# a new id, a new directory
check "the tenant's next start gets it back, all zero but what it wrote now ($rc)" \
	all_of '[ $rc -eq 0 ] && [ "$(stat -c %i "$DT/pc.ram")" = "$tino" ] && ! grep -q "$SECRET" "$DT/pc.ram"'
$V destroy wt > /dev/null
# Back to the pool at large: taken by the tenant, given back without it, renewed.
"$PREALLOC" warm fill > /dev/null 2>&1
"$PREALLOC" warm take --node 0 --page-size 2M --mount "$MB" --to "$MB/t" --tenant acme 64M > /dev/null 2>&1
"$PREALLOC" warm give "$MB/t" > /dev/null 2>&1
"$PREALLOC" warm fill > /dev/null 2>&1

# Case: the qemu uid keeps a hard link to its file (fs.protected_hardlinks
# allows it: the file is its own while the guest runs) in a directory of
# that filesystem libvirt does not delete. The file must never be handed
# out again: quarantined at release, removed by the next fill.
mkdir "$MB/guest" && chown "$QUID:$QGID" "$MB/guest"
define wc 64 "$WARM" "$SHARED"
out=$($V start wc 2>&1); rc=$?
check "C starts warm" all_of '[ $rc -eq 0 ] && [ "$(wstate handed_bytes)" = 64 ]' || echo "# $out"
DC=$(ls -d "$MB"/libvirt/qemu/*-wc)
as_guest ln "$DC/pc.ram" "$MB/guest/kept"
check "the qemu uid linked its file ($(stat -c %h "$MB/guest/kept" 2>&1) links)" [ -e "$MB/guest/kept" ]
cino=$(stat -c %i "$MB/guest/kept")
$V destroy wc > /dev/null
check "release end quarantined it ($(wstate quarantined_bytes) MiB)" [ "$(wstate quarantined_bytes)" = 64 ]
"$PREALLOC" warm fill > /dev/null 2>&1
rino=$(stat -c %i "$(find "$MB/.prealloc" -maxdepth 1 -type f | head -1)" 2>&1)
# docs/warm.md: a quarantined file stays recorded, its memory shown, while a
# link of the holder's holds it; a new file takes its place meanwhile.
check "fill keeps it recorded while the guest's link holds it, and made a new file ($(wstate quarantined_bytes) MiB quarantined, $(wstate ready_bytes) MiB READY)" \
	all_of '[ -n "$(pool_link "$cino")" ] && [ "$(wstate quarantined_bytes)" = 64 ] && [ "$(wstate ready_bytes)" = 64 ]'
rm -f "$MB/guest/kept"
rmdir "$MB/guest"
"$PREALLOC" warm fill > /dev/null 2>&1
check "its pages go back once the guest's link is gone too ($(wstate quarantined_bytes) MiB quarantined)" \
	[ "$(wstate quarantined_bytes)" = 0 ]

# Case: the file reserved at prepare is lost before start begin (a link
# made to it meanwhile: the take quarantines it, never hands it over). Its
# hugepages were never claimed: start begin claims them then. The hook by
# hand, as libvirt runs it, with the per-domain directory libvirt makes.
define we 64 "$WARM" "$SHARED"
$V dumpxml we | perl -0pe "s/<domain /<domain id='88' /;
	s|</devices>|</devices><seclabel type='dynamic' model='dac' relabel='yes'><label>+$QUID:+$QGID</label></seclabel>|" \
	> "$TMP/we.xml"
mkdir -p "$MB/libvirt/qemu/88-we" && chown "$QUID:$QGID" "$MB/libvirt/qemu/88-we"
nr1=$(pool) free1=$(pool_free) weuuid=$($V domuuid we | head -1)
( cd / && "$HOOK" we prepare begin - < "$TMP/we.xml" )
check "prepare begin reserved the READY file for we ($(wstate handed_bytes) MiB), claimed no page ($nr1/$free1 -> $(pool)/$(pool_free))" \
	all_of '[ "$(wstate handed_bytes)" = 64 ] && [ "$(pool) $(pool_free)" = "$nr1 $free1" ]'
lost=$(find "$MB/.prealloc" -maxdepth 1 -type f | head -1)
ln "$lost" "$MB/lost"
( cd / && "$HOOK" we start begin - < "$TMP/we.xml" 2> "$TMP/we.err" )
rc=$?
# Claimed, whether the pool grew for it or had free pages of another user's;
# the file reserved for it at prepare stays recorded, quarantined, with the
# growth it was made with (32 more pages when the pool grew for it).
check "start begin without its file: exit 0, we's 32 pages claimed now ($(claimed "$weuuid" claims) claimed; pool $nr1 -> $(pool))" \
	all_of '[ $rc -eq 0 ] && [ "$(claimed "$weuuid" claims)" -eq 32 ]' ||
	sed 's/^/# /' "$TMP/we.err"
check "... the file quarantined, nothing linked where QEMU opens ($(wstate quarantined_bytes) MiB)" \
	all_of '[ "$(wstate quarantined_bytes)" = 64 ] && [ ! -e "$MB/libvirt/qemu/88-we/pc.ram" ]'
( cd / && "$HOOK" we release end - < "$TMP/we.xml" )
rm -f "$MB/lost"
rmdir "$MB/libvirt/qemu/88-we"
"$PREALLOC" warm fill > /dev/null 2>&1
check "release end gave the claim back; fill replaced the file (pool $(pool), $(wstate ready_bytes) MiB READY)" \
	all_of '[ "$(pool)" -eq "$nr1" ] && [ "$(wstate ready_bytes)" = 64 ] && [ "$(wstate quarantined_bytes)" = 0 ]'

# Case: a guest bound to no warm file (the pool empty now) takes the old path.
"$PREALLOC" warm take --node 0 --page-size 2M 64M --mount "$MB" --reserve --holder other > /dev/null 2>&1
define wd 64 "$WARM" "$SHARED"
check "prealloc-domain: no READY file left, pc.ram would start on QEMU's pages" [ "$(plan wd)" = qemu ]
out=$($V start wd 2>&1); rc=$?
check "the guest starts anyway, QEMU allocating its memory" [ $rc -eq 0 ] || echo "# $out"
check "the other holder's reservation was not touched" [ "$(wstate handed_bytes)" = 64 ]
$V destroy wd > /dev/null
"$PREALLOC" warm give --holder other > /dev/null 2>&1
check "every claim went back (pool $(pool), $(holders) holders)" [ "$(holders)" -eq 0 ]
finish
