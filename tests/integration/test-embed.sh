#!/bin/bash
# SPDX-License-Identifier: MIT
# examples/embed, the program a VMM author reads first, run for real: it
# prepares a 2M hugetlbfs file through the library's flows (growing an
# empty pool), dirties it, clears it and releases it. Afterwards the pool,
# the mount and the record store are as they were.
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
M=$MNT
base_nr=$(hp nr 2048)
base_free=$(hp free 2048)
echo "# baseline: node 0 2M pool $base_nr, free $base_free"

"$EMBED" "$M" 64 > "$TMP/out" 2>&1
rc=$?
cat "$TMP/out"
check "embed: exit 0 (got $rc)" [ $rc -eq 0 ]
check "embed: prepared in the mount" grep -q "^prepared $M/prealloc-node" "$TMP/out"
check "embed: the clear verified zeroes" grep -q "^clear: .*: zero$" "$TMP/out"
check "embed: released, growth given back" grep -q "^release: .*: ok$" "$TMP/out"
check "embed: mount empty" [ -z "$(leftovers "$M")" ]
check "embed: pool back at baseline (total $(hp nr 2048), free $(hp free 2048))" \
	[ "$(hp nr 2048)" -eq "$base_nr" -a "$(hp free 2048)" -eq "$base_free" ]
check "embed: no record left" [ "$(store_records)" -eq 0 ]
finish
