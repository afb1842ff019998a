#!/bin/bash
# SPDX-License-Identifier: MIT
# Small files, short functions: no product source (prealloc/, vfio/, every
# folder under them) over MAX_FILE lines, no function over MAX_FUNC.
#
# Usage: test-shape.sh SRCDIR. Prints TAP.
#
# A function is measured by the house style: its opening { alone at column 0,
# its closing } alone at column 0, both lines counted. Its name is the
# identifier before the first ( of the signature lines above the {. A { alone
# at column 0 after a line ending in = is an initialiser, not a function (the
# house style writes "= {" anyway); a function whose } is not alone at column
# 0 could not be measured, and fails.
set -u
export LC_ALL=C

MAX_FILE=500
MAX_FUNC=60
# The tests' functions, C and shell: no cap on a file, a looser one on a
# function (tests_check).
TESTS_MAX_FUNC=120
SHELL_MAX_FUNC=120
PRODUCT_DIRS=(prealloc vfio)

# shape_check SRCDIR: one line per finding, "kind: text", kinds:
#   read:              what was read (not a breach)
#   error:             the check could not be made (nothing to check)
#   long file:         path N lines
#   long function:     path:line name() N lines (line: its {)
#   unclosed function: path:line name() ... (its } is not where the style puts it)
shape_check()
{
	local src top
	local -a files=()
	src=$(realpath -e -- "$1" 2>/dev/null) || { echo "error: no source dir $1"; return; }
	for top in "${PRODUCT_DIRS[@]}"; do
		[ -d "$src/$top" ] || continue
		mapfile -t -O ${#files[@]} files < <(cd "$src" && find "$top" -name '*.c' -type f | sort)
	done
	if [ ${#files[@]} = 0 ]; then
		echo "error: no .c file under ${PRODUCT_DIRS[*]} in $src: nothing to check"
		return
	fi
	(cd "$src" && c_measure $MAX_FILE $MAX_FUNC "" "${files[@]}")
}

# c_measure MAXFILE MAXFUNC KIND FILE...: the findings of the C measure in
# FILEs (MAXFILE 0: no cap on a file), each kind prefixed with KIND.
c_measure()
{
	local maxfile=$1 maxfunc=$2 kind=$3
	shift 3
	awk -v maxfile="$maxfile" -v maxfunc="$maxfunc" -v kind="$kind" -v nfiles=$# '
	function name_of(sig,   s) {
		s = sig
		gsub(/__attribute__[ \t]*\(\([^)]*\)\)/, "", s)
		if (!match(s, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/))
			return "?"
		s = substr(s, RSTART, RLENGTH)
		sub(/[ \t]*\($/, "", s)
		return s
	}
	function end_file() {
		if (infunc)
			print kind "unclosed function: " file ":" fstart " " fname "() (no } alone at column 0 closes it before the file ends)"
		if (maxfile && lines > maxfile)
			print kind "long file: " file " " lines " lines"
		infunc = 0; sig = ""; cont = 0
	}
	FNR == 1 { if (NR > 1) end_file(); file = FILENAME }
	{ lines = FNR }
	# Preprocessor lines, continued ones too, neither make nor break a signature.
	cont { cont = /\\$/; next }
	/^[ \t]*#/ { cont = /\\$/; next }
	/^\{[ \t]*$/ {
		if (infunc)
			print kind "unclosed function: " file ":" fstart " " fname "() (a { at column 0 on line " FNR " comes before its })"
		infunc = 0
		if (index(sig, "(") && sig !~ /=[ \t]*$/) {
			infunc = 1; fstart = FNR; fname = name_of(sig); nfunc++
		}
		sig = ""
		next
	}
	/^\}[ \t]*$/ {
		if (infunc && FNR - fstart + 1 > maxfunc)
			print kind "long function: " file ":" fstart " " fname "() " FNR - fstart + 1 " lines"
		infunc = 0; sig = ""
		next
	}
	# A signature is the lines since the last blank line, statement,
	# block end or comment end.
	/^[ \t]*$/ || /;[ \t]*$/ || /\}[ \t]*$/ || /\*\/[ \t]*$/ || /^[ \t]*\/\// { sig = ""; next }
	{ sig = sig " " $0 }
	END {
		if (NR > 0) end_file()
		print "read: " nfiles " " kind "files, " nfunc + 0 " functions"
		if (nfunc == 0)
			print "error: no function found (no { alone at column 0 after a signature): nothing to check"
	}' "$@"
}

# tests_check SRCDIR: the same measure over the tests' C at a looser cap
# (a test's table of cases is long and flat), and the shell variant over
# every shell script under tests/: a function from its name() line to its }
# alone at column 0, both counted ({ on the name's line or alone below
# it). Kinds: read:, error:, test long function:, test unclosed function:,
# shell long function:, shell unclosed function:.
tests_check()
{
	local src
	local -a cs=() shs=()
	src=$(realpath -e -- "$1" 2>/dev/null) || { echo "error: no source dir $1"; return; }
	mapfile -t cs < <(cd "$src" && find tests -name '*.c' -type f 2>/dev/null | sort)
	mapfile -t shs < <(cd "$src" && find tests -name '*.sh' -type f 2>/dev/null | sort)
	if [ ${#cs[@]} = 0 ] || [ ${#shs[@]} = 0 ]; then
		echo "error: no .c or no .sh file under tests/ in $src: nothing to check"
		return
	fi
	(cd "$src" && c_measure 0 $TESTS_MAX_FUNC "test " "${cs[@]}")
	(cd "$src" && sh_measure $SHELL_MAX_FUNC "${shs[@]}")
}

# sh_measure MAXFUNC FILE...: the shell variant's findings in FILEs.
sh_measure()
{
	awk -v maxfunc="$1" -v nfiles=$(($# - 1)) '
	function end_file() {
		if (infunc)
			print "shell unclosed function: " file ":" fstart " " fname "() (no } alone at column 0 closes it before the file ends)"
		infunc = 0; want_brace = 0
	}
	FNR == 1 { if (NR > 1) end_file(); file = FILENAME }
	want_brace {
		want_brace = 0
		if ($0 ~ /^\{[ \t]*$/) { infunc = 1; next }
	}
	!infunc && /^[A-Za-z_][A-Za-z0-9_]*[ \t]*\(\)[ \t]*(\{[ \t]*)?$/ {
		fname = $0; sub(/[ \t]*\(.*$/, "", fname)
		fstart = FNR; nfunc++
		if ($0 ~ /\{[ \t]*$/) infunc = 1; else want_brace = 1
		next
	}
	infunc && /^\}[ \t]*$/ {
		if (FNR - fstart + 1 > maxfunc)
			print "shell long function: " file ":" fstart " " fname "() " FNR - fstart + 1 " lines"
		infunc = 0
	}
	END {
		if (NR > 0) end_file()
		print "read: " nfiles " shell files, " nfunc + 0 " functions"
		if (nfunc == 0)
			print "error: no shell function found: nothing to check"
	}' "${@:2}"
}

# selftest_tree DIR: a tree with a breach of each kind planted beside the
# near misses that must pass.
selftest_tree()
{
	local t=$1 i
	mkdir -p "$t/prealloc/cli" "$t/vfio/deep" "$t/tests"
	{
		echo '/* Two functions: 61 lines and 60 lines, { to } inclusive. */'
		echo '#include <stddef.h>'
		echo
		# shellcheck disable=SC1003 # a backslash, a continued line
		echo '#define TWICE(x) \'
		echo '	mul_by((x), 2)'
		echo 'static int __attribute__((noinline))'
		echo 'long_one(int a,'
		echo '	 int b)'
		echo '{'
		for i in $(seq 59); do echo "	a += b * $i;"; done
		echo '}'
		echo
		echo '/* Initialisers at column 0 are not functions, however long. */'
		echo 'static const int table[] = {'
		for i in $(seq 70); do echo "	$i,"; done
		echo '};'
		echo 'static const struct { int x; } other[sizeof(int) * 20] ='
		echo '{'
		for i in $(seq 70); do echo "	{ $i },"; done
		echo '};'
		echo
		echo 'int just_fits(int a)'
		echo '{'
		for i in $(seq 58); do echo "	a = TWICE(a) + table[$i] + other[$i].x;"; done
		echo '}'
	} > "$t/prealloc/fn.c"
	{ echo '/* 501 lines */'; for i in $(seq 500); do echo "/* $i */"; done; } > "$t/prealloc/cli/big.c"
	{ echo '/* 500 lines */'; for i in $(seq 499); do echo "/* $i */"; done; } > "$t/vfio/deep/fits.c"
	{ for i in $(seq 600); do echo "/* $i */"; done; } > "$t/tests/not_product.c"
	printf '%s\n' 'int' 'open_end(void)' '{' '	return 0;' '	}' > "$t/vfio/deep/unclosed.c"
	mkdir -p "$t/tests/unit/x"
	{
		echo 'static int fits(int a)'
		echo '{'
		for i in $(seq 118); do echo "	a += $i;"; done
		echo '}'
		echo 'int main(void)'
		echo '{'
		for i in $(seq 119); do echo "	fits($i);"; done
		echo '}'
	} > "$t/tests/unit/x/test-long.c"
	{
		echo '#!/bin/bash'
		echo 'fits()'
		echo '{'
		for i in $(seq 117); do echo "	echo $i"; done
		echo '}'
		echo 'too_long() {'
		for i in $(seq 119); do echo "	echo $i"; done
		echo '}'
		echo 'one_line() { echo short; }'
		echo 'open_end()'
		echo '{'
		echo '	echo never closed'
		echo '	}'
	} > "$t/tests/long.sh"
}

SELFTEST_EXPECTED='long file: prealloc/cli/big.c 501 lines
long function: prealloc/fn.c:9 long_one() 61 lines
unclosed function: vfio/deep/unclosed.c:3 open_end() (no } alone at column 0 closes it before the file ends)'
TESTS_SELFTEST_EXPECTED='test long function: tests/unit/x/test-long.c:123 main() 121 lines
shell long function: tests/long.sh:122 too_long() 121 lines
shell unclosed function: tests/long.sh:244 open_end() (no } alone at column 0 closes it before the file ends)'

. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

main()
{
	local srcdir=${1:?SRCDIR} found l
	echo "1..16"

	found=$(shape_check "$srcdir")
	diag "$(lines 'read|error')" "$(none "$(lines error)")" "sources read from $srcdir (something to check)"
	l=$(lines 'long file')
	diag "$l" "$(none "$l")" "no product source over $MAX_FILE lines"
	l=$(lines 'long function')
	diag "$l" "$(none "$l")" "no function over $MAX_FUNC lines"
	l=$(lines 'unclosed function')
	diag "$l" "$(none "$l")" "every function's { has its } alone at column 0 (each was measured)"
	found=$(tests_check "$srcdir")
	diag "$(lines 'read|error')" "$(none "$(lines error)")" "tests read from $srcdir (C and shell)"
	l=$(lines 'test long function|shell long function')
	diag "$l" "$(none "$l")" "no test function over $TESTS_MAX_FUNC lines (C) or $SHELL_MAX_FUNC (shell)"
	l=$(lines 'test unclosed function|shell unclosed function')
	diag "$l" "$(none "$l")" "every test function was measured"

	# Self-test: the planted breaches, exactly; and no sources, no pass.
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	selftest_tree "$tmp/tree"
	local got
	got=$(shape_check "$tmp/tree" | grep -v '^read: ')
	selftest "$got" "$SELFTEST_EXPECTED" \
		"a 60-line function, a 500-line file, initialisers at column 0, tests/" \
		'a 61-line function|long function: prealloc/fn.c:9 long_one() 61 lines' \
		'a 501-line file (in prealloc/cli/)|long file: prealloc/cli/big.c 501 lines' \
		'a function the style cannot measure|unclosed function: vfio/deep/unclosed.c:3 open_end() (no } alone at column 0 closes it before the file ends)'
	got=$(tests_check "$tmp/tree" | grep -v '^read: ')
	selftest "$got" "$TESTS_SELFTEST_EXPECTED" \
		"a 120-line test function, C and shell, a one-line shell function, a 600-line test file" \
		'a 121-line C test function|test long function: tests/unit/x/test-long.c:123 main() 121 lines' \
		'a 121-line shell function|shell long function: tests/long.sh:122 too_long() 121 lines' \
		'a shell function not closed at column 0|shell unclosed function: tests/long.sh:244 open_end() (no } alone at column 0 closes it before the file ends)'
	mkdir -p "$tmp/empty/prealloc"
	got=$(shape_check "$tmp/empty")
	if grep -q '^error: .*nothing to check' <<< "$got"; then
		point 1 "self-test: a tree with no sources is refused, not passed"
	else
		diag "$got" 0 "self-test: a tree with no sources is refused, not passed"
	fi
	[ $tap_fails = 0 ]
}

main "$@"
