# SPDX-License-Identifier: MIT
# TAP for the unit suite's shell checks (test-layers.sh, test-shape.sh), the
# shell twin of tap.h. Sourced, not run. A check collects its findings as
# "kind: text" lines in $found and reports them through these.
tap_n=0 tap_fails=0
# point OK DESC [DIAGNOSTIC...]: one TAP line, diagnostics under it.
point()
{
	local ok=$1 desc=$2 l
	shift 2
	tap_n=$((tap_n + 1))
	if [ "$ok" = 1 ]; then echo "ok $tap_n - $desc"; else echo "not ok $tap_n - $desc"; tap_fails=$((tap_fails + 1)); fi
	for l in "$@"; do [ -n "$l" ] && echo "# $l"; done
	return 0
}
# lines KIND: the findings of that kind (regex on the line's start).
lines() { grep -E "^($1): " <<< "$found" || true; }
# diag FINDINGS OK DESC: a point whose diagnostics are the findings, one a line.
diag() { local -a a=(); mapfile -t a <<< "$1"; point "$2" "$3" "${a[@]}"; }
# none TEXT: 1 when TEXT is empty (no finding), else 0.
none() { [ -z "$1" ] && echo 1 || echo 0; }
# selftest GOT EXPECTED LEGAL 'WHAT|LINE'...: a check's report on its planted
# tree: each LINE (the breach WHAT) among GOT, then GOT exactly EXPECTED (what
# LEGAL names is not reported).
selftest()
{
	local got=$1 expected=$2 legal=$3 want what
	local -a d=()
	shift 3
	for want in "$@"; do
		what=${want%%|*} want=${want#*|}
		if grep -qxF -- "$want" <<< "$got"; then
			point 1 "self-test: $what is caught"
		else
			point 0 "self-test: $what is caught" "wanted: $want"
		fi
	done
	[ "$got" = "$expected" ] && { point 1 "self-test: nothing else reported ($legal)"; return; }
	mapfile -t d < <(diff <(echo "$expected") <(echo "$got") | grep '^[<>]' |
		sed 's/^</wanted, missing:/; s/^>/reported, unwanted:/')
	point 0 "self-test: nothing else reported ($legal)" "${d[@]}"
}
