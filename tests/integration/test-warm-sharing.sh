#!/bin/bash
# SPDX-License-Identifier: MIT
# Holders that share a uid (docs/warm.md, threat model; docs/libvirt.md,
# "Guests of one uid"). A warm file is its holder's uid's, mode 0600: that
# keeps other uids out, never the same uid, whose processes open it by
# path. prealloc cannot part such holders; it says so:
#   warm take --owner U:G warns (stderr, and --json's shared_uid_files and
#   shared_uid_with) when U owns a HANDED file of another holder of another
#   tenant; not for a holder of the same tenant, not for the holder's own
#   file, not for another uid;
#   the libvirt hook, at start begin, warns in its log (stderr, never
#   stdout) when a domain with no dynamic MAC label runs as a uid that
#   other guests' warm files were given; not under sVirt (a dynamic
#   apparmor or selinux seclabel), not for another uid.
# And the exposure itself, so that the warning is held to something real:
# uid 65534 reads another holder's file by path when it was given 65534,
# and not when it was given another uid.
TAP=1
. "$(dirname "$0")/lib.sh"

U=65534 V=65533
SHM=$TMP/shm
mkdir -p "$SHM"
mount -t tmpfs -o size=64M,mode=1777 none "$SHM" || bail "cannot mount a tmpfs on $SHM"
track_mount "$SHM"
chmod 711 "$TMP"	# uid 65534 reaches the paths it is handed, and no more
export PREALLOC_WARM_CONF=$TMP/warm.conf
printf 'node0.4k = 8 x 4M @ %s\n' "$SHM" > "$PREALLOC_WARM_CONF"
"$PREALLOC" warm fill > "$TMP/fill.out" 2>&1 || bail "the first fill failed: $(cat "$TMP/fill.out")"

# take NAME OWNER HOLDER [TENANT]: a 4M take at $SHM/NAME with --json; its
# stderr in $TMP/NAME.err, its document in $TMP/NAME.json; the take's status.
take() {
	local name=$1 owner=$2 holder=$3 tenant=${4:-}
	"$PREALLOC" warm take --node 0 --page-size 4k --mount "$SHM" --to "$SHM/$name" \
		--owner "$owner" --holder "$holder" ${tenant:+--tenant "$tenant"} --json 4M \
		> "$TMP/$name.json" 2> "$TMP/$name.err"
}
# shared NAME: the take's shared_uid_files, "none" without the key.
shared() { json_get "$TMP/$1.json" "d.get('shared_uid_files', 'none')" 2> /dev/null || echo none; }
with() { json_get "$TMP/$1.json" "d.get('shared_uid_with', 'none')" 2> /dev/null || echo none; }
warned() { grep -q "warning: warm take: uid $2 also owns $3 warm file(s) of other holders" "$TMP/$1.err"; }
silent() { ! grep -q "warning" "$TMP/$1.err"; }

take a "$U:$U" vm-a acme || bail "vm-a's take failed: $(cat "$TMP/a.err")"
check "the first holder of uid $U: no warning (stderr: $(cat "$TMP/a.err"))" silent a
check "the first holder of uid $U: --json shared_uid_files 0 (got $(shared a))" \
	[ "$(shared a)" = 0 ]
take c "$U:$U" vm-c acme || bail "vm-c's take failed: $(cat "$TMP/c.err")"
check "a second holder of uid $U, of the same tenant (acme): no warning (stderr: $(cat "$TMP/c.err"))" \
	silent c
check "the same tenant: --json shared_uid_files 0 (got $(shared c))" [ "$(shared c)" = 0 ]
take d "$V:$V" vm-d globex || bail "vm-d's take failed: $(cat "$TMP/d.err")"
check "a holder of another tenant given another uid ($V): no warning (stderr: $(cat "$TMP/d.err"))" \
	silent d
check "another uid: --json shared_uid_files 0 (got $(shared d))" [ "$(shared d)" = 0 ]
take b "$U:$U" vm-b globex || bail "vm-b's take failed: $(cat "$TMP/b.err")"
check "a holder of another tenant given uid $U: warned on stderr (stderr: $(cat "$TMP/b.err"))" \
	warned b "$U" 2
check "another tenant: --json shared_uid_files 2 (vm-a's and vm-c's; got $(shared b))" \
	[ "$(shared b)" = 2 ]
check "another tenant: --json shared_uid_with names vm-a (got $(with b))" [ "$(with b)" = vm-a ]
take b2 "$U:$U" vm-b globex || bail "vm-b's second take failed: $(cat "$TMP/b2.err")"
check "the same holder's second file: its first not counted, 2 (got $(shared b2))" \
	all_of '[ "$(shared b2)" = 2 ] && warned b2 "$U" 2'
take f "$U:$U" vm-f || bail "vm-f's take failed: $(cat "$TMP/f.err")"
check "a holder of no tenant: every other holder's file of uid $U counts, 4 (got $(shared f))" \
	all_of '[ "$(shared f)" = 4 ] && warned f "$U" 4'

# What the warning names is real: same uid, the file by path; another uid, refused.
printf 'SECRET-OF-VM-B' | dd of="$SHM/b" conv=notrunc status=none
printf 'SECRET-OF-VM-D' | dd of="$SHM/d" conv=notrunc status=none
got=$(setpriv --reuid $U --regid $U --clear-groups head -c 14 "$SHM/b" 2>&1)
check "uid $U (vm-a's) reads vm-b's file by path: the exposure, no hidden reference (read '$got')" \
	[ "$got" = SECRET-OF-VM-B ]
got=$(setpriv --reuid $U --regid $U --clear-groups head -c 14 "$SHM/d" 2>&1)
check "uid $U cannot open vm-d's file, given uid $V (got '$got')" \
	all_of '[ "$got" != SECRET-OF-VM-D ] && [[ $got == *"Permission denied"* ]]'

"$PREALLOC" warm give --holder vm-b --tenant globex > /dev/null 2>&1
take g "$U:$U" vm-g || bail "vm-g's take failed: $(cat "$TMP/g.err")"
check "vm-b gave its files back: they no longer count, 3 (got $(shared g))" \
	[ "$(shared g)" = 3 ]

# The hook at start begin, the domain XML on stdin, its settings and
# libvirt.conf as the host has none (a private mount namespace hides any).
HOOK=${HOOK:-}
hook_start() {	# hook_start NAME UUID UID SECLABELS: the hook's stdout, stderr, status
	local xml="<domain type='kvm' id='3'><name>$1</name><uuid>$2</uuid>"
	xml+="<memory unit='MiB'>64</memory>$4<seclabel type='dynamic' model='dac' relabel='yes'>"
	xml+="<label>+$3:+$3</label><imagelabel>+$3:+$3</imagelabel></seclabel></domain>"
	unshare -m sh -c '[ ! -d /etc/prealloc ] || mount -t tmpfs none /etc/prealloc; exec "$@"' \
		- "$HOOK" "$1" start begin - <<< "$xml" > "$TMP/hook.out" 2> "$TMP/hook.err"
	HOOK_RC=$?
}
hook_warned() { grep -q "domain $1: no dynamic MAC label, and its QEMU's uid $2 owns $3 warm" "$TMP/hook.err"; }
UUID_H=22222222-3333-4444-5555-666666666666
if [ -z "$HOOK" ] || [ ! -x "$HOOK" ]; then
	COUNT=$((COUNT + 1))
	echo "ok $COUNT - the hook's warning # SKIP the libvirt hook is not built (no libxml2)"
else
	hook_start vm-h $UUID_H $U ""
	check "hook, start begin, DAC only (uid $U), other guests' files of it: exit 0, a warning in its log (rc $HOOK_RC: $(cat "$TMP/hook.err"))" \
		all_of '[ $HOOK_RC = 0 ] && hook_warned vm-h $U 4'
	check "hook: nothing on stdout (libvirt reads it as XML; got '$(cat "$TMP/hook.out")')" \
		[ ! -s "$TMP/hook.out" ]
	hook_start vm-h $UUID_H $U "<seclabel type='dynamic' model='apparmor' relabel='yes'><label>libvirt-$UUID_H</label></seclabel>"
	check "hook: a dynamic AppArmor label: no warning (rc $HOOK_RC: $(cat "$TMP/hook.err"))" \
		all_of '[ $HOOK_RC = 0 ] && ! grep -q "MAC label" "$TMP/hook.err"'
	hook_start vm-h $UUID_H $U "<seclabel type='dynamic' model='selinux' relabel='yes'><label>system_u:system_r:svirt_t:s0:c1,c2</label></seclabel>"
	check "hook: a dynamic SELinux label: no warning (rc $HOOK_RC: $(cat "$TMP/hook.err"))" \
		all_of '[ $HOOK_RC = 0 ] && ! grep -q "MAC label" "$TMP/hook.err"'
	hook_start vm-h $UUID_H 65532 ""
	check "hook: DAC only, a uid no other guest's file has: no warning (rc $HOOK_RC: $(cat "$TMP/hook.err"))" \
		all_of '[ $HOOK_RC = 0 ] && ! grep -q "MAC label" "$TMP/hook.err"'
fi

finish
