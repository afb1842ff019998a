#!/bin/bash
# SPDX-License-Identifier: MIT
# 1G pages. The test first asks the kernel itself for one more 1G page on
# node 0 and reads the pool back. If the kernel cannot allocate it (read-back
# below the request: proven, e.g. fragmentation), 'prealloc --grow-pools' must
# fail before allocating and advise boot-time reservation. If it can, the
# 1G path runs end to end: refusal without --grow-pools (with the advice),
# success with --grow-pools, and 'prealloc rm' returns the pool to baseline.
. "$(dirname "$0")/lib-admit.sh"

KB=1048576
[ -n "$(pool_files $KB)" ] || skip "this kernel has no 1G hugepage pool (no $KB kB hstate)"
private_hugetlbfs 1G
M=$MNT
base_nr=$(hp nr $KB)
base_free=$(hp free $KB)
pool=$(pool_files $KB | head -1)
echo "# baseline: node 0 1G pool $base_nr, free $base_free"

# Can this kernel allocate one more 1G page right now?
want=$((base_nr + 1))
echo $want > "$pool"
got=$(hp nr $KB)
echo "$base_nr" > "$pool"
check "probe left the pool as found" [ "$(hp nr $KB)" -eq "$base_nr" ]
need=$((base_free + 1))

if [ "$got" -lt "$want" ]; then
	echo "# the kernel allocated $got of $want 1G pages: runtime allocation fails here"
	"$PREALLOC" --node 0 --file "$M/vm" --grow-pools --grow-timeout 1 ${need}G 2> "$TMP/err"
	rc=$?
	cat "$TMP/err"
	check "grow_pools: exit 3 (got $rc)" [ $rc -eq 3 ]
	check "grow_pools: says the kernel allocated fewer" grep -q "allocated only" "$TMP/err"
	check "grow_pools: advises boot-time reservation" grep -q "hugepagesz=1G hugepages=N" "$TMP/err"
	check "no file left" [ ! -e "$M/vm" ]
	check "pool as found" [ "$(hp nr $KB)" -eq "$base_nr" ]
	finish
	exit
fi

echo "# the kernel can allocate 1G pages at run time: end to end"
"$PREALLOC" --node 0 --file "$M/vm" ${need}G 2> "$TMP/err"
rc=$?
cat "$TMP/err"
check "no --grow-pools: refused with exit 3 (got $rc)" [ $rc -eq 3 ]
check "no --grow-pools: names node 0, free and needed" \
	grep -q "node 0 has $base_free free 1G hugepages.*$need needed" "$TMP/err"
check "no --grow-pools: advises boot-time reservation" grep -q "hugepagesz=1G hugepages=N" "$TMP/err"
check "no --grow-pools: no file left" [ ! -e "$M/vm" ]

"$PREALLOC" -q --node 0 --file "$M/vm" --grow-pools ${need}G
rc=$?
check "--grow-pools: exit 0 (got $rc)" [ $rc -eq 0 ]
check "--grow-pools: file holds $need GiB" \
	[ "$(stat -c %b "$M/vm" 2>/dev/null || echo 0)" -eq $((need * 2097152)) ]
check "--grow-pools: pool grew by one page ($(hp nr $KB))" [ "$(hp nr $KB)" -eq $((base_nr + 1)) ]
"$PREALLOC" rm "$M/vm"
check "rm: exit 0" [ $? -eq 0 ]
check "rm: pool back at baseline (total $(hp nr $KB), free $(hp free $KB))" \
	[ "$(hp nr $KB)" -eq "$base_nr" -a "$(hp free $KB)" -eq "$base_free" ]
check "rm: store empty" [ "$(store_records)" -eq 0 ]
finish
