#!/bin/bash
# SPDX-License-Identifier: MIT
# Every command answers --help: exit 0 and, on standard output, a usage line
# that names that very command. The commands come from the CLI's own tables
# (`prealloc --list-commands` prints the arrays main.c dispatches through),
# not from a list kept here, so a command added there is walked too.
#
# Usage: test-help.sh PREALLOC [PROGRAM...]. PREALLOC is the CLI; each
# PROGRAM (the libvirt hook, prealloc-domain) is checked for its own
# --help. Prints TAP.
set -u
export LC_ALL=C
. "$(dirname "$0")/../../lib/tap.sh"

[ $# -ge 1 ] || { echo "usage: $0 PREALLOC [PROGRAM...]" >&2; exit 2; }
prealloc=$1
shift
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
# A --help that reached the hook's installer would run it: make that fail instead.
export PREALLOC_LIBVIRT_HOOK=/nonexistent/prealloc-libvirt-hook

# answers DESC NAME ARGS...: ARGS exit 0 with a line "Usage: NAME" (then a space or
# its end) on stdout; a failure shows the exit status and what was printed.
answers()
{
	local desc=$1 name=$2 rc re
	shift 2
	re="^[Uu]sage: ${name//./\\.}( |\$)"
	timeout 20 "$@" </dev/null >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 0 ] && grep -Eq -- "$re" "$tmp/out"; then
		point 1 "$desc"
		return
	fi
	local -a d=("exit $rc, wanted 0 and a line /$re/ on stdout")
	mapfile -t -O 1 d < <(sed -n '1,3s/^/stdout: /p' "$tmp/out"; sed -n '1,3s/^/stderr: /p' "$tmp/err")
	point 0 "$desc" "${d[@]}"
}

# The walk: the CLI itself (create) and every path its tables hold.
paths=$("$prealloc" --list-commands 2>"$tmp/err")
rc=$?
if [ $rc = 0 ] && [ -n "$paths" ]; then
	point 1 "prealloc --list-commands: $(wc -l <<< "$paths") command paths"
else
	point 0 "prealloc --list-commands: exit $rc, wanted 0 and the command paths" \
		"$(head -1 "$tmp/err")"
	paths=
fi
while IFS= read -r path; do
	read -r -a words <<< "$path"
	name=$(echo prealloc $path)
	answers "$name --help" "$name" "$prealloc" "${words[@]}" --help
	answers "$name -h" "$name" "$prealloc" "${words[@]}" -h
	# After what would be a usage error: help still comes first.
	answers "$name --no-such-option --help" "$name" "$prealloc" "${words[@]}" \
		--no-such-option --help
done <<< "$(printf '\n%s' "$paths")"

# The man page's SYNOPSIS names every top-level command the CLI dispatches.
manual="$(dirname "$0")/../../../docs/prealloc.1.md"
synopsis=$(awk '/^## Synopsis/ { on = 1; next } on && /^## / { exit } on' "$manual")
missing=
for word in $(printf '%s\n' "$paths" | awk '{ print $1 }' | sort -u); do
	grep -Eq "^prealloc $word( |\$)" <<< "$synopsis" || missing+=" $word"
done
if [ -z "$missing" ]; then
	point 1 "docs/prealloc.1.md's SYNOPSIS names every command"
else
	point 0 "docs/prealloc.1.md's SYNOPSIS names every command" "missing:$missing"
fi

# The programs beside the CLI: their own usage, whatever stands before --help.
for prog in "$@"; do
	name=$(basename -- "$prog")
	answers "$name --help" "$name" "$prog" --help
	answers "$name --no-such-option --help" "$name" "$prog" --no-such-option --help
done

echo "1..$tap_n"
[ $tap_fails = 0 ]
