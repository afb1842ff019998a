#!/bin/bash
# SPDX-License-Identifier: MIT
# Before/after numbers for docs/engine.md: OLD and NEW are two builds'
# bench-cancel binaries; runs alternate between them (5 each), medians printed.
# As root, reserves 2M hugepages for the memfd2m rows and restores the pool.
OLD=$1 NEW=$2
HP=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
saved=$(cat $HP)
trap 'echo "$saved" > $HP' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
row() {	# mode kind arg
	local o n
	o=$(for i in 1 2 3 4 5; do "$OLD" "$@" 1; "$NEW" "$@" 1 >> /tmp/rc-new.$$; done | median)
	n=$(median < /tmp/rc-new.$$); rm -f /tmp/rc-new.$$
	echo "| $1 | $2 | $3 | $o | $n |"
}
for kind in memfd memfd2m; do
	if [ $kind = memfd2m ]; then
		echo $((saved + 1100)) > $HP 2>/dev/null
		[ "$(cat /sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages)" -ge 1024 ] ||
			{ echo "| cancel | memfd2m | - | no 2M pages | |"; continue; }
	fi
	for chunk in 2 64 1024; do row cancel $kind $chunk; done
	echo "$saved" > $HP
done
for kind in memfd thp; do for t in 1 2; do row populate $kind $t; done; done
