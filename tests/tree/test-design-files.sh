#!/bin/bash
# SPDX-License-Identifier: MIT
# docs/design.md's file table ("### Files") is the map of the product: every
# .c and .h under prealloc/ and vfio/ has a row (named, in backquotes, in the
# row's first cell, by its path under prealloc/, or as vfio/NAME for the
# top-level vfio/ folder), no row names a file that is not in the tree, and
# no file has two rows. A file added, moved or removed without its row
# fails here, with the paths to add or drop.
#
# Usage: test-design-files.sh SRCDIR. Prints TAP.
set -u
export LC_ALL=C
src=${1:?source dir}
doc=$src/docs/design.md
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; fails=1; }
# as_table PATH...: a repository path as the table writes it (prealloc/ dropped).
as_table() { sed 's|^prealloc/||; s|^|#   |'; }
# files N: "1 file", "2 files".
files() { [ "$1" = 1 ] && echo "1 file" || echo "$1 files"; }

[ -r "$doc" ] || { echo "1..1"; echo "not ok 1 - no $doc"; exit 1; }

# The first cell of each row of the section, each backquoted .c or .h in it,
# as a repository path.
listed=$(awk '
	/^#/ { in_files = ($0 ~ /^### Files[[:space:]]*$/); next }
	!in_files || !/^\|/ || /^\|[-: |]*$/ { next }
	{
		split($0, cell, "|")
		first = cell[2]
		while (match(first, /`[^`]+`/)) {
			name = substr(first, RSTART + 1, RLENGTH - 2)
			first = substr(first, RSTART + RLENGTH)
			if (name !~ /\.[ch]$/) continue
			print (name ~ /^vfio\// ? name : "prealloc/" name)
		}
	}' "$doc" | sort)
tree=$(cd "$src" && find prealloc vfio -type f \( -name '*.c' -o -name '*.h' \) | sort)

if [ -z "$listed" ]; then
	not_ok "no file named in the table of docs/design.md's '### Files' section"
	echo "1..$n"
	exit 1
fi

missing=$(comm -13 <(echo "$listed" | sort -u) <(echo "$tree"))
if [ -n "$missing" ]; then
	not_ok "$(files "$(echo "$missing" | wc -l)") of the tree without a row in docs/design.md's file table (### Files); add, as the table writes them:"
	echo "$missing" | as_table
else
	ok "each of the $(echo "$tree" | wc -l) .c and .h files under prealloc/ and vfio/ has a row in docs/design.md's file table"
fi

extra=$(comm -23 <(echo "$listed" | sort -u) <(echo "$tree"))
if [ -n "$extra" ]; then
	not_ok "$(files "$(echo "$extra" | wc -l)") named in docs/design.md's file table but not in the tree (moved or removed: rename or drop them):"
	echo "$extra" | as_table
else
	ok "every file the table names is in the tree"
fi

twice=$(echo "$listed" | uniq -d)
if [ -n "$twice" ]; then
	not_ok "files named in more than one place of the table (keep one):"
	echo "$twice" | as_table
else
	ok "no file is named twice"
fi
echo "1..$n"
exit $fails
