#!/bin/bash
# SPDX-License-Identifier: MIT
# The apt packages docs/testing.md lists ("Packages the scripts install") are
# exactly those the scripts name: a machine that already has them shows no
# missing install step, so the list is what a reader checks a fresh machine
# against, and it must not drift from the scripts.
#
# Usage: test-package-list.sh SRCDIR. Prints TAP.
#
# A script names a package in:
#   - a bash array whose name ends in PACKAGES or packages (NAME=( ... ),
#     over several lines too), as setup.sh's PACKAGES;
#   - the words after `apt-get ... install` or `apt-get ... download` (options
#     and their -o arguments left out), continued lines joined;
#   - a comment `# apt-packages: NAME...` (up to a "("), which stands for the
#     variable words of the next apt-get install or download: a word with a
#     $ in it is resolved only as "${X[@]}" of a package array of the same
#     file (or "${missing[@]}", the scripts' subset of those), or by such a
#     comment; anything else is reported, not guessed.
# The scripts read: setup.sh, .ci/run, and every *.sh under tests/ and
# examples/ but this one (whose text names apt-get).
set -u
export LC_ALL=C

# script_packages SRCDIR: "package<TAB>file" for every package the scripts
# name, and "unresolved: file:line: WORD" for a variable word nothing resolves.
script_packages()
{
	local src=$1
	local -a files=()
	for f in setup.sh .ci/run; do [ -f "$src/$f" ] && files+=("$f"); done
	mapfile -t -O ${#files[@]} files < <(cd "$src" && find tests examples -name '*.sh' \
		-type f ! -path tests/tree/test-package-list.sh 2>/dev/null | sort)
	[ ${#files[@]} -gt 0 ] || return 0
	(cd "$src" && awk '
	function emit(p) { if (p != "") print p "\t" FILENAME }
	# The words of an array body, quotes dropped.
	function array_words(body,   n, w, i) {
		n = split(body, w, /[ \t]+/)
		for (i = 1; i <= n; i++) { gsub(/["\047]/, "", w[i]); emit(w[i]) }
	}
	# One logical line holding apt-get: its packages after install/download.
	function apt_words(text, line,   n, w, i, sub_seen, t, name) {
		text = substr(text, index(text, "apt-get") + 7)
		n = split(text, w, /[ \t]+/)
		sub_seen = 0
		for (i = 1; i <= n; i++) {
			t = w[i]
			if (t == "") continue
			if (t ~ /^(>|<|\||&&|;|#|[0-9]>)/) break
			closing = sub(/[);]+$/, "", t)
			if (t == "-o") { i++; continue }
			if (t ~ /^-/) { if (closing) break; continue }
			if (!sub_seen) {
				if (t ~ /\$/) continue	# an options array before the subcommand
				if (t != "install" && t != "download") return
				sub_seen = 1
				continue
			}
			if (t ~ /\$/) {
				name = t
				if (match(name, /\$\{[A-Za-z_]+\[@\]\}/)) {
					name = substr(name, RSTART + 2, RLENGTH - 6)
					if (name in arrays || (name == "missing" && narrays > 0)) {
						if (closing) break
						continue
					}
				}
				if (pending == "") {
					print "unresolved: " FILENAME ":" line ": " w[i]
				} else {
					resolved = 1
				}
			} else {
				gsub(/["\047]/, "", t)
				emit(t)
			}
			if (closing) break
		}
		if (resolved) array_words(pending)
		pending = ""; resolved = 0
	}
	FNR == 1 { delete arrays; narrays = 0; inarray = 0; joined = ""; pending = "" }
	inarray {
		body = $0
		if (sub(/\).*/, "", body)) inarray = 0
		sub(/#.*/, "", body)
		array_words(body)
		next
	}
	/^[ \t]*# apt-packages:/ {
		p = $0
		sub(/.*# apt-packages:[ \t]*/, "", p)
		sub(/\(.*/, "", p)
		pending = pending " " p
		next
	}
	/^[ \t]*#/ { next }
	{
		if (joined == "") start = FNR
		line = $0
		if (sub(/\\$/, "", line)) { joined = joined line " "; next }
		line = joined line
		joined = ""
	}
	match(line, /(^|[ \t])(local[ \t]+)?[A-Za-z_]*(PACKAGES|packages)=\(/) {
		rest = substr(line, RSTART + RLENGTH)
		name = substr(line, RSTART, RLENGTH - 2)
		sub(/.*[ \t]/, "", name)
		arrays[name] = 1; narrays++
		if (!sub(/\).*/, "", rest)) inarray = 1
		array_words(rest)
		next
	}
	line ~ /apt-get/ { apt_words(line, start) }
	' "${files[@]}")
}

# doc_packages DOC: the first cell of each row of its "Packages the scripts
# install" table, backquotes dropped.
doc_packages()
{
	awk '
	/^#+ / { insec = ($0 ~ /^#+ Packages the scripts install/); next }
	insec && /^\| *`/ {
		split($0, c, "|")
		p = c[2]
		gsub(/[` \t]/, "", p)
		print p
	}' "$1"
}

# package_check SRCDIR: one line per finding, "kind: text", kinds:
#   error:        the check could not be made
#   undocumented: PACKAGE (named by FILE...), not in docs/testing.md
#   stale:        PACKAGE in docs/testing.md, named by no script
#   unresolved:   FILE:LINE: WORD, a variable package word nothing resolves
package_check()
{
	local src=$1 named listed
	local doc=$src/docs/testing.md
	[ -f "$doc" ] || { echo "error: no $doc"; return; }
	named=$(script_packages "$src")
	grep '^unresolved: ' <<< "$named"
	named=$(grep -v '^unresolved: ' <<< "$named")
	listed=$(doc_packages "$doc" | sort -u)
	[ -n "$named" ] || echo "error: no script under $src names a package: nothing to check"
	[ -n "$listed" ] || echo "error: $doc has no \"Packages the scripts install\" table"
	[ -n "$named" ] && [ -n "$listed" ] || return
	awk -F '\t' 'NR == FNR { listed[$1] = 1; next }
		!($1 in listed) { if ($1 in by) by[$1] = by[$1] " " $2; else by[$1] = $2 }
		END { for (p in by) print "undocumented: " p " (named by " by[p] ")" }' \
		<(echo "$listed") <(echo "$named" | sort -u) | sort
	comm -23 <(echo "$listed") <(cut -f1 <<< "$named" | sort -u) | sed 's/^/stale: /'
}

selftest_tree()
{
	local t=$1
	mkdir -p "$t/tests/a" "$t/docs" "$t/.ci"
	cat > "$t/setup.sh" <<-'EOF'
	PACKAGES=(one two
		three) # a comment
	for p in "${PACKAGES[@]}"; do missing+=("$p"); done
	apt-get install -y -qq "${missing[@]}" >/dev/null
	EOF
	cat > "$t/tests/a/b.sh" <<-'EOF'
	# apt-get install commented-out
	local extra_packages=(four)
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		five six:arm64 "${extra_packages[@]}" >/dev/null
	(cd x && apt-get "${opts[@]}" -o A::B=c download seven -qq)
	# apt-packages: eight-*:arm64 (what the meta package names)
	apt-get download "$k:arm64" nine
	apt-get download "$unknown"
	EOF
	cat > "$t/docs/testing.md" <<-'EOF'
	# Testing
	## Packages the scripts install
	| package | by |
	|---|---|
	| `one` | setup.sh |
	| `two` | setup.sh |
	| `four` | b |
	| `five` | b |
	| `six:arm64` | b |
	| `seven` | b |
	| `eight-*:arm64` | b |
	| `nine` | b |
	| `ten` | nobody |
	## Next
	| `eleven` | not the list |
	EOF
}

# shellcheck disable=SC2016 # the planted script's words, $ and all
SELFTEST_EXPECTED='unresolved: tests/a/b.sh:9: "$unknown"
undocumented: three (named by setup.sh)
stale: ten'

# The self-test's scratch tree: global, as the EXIT trap that removes it runs
# after main has returned.
tmp=

main()
{
	local srcdir=$1 got l
	# shellcheck source=../lib/tap.sh
	. "$(dirname "$0")/../lib/tap.sh"
	found=$(package_check "$srcdir")
	diag "$(lines error)" "$(none "$(lines error)")" \
		"the scripts under $srcdir name packages and docs/testing.md lists them"
	l=$(lines undocumented)
	diag "$l" "$(none "$l")" "every package a script names is in docs/testing.md"
	l=$(lines stale)
	diag "$l" "$(none "$l")" "docs/testing.md lists no package that no script names"
	l=$(lines unresolved)
	diag "$l" "$(none "$l")" "every variable package word is resolved (# apt-packages: NAME...)"

	# Self-test: the planted mismatches, exactly; and an empty tree fails.
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	selftest_tree "$tmp/tree"
	got=$(package_check "$tmp/tree")
	# shellcheck disable=SC2016 # the planted script's words, $ and all
	selftest "$got" "$SELFTEST_EXPECTED" \
		"arrays over lines, continued apt-get lines, -o, options arrays, comments, annotated words" \
		'a package no doc lists|undocumented: three (named by setup.sh)' \
		'a listed package no script names|stale: ten' \
		'a variable word nothing resolves|unresolved: tests/a/b.sh:9: "$unknown"'
	mkdir -p "$tmp/empty/docs"
	echo '# Testing' > "$tmp/empty/docs/testing.md"
	got=$(package_check "$tmp/empty")
	if grep -q '^error: .*nothing to check' <<< "$got"; then
		point 1 "self-test: a tree with no scripts is refused, not passed"
	else
		diag "$got" 0 "self-test: a tree with no scripts is refused, not passed"
	fi
	echo "1..$tap_n"
	[ "$tap_fails" = 0 ]
}

main "$@"
