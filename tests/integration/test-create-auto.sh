#!/bin/bash
# SPDX-License-Identifier: MIT
# --page-size auto on a machine that mounts a 2M hugetlbfs but reserves no
# pages (Debian's default): it must not fail, but fall back to 4k and say
# why; with --grow-pools it takes 2M pages and rm gives them back. At the
# boundary: a node with exactly the 2M pages needed gets 2M, one short 4k.
set -u
. "$(dirname "$0")/lib.sh"
need_root
grep -qw hugetlbfs /proc/filesystems || skip "the kernel has no hugetlbfs"
command -v unshare >/dev/null || { fail "unshare (util-linux) is missing"; finish; exit 1; }

free0=$(hp_free)
want_mb=$(( (free0 + 16) * 2 ))	# more 2M pages than are free now
cat > "$TMP/inner.sh" <<INNER
set -e
mkdir -p "$TMP/hp"
mount -t hugetlbfs -o pagesize=2M none "$TMP/hp"
"$PREALLOC" --node 0 --json ${want_mb}M > "$TMP/auto.json" 2> "$TMP/auto.err"
"$PREALLOC" --node 0 --grow-pools --json ${want_mb}M > "$TMP/reserve.json" 2> "$TMP/reserve.err"
f=\$(python3 -c "import json; print(json.load(open('$TMP/reserve.json'))['file'])")
free_mid=\$(awk '/^HugePages_Free/ {print \$2}' /proc/meminfo)
"$PREALLOC" rm "\$f" "\$(python3 -c "import json; print(json.load(open('$TMP/auto.json'))['file'])")"
echo "\$free_mid" > "$TMP/free_mid"
# Exactly the 8 pages 16M needs free on node 0, then one fewer; then the pool as it was.
h=$NODE_SYSFS/node0/hugepages/hugepages-2048kB
nr_was=\$(cat \$h/nr_hugepages)
used=\$((nr_was - \$(cat \$h/free_hugepages)))
echo \$((used + 8)) > \$h/nr_hugepages
"$PREALLOC" --node 0 --json 16M > "$TMP/exact.json" 2> "$TMP/exact.err"
"$PREALLOC" rm "\$(python3 -c "import json; print(json.load(open('$TMP/exact.json'))['file'])")"
echo \$((used + 7)) > \$h/nr_hugepages
"$PREALLOC" --node 0 --json 16M > "$TMP/short.json" 2> "$TMP/short.err"
"$PREALLOC" rm "\$(python3 -c "import json; print(json.load(open('$TMP/short.json'))['file'])")"
echo \$nr_was > \$h/nr_hugepages
umount "$TMP/hp"
INNER
# In the background, so that a SIGTERM to the test is handled at once and
# its cleanup stops the inner runs before it removes $TMP.
unshare -m --propagation private bash "$TMP/inner.sh" > "$TMP/inner.log" 2>&1 &
INNER=$!
on_exit "pkill -TERM -P $INNER; kill -TERM $INNER; wait $INNER"
wait $INNER
rc=$?
check "runs in a private mount namespace (rc $rc: $(tail -c 300 "$TMP/inner.log"))" [ $rc -eq 0 ]
check "auto with a short 2M pool chose 4k" \
	[ "$(json_get "$TMP/auto.json" "d['page_label']")" = 4k ]
check "and says why: $(json_get "$TMP/auto.json" "d.get('note')")" \
	grep -q "page size auto chose 4k: node 0 has $free0 free 2M hugepages" "$TMP/auto.json"
check "auto with --grow-pools chose 2M" \
	[ "$(json_get "$TMP/reserve.json" "d['page_label']")" = 2M ]
check "all pages on node 0" \
	[ "$(json_get "$TMP/reserve.json" "d['nodes'][0]['pages_on_node']")" = $((want_mb / 2)) ]
check "rm gave the grown pages back (free $(hp_free), was $free0)" [ "$(hp_free)" -eq "$free0" ]
check "auto with exactly the 8 free 2M pages 16M needs chose 2M" \
	[ "$(json_get "$TMP/exact.json" "d['page_label']")" = 2M ]
check "auto with 7 free 2M pages for 16M chose 4k, saying so" \
	all_of '[ "$(json_get "$TMP/short.json" "d['"'"'page_label'"'"']")" = 4k ] &&
		grep -q "node 0 has 7 free 2M hugepages, 8 needed" "$TMP/short.json"'
finish
