# SPDX-License-Identifier: MIT
# Shared by the tests of a hostile holder (test-warm-isolation.sh,
# test-warm-withdrawn.sh, test-warm-holder.sh), on top of lib-admit.sh:
# the attacker (warm-attacker.c, run as uid 65534) and two private mounts
# it may write to, as a guest's uid may: a tmpfs (4k) and a hugetlbfs (2M).
# Sourced, not run.

ATTACKER=${WARM_ATTACKER:?set WARM_ATTACKER to tests/integration/warm-attacker}
MARK=TOP-SECRET-OF-B-42
NOBODY=(setpriv --reuid 65534 --regid 65534 --clear-groups)

# holder_mounts TMPFS_SIZE PAGES: $SHM, a 1777 tmpfs of TMPFS_SIZE, and
# $MNT2M, a 1777 private hugetlbfs with PAGES more 2M pages free; A (uid
# 65534) reaches the paths it is handed below $TMP and no more; warm.conf
# at $PREALLOC_WARM_CONF (not written).
holder_mounts() {
	SHM=$TMP/shm
	mkdir -p "$SHM"
	mount -t tmpfs -o size="$1",mode=1777 none "$SHM" || bail "cannot mount a tmpfs on $SHM"
	track_mount "$SHM"
	chmod 711 "$TMP"
	private_hugetlbfs 2M
	MNT2M=$MNT
	chmod 1777 "$MNT2M"
	reserve_2m "$2" || bail "cannot make $2 more 2M pages free"
	export PREALLOC_WARM_CONF=$TMP/warm.conf
}

# attacker_hold FILE MODE: the attacker (uid 65534) holds FILE by MODE
# (warm-attacker.c) in the background, its control on fd 7, its pid in
# APID; 0 once it says it is ready, else 1 with its stderr said.
attacker_hold() {
	local i
	rm -f "$TMP/ctl" "$TMP/att.out"
	mkfifo "$TMP/ctl"
	"${NOBODY[@]}" "$ATTACKER" hold "$1" "$MARK" "$2" < "$TMP/ctl" > "$TMP/att.out" \
		2> "$TMP/att.err" &
	APID=$!
	on_exit "kill $APID 2> /dev/null"
	exec 7> "$TMP/ctl"
	for ((i = 0; i < 200; i++)); do
		grep -q ready "$TMP/att.out" && return 0
		kill -0 $APID 2> /dev/null || break
		sleep 0.05
	done
	# A mode that exits once it is ready may have between the grep and kill -0.
	grep -q ready "$TMP/att.out" && return 0
	echo "# attacker: $(cat "$TMP/att.err")"
	return 1
}
