#!/bin/bash
# SPDX-License-Identifier: MIT
# The warm pool under load (issue 51, part 1): warm-torture.py runs seeded
# random schedules of concurrent takes, gives, deaths, fills, a serve daemon,
# warm.conf edits, gc and kills (at pause points and at random moments),
# holders of distinct uids keeping hidden references, and checks a model of
# what must hold after every step, at quiet points and at the end. This
# script gives it what a test needs (lib.sh: a session of its own, the
# cleanup, the pools put back): a 1777 tmpfs (4k) and a 1777 hugetlbfs of 2M
# pages capped at 128 MiB (its statfs counts only this test's pages), with
# 64 more 2M pages free. Arguments go to warm-torture.py: none runs the
# suite's fixed seeds (1-8 and the regression seeds: one for 4k, two for 2M); `--minutes N` soaks
# (docs/testing.md, "The warm pool under load").
TAP=1
. "$(dirname "$0")/lib-admit.sh"

SHM=$TMP/shm
mkdir -p "$SHM"
mount -t tmpfs -o size=256M,mode=1777 none "$SHM" || bail "cannot mount a tmpfs on $SHM"
track_mount "$SHM"
need_hugetlbfs 2M
MNT2M=$TMP/hugetlbfs
mkdir -p "$MNT2M"
mount -t hugetlbfs -o pagesize=2M,size=128M,mode=1777 none "$MNT2M" ||
	bail "cannot mount a hugetlbfs of 2M pages on $MNT2M"
track_mount "$MNT2M"
reserve_2m 64 || bail "cannot make 64 more 2M pages free"
chmod 711 "$TMP"	# the holders' uids reach the mounts and no more
"${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/warm-torture.py" --tmp "$TMP" \
	--mount-4k "$SHM" --mount-2m "$MNT2M" "$@"
