#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes libprealloc0's symbols file (dpkg-gensymbols(1)) from the version
# script: every name each version node exports, and the node itself, with
# the first package version that had the node. debian/rules regenerates it
# at build time and fails when it differs from debian/libprealloc0.symbols;
# dpkg-gensymbols -c4 then fails when the built library exports anything
# else. A new node in the map stops the build here until its first version
# is added to node_version below (docs/packaging.md, "The symbols file").
#
# Usage: gen-symbols.sh prealloc/libprealloc.map > debian/libprealloc0.symbols
set -eu
map=${1:?usage: gen-symbols.sh MAP}

# The first package version of a version node.
node_version() {
	case $1 in
	PREALLOC_0.1 | PREALLOC_0.2) echo 0.1.0 ;;	# both in the first package
	*) return 1 ;;
	esac
}

echo "libprealloc.so.0 libprealloc0 #MINVER#"
echo "* Build-Depends-Package: libprealloc-dev"
node=
# Node openings ("NAME {"), global names ("name;") and node ends, in order.
sed -n -e 's/^\(PREALLOC_[0-9.]*\)[[:space:]]*{.*/node \1/p' \
	-e 's/^[[:space:]]*\(prealloc_[a-z0-9_]*\);.*/sym \1/p' "$map" |
	while read -r kind name; do
		if [ "$kind" = node ]; then
			node=$name
			version=$(node_version "$node") || {
				echo "gen-symbols.sh: $map: version node $node has no first package version" \
					"(add it to node_version in $0)" >&2
				exit 1
			}
			echo " $node@$node $version"
		else
			[ -n "$node" ] || { echo "gen-symbols.sh: $map: $name outside a node" >&2; exit 1; }
			echo " $name@$node $version"
		fi
	done
