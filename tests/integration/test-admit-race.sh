#!/bin/bash
# SPDX-License-Identifier: MIT
# Two 'prealloc --grow-pools' runs released at the same instant, each needing
# the pool to grow: both succeed and the pool ends with both growths
# (a read-modify-write of nr_hugepages would lose one). rm gives both back.
. "$(dirname "$0")/lib-admit.sh"

private_hugetlbfs 2M
M=$MNT
base_nr=$(hp nr 2048)
base_free=$(hp free 2048)
need=$((base_free + 64))	# each run alone needs growth
echo "# baseline: node 0 2M pool $base_nr, free $base_free; two runs of $need pages"

# A FIFO releases both at once: opening it for reading blocks until a writer opens it.
mkfifo "$TMP/go"
for i in 1 2; do
	( read -r _ < "$TMP/go"; exec "$PREALLOC" -q --node 0 --file "$M/vm$i" --grow-pools $((need * 2))M ) \
		2> "$TMP/err$i" &
	eval "pid$i=$!"
	on_exit "kill $!"
done
sleep 0.2
: > "$TMP/go"
wait "$pid1"; rc1=$?
wait "$pid2"; rc2=$?
cat "$TMP/err1" "$TMP/err2"
check "first run succeeded (exit $rc1)" [ $rc1 -eq 0 ]
check "second run succeeded (exit $rc2)" [ $rc2 -eq 0 ]
for i in 1 2; do
	check "vm$i holds all its pages" [ "$(stat -c %b "$M/vm$i" 2>/dev/null || echo 0)" -eq $((need * 4096)) ]
done
growth=$((2 * need - base_free))
check "pool holds both growths: total $(hp nr 2048) = $base_nr + $growth" \
	[ "$(hp nr 2048)" -eq $((base_nr + growth)) ]
check "the store has two owners" [ "$(store_records)" -eq 2 ]
"$PREALLOC" pool

"$PREALLOC" rm "$M/vm1" "$M/vm2"
check "rm: exit 0" [ $? -eq 0 ]
check "rm: pool back at baseline (total $(hp nr 2048), free $(hp free 2048))" \
	[ "$(hp nr 2048)" -eq "$base_nr" -a "$(hp free 2048)" -eq "$base_free" ]
check "rm: store empty" [ "$(store_records)" -eq 0 ]
finish
