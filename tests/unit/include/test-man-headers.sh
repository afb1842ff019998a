#!/bin/bash
# SPDX-License-Identifier: MIT
# The library's manual pages (docs/man/*.3.scd) follow its public headers: in
# each page's SYNOPSIS every function, typedef and struct stands under the
# #include of the header that declares it (not one that merely includes
# that header), and every function the library exports (libprealloc.map) is
# in some page's SYNOPSIS.
#
# With BUILDDIR (the man pages built there), `meson install --tags man`
# must give every exported function its own `man 3 NAME`, a page or a link,
# and `--tags doc` every document a page cites, where it says it is.
#
# Usage: test-man-headers.sh SRCDIR [BUILDDIR]. Prints TAP.
set -u
export LC_ALL=C
src=${1:?source dir}
inc=$src/prealloc/include
map=$src/prealloc/libprealloc.map
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; fails=1; }

# strip_comments FILE: FILE without its /* */ comments (a name in a comment declares nothing).
strip_comments()
{
	awk '{
		line = $0; out = ""
		while (line != "") {
			if (incomment) {
				i = index(line, "*/")
				if (!i) { line = ""; break }
				line = substr(line, i + 2); incomment = 0
			} else {
				i = index(line, "/*")
				if (!i) { out = out line; line = ""; break }
				out = out substr(line, 1, i - 1); line = substr(line, i + 2); incomment = 1
			}
		}
		print out
	}' "$1"
}

# Each header as it would be included ("prealloc/store.h"), comments removed.
mkdir -p "$tmp/h/prealloc"
for h in "$inc"/prealloc.h "$inc"/prealloc/*.h; do
	strip_comments "$h" > "$tmp/h/${h#"$inc"/}"
done

# declares HEADER KIND NAME: whether HEADER itself declares NAME.
declares()
{
	local f=$tmp/h/$1
	[ -f "$f" ] || return 1
	case $2 in
	fn) grep -Eq "(^|[^a-z0-9_])$3\(" "$f" ;;
	typedef) grep -Eq "\(\*$3\)" "$f" ;;
	struct) grep -Eq "struct $3 \{" "$f" ;;
	esac
}

# "page<TAB>header<TAB>kind<TAB>name" for each name in each page's SYNOPSIS;
# header "" for a name above the first #include.
for page in "$src"/docs/man/*.3.scd; do
	awk -v page="${page##*/}" '
	/^# / { syn = ($0 == "# SYNOPSIS"); next }
	!syn { next }
	/^#include </ { h = $2; gsub(/[<>]/, "", h); next }
	/^typedef/ {
		if (match($0, /\(\*prealloc_[a-z0-9_]+\)/))
			print page "\t" h "\ttypedef\t" substr($0, RSTART + 2, RLENGTH - 3)
		next
	}
	/^struct prealloc_[a-z0-9_]+ \{/ { print page "\t" h "\tstruct\t" $2; next }
	/^[a-z]/ && match($0, /[ *]prealloc_[a-z0-9_]+\(/) {
		print page "\t" h "\tfn\t" substr($0, RSTART + 1, RLENGTH - 2)
	}' "$page"
done > "$tmp/names"
[ -s "$tmp/names" ] || { not_ok "no SYNOPSIS names found under $src/docs/man"; echo "1..$n"; exit 1; }

for page in $(cut -f1 "$tmp/names" | uniq); do
	bad=0 count=0
	while IFS=$'\t' read -r p h kind name; do
		[ "$p" = "$page" ] || continue
		count=$((count + 1))
		declares "$h" "$kind" "$name" && continue
		where=$(cd "$tmp/h" && for f in prealloc.h prealloc/*.h; do
			declares "$f" "$kind" "$name" && echo "<$f>"; done | paste -sd' ')
		under="<$h>"
		[ -n "$h" ] || under="no #include"
		not_ok "$page: $name stands under $under, which does not declare it (${where:-no header does})"
		bad=1
	done < "$tmp/names"
	[ $bad = 0 ] && ok "$page: each of its $count SYNOPSIS names under the #include of its header"
done

# Every exported function in some page.
missing=$(sed -n 's/^[[:space:]]*\(prealloc_[a-z0-9_]*\);.*/\1/p' "$map" | sort -u |
	comm -23 - <(awk -F'\t' '$3 == "fn" {print $4}' "$tmp/names" | sort -u))
if [ -n "$missing" ]; then
	not_ok "exported but in no manual page's SYNOPSIS: $(paste -sd" " <<< "$missing")"
else
	ok "every function of $(basename "$map") is in a manual page's SYNOPSIS"
fi
# One `man 3 NAME` per exported function, as installed (a page or a link to
# one: docs/man/man3_links.py); only where the pages are built (BUILDDIR).
if [ -n "${2:-}" ]; then
	if meson install -C "$2" --destdir "$tmp/inst" --tags man,doc --no-rebuild --quiet \
		> "$tmp/install.log" 2>&1; then
		man3=$(find "$tmp/inst" -type d -name man3 | head -n 1)
		none=$(sed -n 's/^[[:space:]]*\(prealloc_[a-z0-9_]*\);.*/\1/p' "$map" | sort -u |
			while read -r f; do [ -e "$man3/$f.3" ] || echo "$f"; done)
		if [ -n "$man3" ] && [ -z "$none" ]; then
			ok "every function of $(basename "$map") has its man 3 page, installed ($(ls "$man3" | wc -l) in man3)"
		else
			not_ok "exported but no man 3 page installed: ${none:-no man3 directory}"
		fi
		# What the pages cite (/usr/share/doc/prealloc/X.md) is installed there.
		doc=$(find "$tmp/inst" -type d -path '*/share/doc/prealloc' | head -n 1)
		cited=$(grep -oh '/usr/share/doc/prealloc/[A-Za-z0-9_.]*' "$src"/docs/man/*.scd | sort -u)
		unshipped=$(for c in $cited; do [ -e "$doc/${c##*/}" ] || echo "${c##*/}"; done)
		if [ -n "$cited" ] && [ -n "$doc" ] && [ -z "$unshipped" ]; then
			ok "every document a manual page cites is installed ($(wc -w <<< "$cited") cited)"
		else
			not_ok "cited by a manual page, not installed: ${unshipped:-no share/doc/prealloc}"
		fi
	else
		sed 's/^/# /' "$tmp/install.log"
		not_ok "meson install --tags man of $2"
	fi
fi
echo "1..$n"
exit $fails
