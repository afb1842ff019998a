#!/bin/bash
# SPDX-License-Identifier: MIT
# Bad input: every case gets its documented exit code and a one-line message
# naming the problem, and leaves no file behind and the pool unchanged.
set -u
. "$(dirname "$0")/lib.sh"
private_hugetlbfs 2M
reserve_2m 8 || bail "could not reserve 2M pages"

disk_dir=$(mktemp -d /var/tmp/prealloc-disk.XXXXXX) ||	# not tmpfs, not hugetlbfs
	bail "cannot create a directory in /var/tmp"
track_dir "$disk_dir"
printf 'precious' > "$TMP/existing"
mkdir -p "$TMP/shm"
mount -t tmpfs -o size=64M none "$TMP/shm" || bail "cannot mount a private tmpfs on $TMP/shm"
track_mount "$TMP/shm"
printf 'precious' > "$TMP/shm/existing"
chmod 600 "$TMP/shm/existing"	# ours alone: --reuse then meets the size check
ln -s "$TMP/shm/existing" "$TMP/shm/link"

snapshot() {
	{
		leftovers "$MNT" "$TMP/shm" /dev/shm
		echo "free $(hp_free) total $(hp_total)"
		# The records, not the file: a refused admission may save an empty store.
		echo "records $(grep -E '^(rec|warm|pool) ' "$PREALLOC_STATE_DIR/store" | md5sum)"
	} 2>/dev/null
}

# case EXIT REGEX ARGS...
case_() {
	local want=$1 regex=$2 rc before after
	shift 2
	before=$(snapshot)
	"$PREALLOC" "$@" > "$TMP/case.out" 2> "$TMP/case.err"
	rc=$?
	after=$(snapshot)
	if [ $rc -ne "$want" ]; then
		fail "prealloc $*: exit $rc, want $want ($(head -c 300 "$TMP/case.err"))"
	elif ! grep -Eq "$regex" "$TMP/case.err"; then
		fail "prealloc $*: message '$(cat "$TMP/case.err")' does not match /$regex/"
	elif [ "$(grep -c . "$TMP/case.err")" -ne 1 ]; then
		fail "prealloc $*: message is not one line: $(cat "$TMP/case.err")"
	elif [ "$before" != "$after" ]; then
		fail "prealloc $*: left something behind: $(diff <(echo "$before") <(echo "$after") | tr '\n' ' ')"
	else
		ok "prealloc $* -> $rc: $(head -1 "$TMP/case.err")"
	fi
}

case_ 2 "invalid size '12Q'" 12Q
case_ 2 "size '99999999999999999999G' is too large" 99999999999999999999G
case_ 2 "size '16777216T' is too large" 16777216T
case_ 2 "size must be greater than zero" 0
case_ 2 "invalid size '1.5'" 1.5
case_ 2 "invalid size '1.5B'" 1.5B
case_ 2 "no size given" --node 0
case_ 2 "unexpected argument 'extra'" 1G extra
case_ 2 "node 7 does not exist or is offline" --node 7 1G
case_ 2 "invalid node list 'x'" --node x 1G
case_ 2 "node number too large" --node 5000 1G
case_ 2 "node 0 given twice" --node 0,0 1G
case_ 2 "give every node a size" --node 0:1G --node 1 2G
case_ 2 "add up to 1 GiB, not the SIZE given" --node 0:1G 2G
case_ 2 "invalid page size '8k'" --page-size 8k 1G
case_ 2 "invalid thread count '0'" --threads 0 1G
case_ 2 "invalid thread count '-3'" --threads -3 1G
case_ 2 "not a multiple of the 2M page size" --page-size 2M --file "$MNT/x" 3M
case_ 2 "size 3 MiB is not a multiple of the 2M page size" --file "$MNT/x" --node 0:3M
case_ 3 "node 0 .*(free|needed).*" --node 0 --page-size 2M --file "$MNT/x" 64G
case_ 4 "no hugetlbfs is mounted for 1G pages" --page-size 1G 1G
case_ 4 "is not on hugetlbfs or tmpfs" --file "$disk_dir/guest" 2M
case_ 4 "already exists; pass --reuse" --file "$TMP/shm/existing" 4k
case_ 4 "is a symbolic link" --file "$TMP/shm/link" --reuse 4k
case_ 4 "is on tmpfs, which has no 2M hugetlb pages" --page-size 2M --file "$TMP/shm/x" 2M
case_ 4 "is on hugetlbfs with 2M pages, but --page-size 1G" --page-size 1G --file "$MNT/x" 1G
case_ 4 "exists with a different size" --file "$TMP/shm/existing" --reuse 4k
if grep -q '\[never\]\|\[deny\]' /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null; then
	case_ 4 "no transparent hugepages|needs shmem transparent hugepages" --page-size thp --file "$TMP/shm/x" 2M
fi
case_ 4 "was not made by prealloc" rm "$TMP/shm/existing"
case_ 4 "is a symbolic link" rm "$TMP/shm/link"
case_ 2 "no file given" rm
case_ 2 "unknown command .frobnicate." frobnicate 1G
case_ 2 "unknown option '--bogus'" --bogus 1G
case_ 2 "unknown option '--bogus'" clear --bogus x
case_ 2 "option '--node' needs an argument" 1G --node

check "refused files keep their contents" [ "$(cat "$TMP/shm/existing")" = precious ]

# The warm pool's numbers, bounded: a READY warm file on the private tmpfs
# for the takes to find, so a take let through would change the store.
printf 'node0.4k = 1M @ %s\n' "$TMP/shm" > "$TMP/warm.conf"
export PREALLOC_WARM_CONF=$TMP/warm.conf
check "warm fill makes a READY 1 MiB warm file on $TMP/shm" \
	all_of '"$PREALLOC" warm fill > /dev/null 2>&1 && "$PREALLOC" warm status | grep -q "ready 1 MiB"'
take=(warm take --reserve --holder vm1 --node 0 --page-size 4k --mount "$TMP/shm")
# INT64_MAX seconds from now overflowed into a negative expiry the store refused to read.
case_ 2 "bad --expires '9223372036854775807' \(seconds from now, 1 to 315360000" \
	"${take[@]}" --expires 9223372036854775807 4k
case_ 2 "bad --expires '315360001'" "${take[@]}" --expires 315360001 4k
case_ 2 "bad --expires '0'" "${take[@]}" --expires 0 4k
case_ 2 "bad --expires '-5'" "${take[@]}" --expires -5 4k
# 2^32 was node 0 (an int cast); every --node is 0 to PREALLOC_MAX_NODES - 1.
case_ 2 "bad --node: node '4294967296' out of range \(0 to 1023\)" \
	warm take --reserve --holder vm1 --node 4294967296 --page-size 4k --mount "$TMP/shm" 4k
case_ 2 "bad --node: node '1024' out of range" \
	warm take --reserve --holder vm1 --node 1024 --page-size 4k --mount "$TMP/shm" 4k
case_ 2 "bad --node: invalid node '0x0'" \
	warm take --reserve --holder vm1 --node 0x0 --page-size 4k --mount "$TMP/shm" 4k
case_ 2 "node number too large in '4294967296'" --node 4294967296 1G
# A conf that is no file, wraps, or hides lines behind a NUL byte: named, exit 2.
mkdir "$TMP/conf.d"
printf 'node0.4k = 2 x 8388608T @ %s\n' "$TMP/shm" > "$TMP/wrap.conf"	# 2 x 2^63: 0 bytes
printf 'node0.4k = 1M @ %s\n\0\nnode0.4k = 0 @ %s\n' "$TMP/shm" "$TMP/shm" > "$TMP/nul.conf"
case_ 2 "warm fill: $TMP/conf.d: a directory, not a file" warm fill --conf "$TMP/conf.d"
case_ 2 "warm status: $TMP/conf.d: a directory, not a file" warm status --conf "$TMP/conf.d"
case_ 2 "warm fill: $TMP/wrap.conf: line 1: 2 x 8388608T is more than 1048576T" \
	warm fill --conf "$TMP/wrap.conf"
case_ 2 "warm fill: $TMP/nul.conf: line 2: a NUL byte" warm fill --conf "$TMP/nul.conf"
check "the store reads after every refusal (warm status)" \
	all_of '"$PREALLOC" warm status > /dev/null'	# stdout is TAP
check "a take of --expires 315360000 (ten years) is written and read back" \
	all_of '"$PREALLOC" "${take[@]}" --expires 315360000 4k > /dev/null 2>&1 &&
		"$PREALLOC" warm status > /dev/null && "$PREALLOC" gc > /dev/null'
finish	# lib.sh's cleanup unmounts $TMP/shm and removes $disk_dir
