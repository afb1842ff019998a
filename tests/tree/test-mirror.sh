#!/bin/bash
# SPDX-License-Identifier: MIT
# The unit tests mirror the source (tests/unit/meson.build): the test of
# prealloc/X/Y.c is in tests/unit/X/, vfio/'s in tests/unit/vfio/, the
# public headers' (prealloc/include) in tests/unit/include/. So that a
# newcomer adding prealloc/X/Y.c knows where its test goes, and finds one
# to follow there:
#   untested: every folder of the source has its folder of unit tests,
#             holding at least one test;
#   stray:    every folder of unit tests names a folder of the source;
#   unread:   every folder of unit tests is in unit_folders (read by meson);
#   unbuilt:  every test file under tests/unit is named in its folder's
#             meson.build (a test no build runs passes by never running).
# A self-test plants each breach in a tree of its own first.
#
# Usage: test-mirror.sh SRCDIR. Prints TAP.
set -u
export LC_ALL=C
src=${1:?source dir}
# shellcheck source=../lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

# source_folders ROOT: the folders a unit test folder mirrors, as their names
# under tests/unit: each folder directly under prealloc/ with a .c or .h at
# any depth, and vfio.
source_folders() {
	(cd "$1" && find prealloc -mindepth 2 -type f \( -name '*.c' -o -name '*.h' \) |
		cut -d/ -f2 | sort -u)
	[ -d "$1/vfio" ] && echo vfio
}
# findings ROOT: one "kind: text" line per breach of the mirror in ROOT.
findings() {
	local root=$1 unit=$1/tests/unit d f
	local folders read
	folders=$(source_folders "$root" | sort -u)
	read=$(sed -n "/^unit_folders = \[/,/\]/p" "$unit/meson.build" | grep -o "'[^']*'" | tr -d "'")
	for d in $folders; do
		ls "$unit/$d"/test-* > /dev/null 2>&1 || echo "untested: prealloc/$d has no tests/unit/$d/test-*"
	done
	for f in "$unit"/*/; do
		d=$(basename "$f")
		grep -qxF "$d" <<< "$folders" || echo "stray: tests/unit/$d mirrors no folder of the source"
		grep -qxF "$d" <<< "$read" || echo "unread: tests/unit/$d is not in unit_folders"
	done
	(cd "$unit" && find . -type f -name 'test-*' \( -name '*.c' -o -name '*.cc' -o -name '*.sh' \)) |
		sed 's|^\./||' | sort | while read -r f; do
		grep -qF "'$(basename "$f")'" "$unit/$(dirname "$f")/meson.build" 2> /dev/null ||
			echo "unbuilt: tests/unit/$f is not named in its folder's meson.build"
	done
}

# The self-test's tree: prealloc/a (tested), prealloc/b (no test folder),
# prealloc/include (tested), vfio (a folder with no test file); tests/unit/zz
# mirrors nothing and is not read; a/test-two.c is in no meson.build.
planted=$(mktemp -d)
trap 'rm -rf "$planted"' EXIT
mkdir -p "$planted"/prealloc/{a,b,include/p} "$planted"/vfio \
	"$planted"/tests/unit/{a,include,vfio,zz}
touch "$planted"/prealloc/a/x.c "$planted"/prealloc/b/y.h "$planted"/prealloc/include/p/z.h \
	"$planted"/prealloc/root.c "$planted"/vfio/v.c \
	"$planted"/tests/unit/a/test-one.c "$planted"/tests/unit/a/test-two.c \
	"$planted"/tests/unit/include/test-h.sh "$planted"/tests/unit/zz/test-z.c
printf "unit_folders = ['a', 'b',\n\t'include', 'vfio']\n" > "$planted"/tests/unit/meson.build
echo "unit_tests += {'one' : [files('test-one.c'), []]}" > "$planted"/tests/unit/a/meson.build
echo "test('h', find_program('test-h.sh'))" > "$planted"/tests/unit/include/meson.build
echo "unit_tests += {'z' : [files('test-z.c'), []]}" > "$planted"/tests/unit/zz/meson.build
got=$(findings "$planted")
selftest "$got" "untested: prealloc/b has no tests/unit/b/test-*
untested: prealloc/vfio has no tests/unit/vfio/test-*
stray: tests/unit/zz mirrors no folder of the source
unread: tests/unit/zz is not in unit_folders
unbuilt: tests/unit/a/test-two.c is not named in its folder's meson.build" \
	"a tested folder, the root's files, a header folder at depth" \
	"a source folder without tests|untested: prealloc/b has no tests/unit/b/test-*" \
	"a test folder with no test file|untested: prealloc/vfio has no tests/unit/vfio/test-*" \
	"a test folder of no source folder|stray: tests/unit/zz mirrors no folder of the source" \
	"a test folder meson never reads|unread: tests/unit/zz is not in unit_folders" \
	"a test file no meson.build names|unbuilt: tests/unit/a/test-two.c is not named in its folder's meson.build"

found=$(findings "$src")
diag "$(lines untested)" "$(none "$(lines untested)")" \
	"every folder of the source has its folder of unit tests, with a test in it"
diag "$(lines stray)" "$(none "$(lines stray)")" "every folder of unit tests mirrors one of the source"
diag "$(lines unread)" "$(none "$(lines unread)")" "every folder of unit tests is in unit_folders"
diag "$(lines unbuilt)" "$(none "$(lines unbuilt)")" "every unit test file is named in its folder's meson.build"
echo "1..$tap_n"
[ "$tap_fails" -eq 0 ]
