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
