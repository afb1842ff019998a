#!/bin/bash
# SPDX-License-Identifier: MIT
# The library's folders are layers. A file may call down a layer or within
# its own folder, never up a layer, never across between two folders of one
# rank, and no files may call round in a cycle (A -> B -> ... -> A), whatever
# their folders. Every product source sits in a declared folder, so a new
# folder must be given its rank here.
#
# Usage: test-layers.sh SRCDIR BUILDDIR (BUILDDIR built: its objects are read)
#
# "A calls B": A's object needs a symbol (nm -u) that B's object defines
# (nm --defined-only -g). Objects are mapped to their sources through
# BUILDDIR/compile_commands.json; only product sources (prealloc/, vfio/)
# built into product targets (objects under BUILDDIR/prealloc, BUILDDIR/vfio)
# count, so tests and examples never do. Prints TAP.
set -u
export LC_ALL=C

# The layers, lowest first, as folders relative to SRCDIR; a file's folder is
# its directory. Folders on one line share a rank: neither may call the other.
LAYERS=(
	'prealloc/arch'
	'prealloc/arch/x86 prealloc/arch/arm64 prealloc/arch/generic'
	'prealloc'
	'prealloc/memory'
	'prealloc/engine'
	'prealloc/state'
	'vfio'
	'prealloc/flows'
	'prealloc/cli prealloc/hook'
)
# Where product sources live (relative to SRCDIR), and where their objects
# are built (relative to BUILDDIR).
PRODUCT_DIRS=(prealloc vfio)

# layers_check SRCDIR BUILDDIR: one line per finding, "kind: text", kinds:
#   read:        what was read (not a breach)
#   error:       the check could not be made (nothing to check, unbuilt object)
#   undeclared:  a source in a folder that is not a layer
#   upward:      a call to a higher layer
#   across:      a call between two folders of one rank
#   cycle:       files calling round (a <-> b, or a -> b -> c -> a)
#   cycle group: the files of one cycle set, when more than two
layers_check()
{
	local src bld ccj d
	src=$(realpath -e -- "$1" 2>/dev/null) || { echo "error: no source dir $1"; return; }
	bld=$(realpath -e -- "$2" 2>/dev/null) || { echo "error: no build dir $2"; return; }
	ccj=$bld/compile_commands.json
	[ -r "$ccj" ] || { echo "error: no $ccj"; return; }
	command -v nm >/dev/null || { echo "error: nm (binutils) is not installed"; return; }

	# Each compile command's directory, file and output (meson writes one
	# field a line, but any layout of the objects will do).
	local -a files=() outs=()
	local dir file out
	while IFS=$'\t' read -r dir file out; do
		[ "${file#/}" = "$file" ] && file=$dir/$file
		[ "${out#/}" = "$out" ] && out=$dir/$out
		files+=("$file") outs+=("$out")
	done < <(awk 'BEGIN { RS = "}" }
		function field(name,   s) {
			if (!match($0, "\"" name "\"[ \t\r\n]*:[ \t\r\n]*\"[^\"]*\""))
				return ""
			s = substr($0, RSTART, RLENGTH)
			sub(/^"[a-z]*"[ \t\r\n]*:[ \t\r\n]*"/, "", s)
			sub(/"$/, "", s)
			return s
		}
		{ f = field("file"); o = field("output"); d = field("directory")
		  if (f != "" && o != "") print d "\t" f "\t" o }' "$ccj")

	# Resolved in one go each; the source relative to SRCDIR, the object
	# relative to BUILDDIR.
	[ ${#files[@]} = 0 ] && { echo "error: no compile command in $ccj: nothing to check"; return; }
	local -a rfiles=() routs=()
	mapfile -t rfiles < <(printf '%s\n' "${files[@]}" | xargs -r -d '\n' realpath -m --)
	mapfile -t routs < <(printf '%s\n' "${outs[@]}" | xargs -r -d '\n' realpath -m --)

	local -a objs=() map=()
	local i rel robj top ok
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

	# Every product source on disk, built or not, for the folder check.
	local -a disk=()
	for top in "${PRODUCT_DIRS[@]}"; do
		[ -d "$src/$top" ] || continue
		mapfile -t -O ${#disk[@]} disk < <(cd "$src" && find "$top" -name '*.c' -type f)
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
	} | awk -F '\t' -v nobjs=${#objs[@]} '
	function folder(f) { sub(/\/[^\/]*$/, "", f); return f }
	$1 == "L" { rank[$3] = $2 + 0; next }
	$1 == "M" { src_of[$2] = $3; next }
	$1 == "N" { node[++n] = $2; idx[$2] = n; next }
	$1 == "D" { f = src_of[$2]; if (!((f, $3) in defd)) { defd[f, $3] = 1; defs[$3] = defs[$3] " " idx[f] }; next }
	$1 == "U" { nu++; ucall[nu] = idx[src_of[$2]]; usym[nu] = $3; next }
	END {
		# The calls between files, each with the symbols it goes by.
		for (k = 1; k <= nu; k++) {
			a = ucall[k]; s = usym[k]
			if (!(s in defs)) continue
			nd = split(defs[s], ds, " ")
			for (m = 1; m <= nd; m++) {
				b = ds[m] + 0
				if (a == b || ((a, b, s) in seen)) continue
				seen[a, b, s] = 1
				if (!((a, b) in e)) { e[a, b] = 1; nedges++ }
				if ((a, b) in syms) syms[a, b] = syms[a, b] ", " s
				else syms[a, b] = s
			}
		}
		print "read: " nobjs " objects of " n " product sources, " nedges + 0 " calls between files"
		if (nedges == 0)
			print "error: no call between files found: nothing to check"

		for (i = 1; i <= n; i++)
			if (!(folder(node[i]) in rank))
				print "undeclared: " node[i] " (folder " folder(node[i]) " is not a layer)"

		for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) {
			if (!((i, j) in e)) continue
			fa = folder(node[i]); fb = folder(node[j])
			if (fa == fb || !(fa in rank) || !(fb in rank)) continue
			if (rank[fb] > rank[fa])
				print "upward: " node[i] " -> " node[j] " (" syms[i, j] ")"
			else if (rank[fb] == rank[fa])
				print "across: " node[i] " -> " node[j] " (" syms[i, j] ")"
		}

		# Who reaches whom (Floyd-Warshall), then the sets of files that
		# reach one another, each named by its first file.
		for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) if ((i, j) in e) r[i, j] = 1
		for (k = 1; k <= n; k++) for (i = 1; i <= n; i++) {
			if (!((i, k) in r)) continue
			for (j = 1; j <= n; j++) if ((k, j) in r) r[i, j] = 1
		}
		for (i = 1; i <= n; i++) {
			for (j = 1; j <= n; j++)
				if (j == i || (((i, j) in r) && ((j, i) in r))) break
			lead[i] = j; size[j]++
		}
		# Every pair that calls each other, then for the files of a larger
		# set not yet on a printed cycle, the shortest cycle through each.
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (((i, j) in e) && ((j, i) in e)) {
				print "cycle: " node[i] " <-> " node[j] " (" syms[i, j] " / " syms[j, i] ")"
				onc[i] = onc[j] = 1
			}
		for (l = 1; l <= n; l++) {
			if (lead[l] != l || size[l] < 3) continue
			line = ""
			for (i = l; i <= n; i++) if (lead[i] == l) line = line " " node[i]
			print "cycle group: " size[l] " files reach one another:" line
			for (i = l; i <= n; i++) if (lead[i] == l && !(i in onc)) shortest_cycle(i)
		}
	}
	# Breadth first from s, within its set, back to s.
	function shortest_cycle(s,   q, head, tail, u, v, par, seen2, path, m, t, txt, st) {
		head = 1; tail = 0; q[++tail] = s; seen2[s] = 1
		while (head <= tail) {
			u = q[head++]
			for (v = 1; v <= n; v++) {
				if (!((u, v) in e)) continue
				if (v == s) {
					m = 0
					for (t = u; t != s; t = par[t]) path[++m] = t
					path[++m] = s
					txt = node[s]; st = ""; t = s
					for (; m >= 1; m--) {
						if (path[m] == s) continue
						txt = txt " -> " node[path[m]]
						st = st (st == "" ? "" : " / ") syms[t, path[m]]
						onc[path[m]] = 1; t = path[m]
					}
					txt = txt " -> " node[s]
					st = st (st == "" ? "" : " / ") syms[t, s]
					onc[s] = 1
					print "cycle: " txt " (" st ")"
					return
				}
				if (lead[v] != lead[s] || (v in seen2)) continue
				seen2[v] = 1; par[v] = u; q[++tail] = v
			}
		}
	}'
}

# selftest_tree DIR: a throwaway tree with a breach of each kind planted
# among legal calls, built, and its compile_commands.json. Prints the
# breaches a sound checker must report, exactly.
selftest_tree()
{
	local t=$1 cc=${CC:-cc}
	local -a srcs=(
		# file | object (under the build dir) | code
		'prealloc/u.c|prealloc/lib.a.p/u.c.o|int u_fn(void) { return 1; }'
		'prealloc/memory/a.c|prealloc/lib.a.p/memory_a.c.o|int b_fn(void); int u_fn(void); int a_fn(void) { return b_fn() + u_fn(); }'
		'prealloc/flows/b.c|prealloc/lib.a.p/flows_b.c.o|int b_fn(void) { return 2; }'
		'prealloc/engine/c.c|prealloc/lib.a.p/engine_c.c.o|int d_fn(int); int c_fn(int x) { return x ? d_fn(x - 1) : 0; }'
		'prealloc/engine/d.c|prealloc/lib.a.p/engine_d.c.o|int c_fn(int); int d_fn(int x) { return x ? c_fn(x - 1) : 1; }'
		'prealloc/state/e.c|prealloc/lib.a.p/state_e.c.o|int f_fn(int); int e_fn(int x) { return x ? f_fn(x - 1) : 0; }'
		'prealloc/state/f.c|prealloc/lib.a.p/state_f.c.o|int g_fn(int); int f_fn(int x) { return x ? g_fn(x - 1) : 0; }'
		'prealloc/state/g.c|prealloc/lib.a.p/state_g.c.o|int e_fn(int); int g_fn(int x) { return x ? e_fn(x - 1) : 0; }'
		'vfio/v.c|prealloc/lib.a.p/.._vfio_v.c.o|int a_fn(void); int v_fn(void) { return a_fn(); }'
		'prealloc/weird/w.c|prealloc/lib.a.p/weird_w.c.o|int w_fn(void) { return 0; }'
		'prealloc/cli/m.c|prealloc/cli/prog.p/m.c.o|int n_fn(void); int v_fn(void); int main(void) { return n_fn() + v_fn(); }'
		'prealloc/hook/n.c|prealloc/hook/one.p/n.c.o|int n_fn(void) { return 3; }'
		'prealloc/hook/n.c|prealloc/hook/two.p/n.c.o|int n_fn(void) { return 3; }'
		'tests/t.c|tests/t.p/t.c.o|int b_fn(void); int a_fn(void); int t_fn(void) { return b_fn() + a_fn(); }'
	)
	local e f o code sep='' json
	json="[" 
	for e in "${srcs[@]}"; do
		IFS='|' read -r f o code <<< "$e"
		mkdir -p "$t/src/${f%/*}" "$t/build/${o%/*}"
		echo "$code" > "$t/src/$f"
		$cc -c -o "$t/build/$o" "$t/src/$f" || return 1
		# Sources both relative to the build dir and absolute, as meson may write them.
		case $f in prealloc/hook/*) f=$t/src/$f ;; *) f=../src/$f ;; esac
		json+="$sep"$'\n  {\n    "directory": "'"$t/build"'",\n    "command": "cc -c",\n'
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
cycle: prealloc/state/e.c -> prealloc/state/f.c -> prealloc/state/g.c -> prealloc/state/e.c (f_fn / g_fn / e_fn)'

. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

main()
{
	local srcdir=${1:?SRCDIR} builddir=${2:?BUILDDIR} found l
	echo "1..12"

	found=$(layers_check "$srcdir" "$builddir")
	l=$(lines 'read|error')
	diag "$l" "$(none "$(lines error)")" "objects read from $builddir (something to check)"
	l=$(lines undeclared)
	diag "$l" "$(none "$l")" "every product source sits in a declared layer folder"
	l=$(lines 'upward|across')
	diag "$l" "$(none "$l")" "no call goes up a layer, or across between folders of one rank"
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
		"calls down, within a folder, from tests/ are legal" \
		'a call up a layer|upward: prealloc/memory/a.c -> prealloc/flows/b.c (b_fn)' \
		'a call across cli/hook|across: prealloc/cli/m.c -> prealloc/hook/n.c (n_fn)' \
		'a 2-file cycle|cycle: prealloc/engine/c.c <-> prealloc/engine/d.c (d_fn / c_fn)' \
		'a 3-file cycle (seen through the closure)|cycle: prealloc/state/e.c -> prealloc/state/f.c -> prealloc/state/g.c -> prealloc/state/e.c (f_fn / g_fn / e_fn)' \
		'a source in an undeclared folder|undeclared: prealloc/weird/w.c (folder prealloc/weird is not a layer)'
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
