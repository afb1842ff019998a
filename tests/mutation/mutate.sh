#!/bin/bash
# SPDX-License-Identifier: MIT
# Mutation testing, run on demand (not part of `meson test`): each mutant in
# mutants.txt is applied, one at a time, to a scratch copy of the tree (never
# to the tree itself), built, and run against the whole default suite
# (`meson test` with no suite filter), stopping at its first failing test. A
# mutant some test fails on is KILLED (the failing test is run once more, and
# a kill it does not repeat is reported as FLAKY, not counted as a kill); one
# the whole suite passes SURVIVED. One whose pattern no longer matches is
# STALE and one that does not compile STILLBORN: neither is counted.
#
#   tests/mutation/mutate.sh [--only N,M,...] [--list] [--no-baseline] [--dir DIR]
#                            [--no-suite SUITE]... [--hints RESULTS.tsv]
#
# --only runs those mutants; --no-baseline skips the unmutated run that
# otherwise proves the suite passes first; --dir reuses a scratch directory
# (its build is kept, so a second run only rebuilds what a mutant touches);
# --no-suite leaves a suite out, only for one that fails unmutated here (say
# why in the report: a suite that fails anyway would 'kill' every mutant).
# --hints takes an earlier run's results.tsv: a mutant that run killed first
# runs its killer alone (or, where the third field is a comma-separated list,
# those tests in that order, stopping at the first failure: the candidates
# for a mutant not yet decided), and the whole suite only if that passes; a kill is
# still a test of the default suite failing twice, so the verdicts mean what
# they mean without it, and a run takes minutes where it took hours.
# Root, like the suite. Prints one line per mutant, then the kill ratio and
# the survivors; results.tsv in the scratch directory keeps them.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(git -C "$HERE" rev-parse --show-toplevel) || exit 1
LIST=$HERE/mutants.txt
ONLY= BASELINE=1 WORK= NOSUITE=() HINTS=
while [ $# -gt 0 ]; do
	case $1 in
	--only) ONLY=,$2, ; shift 2 ;;
	--no-baseline) BASELINE=0; shift ;;
	--dir) WORK=$2; shift 2 ;;
	--no-suite) NOSUITE+=(--no-suite "$2"); shift 2 ;;
	--hints) HINTS=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
	--list) grep -P '^\d+\t' "$LIST" | awk -F'\t' '{ printf "%3s  %s\n", $1, $4 }'; exit 0 ;;
	*) echo "usage: $0 [--only N,M] [--list] [--no-baseline] [--dir DIR] [--no-suite S] [--hints TSV]" >&2; exit 2 ;;
	esac
done
WORK=${WORK:-$(mktemp -d /tmp/prealloc-mutation.XXXXXX)}
mkdir -p "$WORK/logs"
T=$WORK/src B=$WORK/build RES=$WORK/results.tsv
echo "# scratch tree $T, build $B, logs $WORK/logs"

# The tree as it is now (tracked and untracked files, not ignored ones),
# copied afresh with fresh mtimes (-m): a previous run's mutant, even one an
# interrupted run left compiled in a reused build, can never leak into this
# one (its objects are older than the copy).
rm -rf "$T"
mkdir -p "$T"
(cd "$SRC" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$T" -m -xf - ||
	{ echo "cannot copy the tree" >&2; exit 1; }
if [ ! -f "$B/build.ninja" ]; then
	meson setup "$B" "$T" -Dwerror=true > "$WORK/logs/setup.log" 2>&1 ||
		{ echo "meson setup failed: $WORK/logs/setup.log" >&2; exit 1; }
fi
ninja -C "$B" > "$WORK/logs/build.log" 2>&1 || { echo "the unmutated tree does not build" >&2; exit 1; }

# first_failure LOG: the name of the first test that failed in a meson test log.
first_failure() {
	grep -E '^ *[0-9]+/[0-9]+ .* (FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS) ' "$1" | head -1 |
		sed -E 's/^ *[0-9]+\/[0-9]+ [^ ]+ \/ ([^ ]+) .*/\1/'
}
run_suite() {	# run_suite LOG: the whole default suite, stopping at the first failure
	meson test -C "$B" --no-rebuild --maxfail 1 --print-errorlogs "${NOSUITE[@]}" > "$1" 2>&1
}

# hint ID: the test an earlier run (--hints) saw kill mutant ID, or nothing.
hint() {
	[ -n "$HINTS" ] && awk -F'\t' -v id="$1" '$1 == id && $2 == "KILLED" && $3 != "-" { print $3; exit }' "$HINTS"
}

if [ $BASELINE = 1 ]; then
	echo "# baseline: the unmutated suite must pass"
	run_suite "$WORK/logs/baseline.log" ||
		{ echo "baseline fails at $(first_failure "$WORK/logs/baseline.log"): fix that first" >&2; exit 1; }
fi

: > "$RES"
grep -P '^\d+\t' "$LIST" | while IFS=$'\t' read -r id file expr what; do
	case $ONLY in ''|*,"$id",*) ;; *) continue ;; esac
	f=$T/$file
	cp "$f" "$WORK/orig"
	t0=$(date +%s)
	perl -0pi -e "$expr" "$f"
	if cmp -s "$f" "$WORK/orig"; then
		verdict=STALE by=-
	elif ! ninja -C "$B" > "$WORK/logs/$id.build" 2>&1; then
		verdict=STILLBORN by=-
	elif [ -n "$(hint "$id")" ] &&
		! meson test -C "$B" --no-rebuild --maxfail 1 --print-errorlogs $(hint "$id" | tr , ' ') > "$WORK/logs/$id.log" 2>&1; then
		by=$(first_failure "$WORK/logs/$id.log")
		if meson test -C "$B" --no-rebuild "${by:-?}" > "$WORK/logs/$id.confirm" 2>&1; then
			verdict=FLAKY
		else
			verdict=KILLED
		fi
	elif run_suite "$WORK/logs/$id.log"; then
		verdict=SURVIVED by=-
	else
		by=$(first_failure "$WORK/logs/$id.log")
		if meson test -C "$B" --no-rebuild "${by:-?}" > "$WORK/logs/$id.confirm" 2>&1; then
			verdict=FLAKY
		else
			verdict=KILLED
		fi
	fi
	cp "$WORK/orig" "$f"	# a fresh mtime: ninja rebuilds what the mutant touched
	printf '%s\t%s\t%s\t%s\t%s\n' "$id" "$verdict" "${by:--}" "$(($(date +%s) - t0))" "$what" |
		tee -a "$RES" | awk -F'\t' '{ printf "%3s %-9s %-20s %4ss  %s\n", $1, $2, $3, $4, $5 }'
done
ninja -C "$B" > /dev/null 2>&1

killed=$(awk -F'\t' '$2 == "KILLED"' "$RES" | wc -l)
counted=$(awk -F'\t' '$2 == "KILLED" || $2 == "SURVIVED" || $2 == "FLAKY"' "$RES" | wc -l)
echo "# killed $killed of $counted ($(awk -F'\t' '$2 == "STALE" || $2 == "STILLBORN"' "$RES" | wc -l) stale or stillborn, not counted)"
awk -F'\t' '$2 == "SURVIVED" || $2 == "FLAKY" { printf "# %s %s: %s\n", $2, $1, $5 }' "$RES"
[ "$killed" -eq "$counted" ]
