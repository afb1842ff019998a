#!/bin/bash
# SPDX-License-Identifier: MIT
# --page-size thp is honest: on a tmpfs mounted with huge=advise the report
# says how much huge pages really map (and it is more than nothing); on a
# tmpfs without huge= the run is refused before anything is made, since its
# files would get no transparent hugepages whatever shmem_enabled says.
. "$(dirname "$0")/lib.sh"
need_root

mode=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)
[ -n "$mode" ] || skip "no shmem transparent hugepages in this kernel (no shmem_enabled)"
[ "$mode" != deny ] || skip "shmem_enabled is deny: no tmpfs file can have transparent hugepages"

for huge in advise never; do
	mkdir -p "$TMP/$huge"
	mount -t tmpfs -o "huge=$huge,size=256M" none "$TMP/$huge" || bail "cannot mount tmpfs huge=$huge"
	track_mount "$TMP/$huge"
done

"$PREALLOC" --json --page-size thp --file "$TMP/advise/g" 64M > "$TMP/out" 2> "$TMP/err"
rc=$?
check "huge=advise: exit 0 (got $rc: $(cat "$TMP/err"))" [ $rc -eq 0 ]
check "huge=advise: the report counts huge pages" \
	[ "$(json_get "$TMP/out" "d['nodes'][0]['huge_bytes'] > 0")" = True ]
check "huge=advise: no more than the node's bytes" \
	[ "$(json_get "$TMP/out" "d['nodes'][0]['huge_bytes'] <= d['nodes'][0]['bytes']")" = True ]
"$PREALLOC" rm "$TMP/advise/g"

if [ "$mode" = force ]; then
	echo "# shmem_enabled is force: every tmpfs mount gets huge pages, no refusal to see"
else
	"$PREALLOC" --page-size thp --file "$TMP/never/g" 64M > "$TMP/out" 2> "$TMP/err"
	rc=$?
	check "huge=never: refused with exit 4 (got $rc)" [ $rc -eq 4 ]
	check "huge=never: the message names the mount option" grep -q "huge=never" "$TMP/err"
	check "huge=never: nothing made" [ -z "$(leftovers "$TMP/never")" ]
fi
finish
