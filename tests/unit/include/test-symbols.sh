#!/bin/bash
# SPDX-License-Identifier: MIT
# The library's ABI (docs/abi.md): it exports exactly the version script's
# names, each declared in a public header; every PREALLOC_0.1 symbol as
# released (abi-0.1.syms) is still exported at PREALLOC_0.1, and every
# symbol added since is at the newest node, never slipped into an old one.
#
#   test-symbols.sh LIB MAP INCLUDE_DIR RELEASED_0.1
set -u
lib=${1:?libprealloc.so} map=${2:?libprealloc.map} incdir=${3:?include dir} released=${4:?abi-0.1.syms}
command -v nm >/dev/null || { echo "SKIP: nm (binutils) is not installed"; exit 77; }

# name@@NODE (or name@NODE) for each defined dynamic symbol.
versioned=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRW]$/ {print $3}' | grep '^prealloc_' | sort -u)
exported=$(sed 's/@.*//' <<< "$versioned" | sort -u)
listed=$(sed -n 's/^[[:space:]]*\(prealloc_[a-z0-9_]*\);.*/\1/p' "$map" | sort -u)
newest=$(sed -n 's/^\(PREALLOC_[0-9.]*\) {.*/\1/p' "$map" | tail -1)
fails=0
not_ok() { echo "not ok - $*"; fails=1; }

if [ "$exported" != "$listed" ]; then
	not_ok "exported symbols differ from $map:"
	diff <(echo "$listed") <(echo "$exported")
else
	echo "ok - $(echo "$exported" | wc -l) exported symbols, exactly the version script's"
fi

headers=$(find "$incdir" -name '*.h')
bad=0
for sym in $listed; do
	# shellcheck disable=SC2086
	grep -Eq "\\b$sym\\(" $headers || { not_ok "$sym is exported but declared in no public header"; bad=1; }
done
[ $bad = 0 ] && echo "ok - every exported symbol is declared in a public header ($(echo "$headers" | wc -w) headers)"

# Released symbols stay, at their node; new ones go to the newest node only.
bad=0
for sym in $(grep -v '^#' "$released"); do
	grep -qx "$sym@@PREALLOC_0.1" <<< "$versioned" ||
		{ not_ok "$sym (released in 0.1) is not exported at PREALLOC_0.1: $(grep "^$sym@" <<< "$versioned" || echo gone)"; bad=1; }
done
[ $bad = 0 ] && echo "ok - every symbol released in 0.1 is still exported at PREALLOC_0.1"
bad=0
for v in $versioned; do
	sym=${v%%@*} node=${v##*@}
	grep -qx "$sym" "$released" && continue
	[ "$node" = "$newest" ] ||
		{ not_ok "$sym is new since 0.1 but versioned $node, not $newest (a new symbol goes to the newest node)"; bad=1; }
done
[ $bad = 0 ] && echo "ok - every symbol added since 0.1 is at $newest"
[ "$newest" != PREALLOC_0.1 ] || [ "$(echo "$exported" | wc -l)" -eq "$(grep -vc '^#' "$released")" ] ||
	not_ok "symbols were added but no node after PREALLOC_0.1 exists"
exit $fails
