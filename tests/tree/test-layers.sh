#!/bin/bash
# SPDX-License-Identifier: MIT
# The library's folders are layers. A file may call or include down a layer
# or within its own folder, never up a layer, never across between two
# folders of one rank, and no files may call round in a cycle (A -> B -> ...
# -> A), whatever their folders. Every product source and header sits in a
# declared folder, so a new folder must be given its rank here.
#
# Usage: test-layers.sh SRCDIR BUILDDIR (BUILDDIR built: its objects are read)
#
# "A calls B": A's object needs a symbol (nm -u) that B's object defines
# (nm --defined-only -g). Objects are mapped to their sources through
# BUILDDIR/compile_commands.json; only product sources (prealloc/, vfio/)
# built into product targets (objects under BUILDDIR/prealloc, BUILDDIR/vfio)
# count, so tests and examples never do. Prints TAP.
#
# "A includes B": A, a product source or header, has `#include "name"` and
# name is B as the compiler finds it: in A's own directory first, then the
# -iquote and -I directories of the compile command, in order. A header is
# resolved with the command of each product source that reaches it; a file
# no built source reaches (another architecture's, a header nobody includes)
# with every product command's directories, in first-seen order. A header
# counts in the folder it lives in. Includes of files outside the product
# folders (config.h in the build dir, system headers) do not count.
#
# Within a folder, a header and its source (x.h and x.c) are one unit, and
# units include one way: a header that includes a header of its own folder
# whose source includes it back, directly or through other files, includes
# up (prealloc/internal.h, the ctx, once included cpu.h, whose cpu.c reads
# the ctx's roots through internal.h).
#
# "A searches B": a product source's compile command puts B, a product
# folder, on its include path (-iquote, -I). The build says the layers
# (prealloc/meson.build): a layer compiles with its own folder and those
# below it; a folder above or across on a command's path is a breach even
# before any include uses it.
set -u
export LC_ALL=C
# The awk programs beside this script: reading compile_commands.json, the
# call check, the include and search checks.
here=$(dirname "${BASH_SOURCE[0]}")

# The layers, lowest first, as folders relative to SRCDIR; a file's folder is
# its directory. Folders on one line share a rank: neither may call the other.
# The public headers (prealloc/include/prealloc/*.h) are the library's
# interface, which every layer may include: they rank lowest, and the
# umbrella prealloc/include/prealloc.h, which includes them all, just above.
LAYERS=(
	'prealloc/include/prealloc'
	'prealloc/include'
	'prealloc/common'
	'prealloc/arch'
	'prealloc/arch/x86 prealloc/arch/arm64 prealloc/arch/generic'
	'prealloc'
	'prealloc/memory prealloc/limits'
	'prealloc/clear'
	'prealloc/engine'
	'prealloc/state'
	'vfio'
	'prealloc/flows'
	'prealloc/warm'
	'prealloc/frontend'
	'prealloc/cli prealloc/hook'
)
# Where product sources live (relative to SRCDIR), and where their objects
# are built (relative to BUILDDIR).
PRODUCT_DIRS=(prealloc vfio)

# layers_check SRCDIR BUILDDIR: one line per finding, "kind: text", kinds:
#   read:        what was read (not a breach)
#   error:       the check could not be made (nothing to check, unbuilt object)
#   undeclared:  a source or header in a folder that is not a layer
#   upward:      a call to a higher layer
#   across:      a call between two folders of one rank
#   cycle:       files calling round (a <-> b, or a -> b -> c -> a)
#   cycle group: the files of one cycle set, when more than two
#   upward include: an include of a higher layer's file, or within a
#                   folder, of a header whose source includes the includer
#   across include: an include between two folders of one rank
#   upward search:  a compile command that searches a higher layer's folder
#   across search:  a compile command that searches a folder of its rank
layers_check()
{
	local src bld ccj d
	src=$(realpath -e -- "$1" 2>/dev/null) || { echo "error: no source dir $1"; return; }
	bld=$(realpath -e -- "$2" 2>/dev/null) || { echo "error: no build dir $2"; return; }
	ccj=$bld/compile_commands.json
	[ -r "$ccj" ] || { echo "error: no $ccj"; return; }
	command -v nm >/dev/null || { echo "error: nm (binutils) is not installed"; return; }

	# Each compile command's directory, file, output and search directories.
	local -a files=() outs=() dirs=() incs=()
	local dir file out inc
	while IFS=$'\t' read -r dir file out inc; do
		[ "${file#/}" = "$file" ] && file=$dir/$file
		[ "${out#/}" = "$out" ] && out=$dir/$out
		files+=("$file") outs+=("$out") dirs+=("$dir") incs+=("$inc")
	done < <(awk -f "$here/layers-commands.awk" "$ccj")

	# Resolved in one go each; the source relative to SRCDIR, the object
	# relative to BUILDDIR.
	[ ${#files[@]} = 0 ] && { echo "error: no compile command in $ccj: nothing to check"; return; }
	local -a rfiles=() routs=()
	mapfile -t rfiles < <(printf '%s\n' "${files[@]}" | xargs -r -d '\n' realpath -m --)
	mapfile -t routs < <(printf '%s\n' "${outs[@]}" | xargs -r -d '\n' realpath -m --)

	local -a objs=() map=() tus=() sidx=() spath=() parts=()
	local i rel robj top ok p
	for i in "${!rfiles[@]}"; do
		rel=${rfiles[i]#"$src"/} robj=${routs[i]#"$bld"/}
		if [ "$rel" = "${rfiles[i]}" ] || [ "$robj" = "${routs[i]}" ]; then continue; fi
		case $rel in *.c) ;; *) continue ;; esac
		ok=0
		for top in "${PRODUCT_DIRS[@]}"; do
			case $rel in "$top"/*) ok=$((ok | 1)) ;; esac
			case $robj in "$top"/*) ok=$((ok | 2)) ;; esac
		done
		[ $ok = 3 ] || continue
		tus+=("$i"$'\t'"$rel")
		IFS=$'\037' read -r -a parts <<< "${incs[i]}"
		for p in "${parts[@]}"; do
			[ "${p#/}" = "$p" ] && p=${dirs[i]}/$p
			sidx+=("$i") spath+=("$p")
		done
		if [ ! -f "${routs[i]}" ]; then
			echo "error: not built: $robj (of $rel)"
			continue
		fi
		objs+=("${routs[i]}") map+=("${routs[i]}"$'\t'"$rel")
	done
	if [ ${#objs[@]} = 0 ]; then
		echo "error: no object of a product source in $ccj: nothing to check"
		return
	fi

	# Every product source and header on disk, built or not, for the folder
	# and include checks.
	local -a disk=() hdrs=()
	for top in "${PRODUCT_DIRS[@]}"; do
		[ -d "$src/$top" ] || continue
		mapfile -t -O ${#disk[@]} disk < <(cd "$src" && find "$top" -name '*.c' -type f)
		mapfile -t -O ${#hdrs[@]} hdrs < <(cd "$src" && find "$top" -name '*.h' -type f)
	done

	{
		for i in "${!LAYERS[@]}"; do
			for d in ${LAYERS[i]}; do printf 'L\t%s\t%s\n' "$i" "$d"; done
		done
		printf 'M\t%s\n' "${map[@]}"
		printf '%s\n' "${map[@]}" "${disk[@]/#/$'\t'}" | cut -f2 | sort -u | sed 's/^/N\t/'
		nm -A -P --defined-only -g -- "${objs[@]}" | awk '{ i = index($0, ": "); \
			split(substr($0, i + 2), f, " "); print "D\t" substr($0, 1, i - 1) "\t" f[1] }' | sort -u
		nm -A -P -u -- "${objs[@]}" | awk '{ i = index($0, ": "); \
			split(substr($0, i + 2), f, " "); print "U\t" substr($0, 1, i - 1) "\t" f[1] }' | sort -u
	} | awk -F '\t' -v nobjs=${#objs[@]} -f "$here/layers-calls.awk"
	includes_check
}

# includes_check: the include findings of layers_check, from its src, tus
# (index TAB source of each product compile command), sidx/spath (each
# command's search directories, in order), disk and hdrs (every product
# source and header); read and error lines first, then the findings, sorted.
includes_check()
{
	local -a rspath=()
	local i out
	[ ${#spath[@]} = 0 ] ||
		mapfile -t rspath < <(printf '%s\n' "${spath[@]}" | xargs -r -d '\n' realpath -m --)
	out=$({
		for i in "${!LAYERS[@]}"; do
			for d in ${LAYERS[i]}; do printf 'L\t%s\t%s\n' "$i" "$d"; done
		done
		printf 'F\t%s\n' "${disk[@]}" "${hdrs[@]}"
		printf 'T\t%s\n' "${tus[@]}"
		for i in "${!rspath[@]}"; do printf 'S\t%s\t%s\n' "${sidx[i]}" "${rspath[i]}"; done
	} | awk -F '\t' -v src="$src" -f "$here/layers-includes.awk")
	grep -E '^(read|error): ' <<< "$out"
	grep -vE '^(read|error): ' <<< "$out" | sort
}

# selftest_tree DIR: a throwaway tree with a breach of each kind planted
# among legal calls and includes, built, and its compile_commands.json.
# Prints the breaches a sound checker must report, exactly.
selftest_tree()
{
	local t=$1 cc=${CC:-cc}
	local -a srcs=(
		# file | object (under the build dir) | search flags | code
		'prealloc/u.c|prealloc/lib.a.p/u.c.o||int u_fn(void) { return 1; }'
		'prealloc/memory/a.c|prealloc/lib.a.p/memory_a.c.o|-I../src/prealloc/include -I../src/prealloc/flows|#include "a.h"\n#include "umb.h"\nint b_fn(void); int u_fn(void); int a_fn(void) { return b_fn() + u_fn(); }'
		'prealloc/flows/b.c|prealloc/lib.a.p/flows_b.c.o|-I../src/prealloc/cli|#include "same.h"\nint b_fn(void) { return 2; }'
		'prealloc/engine/c.c|prealloc/lib.a.p/engine_c.c.o|-I../src/prealloc/hook -iquote ../src/prealloc/arch|#include "ord.h"\nint d_fn(int); int c_fn(int x) { return x ? d_fn(x - 1) : 0; }'
		'prealloc/engine/d.c|prealloc/lib.a.p/engine_d.c.o||int c_fn(int); int d_fn(int x) { return x ? c_fn(x - 1) : 1; }'
		'prealloc/engine/up.c|prealloc/lib.a.p/engine_up.c.o||#include "low.h"\nint up_fn(void) { return 0; }'
		'prealloc/state/e.c|prealloc/lib.a.p/state_e.c.o|-I../src/prealloc/flows|#include "b.h"\nint f_fn(int); int e_fn(int x) { return x ? f_fn(x - 1) : 0; }'
		'prealloc/state/f.c|prealloc/lib.a.p/state_f.c.o||int g_fn(int); int f_fn(int x) { return x ? g_fn(x - 1) : 0; }'
		'prealloc/state/g.c|prealloc/lib.a.p/state_g.c.o||int e_fn(int); int g_fn(int x) { return x ? e_fn(x - 1) : 0; }'
		'vfio/v.c|prealloc/lib.a.p/.._vfio_v.c.o|-I../src/prealloc/memory -I../src/prealloc/flows|#include "a.h"\nint a_fn(void); int v_fn(void) { return a_fn(); }'
		'prealloc/weird/w.c|prealloc/lib.a.p/weird_w.c.o||int w_fn(void) { return 0; }'
		'prealloc/cli/m.c|prealloc/cli/prog.p/m.c.o|-I. -I ../src/prealloc/hook|#include "config.h"\n#include "n.h"\nint n_fn(void); int v_fn(void); int main(void) { return n_fn() + v_fn(); }'
		'prealloc/hook/n.c|prealloc/hook/one.p/n.c.o||#include "n.h"\nint n_fn(void) { return 3; }'
		'prealloc/hook/n.c|prealloc/hook/two.p/n.c.o||#include "n.h"\nint n_fn(void) { return 3; }'
		'tests/t.c|tests/t.p/t.c.o|-I../src/prealloc/flows|#include "b.h"\nint b_fn(void); int a_fn(void); int t_fn(void) { return b_fn() + a_fn(); }'
	)
	local -a hdrs=(
		# file (under the source dir, but config.h: the build dir's) | code
		'src/prealloc/include/prealloc/pub.h|int pub_fn(void);'
		'src/prealloc/include/umb.h|#include "prealloc/pub.h"'
		'src/prealloc/memory/a.h|#include "b.h"'
		'src/prealloc/flows/b.h|int b_fn(void);'
		'src/prealloc/flows/same.h|int same_fn(void);'
		'src/prealloc/cli/same.h|int same_fn(void);'
		'src/prealloc/arch/ord.h|int ord_fn(void);'
		'src/prealloc/hook/ord.h|int ord_fn(void);'
		'src/prealloc/hook/n.h|int n_fn(void);'
		'src/prealloc/engine/lone.h|#include "n.h"'
		'src/prealloc/engine/low.h|#include "up.h"'
		'src/prealloc/engine/up.h|#include "base.h"'
		'src/prealloc/engine/base.h|int base_fn(void);'
		'src/prealloc/weird/w.h|int w_fn(void);'
		'build/config.h|#define CONFIG 1'
	)
	local e f o flags code sep='' json
	for e in "${hdrs[@]}"; do
		IFS='|' read -r f code <<< "$e"
		mkdir -p "$t/${f%/*}"
		printf '%s\n' "$code" > "$t/$f"
	done
	json="["
	for e in "${srcs[@]}"; do
		IFS='|' read -r f o flags code <<< "$e"
		mkdir -p "$t/src/${f%/*}" "$t/build/${o%/*}"
		printf '%b\n' "$code" > "$t/src/$f"
		# shellcheck disable=SC2086 # flags: words, as the command has them
		(cd "$t/build" && $cc $flags -c -o "$o" "../src/$f") || return 1
		# Sources both relative to the build dir and absolute, as meson may
		# write them; a JSON escape in each command.
		case $f in prealloc/hook/*) f=$t/src/$f ;; *) f=../src/$f ;; esac
		json+="$sep"$'\n  {\n    "directory": "'"$t/build"'",\n'
		json+='    "command": "cc -DNAME=\"x\" '"$flags"' -c -o '"$o $f"'",'$'\n'
		json+='    "file": "'"$f"'",'$'\n''    "output": "'"$o"'"'$'\n  }'
		sep=,
	done
	echo "$json"$'\n]' > "$t/build/compile_commands.json"
}

SELFTEST_EXPECTED='undeclared: prealloc/weird/w.c (folder prealloc/weird is not a layer)
across: prealloc/cli/m.c -> prealloc/hook/n.c (n_fn)
upward: prealloc/memory/a.c -> prealloc/flows/b.c (b_fn)
cycle: prealloc/engine/c.c <-> prealloc/engine/d.c (d_fn / c_fn)
cycle group: 3 files reach one another: prealloc/state/e.c prealloc/state/f.c prealloc/state/g.c
cycle: prealloc/state/e.c -> prealloc/state/f.c -> prealloc/state/g.c -> prealloc/state/e.c (f_fn / g_fn / e_fn)
across include: prealloc/cli/m.c -> prealloc/hook/n.h ("n.h")
across search: prealloc/cli/m.c searches prealloc/hook
undeclared: prealloc/weird/w.h (folder prealloc/weird is not a layer)
upward include: prealloc/engine/lone.h -> prealloc/hook/n.h ("n.h")
upward include: prealloc/engine/low.h -> prealloc/engine/up.h ("up.h"; prealloc/engine/up.c includes prealloc/engine/low.h)
upward include: prealloc/memory/a.h -> prealloc/flows/b.h ("b.h")
upward include: prealloc/state/e.c -> prealloc/flows/b.h ("b.h")
upward search: prealloc/engine/c.c searches prealloc/hook
upward search: prealloc/flows/b.c searches prealloc/cli
upward search: prealloc/memory/a.c searches prealloc/flows
upward search: prealloc/state/e.c searches prealloc/flows
upward search: vfio/v.c searches prealloc/flows'

. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

main()
{
	local srcdir=${1:?SRCDIR} builddir=${2:?BUILDDIR} found l
	echo "1..22"

	found=$(layers_check "$srcdir" "$builddir")
	l=$(lines 'read|error')
	diag "$l" "$(none "$(lines error)")" "objects read from $builddir (something to check)"
	l=$(lines undeclared)
	diag "$l" "$(none "$l")" "every product source and header sits in a declared layer folder"
	l=$(lines 'upward|across')
	diag "$l" "$(none "$l")" "no call goes up a layer, or across between folders of one rank"
	l=$(lines 'upward include|across include')
	diag "$l" "$(none "$l")" "no include goes up a layer, or across between folders of one rank"
	l=$(lines 'upward search|across search')
	diag "$l" "$(none "$l")" "no compile command searches a folder above its own, or across (the build says the layers)"
	l=$(lines 'cycle|cycle group')
	diag "$l" "$(none "$l")" "no files call round in a cycle"

	# Self-test: the planted breaches, exactly; and no build, no pass.
	local got
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	if ! selftest_tree "$tmp" 2>"$tmp/cc.log"; then
		got="error: the self-test tree did not compile: $(head -c 300 "$tmp/cc.log")"
	else
		got=$(layers_check "$tmp/src" "$tmp/build" | grep -v '^read: ')
	fi
	found=$got
	local what f o
	selftest "$got" "$SELFTEST_EXPECTED" \
		"calls and includes down or within a folder (a header of a unit that does not include it back), own dir before -iquote before -I, from tests/, of build files are legal" \
		'a call up a layer|upward: prealloc/memory/a.c -> prealloc/flows/b.c (b_fn)' \
		'a call across cli/hook|across: prealloc/cli/m.c -> prealloc/hook/n.c (n_fn)' \
		'a 2-file cycle|cycle: prealloc/engine/c.c <-> prealloc/engine/d.c (d_fn / c_fn)' \
		'a 3-file cycle (seen through the closure)|cycle: prealloc/state/e.c -> prealloc/state/f.c -> prealloc/state/g.c -> prealloc/state/e.c (f_fn / g_fn / e_fn)' \
		'a source in an undeclared folder|undeclared: prealloc/weird/w.c (folder prealloc/weird is not a layer)' \
		'an include up a layer|upward include: prealloc/state/e.c -> prealloc/flows/b.h ("b.h")' \
		'an include up a layer from a header, found by its source'"'"'s -I|upward include: prealloc/memory/a.h -> prealloc/flows/b.h ("b.h")' \
		'an include up a layer from a header no source includes|upward include: prealloc/engine/lone.h -> prealloc/hook/n.h ("n.h")' \
		'an include across cli/hook|across include: prealloc/cli/m.c -> prealloc/hook/n.h ("n.h")' \
		'an include within a folder of a header whose source includes the includer|upward include: prealloc/engine/low.h -> prealloc/engine/up.h ("up.h"; prealloc/engine/up.c includes prealloc/engine/low.h)' \
		'a compile command that searches a higher layer'"'"'s folder|upward search: prealloc/memory/a.c searches prealloc/flows' \
		'a compile command that searches across cli/hook|across search: prealloc/cli/m.c searches prealloc/hook' \
		'a header in an undeclared folder|undeclared: prealloc/weird/w.h (folder prealloc/weird is not a layer)'
	# Nothing to check is a failure, never a pass: a build of tests alone,
	# and a build whose one object calls no other.
	local b
	for b in 'no product object|tests/t.c|tests/t.p/t.c.o' \
		'no call between files|prealloc/u.c|prealloc/lib.a.p/u.c.o'; do
		IFS='|' read -r what f o <<< "$b"
		mkdir -p "$tmp/vacuous/${o%/*}"
		cp "$tmp/build/$o" "$tmp/vacuous/$o"
		printf '[\n  {\n    "directory": "%s",\n    "file": "../src/%s",\n    "output": "%s"\n  }\n]\n' \
			"$tmp/vacuous" "$f" "$o" > "$tmp/vacuous/compile_commands.json"
		got=$(layers_check "$tmp/src" "$tmp/vacuous")
		if grep -q '^error: .*nothing to check' <<< "$got"; then
			point 1 "self-test: a build with $what is refused, not passed"
		else
			diag "$got" 0 "self-test: a build with $what is refused, not passed"
		fi
		rm -rf "$tmp/vacuous"
	done
	[ $tap_fails = 0 ]
}

main "$@"
