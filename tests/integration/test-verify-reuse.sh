#!/bin/bash
# SPDX-License-Identifier: MIT
# --verify must be able to fail (issue 13: no test expected exit 5 from a
# create): a file of ours filled with a pattern by someone else and then
# reused with --verify exits 5 and its data is left exactly as it was, on
# tmpfs (4k) and hugetlbfs (2M); the same reuse of a zero file passes.
# Everything it makes (mounts, files, pools, records) goes at exit.
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
reserve_2m 8 || bail "cannot make 8 more 2M pages free"
SHM=$TMP/shm
mkdir -p "$SHM"
mount -t tmpfs -o size=64M none "$SHM" || bail "cannot mount a tmpfs on $SHM"
track_mount "$SHM"

# fill FILE BYTES: a pattern written through a shared mapping (faults every page).
fill() {
	python3 - "$1" "$2" <<'PY'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
n = int(sys.argv[2])
os.ftruncate(fd, n)
m = mmap.mmap(fd, n)
pat = bytes(range(1, 256)) * (n // 255 + 1)
m[:] = pat[:n]
m.close(); os.close(fd)
PY
}

for case in "4k $SHM/pat" "2M $MNT/pat"; do
	set -- $case
	page=$1 f=$2
	fill "$f" $((16 << 20)) || bail "$page: cannot fill $f"
	before=$(sha256sum < "$f")
	"$PREALLOC" --reuse --verify --page-size "$page" --file "$f" --json 16M \
		> "$TMP/out.json" 2> "$TMP/err"
	rc=$?
	check "$page: --reuse --verify of a pattern-filled file exits 5 (got $rc: $(head -1 "$TMP/err"))" \
		[ $rc -eq 5 ]
	check "$page: its data is left as it was" [ "$(sha256sum < "$f")" = "$before" ]
	check "$page: the file is still there ($(ls "$f" 2>&1)), no record ($(store_records))" [ -f "$f" -a "$(store_records)" -eq 0 ]
	[ "$(store_records)" -eq 0 ] || sed "s/^/# store: /" "$PREALLOC_STATE_DIR/store"
	# The same reuse of a file of zeroes passes: exit 5 is the data's doing.
	rm -f "$f"
	truncate -s 16M "$f" && chmod 600 "$f"
	"$PREALLOC" -q --reuse --verify --page-size "$page" --file "$f" 16M 2> "$TMP/err"
	rc=$?
	check "$page: --reuse --verify of a zero file exits 0 (got $rc: $(head -1 "$TMP/err"))" \
		[ $rc -eq 0 ]
	rm -f "$f"
	"$PREALLOC" gc > /dev/null 2>&1	# the adopted file's record goes with it
done
finish
