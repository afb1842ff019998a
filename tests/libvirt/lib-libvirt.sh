# SPDX-License-Identifier: MIT
# The setup every libvirt suite shares (sourced after lib-installed.sh and
# lib.sh): one suite at a time, a private 2M hugetlbfs ($MNT) and a second
# one as memory_backing_dir ($MB), libvirt's and prealloc's settings saved
# and put back, virtlogd and libvirtd started with a clean environment (and
# stopped) when none runs, probe hooks around ours, a private record store.
HOOK=${HOOK:?} PREALLOC_DOMAIN=${PREALLOC_DOMAIN:?}
V="virsh -q -c qemu:///system"
HOOKDST=/etc/libvirt/hooks/qemu.d/prealloc
CONF=/etc/prealloc/libvirt.conf
QCONF=/etc/libvirt/qemu.conf

# backup FILE: restored (or removed) at exit.
backup() {
	if [ -e "$1" ]; then
		cp -a "$1" "$TMP/$(echo "$1" | tr / _)"
		on_exit "cp -a '$TMP/$(echo "$1" | tr / _)' '$1'"
	else
		on_exit "rm -f '$1'"
	fi
}
# start_libvirtd [LANG]: libvirt cuts the per-domain directory's name at 20
# characters under a UTF-8 locale, at 20 bytes under C.
start_libvirtd() {
	"${daemon_env[@]}" LANG="${1:-C.UTF-8}" libvirtd -d || bail "libvirtd did not start"
	for _ in $(seq 50); do $V list > /dev/null 2>&1 && return 0; sleep 0.1; done
	bail "libvirtd did not answer"
}
# probe_field PROBE DOMAIN STAGE FIELD: the field (1-based) of the last such line.
probe_field() { awk -v p="$1" -v d="$2" -v st="$3" -v f="$4" \
	'$1 == p && $2 == d && $3 " " $4 == st { v = $f } END { print v }' "$PROBE_LOG"; }

# lv_setup: the lock, the mounts, the settings saved; qemu.conf may then get
# lines of the suite's own before lv_start.
lv_setup() {
	# One libvirt suite at a time on a host (worktrees share /etc/libvirt and libvirtd).
	exec 9> /run/lock/prealloc-libvirt-test.lock
	flock -w 280 9 || bail "another libvirt suite held /run/lock/prealloc-libvirt-test.lock for 280 s"
	private_hugetlbfs 2M
	command -v libvirtd > /dev/null || skip "libvirtd is not installed (setup.sh installs it)"
	command -v qemu-system-x86_64 > /dev/null || skip "qemu-system-x86_64 is not installed"
	chmod 755 "$MNT"
	STATE=$TMP/state
	mkdir -m 700 -p "$STATE"

	# memory_backing_dir for file-backed guests: a second private 2M hugetlbfs.
	MB=$(mktemp -d /tmp/prealloc-backing.XXXXXX) && track_dir "$MB"
	mount -t hugetlbfs -o pagesize=2M none "$MB" || bail "cannot mount hugetlbfs on $MB"
	track_mount "$MB"
	chmod 755 "$MB"
	backup "$HOOKDST"
	backup "$CONF"
	backup "$QCONF"
	mkdir -p /etc/libvirt/hooks/qemu.d /etc/prealloc
	rm -f "$HOOKDST"	# installed below, by `prealloc hook install`, once libvirtd runs
}

# lv_start: memory_backing_dir, the daemons, the probes, libvirt.conf.
lv_start() {
	printf 'memory_backing_dir = "%s"\n' "$MB" >> "$QCONF"

	pidof libvirtd > /dev/null && bail "a libvirtd this test did not start runs (pid $(pidof libvirtd)); stop it first"
	# The daemons get only what a service manager would give them.
	daemon_env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8)
	if ! pidof virtlogd > /dev/null; then
		"${daemon_env[@]}" virtlogd -d || bail "virtlogd did not start"
		on_exit "kill $(pidof virtlogd)"
	fi
	start_libvirtd
	on_exit 'kill $(cat /run/libvirtd.pid)'

	# Probes around our hook (qemu.d runs in strcmp order), installed only once
	# libvirtd runs: it notes at start whether the qemu driver has any hook and
	# runs none until a SIGHUP, so the starts below prove `hook install`'s SIGHUP.
	# 00-* runs before our hook, zz-* after it. Each logs `probe op sub time nr free [blocks blocksize size
	# owner mode]` (node 0's 2M pool; the guest's pc.ram under $MB) and, at
	# start begin, kills libvirtd -9 for a domain named in $TMP/kill-at, and
	# (00- only, as a guest's uid could) puts a symbolic link to $TMP/swap-to in
	# place of the per-domain memory directory of a domain named in $TMP/swap-at.
	PROBE_LOG=$TMP/probe.log
	for p in 00-prealloc-test-probe zz-prealloc-test-probe; do
		cat > "/etc/libvirt/hooks/qemu.d/$p" <<EOP
#!/bin/bash
cat > /dev/null
h=/sys/devices/system/node/node0/hugepages/hugepages-2048kB
f=\$(ls -d $MB/libvirt/qemu/*-\$1/pc.ram 2> /dev/null | head -1)
echo "$p \$1 \$2 \$3 \$(date +%s.%N) \$(cat \$h/nr_hugepages) \$(cat \$h/free_hugepages)" \\
	"\$([ -n "\$f" ] && stat -c '%b %B %s %U %a' "\$f")" >> $PROBE_LOG
if [ $p = zz-prealloc-test-probe ] && [ "\$2 \$3" = "start begin" ] &&
   [ "\$(cat $TMP/kill-at 2> /dev/null)" = "\$1" ]; then
	kill -9 \$(cat /run/libvirtd.pid)
fi
if [ $p = 00-prealloc-test-probe ] && [ "\$2 \$3" = "start begin" ] &&
   [ "\$(cat $TMP/swap-at 2> /dev/null)" = "\$1" ]; then
	q=\$(dirname "\$(cat $TMP/swap-to)")/libvirt/qemu
	d=\$(ls -d \$q/*-\$1)
	mv "\$d" "\$d.moved" && ln -s "\$(cat $TMP/swap-to)" "\$d"
	ls -la \$q > $TMP/swap.log 2>&1
fi
exit 0
EOP
		chmod 755 "/etc/libvirt/hooks/qemu.d/$p"
		on_exit "rm -f /etc/libvirt/hooks/qemu.d/$p"
	done
	cat > "$CONF" <<EOC
state_dir = $STATE
start_grace = 15
EOC
	export PREALLOC_STATE_DIR=$STATE
	DOMS=()
	on_exit 'for d in "${DOMS[@]}"; do $V destroy $d; $V undefine $d; done'
}

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
# skip_check DESCRIPTION CAUSE: one TAP check reported as skipped, with its proven cause.
skip_check() { COUNT=$((COUNT + 1)); echo "ok $COUNT - $1 # SKIP $2"; }
pool() { cat /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages; }
pool_free() { cat /sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages; }
holders() { "$PREALLOC" pool 2>/dev/null | grep -c "held by libvirt:" ; }
