#!/bin/bash
# SPDX-License-Identifier: MIT
# `prealloc clear`: a file prealloc made on a private tmpfs and on a private
# 2M hugetlbfs mount is filled with a pattern, cleared in place (--verify,
# every kernel by --method) and read back as zero by a second process. Clear
# refuses a file another process maps (naming it), a symbolic link and a file
# on a disk filesystem, and then the pattern is still there; an unknown
# kernel is a usage error. A file truncated while clear is stopped at a
# PREALLOC_TEST_PAUSE point (tmpfs and hugetlbfs) fails with exit 1 and one
# line saying how it shrank, never with SIGBUS (135), and keeps its new size.
set -u
. "$(dirname "$0")/lib.sh"
need_root
need_hugetlbfs 2M

HOLDER=
on_exit '[ -n "$HOLDER" ] && kill "$HOLDER" && wait "$HOLDER"'
on_exit "rm -f /var/tmp/prealloc-clear-test.$$"

# fill FILE BYTE: write BYTE over every byte through a shared mapping.
fill() {
	python3 - "$1" "$2" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size)
chunk = bytes([int(sys.argv[2])]) * (1 << 20)
for off in range(0, len(m), len(chunk)):
    n = min(len(chunk), len(m) - off)
    m[off:off + n] = chunk[:n]
m.close()
EOF
}

# all_bytes FILE BYTE: a second process reads every byte as BYTE.
all_bytes() {
	python3 - "$1" "$2" <<'EOF'
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
m = mmap.mmap(fd, os.fstat(fd).st_size, prot=mmap.PROT_READ)
want = int(sys.argv[2])
bad = len(m) - m[:].count(bytes([want]))
if bad:
    print("# %d bytes are not %d" % (bad, want))
sys.exit(1 if bad else 0)
EOF
}

# hold FILE: a background process maps FILE and sleeps; its pid in HOLDER.
hold() {
	python3 -c '
import mmap, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size)
open(sys.argv[2], "w").close()
time.sleep(600)' "$1" "$TMP/held" &
	HOLDER=$!
	for _ in $(seq 100); do [ -e "$TMP/held" ] && return 0; sleep 0.1; done
	return 1
}
# scribble FILE: like hold, but keeps writing a non-zero byte into the mapping.
scribble() {
	python3 -c '
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, os.fstat(fd).st_size)
open(sys.argv[2], "w").close()
while True:
    m[0] = 90
    m[len(m) // 2] = 90' "$1" "$TMP/held" &
	HOLDER=$!
	for _ in $(seq 100); do [ -e "$TMP/held" ] && return 0; sleep 0.1; done
	return 1
}
unhold() {
	kill "$HOLDER"; wait "$HOLDER" 2>/dev/null
	HOLDER=
	rm -f "$TMP/held"
}

# stopped PID: true once PID has stopped itself (state T), false if it exits first.
stopped() {
	local i
	for ((i = 0; i < 1000; i++)); do
		[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" = T ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}

# shrink LABEL FILE SIZE POINT [OPTION...]: the file's owner truncates it to SIZE
# while clear is stopped at PREALLOC_TEST_PAUSE=POINT (clear-mapped: mapped, no
# worker yet; before-check: cleared, not yet read back). The clear fails (exit 1,
# never a SIGBUS: 135) with one line naming the file and both sizes, and the
# file stays, truncated.
shrink() {
	local what=$1 f=$2 to=$3 point=$4 from pid rc
	shift 4
	from=$(stat -c %s "$f")
	PREALLOC_TEST_PAUSE=$point "$PREALLOC" clear "$@" "$f" > "$TMP/out" 2> "$TMP/err" &
	pid=$!
	if ! stopped $pid; then
		wait $pid
		fail "$what: clear never stopped at $point (rc $?: $(head -1 "$TMP/err"))"
		return
	fi
	truncate -s "$to" "$f"
	kill -CONT $pid
	wait $pid
	rc=$?
	check "$what: exit 1, not killed by SIGBUS (rc $rc)" [ $rc -eq 1 ]
	check "$what: one line on stderr ($(head -c 300 "$TMP/err"))" \
		[ "$(wc -l < "$TMP/err")" -eq 1 ]
	check "$what: it names the file and says it shrank from $from to $to bytes" \
		grep -q "^prealloc: error: $f shrank from $from to $to bytes while it was cleared" \
		"$TMP/err"
	check "$what: the file is still there, $to bytes" \
		[ "$(stat -c %s "$f" 2>/dev/null)" = "$to" ]
}

KERNELS=$("$PREALLOC" info --json | python3 -c \
	'import json, sys; print(" ".join(json.load(sys.stdin)["clear"]["kernels"]))')
check "info --json lists usable clear kernels ($KERNELS)" [ -n "$KERNELS" ]
# The first NT kernel usable here, for the probe's pair (none: vector kernels not built).
NT=
for k in $KERNELS; do
	case $k in avx2_nt | avx512_nt | clzero | movnti) NT=$k; break ;; esac
done

# exercise FILE LABEL PAGES: the clear and refusal cases on one prepared file.
exercise() {
	local f=$1 what=$2 pages=$3 out=$TMP/out.json k rc

	fill "$f" 171
	"$PREALLOC" clear --verify --json "$f" > "$out" 2> "$TMP/err"
	check "$what: clear --verify exits 0" [ $? -eq 0 ]
	check "$what: second process reads zero" all_bytes "$f" 0
	check "$what: JSON command, verified, kernel" [ "$(json_get "$out" \
		"d['command'], d['verified'], d['method'], bool(d['clear_kernel'])")" = \
		"clear True clear True" ]
	check "$what: every byte cleared, all $pages pages on node 0" [ "$(json_get "$out" \
		"d['bytes_done'] == $(stat -c %s "$f"), d['nodes'][0]['pages_on_node'], d['nodes'][0]['pages_missing']")" = \
		"True $pages 0" ]
	check "$what: per-node GB/s reported" \
		python3 -c "import json; d=json.load(open('$out')); assert d['nodes'][0]['gb_per_s'] > 0"
	check "$what: the phases: checks, mapping and the job, the op inside the job" \
		python3 -c "import json; d=json.load(open('$out'))
assert d['check_seconds'] > 0 and d['map_seconds'] > 0 and d['clear_seconds'] >= d['seconds'] > 0, d"

	for k in $KERNELS auto; do
		fill "$f" 90
		"$PREALLOC" clear --method "$k" --threads 2 "$f" > "$TMP/human" 2>&1
		rc=$?
		check "$what: --method $k exits 0 (rc $rc)" [ $rc -eq 0 ]
		[ "$k" = auto ] || check "$what: --method $k is the kernel used" \
			grep -q "with the $k kernel" "$TMP/human"
		check "$what: --method $k leaves zeroes" all_bytes "$f" 0
	done
	# The report counts what cached stores cleared: all of it with memset, none with NT.
	fill "$f" 90
	"$PREALLOC" clear --method c --json "$f" > "$out" 2> "$TMP/err"
	check "$what: --method c: every byte cleared by cached stores" [ "$(json_get "$out" \
		"d['clear_cached_bytes'] == d['bytes_done'] > 0")" = True ]
	# A probe's pair: each piece by the faster of the two, said with its cached bytes.
	if [ -n "$NT" ]; then
		fill "$f" 90
		"$PREALLOC" clear --method "$NT" --json "$f" > "$out" 2> "$TMP/err"
		check "$what: --method $NT: no byte cleared by cached stores" [ "$(json_get "$out" \
			"d['clear_cached_bytes'], d['bytes_done'] > 0")" = "0 True" ]
		fill "$f" 90
		"$PREALLOC" clear --method "c/$NT" --json "$f" > "$out" 2> "$TMP/err"
		check "$what: --method c/$NT exits 0" [ $? -eq 0 ]
		check "$what: --method c/$NT leaves zeroes" all_bytes "$f" 0
		check "$what: --method c/$NT is named, cached bytes within the clear" [ "$(json_get "$out" \
			"d['clear_kernel'], 0 <= d['clear_cached_bytes'] <= d['bytes_done']")" = "c/$NT True" ]
		"$PREALLOC" clear --method "c/$NT" "$f" > "$TMP/human" 2>&1
		check "$what: the report says how the probe went" grep -q "with c/$NT, probed: .* by cached stores" "$TMP/human"
	fi

	# A running guest maps the file: refused, named, untouched.
	fill "$f" 171
	hold "$f" || fail "$what: helper could not map the file"
	"$PREALLOC" clear "$f" > /dev/null 2> "$TMP/err"
	rc=$?
	check "$what: in-use file refused with exit 4 (rc $rc)" [ $rc -eq 4 ]
	check "$what: the message names pid $HOLDER" grep -q "mapped or held open by pid $HOLDER (python3)" "$TMP/err"
	check "$what: pattern intact after the refusal" all_bytes "$f" 171
	"$PREALLOC" clear --force "$f" > /dev/null 2> "$TMP/err"
	check "$what: --force clears an in-use file" [ $? -eq 0 ]
	check "$what: the holder sees zero" all_bytes "$f" 0
	unhold

	# A symbolic link to the file: refused, untouched.
	fill "$f" 171
	ln -sf "$f" "$TMP/link"
	"$PREALLOC" clear --force "$TMP/link" > /dev/null 2> "$TMP/err"
	rc=$?
	check "$what: symlink refused with exit 4, even with --force (rc $rc)" [ $rc -eq 4 ]
	check "$what: the message says symbolic link" grep -q "symbolic link" "$TMP/err"
	check "$what: pattern intact after the symlink refusal" all_bytes "$f" 171

	"$PREALLOC" clear --method no_such_kernel "$f" > /dev/null 2> "$TMP/err"
	rc=$?
	check "$what: unknown --method exits 2 (rc $rc)" [ $rc -eq 2 ]
	check "$what: the message lists usable kernels" grep -q "usable here: auto" "$TMP/err"
	check "$what: pattern intact after the usage error" all_bytes "$f" 171
}

# tmpfs, 4k pages.
TMPFS=$TMP/tmpfs
mkdir "$TMPFS" && mount -t tmpfs -o size=256M none "$TMPFS" || bail "cannot mount a tmpfs on $TMPFS"
track_mount "$TMPFS"
"$PREALLOC" --page-size 4k --file "$TMPFS/guest" -q 64M
check "tmpfs: create 64M exits 0" [ $? -eq 0 ]
exercise "$TMPFS/guest" tmpfs 16384

# Holes are skipped and reported; they read as zero.
truncate -s 80M "$TMPFS/guest"
"$PREALLOC" clear --verify --json "$TMPFS/guest" > "$TMP/out.json" 2> "$TMP/err"
check "tmpfs: file with holes clears (rc $?)" [ $? -eq 0 ]
check "tmpfs: holes named in the note" \
	python3 -c "import json; d=json.load(open('$TMP/out.json')); assert '4096 pages was not resident' in d['note'], d['note']"
check "tmpfs: file with holes reads zero" all_bytes "$TMPFS/guest" 0

# --verify racing a writer (a guest still running, cleared with --force):
# each run exits 0 (the clear won) or 5 with the report printed before the
# error; within 20 runs one sees the byte.
scribble "$TMPFS/guest" || fail "tmpfs: helper could not write into the file"
for i in $(seq 20); do
	"$PREALLOC" clear --force --verify "$TMPFS/guest" > "$TMP/out" 2>&1
	rc=$?
	[ $rc -eq 0 ] || break
done
unhold
check "tmpfs: --verify racing a writer exits 5 (rc $rc after $i runs)" [ $rc -eq 5 ]
check "tmpfs: ... saying verification failed" grep -q "verification failed: .* is not zero" "$TMP/out"
check "tmpfs: ... after the report" python3 -c "
import sys; t = open('$TMP/out').read(); r = t.find(' GB/s, '); e = t.find('verification failed')
sys.exit(not (0 <= r < e))"

# A partial last page (not a file prealloc made): mapped by clear itself.
truncate -s $((80 * 1048576 + 100)) "$TMPFS/guest"
fill "$TMPFS/guest" 171
"$PREALLOC" clear --verify "$TMPFS/guest" > /dev/null 2> "$TMP/err"
check "tmpfs: file ending in a partial page clears (rc $?)" [ $? -eq 0 ]
check "tmpfs: ... and reads zero to the last byte" all_bytes "$TMPFS/guest" 0

# The file's owner truncates it during the clear: while the pages are cleared,
# while they are read back (--verify), and before its partial last page is written.
truncate -s 16M "$TMPFS/shrink" && fill "$TMPFS/shrink" 171
shrink "tmpfs: truncated before the workers start" "$TMPFS/shrink" $((8 << 20)) clear-mapped
fill "$TMPFS/shrink" 171
shrink "tmpfs: truncated before --verify reads back" "$TMPFS/shrink" $((4 << 20)) before-check \
	--verify
# Cut to its whole pages: no SIGBUS, but writing its last 100 bytes would make it long again.
truncate -s $((16 * 1048576 + 100)) "$TMPFS/shrink" && fill "$TMPFS/shrink" 171
shrink "tmpfs: partial last page truncated away" "$TMPFS/shrink" $((16 << 20)) clear-mapped
rm -f "$TMPFS/shrink"

# hugetlbfs, 2M pages.
if mount_hugetlbfs 2M && reserve_2m 32; then
	"$PREALLOC" --node 0 --page-size 2M --file "$MNT/guest" -q 64M
	check "hugetlbfs: create 64M exits 0" [ $? -eq 0 ]
	free_before=$(hp_free)
	exercise "$MNT/guest" hugetlbfs 32
	check "hugetlbfs: clearing took no hugepage from the pool" [ "$(hp_free)" -eq "$free_before" ]
	"$PREALLOC" rm "$MNT/guest"
	# Truncated while clear is stopped (its pages go back to the pool at once).
	if reserve_2m 4 && "$PREALLOC" --node 0 --page-size 2M --file "$MNT/shrink" -q 8M; then
		shrink "hugetlbfs: truncated before the workers start" "$MNT/shrink" $((4 << 20)) \
			clear-mapped
	else
		fail "hugetlbfs: cannot make an 8M file to truncate"
	fi
	rm -f "$MNT/shrink"
else
	fail "hugetlbfs: cannot mount hugetlbfs or reserve 32 2M pages"
fi

# A disk filesystem: refused without --force, pattern intact; cleared with it.
f=/var/tmp/prealloc-clear-test.$$
head -c 1048577 /dev/zero | tr '\0' '\253' > "$f"
"$PREALLOC" clear "$f" > /dev/null 2> "$TMP/err"
rc=$?
check "disk file refused with exit 4 (rc $rc)" [ $rc -eq 4 ]
check "the message says hugetlbfs or tmpfs" grep -q "not on hugetlbfs or tmpfs" "$TMP/err"
check "disk file intact after the refusal" all_bytes "$f" 171
"$PREALLOC" clear --force --verify "$f" > /dev/null 2> "$TMP/err"
check "disk file cleared with --force (1 MiB + 1 byte)" [ $? -eq 0 ]
check "disk file reads zero" all_bytes "$f" 0

"$PREALLOC" clear "$TMP/does-not-exist" > /dev/null 2>&1
check "missing file exits 2" [ $? -eq 2 ]
finish
