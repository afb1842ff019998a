#!/bin/bash
# SPDX-License-Identifier: MIT
# The issue's "done when": `prealloc --node 0 --page-size 2M 512M` leaves a
# 512 MiB hugetlbfs file whose 256 pages are all resident on node 0, reported
# so in human and JSON form, ready for a second process (and QEMU) without
# new faults or extra hugepages; `prealloc rm` gives the pages back.
set -u
. "$(dirname "$0")/lib.sh"
private_hugetlbfs 2M
reserve_2m 512 || bail "could not reserve 512 2M pages for the test"

base_free=$(hp_free)
out=$TMP/out.json
"$PREALLOC" --node 0 --page-size 2M --file "$MNT/guest" --json 512M > "$out" 2> "$TMP/err"
check "create exits 0" [ $? -eq 0 ]
check "file is 512 MiB" [ "$(stat -c %s "$MNT/guest")" = 536870912 ]
check "JSON bytes = 512 MiB" [ "$(json_get "$out" "d['bytes']")" = 536870912 ]
check "JSON page_size = 2M" [ "$(json_get "$out" "d['page_size']")" = 2097152 ]
check "JSON file names the file" [ "$(json_get "$out" "d['file']")" = "$MNT/guest" ]
check "JSON method" [ "$(json_get "$out" "d['method']")" = madv_populate_write ]
check "JSON node 0 has 256 pages on node" \
	[ "$(json_get "$out" "d['nodes'][0]['node'], d['nodes'][0]['pages_on_node'], d['nodes'][0]['pages_off_node'], d['nodes'][0]['pages_missing']")" = "0 256 0 0" ]
check "JSON threads and seconds present" \
	python3 -c "import json; d=json.load(open('$out')); n=d['nodes'][0]; assert n['threads'] >= 1 and n['seconds'] > 0 and d['seconds'] > 0"
check "256 hugepages taken from the pool" [ "$(hp_free)" -eq $((base_free - 256)) ]
check "QEMU option printed" grep -q "mem-path=$MNT/guest,size=512M,share=on,prealloc=off,host-nodes=0,policy=bind" "$out"

# A second process finds every page present, on node 0, zero; touching
# them takes no new hugepage and no major fault.
res=$("$CHECK_FILE" "$MNT/guest" 0 2097152)
check "second process: ready ($res)" [ $? -eq 0 ]

# QEMU maps the same file with prealloc=on and needs no extra hugepages.
if command -v qemu-system-x86_64 >/dev/null; then
	before=$(hp_free)
	echo quit | timeout 60 qemu-system-x86_64 -machine none -nodefaults -display none -S \
		-monitor stdio \
		-object memory-backend-file,id=m0,mem-path="$MNT/guest",size=512M,share=on,prealloc=on \
		> "$TMP/qemu.log" 2>&1
	check "QEMU mapped the file (rc $?)" [ $? -eq 0 ]
	check "QEMU used no extra hugepages" [ "$(hp_free)" -eq "$before" ]
else
	echo "# qemu-system-x86_64 not installed: QEMU client check not run"
fi

# Human form: the same facts in the table.
"$PREALLOC" --node 0 --page-size 2M --file "$MNT/guest2" 64M > "$TMP/human" 2>&1
check "human create exits 0" [ $? -eq 0 ]
check "human report: node 0 row with 32 pages on node, 0 off, 0 missing" \
	grep -Eq '^  0 +64 MiB +[0-9]+ +[0-9.]+ +[0-9.]+ +32 +0 +0 ' "$TMP/human"
check "human report names the file" grep -q "^file: $MNT/guest2\$" "$TMP/human"

"$PREALLOC" rm "$MNT/guest" "$MNT/guest2"
check "rm exits 0" [ $? -eq 0 ]
none_exist() { local f; for f; do [ ! -e "$f" ] || return 1; done; }
check "files are gone" none_exist "$MNT/guest" "$MNT/guest2"
check "pool back to baseline" [ "$(hp_free)" -eq "$base_free" ]
finish
