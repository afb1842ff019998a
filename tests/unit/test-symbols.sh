#!/bin/bash
# SPDX-License-Identifier: MIT
# The library exports exactly the version script's names, and the public
# header declares each of them: nothing internal leaks, nothing is missing.
set -u
lib=${1:?libprealloc.so} map=${2:?libprealloc.map} header=${3:?prealloc.h}
command -v nm >/dev/null || { echo "SKIP: nm (binutils) is not installed"; exit 77; }

exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | sed 's/@.*//' | sort -u)
listed=$(sed -n 's/^[[:space:]]*\(prealloc_[a-z0-9_]*\);.*/\1/p' "$map" | sort -u)
fails=0
if [ "$exported" != "$listed" ]; then
	echo "not ok - exported symbols differ from $map:"
	diff <(echo "$listed") <(echo "$exported")
	fails=1
else
	echo "ok - $(echo "$exported" | wc -l) exported symbols, exactly the version script's"
fi
for sym in $listed; do
	if ! grep -Eq "\\b$sym\\(" "$header"; then
		echo "not ok - $sym is exported but not declared in $(basename "$header")"
		fails=1
	fi
done
[ $fails = 0 ] && echo "ok - every exported symbol is declared in the header"
exit $fails
