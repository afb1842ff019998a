#!/bin/bash
# SPDX-License-Identifier: MIT
# A request larger than node 0's free 2M pages fails before allocating:
# exit 3, a message naming node, pages needed and free and the remedies,
# the pool untouched, no file left. The same request with --grow-pools
# succeeds, and 'prealloc rm' returns the pool to its baseline; 'prealloc gc'
# returns growth whose file went. The names before grow and gc still work:
# --reserve, --reserve-timeout and 'pool --gc', and pool --json's "owner"
# and "reserved" beside "tag" and "promised".
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
M=$MNT
base_nr=$(hp nr 2048)
base_free=$(hp free 2048)
need=$((base_free + 32))
echo "# baseline: node 0 2M pool $base_nr, free $base_free; asking for $need pages"

"$PREALLOC" --node 0 --file "$M/vm" $((need * 2))M 2> "$TMP/err"
rc=$?
cat "$TMP/err"
check "refused with exit 3 (got $rc)" [ $rc -eq 3 ]
check "message names node 0, free and needed pages" \
	grep -q "node 0 has $base_free free 2M hugepages.*$need needed" "$TMP/err"
check "message names the remedies" grep -q -- "--grow-pools.*smaller size or another node" "$TMP/err"
check "no file left" [ ! -e "$M/vm" ]
check "pool untouched (free $(hp free 2048), total $(hp nr 2048))" \
	[ "$(hp free 2048)" -eq "$base_free" -a "$(hp nr 2048)" -eq "$base_nr" ]
check "no record" [ "$(store_records)" -eq 0 ]

"$PREALLOC" -q --node 0 --file "$M/vm" --grow-pools $((need * 2))M
rc=$?
check "--grow-pools: exit 0 (got $rc)" [ $rc -eq 0 ]
check "--grow-pools: file holds every page" \
	[ "$(stat -c %b "$M/vm" 2>/dev/null || echo 0)" -eq $((need * 4096)) ]
check "--grow-pools: pool grew by what was missing ($(hp nr 2048))" \
	[ "$(hp nr 2048)" -eq $((base_nr + need - base_free)) ]
"$PREALLOC" pool --json > "$TMP/pool.json"
check "pool --json shows the growth and its tag, under both keys" python3 - "$TMP/pool.json" \
	"$M/vm" $((need - base_free)) <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
p = [p for p in d["pools"] if p["node"] == 0 and p["page_size"] == 2 << 20][0]
owners = [o for o in p["owners"] if o["tag"] == os.path.realpath(sys.argv[2])]
sys.exit(not (p["added"] == int(sys.argv[3]) and len(owners) == 1 and owners[0]["state"] == "held"
	      and owners[0]["owner"] == owners[0]["tag"] and p["reserved"] == p["promised"]))
PY

"$PREALLOC" rm "$M/vm"
rc=$?
check "rm: exit 0 (got $rc)" [ $rc -eq 0 ]
check "rm: file gone" [ ! -e "$M/vm" ]
check "rm: pool back at baseline (total $(hp nr 2048), free $(hp free 2048))" \
	[ "$(hp nr 2048)" -eq "$base_nr" -a "$(hp free 2048)" -eq "$base_free" ]
check "rm: store empty" [ "$(store_records)" -eq 0 ]

# gc: growth whose owner vanished without 'prealloc rm' comes back; once
# by 'prealloc gc', once by the older names ('--reserve', 'pool --gc').
gc_case() # NAME GROW_FLAGS GC_COMMAND
{
	# shellcheck disable=SC2086 # the flags' words
	"$PREALLOC" -q --node 0 --file "$M/gc" $2 $((need * 2))M
	check "$1: grown again" [ "$(hp nr 2048)" -eq $((base_nr + need - base_free)) ]
	rm -f "$M/gc"
	# shellcheck disable=SC2086
	"$PREALLOC" $3 > "$TMP/gc.out"
	cat "$TMP/gc.out"
	check "$1: reports the pages given back" \
		grep -q "gave back $((need - base_free)) hugepages" "$TMP/gc.out"
	check "$1: pool back at baseline" \
		[ "$(hp nr 2048)" -eq "$base_nr" -a "$(hp free 2048)" -eq "$base_free" ]
	check "$1: store empty" [ "$(store_records)" -eq 0 ]
}
gc_case "gc" "--grow-pools --grow-timeout 5" "gc"
gc_case "old names: --reserve, pool --gc" "--reserve --reserve-timeout 5" "pool --gc"
finish
