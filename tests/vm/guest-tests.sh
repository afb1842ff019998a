#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The VM rig's tests, run inside the guest by /init (busybox sh, as root).
# Every check prints one line the host counts:
#   VM-TEST: PASS name | FAIL name: why | SKIP name: why
# and the script ends with VM-DONE. Every piece these checks use exists, so
# a missing CLI or subcommand is a FAIL, never a SKIP.
#
# Boot parameters arrive as environment variables:
#   prealloc_vm_variant  two-node | memory-only | qemu-vfio | arm64-two-node |
#                        libvirt-two-node
#   prealloc_vm_qemu_mb  qemu-vfio: the inner QEMU's RAM in MiB (512)
#   prealloc_vm_break    placement: one check expects the wrong node (proves
#                        that a failing check fails the suite)
#   prealloc_vm_iommufd  1: the rig kernel, which has iommufd (checked)

variant=${prealloc_vm_variant:-two-node}
sysnode=/sys/devices/system/node
hugemnt=/dev/hugepages
tmp=/tmp/vm-tests
mkdir -p "$tmp"

pass() { echo "VM-TEST: PASS $1"; }
fail() { echo "VM-TEST: FAIL $1: $2"; }
# Shows a command's output in the console log, indented.
show() { sed 's/^/    /' "$@"; }

# "0-2,5" -> "0 1 2 5"
cpulist_expand() {
	echo "$1" | tr ',' '\n' | while IFS=- read -r lo hi; do
		[ -n "$lo" ] && seq "$lo" "${hi:-$lo}"
	done | tr '\n' ' '
}

node_cpus() { cpulist_expand "$(cat "$sysnode/node$1/cpulist")"; }

nodes_online() { cpulist_expand "$(cat "$sysnode/online")"; }

# The node whose CPUs serve node $1: itself if it has CPUs, else the nearest
# node with CPUs by the firmware's distance table (lowest id on a tie).
cpu_node_of() {
	[ -n "$(node_cpus "$1")" ] && { echo "$1"; return; }
	cn_best='' cn_dist=''
	# shellcheck disable=SC2046 # one distance per word, in node order
	set -- $(cat "$sysnode/node$1/distance")
	for cn_node in $(nodes_online); do
		cn_d=$1
		shift
		[ -n "$(node_cpus "$cn_node")" ] || continue
		if [ -z "$cn_best" ] || [ "$cn_d" -lt "$cn_dist" ]; then
			cn_best=$cn_node cn_dist=$cn_d
		fi
	done
	echo "$cn_best"
}

# True when every word of $1 is a word of $2.
subset_of() {
	for so_word in $1; do
		case " $2 " in *" $so_word "*) ;; *) return 1 ;; esac
	done
}

# Index in the JSON document's nodes[] of the entry for node $2.
json_node_index() {
	jn_count=$(vm_json_get "$1" nodes/#) || return 1
	jn_i=0
	while [ "$jn_i" -lt "$jn_count" ]; do
		[ "$(vm_json_get "$1" "nodes/$jn_i/node")" = "$2" ] && { echo "$jn_i"; return 0; }
		jn_i=$((jn_i + 1))
	done
	return 1
}

hp_file() { echo "$sysnode/node$1/hugepages/hugepages-2048kB/$2"; }
hp_set() { echo "$2" >"$(hp_file "$1" nr_hugepages)"; }
hp_get() { cat "$(hp_file "$1" "${2:-nr_hugepages}")"; }

page_bytes() {
	case "$1" in
	2M) echo 2097152 ;;
	4k) echo 4096 ;;
	esac
}

# Checks one per-node JSON report entry: every page of the node's share is on
# the node, and the node's workers ran only on the CPUs that serve the node.
# json_node_check NAME JSON NODE BYTES PAGE_BYTES
json_node_check() {
	name=$1 json=$2 node=$3 bytes=$4 pb=$5
	if ! idx=$(json_node_index "$json" "$node"); then
		fail "$name" "report has no entry for node $node"
		return
	fi
	on=$(vm_json_get "$json" "nodes/$idx/pages_on_node")
	off=$(vm_json_get "$json" "nodes/$idx/pages_off_node")
	miss=$(vm_json_get "$json" "nodes/$idx/pages_missing")
	nbytes=$(vm_json_get "$json" "nodes/$idx/bytes")
	want=$((bytes / pb))
	if [ "$nbytes" = "$bytes" ] && [ "$on" = "$want" ] && [ "$off" = 0 ] && [ "$miss" = 0 ]; then
		pass "$name: json node $node pages_on_node=$on"
	else
		fail "$name: json node $node" \
			"bytes=$nbytes (want $bytes) on=$on (want $want) off=$off missing=$miss"
	fi
	cpus=$(vm_json_get "$json" "nodes/$idx/cpus")
	samples_off=$(vm_json_get "$json" "nodes/$idx/cpu_samples_off")
	serving=$(node_cpus "$(cpu_node_of "$node")")
	if [ -n "$cpus" ] && subset_of "$cpus" "$serving" && [ "$samples_off" = 0 ]; then
		pass "$name: node $node workers on cpus [$cpus] of [$serving]"
	else
		fail "$name: node $node workers" \
			"ran on cpus [$cpus], node is served by [$serving]; cpu_samples_off=$samples_off"
	fi
}

# create_check NAME PAGE SPEC EXPECT -- CLI ARGS...
#   runs `prealloc ARGS --page-size PAGE --file F --json`, checks placement
#   with vm_placement_check F SPEC and with the JSON report against EXPECT
#   ("node:bytes ..."), then removes the file with `prealloc rm`.
create_check() {
	name=$1 page=$2 spec=$3 expect=$4
	shift 5
	pb=$(page_bytes "$page")
	if [ "$page" = 2M ]; then file=$hugemnt/vm-test; else file=/dev/shm/vm-test; fi
	json=$tmp/create.json
	t0=$(date +%s)
	prealloc "$@" --page-size "$page" --file "$file" --json >"$json" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ]; then
		fail "$name" "prealloc $* --page-size $page exited $rc: $(head -c 300 "$tmp/err")"
		rm -f "$file"
		return
	fi
	echo "    prealloc $* --page-size $page: $(($(date +%s) - t0))s"
	if vm_placement_check "$file" "$spec" >"$tmp/chk" 2>&1; then
		pass "$name: move_pages $spec"
	else
		fail "$name: move_pages" "expected $spec"
	fi
	show "$tmp/chk"
	total=0
	for e in $expect; do
		json_node_check "$name" "$json" "${e%%:*}" "${e#*:}" "$pb"
		total=$((total + ${e#*:}))
	done
	jbytes=$(vm_json_get "$json" bytes)
	[ "$jbytes" = "$total" ] || fail "$name: json bytes" "$jbytes, want $total"
	if prealloc rm "$file" 2>"$tmp/err" && [ ! -e "$file" ]; then
		pass "$name: rm"
	else
		fail "$name: rm" "prealloc rm $file: $(head -c 300 "$tmp/err")"
		rm -f "$file"
	fi
}

# ---- environment ------------------------------------------------------------
mount -t hugetlbfs -o pagesize=2M none "$hugemnt" || fail mount-hugetlbfs "mount failed"
echo "guest: kernel $(uname -r) ($(uname -m)), variant $variant, nodes [$(nodes_online)]"
for n in $(nodes_online); do
	echo "guest: node $n cpus [$(node_cpus "$n")] distance [$(cat "$sysnode/node$n/distance")]" \
		"$(grep MemTotal "$sysnode/node$n/meminfo" | tr -s ' ' | cut -d' ' -f3-)"
done

have_cli=0
if command -v prealloc >/dev/null; then
	have_cli=1
else
	fail cli "the prealloc CLI is not in the initramfs"
fi
# A subcommand is there when its --help succeeds with its own usage line.
have_sub() {
	[ "$have_cli" = 1 ] && prealloc "$1" --help >"$tmp/help" 2>&1 &&
		head -n1 "$tmp/help" | grep -qi "^usage: prealloc $1"
}

M=1048576

# Pages really on the wrong node: a file faulted on node 0 by another program
# (dd under a node-0 policy), reused for node 1. Nothing moves pages that are
# already there, so the report must count them off-node and --verify must
# fail with exit 5, leaving the file where it was.
wrong_node() {
	file=/dev/shm/vm-wrong
	rm -f "$file"
	vm_membind 0 dd if=/dev/zero of="$file" bs=1M count=16 2>/dev/null && chmod 600 "$file"
	if ! vm_placement_check "$file" 0 >"$tmp/chk" 2>&1; then
		fail "wrong node: setup" "dd under membind 0 did not put the file on node 0"
		show "$tmp/chk"
		rm -f "$file"
		return
	fi
	prealloc --reuse --verify --node 1 --page-size 4k --file "$file" --json 16M \
		>"$tmp/wrong.json" 2>"$tmp/err"
	rc=$?
	off=$(vm_json_get "$tmp/wrong.json" nodes/0/pages_off_node 2>/dev/null)
	on=$(vm_json_get "$tmp/wrong.json" nodes/0/pages_on_node 2>/dev/null)
	if [ "$rc" = 5 ] && [ "$off" = 4096 ] && [ "$on" = 0 ]; then
		pass "wrong node: a node-0 file reused for node 1 fails --verify (exit 5, 4096 off-node)"
	else
		fail "wrong node" "exit $rc (want 5), pages_on_node $on (0), pages_off_node $off (4096): $(head -c 300 "$tmp/err")"
	fi
	rm -f "$file"
}

# The same with 2M pages, whose check phase counts from numa_maps (one line
# a mapping, pages per node), not from page frames: a file prealloc put on
# node 0, reused for node 1, is 8 pages off node 1 and --verify fails (exit 5).
wrong_node_huge() {
	file=$hugemnt/vm-wrong
	rm -f "$file"
	if ! prealloc --node 0 --page-size 2M --file "$file" 16M >/dev/null 2>"$tmp/err" ||
		! vm_placement_check "$file" 0 >"$tmp/chk" 2>&1; then
		fail "wrong node 2M: setup" "a 16M file on node 0: $(head -c 300 "$tmp/err")"
		show "$tmp/chk"
		prealloc rm "$file" 2>/dev/null || rm -f "$file"
		return
	fi
	prealloc --reuse --verify --node 1 --page-size 2M --file "$file" --json 16M \
		>"$tmp/wrong.json" 2>"$tmp/err"
	rc=$?
	off=$(vm_json_get "$tmp/wrong.json" nodes/0/pages_off_node 2>/dev/null)
	on=$(vm_json_get "$tmp/wrong.json" nodes/0/pages_on_node 2>/dev/null)
	if [ "$rc" = 5 ] && [ "$off" = 8 ] && [ "$on" = 0 ]; then
		pass "wrong node 2M (numa_maps): a node-0 file reused for node 1 fails --verify (exit 5, 8 off-node)"
	else
		fail "wrong node 2M" "exit $rc (want 5), pages_on_node $on (0), pages_off_node $off (8): $(head -c 300 "$tmp/err")"
	fi
	prealloc rm "$file" 2>/dev/null || rm -f "$file"
}

# Pinning and mbind seen directly, not through where pages landed: a run on
# node 1 is stopped mid-populate; every worker thread's affinity must be node
# 1's CPUs. On 4K shmem the workers bind themselves while they populate (the
# file's shared policy would make every fault take one lock they all share),
# and the file gets its policy back when they are done: a process that maps
# it afterwards (a clear stopped once it has mapped it) must see bind:1.
pinned_and_bound() {
	file=/dev/shm/vm-pin
	want=$(cat "$sysnode/node1/cpulist")
	rm -f "$file"
	prealloc -q --node 1 --page-size 4k --threads 2 --file "$file" 320M 2>"$tmp/err" &
	pid=$!
	i=0 tasks=0
	while [ $i -lt 2000 ] && kill -0 $pid 2>/dev/null; do
		tasks=$(ls /proc/$pid/task 2>/dev/null | wc -l)
		[ "$tasks" -ge 3 ] && kill -STOP $pid && break
		i=$((i + 1))
	done
	workers=0 bad='' policy=''
	if [ "$tasks" -ge 3 ]; then
		for t in /proc/$pid/task/*; do
			[ "${t##*/}" = "$pid" ] && continue
			l=$(awk '/^Cpus_allowed_list/ {print $2}' "$t/status")
			workers=$((workers + 1))
			[ "$l" = "$want" ] || bad="$bad ${t##*/}:$l"
		done
		kill -CONT $pid
	fi
	wait $pid
	rc=$?
	PREALLOC_TEST_PAUSE=clear-mapped prealloc clear -q "$file" 2>"$tmp/err2" &
	cpid=$!
	i=0
	while [ $i -lt 500 ] && [ "$(sed 's/.*) //' /proc/$cpid/stat 2>/dev/null | cut -d' ' -f1)" != T ]; do
		sleep 0.01
		i=$((i + 1))
	done
	policy=$(grep "$file" /proc/$cpid/numa_maps | head -1)
	kill -CONT $cpid
	wait $cpid
	if [ "$workers" -ge 2 ] && [ -z "$bad" ]; then
		pass "pinning: $workers workers of a node-1 run allowed only CPUs $want"
	else
		fail "pinning" "caught $tasks tasks, $workers workers, off node 1's CPUs ($want):$bad"
	fi
	case "$policy" in
	*" bind:1 "*) pass "mbind: the file has policy bind:1 once populated" ;;
	*) fail "mbind" "numa_maps line of the file: '$policy' ($(head -c 300 "$tmp/err2"))" ;;
	esac
	[ "$rc" = 0 ] || fail "pinning: the stopped run" "exit $rc: $(head -c 300 "$tmp/err")"
	prealloc rm "$file" 2>/dev/null || rm -f "$file"
}

# ---- two-node: placement, worker CPUs, clear, pools, VFIO ---------------------
two_node() {
	two_node_topology
	# The create command's placement checks, and admission, need the CLI.
	if [ "$have_cli" = 1 ]; then
		two_node_placement
	fi
	two_node_clear
	two_node_pool
	if [ "$have_cli" = 1 ]; then
		two_node_admission
	fi
	# The aarch64 guest has no IOMMU or VFIO device: placement is what it proves.
	if [ "$variant" = two-node ]; then
		vfio
	fi
}

# The guest itself: its architecture, two nodes of one CPU each, 64 x 2M on each.
two_node_topology() {
	if [ "$variant" = arm64-two-node ]; then
		if [ "$(uname -m)" = aarch64 ]; then
			pass "arch: an aarch64 guest ($(grep -m1 -i '^CPU part' /proc/cpuinfo | tr -d '\t'))"
		else
			fail arch "uname -m says $(uname -m), want aarch64"
		fi
	fi
	if [ "$(nodes_online)" = "0 1 " ] && [ "$(node_cpus 0)" = "0 " ] &&
		[ "$(node_cpus 1)" = "1 " ]; then
		pass "topology: 2 nodes, cpu 0 on node 0, cpu 1 on node 1"
	else
		fail topology "nodes [$(nodes_online)], want 2 nodes with one CPU each"
	fi

	for n in 0 1; do hp_set "$n" 64; done
	if [ "$(hp_get 0)" = 64 ] && [ "$(hp_get 1)" = 64 ]; then
		pass "hugepages: 64 x 2M reserved on each node"
	else
		fail hugepages "nr_hugepages node0=$(hp_get 0) node1=$(hp_get 1), want 64"
	fi
}

# Files made where they were asked for, whatever the page size, split,
# policy or CPUs the workers may use; every hugepage free again after rm.
two_node_placement() {
	# The break knob: expect node 0 for a file prealloc put on node 1.
	want1=1
	[ "${prealloc_vm_break:-}" = placement ] && want1=0
	for page in 2M 4k; do
		if [ "$page" = 2M ]; then s=32; else s=16; fi
		create_check "$page one node" "$page" "$want1" "$want1:$((2 * s * M))" -- \
			--node 1 "$((2 * s))M"
		create_check "$page split" "$page" 0,1 "0:$((2 * s * M)) 1:$((2 * s * M))" -- \
			--node 0,1 "$((4 * s))M"
		create_check "$page exact, --verify" "$page" "0:$((s))M,1:$((3 * s))M" \
			"0:$((s * M)) 1:$((3 * s * M))" -- \
			--verify --node "0:$((s))M" --node "1:$((3 * s))M" "$((4 * s))M"
	done
	# No --node under a memory policy (numactl --membind=1): node 1 only.
	if vm_membind 1 prealloc --page-size 4k --file /dev/shm/vm-policy --json 32M \
		>"$tmp/policy.json" 2>"$tmp/err" &&
		[ "$(vm_json_get "$tmp/policy.json" nodes/#)" = 1 ] &&
		[ "$(vm_json_get "$tmp/policy.json" nodes/0/node)" = 1 ] &&
		vm_placement_check /dev/shm/vm-policy 1 >"$tmp/chk" 2>&1; then
		pass "no --node follows the memory policy (bind to node 1)"
	else
		fail "memory policy" "prealloc under membind 1: $(head -c 300 "$tmp/err")"
		show "$tmp/chk"
	fi
	prealloc rm /dev/shm/vm-policy 2>/dev/null || rm -f /dev/shm/vm-policy
	# More workers than the node has CPUs: they must still stay home.
	create_check "4k split, 3 threads per node" 4k 0,1 "0:$((16 * M)) 1:$((16 * M))" -- \
		--node 0,1 --threads 3 32M
	wrong_node
	wrong_node_huge
	pinned_and_bound
	# Node 1's workers kept off its CPU (the run allowed node 0's alone):
	# their 4K pages must still land on node 1, each worker bound to it.
	if taskset -c 0 prealloc --node 1 --page-size 4k --file /dev/shm/vm-away --verify \
		16M >/dev/null 2>"$tmp/err" &&
		vm_placement_check /dev/shm/vm-away 1 >"$tmp/chk" 2>&1; then
		pass "4k, workers off their node's CPUs: the pages still land on node 1"
	else
		fail "4k off-CPU" "$(head -c 300 "$tmp/err")"
		show "$tmp/chk"
	fi
	prealloc rm /dev/shm/vm-away 2>/dev/null || rm -f /dev/shm/vm-away
	# Anonymous 4K memory on node 1 through the library: its check phase reads
	# each worker's page frames (pagemap) and must agree with move_pages.
	if vm_placement_check --anon 1 64 >"$tmp/chk" 2>&1; then
		pass "anon 4k: the library's page count (pagemap) agrees: $(cat "$tmp/chk")"
	else
		fail "anon 4k placement" "$(cat "$tmp/chk")"
	fi
	if [ "$(hp_get 0 free_hugepages)" = 64 ] && [ "$(hp_get 1 free_hugepages)" = 64 ]; then
		pass "hugepages: all free again after rm"
	else
		fail "hugepages after rm" \
			"free node0=$(hp_get 0 free_hugepages) node1=$(hp_get 1 free_hugepages)"
	fi

}

# clear: each node's pages re-zeroed by that node's workers.
two_node_clear() {
	if have_sub clear; then
		file=$hugemnt/vm-clear
		if prealloc --node 0,1 --page-size 2M --file "$file" --json 64M >/dev/null \
			2>"$tmp/err" &&
			vm_placement_check --fill 0xa5 "$file" 0,1 >"$tmp/chk" 2>&1 &&
			prealloc clear --json "$file" >"$tmp/clear.json" 2>"$tmp/err"; then
			if vm_placement_check --zero "$file" 0,1 >"$tmp/chk" 2>&1; then
				pass "clear: zero and still in place"
			else
				fail clear "not zero or moved after clear"
				show "$tmp/chk"
			fi
			for n in 0 1; do
				json_node_check clear "$tmp/clear.json" "$n" "$((32 * M))" 2097152
			done
			# aarch64: the store kernel auto took is one of arm64's (with DC ZVA
			# allowed under -cpu max, a large clear's own or a probe against it).
			k=$(vm_json_get "$tmp/clear.json" clear_kernel 2>/dev/null)
			ks=$(prealloc info --json | tr -d ' \n' | grep -o '"kernels":\[[^]]*\]')
			if [ "$variant" = arm64-two-node ]; then
				# QEMU's max allows DC ZVA: its kernel must be detected, and auto's
				# pick over 64 MiB one of arm64's.
				case "$k:$ks" in
				*:*'"dc_zva"'*'"stnp"'*)
					case "$k" in
					dc_zva|mops|stnp|c|c/dc_zva|c/mops|c/stnp)
						pass "clear: an arm64 kernel, $k ($ks)" ;;
					*) fail "clear: kernel" "clear_kernel '$k' is not an arm64 kernel" ;;
					esac ;;
				*) fail "clear: kernels" "DC ZVA or STNP not detected: $ks" ;;
				esac
			fi
		else
			fail clear "create/fill/clear failed: $(head -c 300 "$tmp/err")"
		fi
		prealloc rm "$file" 2>/dev/null || rm -f "$file"
	else
		fail clear "prealloc clear --help does not answer with its own usage"
	fi
}

# Per-node hugepage pools: growth on the right node, admission per node.
two_node_pool() {
	file=$hugemnt/vm-pool
	if have_sub pool; then
		hp_set 0 0
		hp_set 1 0
		if prealloc --node 1 --page-size 2M --grow-pools --file "$file" --json 32M \
			>"$tmp/pool.json" 2>"$tmp/err"; then
			if [ "$(hp_get 1)" -ge 16 ] && [ "$(hp_get 0)" = 0 ] &&
				vm_placement_check "$file" 1 >"$tmp/chk" 2>&1; then
				pass "pool: --grow-pools grew node 1 to $(hp_get 1), node 0 stayed 0"
			else
				fail "pool: --grow-pools" "nr_hugepages node0=$(hp_get 0) node1=$(hp_get 1)"
				show "$tmp/chk"
			fi
		else
			fail "pool: --grow-pools" "prealloc exited $?: $(head -c 300 "$tmp/err")"
		fi
		prealloc rm "$file" 2>/dev/null || rm -f "$file"
	else
		fail "pool: --grow-pools" "prealloc pool --help does not answer with its own usage"
	fi
}

# Admission needs no pool management, only the create command: a short node
# refuses the request before anything is touched, growth given back too.
two_node_admission() {
	# Node 0 short (16M free), node 1 plenty: the request must be refused
	# before anything is touched, and leave both pools as they were.
	hp_set 0 8
	hp_set 1 64
	free0=$(hp_get 0 free_hugepages) free1=$(hp_get 1 free_hugepages)
	prealloc --node 0:32M --node 1:32M --page-size 2M --file "$file" 64M \
		>/dev/null 2>"$tmp/err"
	rc=$?
	# 3: the CLI's documented exit code for "not enough memory on a node".
	if [ "$rc" = 3 ] && [ ! -e "$file" ] && [ "$(hp_get 0 free_hugepages)" = "$free0" ] &&
		[ "$(hp_get 1 free_hugepages)" = "$free1" ]; then
		pass "pool: admission refused node 0 short (exit $rc: $(head -n1 "$tmp/err"))"
	else
		fail "pool: admission" "exit $rc, file left: $([ -e "$file" ] && echo yes || echo no)," \
			"free node0=$(hp_get 0 free_hugepages)/$free0 node1=$(hp_get 1 free_hugepages)/$free1"
	fi
	rm -f "$file"
	# --grow-pools grows node 0 first, then node 1 cannot possibly supply
	# its share: the refusal must give node 0's growth back too.
	nr0=$(hp_get 0) nr1=$(hp_get 1)
	prealloc --grow-pools --node 0:32M --node 1:64G --page-size 2M --file "$file" \
		>/dev/null 2>"$tmp/err"
	rc=$?
	if [ "$rc" = 3 ] && [ ! -e "$file" ] && [ "$(hp_get 0)" = "$nr0" ] &&
		[ "$(hp_get 1)" = "$nr1" ]; then
		pass "pool: a refusal on node 1 gives node 0's growth back (exit $rc, node 0 at $nr0)"
	else
		fail "pool: refusal after growth" "exit $rc, node0=$(hp_get 0)/$nr0" \
			"node1=$(hp_get 1)/$nr1: $(head -c 200 "$tmp/err")"
	fi
	rm -f "$file"
	hp_set 0 64
	hp_set 1 64
}

# ---- VFIO: the edu device bound to vfio-pci, its group usable ----------------
# Binds PCI device $1 to vfio-pci; prints its group number.
bind_vfio() {
	bv=/sys/bus/pci/devices/$1
	[ -e "$bv/driver" ] && echo "$1" >"$bv/driver/unbind"
	echo vfio-pci >"$bv/driver_override"
	echo "$1" >/sys/bus/pci/drivers_probe
	basename "$(readlink "$bv/iommu_group")"
}

# expect_refusal NAME RC PATTERN -- CMD...: CMD exits RC with PATTERN in its one line.
expect_refusal() {
	er_name=$1 er_rc=$2 er_pat=$3
	shift 4
	"$@" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ "$rc" = "$er_rc" ] && grep -q "$er_pat" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ]; then
		pass "$er_name (exit $rc: $(cat "$tmp/err"))"
	else
		fail "$er_name" "exit $rc (want $er_rc), said: $(head -c 300 "$tmp/err")"
	fi
}

# The CLI: a JSON map, errors, and --hold keeping rm and clear away.
vfio_cli() {
	file=$hugemnt/vm-vfio
	prealloc --node 0,1 --page-size 2M --file "$file" -q 64M 2>"$tmp/err" ||
		fail "vfio-map: prepare" "$(head -c 300 "$tmp/err")"
	if prealloc vfio-map --device "$1" --json "$file" >"$tmp/map.json" 2>"$tmp/err" &&
		[ "$(vm_json_get "$tmp/map.json" bytes)" = $((64 * M)) ] &&
		[ "$(vm_json_get "$tmp/map.json" nodes/#)" = 2 ] &&
		[ "$(vm_json_get "$tmp/map.json" nodes/1/bytes)" = $((32 * M)) ]; then
		pass "vfio-map --json: 64 MiB, node 0 $(vm_json_get "$tmp/map.json" nodes/0/gb_per_s) GB/s, node 1 $(vm_json_get "$tmp/map.json" nodes/1/gb_per_s) GB/s"
	else
		fail "vfio-map --json" "$(head -c 300 "$tmp/err")"
	fi
	dd if=/dev/zero of=/dev/shm/vm-plain bs=1M count=4 2>/dev/null
	expect_refusal "vfio-map: a file prealloc did not prepare" 4 "not prepared by prealloc" -- \
		prealloc vfio-map --device "$1" /dev/shm/vm-plain
	if prealloc vfio-map --device "$1" --force -q /dev/shm/vm-plain 2>"$tmp/err"; then
		pass "vfio-map --force maps it anyway (4k tmpfs)"
	else
		fail "vfio-map --force" "$(head -c 300 "$tmp/err")"
	fi
	rm -f /dev/shm/vm-plain

	prealloc vfio-map --device "$1" --hold -q "$file" 2>"$tmp/hold.err" &
	hp=$!
	i=0
	while ! grep -q holding "$tmp/hold.err" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	lck=$(awk '/^VmLck/ { print $2 }' "/proc/$hp/status" 2>/dev/null)
	if [ "${lck:-0}" -ge $((64 * 1024)) ]; then
		pass "vfio-map --hold: pid $hp VmLck ${lck} kB"
	else
		fail "vfio-map --hold" "VmLck ${lck:-?} kB: $(head -c 300 "$tmp/hold.err")"
	fi
	expect_refusal "rm of a held file" 4 "in use" -- prealloc rm "$file"
	expect_refusal "clear of a held file" 4 "mapped" -- prealloc clear "$file"
	kill -TERM "$hp"
	wait "$hp"
	rc=$?
	if [ "$rc" = 0 ] && [ -e "$file" ]; then
		pass "vfio-map --hold: SIGTERM unmaps, exit 0"
	else
		fail "vfio-map --hold" "exit $rc after SIGTERM"
	fi

	# memlock: no CAP_IPC_LOCK, RLIMIT_MEMLOCK 1 MiB: refused before any pin.
	chmod 666 "/dev/vfio/$2" "$file"
	expect_refusal "memlock: refused as uid 65534 with 1 MiB" 3 "RLIMIT_MEMLOCK allows 1 MiB" \
		-- vm_as_user 65534 1048576 prealloc vfio-map --device "$1" --force "$file"
	show "$tmp/err"
	chmod 600 "/dev/vfio/$2" "$file"
	if prealloc rm "$file" 2>"$tmp/err"; then
		pass "rm after the mapping is gone"
	else
		fail "rm after unmap" "$(head -c 300 "$tmp/err")"
	fi
}

# Loads the vfio modules, binds the edu device alone in its IOMMU group to
# vfio-pci; sets bdf and group (and bdf2, serial: the devices behind the
# bridge). Fails and returns 1 when that does not work.
vfio_setup() {
	ok=1
	# shellcheck disable=SC2013 # one module name per line, no spaces
	for m in $(cat /modules.list); do
		insmod "/lib/modules/$m" 2>"$tmp/err" || { ok=0; fail "insmod $m" "$(cat "$tmp/err")"; }
	done
	[ "$ok" = 1 ] && pass "vfio: modules loaded ($(tr '\n' ' ' </modules.list))"

	# The edu alone in its group is the one to map; the one behind the bridge shares its group.
	bdf='' bdf2='' serial='' group=''
	for d in /sys/bus/pci/devices/*; do
		id="$(cat "$d/vendor"):$(cat "$d/device")"
		if [ "$id" = 0x1234:0x11e8 ]; then
			if [ "$(find "$d/iommu_group/devices/" -mindepth 1 -maxdepth 1 | wc -l)" = 1 ]; then
				bdf=${d##*/}
			else
				bdf2=${d##*/}
			fi
		elif [ "$id" = 0x1b36:0x0002 ]; then
			serial=${d##*/}
		fi
	done
	if [ -z "$bdf" ]; then
		fail vfio "no edu device (1234:11e8) alone in an IOMMU group"
		return 1
	fi
	group=$(bind_vfio "$bdf")
	if [ "$(basename "$(readlink "/sys/bus/pci/devices/$bdf/driver")")" = vfio-pci ] &&
		[ -c "/dev/vfio/$group" ]; then
		pass "vfio: edu $bdf bound to vfio-pci, group /dev/vfio/$group"
	else
		fail vfio "edu $bdf group=$group not bound"
		return 1
	fi
	[ "${prealloc_vm_iommufd:-}" = 1 ] && iommufd_present "$bdf"
	return 0
}

# iommufd, once every type1 handle of the device is closed. The rig kernel:
# the edu DMA round trip through an IOAS, a failure halfway, the fallback
# from IOMMU_IOAS_MAP_FILE, the pin-time ratio, and the CLI's --iommufd.
# Debian's kernel (no cdev): --iommufd refused, naming why, exit 4.
iommufd() {
	f=$hugemnt/vm-iommufd
	prealloc --node 0,1 --page-size 2M --file "$f" -q 8M 2>"$tmp/err" ||
		fail "iommufd: prepare $f" "$(head -c 300 "$tmp/err")"
	if [ "${prealloc_vm_iommufd:-}" != 1 ]; then
		expect_refusal "iommufd: a device without a VFIO cdev" 4 "no VFIO cdev" -- \
			prealloc vfio-map --iommufd --device "$1" "$f"
		prealloc rm "$f" 2>/dev/null
		return
	fi
	if vm_iommufd_check "$1" >"$tmp/iommufd" 2>&1; then
		pass "iommufd: IOAS bound, failure halfway unmaps its own, edu DMA, MAP_FILE fallback, unmap"
	else
		fail iommufd "vm_iommufd_check $1 failed"
	fi
	show "$tmp/iommufd"
	if prealloc vfio-map --iommufd --device "$1" --json "$f" >"$tmp/iofd.json" 2>"$tmp/err" &&
		[ "$(vm_json_get "$tmp/iofd.json" backend)" = iommufd ] &&
		[ "$(vm_json_get "$tmp/iofd.json" map_file)" = false ] &&
		[ "$(vm_json_get "$tmp/iofd.json" bytes)" = 8388608 ]; then
		pass "iommufd: prealloc vfio-map --iommufd --json (IOAS $(vm_json_get "$tmp/iofd.json" ioas_id), by IOMMU_IOAS_MAP)"
	else
		fail "iommufd: vfio-map --iommufd" "$(head -c 300 "$tmp/err") $(head -c 300 "$tmp/iofd.json")"
	fi
	prealloc rm "$f" 2>/dev/null
	if vm_vfio_bench --iommufd "$1" 64 >"$tmp/iofd-bench" 2>&1; then
		pass "iommufd: 2M prepared pin <= 5% of the unprepared pin on each node"
	else
		fail "iommufd bench" "see the table"
	fi
	show "$tmp/iofd-bench"
}

# The rig kernel (run-vm.sh --rig-kernel): /dev/iommu, and the bound
# device's VFIO cdev beside its group, which an iommufd user opens.
iommufd_present() {
	cdev=$(ls "/sys/bus/pci/devices/$1/vfio-dev/" 2>/dev/null | head -n1)
	if [ -c /dev/iommu ] && [ -n "$cdev" ] && [ -c "/dev/vfio/devices/$cdev" ]; then
		pass "iommufd: /dev/iommu, and edu $1's cdev /dev/vfio/devices/$cdev"
	else
		fail iommufd "/dev/iommu $([ -c /dev/iommu ] && echo present || echo missing)," \
			"device cdev '${cdev:-none}' (want /dev/vfio/devices/vfioN)"
	fi
}

vfio() {
	vfio_setup || return
	# A prepared file the checker maps last, one region through two handles.
	shared=$hugemnt/vm-vfio-shared
	prealloc --node 0,1 --page-size 2M --file "$shared" -q 8M 2>"$tmp/err" ||
		fail "vfio: prepare $shared" "$(head -c 300 "$tmp/err")"
	if vm_vfio_check "$bdf" "$shared" >"$tmp/vfio" 2>&1; then
		pass "vfio: populate+map one job, MSI split, DMA copy, clear pinned, unmap (edu DMA)"
	else
		fail vfio "vm_vfio_check $bdf $shared failed"
	fi
	show "$tmp/vfio"
	# Its own line: each mapping's lock is its own, so rm waits for the last unmap.
	if grep -q '^vfio: FAIL \(shared file\|rm refused\)' "$tmp/vfio" ||
		! grep -q '^vfio: ok shared file: rm once neither maps it' "$tmp/vfio"; then
		fail "vfio: one file, two handles" \
			"rm not refused while a handle maps it, or not removed after the last unmap (see the vfio: lines)"
	else
		pass "vfio: one file, two handles: rm refused (exit 4) until the last unmap, then removes it"
	fi
	# Its own line: the memlock admission counts what this process pins already.
	if grep -q '^vfio: FAIL memlock total' "$tmp/vfio" ||
		! grep -q '^vfio: ok memlock total: a second 8 MiB, fitting alone, refused' "$tmp/vfio"; then
		fail "vfio: memlock counts what is pinned already" \
			"a second map over the limit with the first (see the vfio: lines)"
	else
		pass "vfio: memlock counts what is pinned already: a second 8 MiB map under a 10 MiB limit refused before any pin"
	fi
	[ -e "$shared" ] && { prealloc rm "$shared" 2>/dev/null || rm -f "$shared"; }
	if vm_vfio_bench "$bdf" 64 >"$tmp/bench" 2>&1; then
		pass "vfio: 2M prepared pin <= 5% of the unprepared pin on each node"
	else
		fail "vfio bench" "see the table"
	fi
	show "$tmp/bench"
	[ "$have_cli" = 1 ] && have_sub vfio-map && vfio_cli "$bdf" "$group"

	iommufd "$bdf"

	# A group holding a device that a host driver keeps: not viable.
	if [ -n "$bdf2" ] && [ -n "$serial" ]; then
		bind_vfio "$bdf2" >/dev/null
		f=$hugemnt/vm-viable
		prealloc --page-size 2M --file "$f" -q 4M 2>/dev/null
		expect_refusal "vfio-map: group not viable" 4 "not viable" -- \
			prealloc vfio-map --device "$bdf2" "$f"
		expect_refusal "vfio-map: device not bound to vfio-pci" 4 "not vfio-pci" -- \
			prealloc vfio-map --device "$serial" "$f"
		prealloc rm "$f" 2>/dev/null
	else
		fail "vfio: non-viable group" "no edu + pci-serial behind the bridge ($bdf2, $serial)"
	fi
}

# ---- qemu-vfio: QEMU itself started with -device vfio-pci inside the guest ----
# The number a libvirt user sees: an inner QEMU (TCG, -S) whose RAM is a
# memory-backend-file on hugetlbfs, with the edu device passed through, timed
# from exec to its QMP answer to query-status (vm_qemu_start: QEMU answers
# QMP only from its main loop, after vfio-pci's realize has pinned and mapped
# all guest RAM; the VmLck read at that answer proves it). Three kinds, 5
# starts each, interleaved in rotating order after one warm-up start:
#   fresh     a new file QEMU creates: the pin faults and zeroes every page;
#   prepared  the file prealloc prepared (populated, zeroed, on node 0);
#   nodev     the prepared file without vfio-pci: QEMU's own start cost,
#             so start - nodev is what vfio-pci (its setup and its pin) adds.
# Fails when QEMU does not start with vfio-pci (its RAM pinned) either way;
# the times are reported, never asserted.
# prealloc_vm_qemu_mb (boot parameter) sets the size; 512 by default.
qemu_inner() {
	qi_dev="-device vfio-pci,host=$bdf"
	[ "$2" = nodev ] && qi_dev=
	# shellcheck disable=SC2086 # qi_dev: no words or two
	vm_qemu_start 90 /usr/bin/qemu-system-x86_64 -L /usr/share/qemu -bios qboot.rom \
		-no-user-config -nodefaults -display none -vga none -monitor none -serial none \
		-machine q35,memory-backend=m0 -accel tcg,tb-size=16 -m "${qmb}M" \
		-object "memory-backend-file,id=m0,mem-path=$1,share=on,prealloc=off,size=${qmb}M" \
		$qi_dev -S -qmp stdio 2>"$tmp/qemu.err"
}

# qemu_timed KIND: one timed start; appends its ms to $tmp/KIND.ms.
qemu_timed() {
	qt_file=$prepared
	[ "$1" = fresh ] && qt_file=$fresh
	rm -f "$fresh"
	if ! qemu_inner "$qt_file" "$1" >"$tmp/start"; then
		fail "qemu-vfio: $1 start" "$(head -c 600 "$tmp/qemu.err")"
		return 1
	fi
	rm -f "$fresh"
	# shellcheck disable=SC2046 # start_ms MS vmlck_kb KB status S
	set -- "$1" $(cat "$tmp/start")
	echo "    $*"
	# With vfio-pci: all guest RAM but the legacy window below 1 MiB (VGA,
	# option ROMs: not RAM in QEMU's map, so not mapped for DMA).
	if [ "$1" != nodev ] && [ "$5" -lt $(((qmb - 1) * 1024)) ]; then
		fail "qemu-vfio: $1 start" "VmLck $5 kB at the QMP answer: guest RAM not pinned yet"
		return 1
	fi
	echo "$3" >>"$tmp/$1.ms"
}

median() { sort -n "$1" | sed -n "$((($(wc -l <"$1") + 1) / 2))p"; }
runs() { tr '\n' ' ' <"$tmp/$1.ms" | sed 's/ $//'; }

qemu_vfio() {
	qmb=${prealloc_vm_qemu_mb:-512}
	vfio_setup || return
	if [ ! -x /usr/bin/qemu-system-x86_64 ] || ! command -v vm_qemu_start >/dev/null; then
		fail qemu-vfio "no QEMU or vm_qemu_start in the image"
		return
	fi
	prepared=$hugemnt/vm-qemu-prepared
	fresh=$hugemnt/vm-qemu-fresh
	hp_set 0 0
	hp_set 1 0
	if prealloc --page-size 2M --grow-pools --node 0 --file "$prepared" -q "${qmb}M" \
		2>"$tmp/err" && vm_placement_check "$prepared" 0 >"$tmp/chk" 2>&1; then
		pass "qemu-vfio: ${qmb} MiB prepared on node 0 (--grow-pools grew node 0 to $(hp_get 0))"
	else
		fail "qemu-vfio: prepare" "$(head -c 300 "$tmp/err")"
		show "$tmp/chk"
		return
	fi
	# Room on node 0 (only) for the fresh file, which QEMU creates and the pin fills.
	hp_set 0 $(($(hp_get 0) + qmb / 2))
	rm -f "$tmp/fresh.ms" "$tmp/prepared.ms" "$tmp/nodev.ms" "$fresh"
	t0=$(date +%s)
	if ! qemu_inner "$prepared" >"$tmp/start"; then
		echo "    QEMU's stderr:"
		show "$tmp/qemu.err"
		fail "qemu-vfio: QEMU with -device vfio-pci,host=$bdf under TCG" \
			"$(head -c 600 "$tmp/qemu.err")"
		prealloc rm "$prepared" 2>/dev/null || rm -f "$prepared"
		return
	fi
	echo "    warm-up (prepared): $(cat "$tmp/start")"
	show "$tmp/qemu.err"
	ok=1
	for order in "fresh prepared nodev" "prepared nodev fresh" "nodev fresh prepared" \
		"fresh prepared nodev" "prepared nodev fresh"; do
		for kind in $order; do qemu_timed "$kind" || ok=0; done
	done
	if [ "$ok" = 1 ]; then
		mf=$(median "$tmp/fresh.ms")
		mp=$(median "$tmp/prepared.ms")
		mn=$(median "$tmp/nodev.ms")
		ratio=$(awk -v p="$mp" -v f="$mf" 'BEGIN { printf "%.1f%%", 100 * p / f }')
		pin=$(awk -v p="$mp" -v f="$mf" -v n="$mn" \
			'BEGIN { printf "fresh %.0f ms, prepared %.0f ms (%.1f%%)", f - n, p - n, 100 * (p - n) / (f - n) }')
		echo "QEMU-START: ${qmb} MiB 2M hugetlb, vfio-pci $bdf, ms from exec to the QMP answer, median of 5:"
		echo "QEMU-START:   fresh    [$(runs fresh)] median $mf"
		echo "QEMU-START:   prepared [$(runs prepared)] median $mp"
		echo "QEMU-START:   no vfio  [$(runs nodev)] median $mn"
		echo "QEMU-START:   prepared/fresh $ratio; what vfio-pci adds over no vfio: $pin"
		# Times are reported, not asserted (a noisy TCG guest): docs/benchmarks.md.
		pass "qemu-vfio: QEMU started with vfio-pci both ways, 5 times each: prepared $mp ms vs fresh $mf ms ($ratio)"
	fi
	if prealloc rm "$prepared" 2>"$tmp/err"; then
		pass "qemu-vfio: rm of the prepared file after QEMU"
	else
		fail "qemu-vfio: rm" "$(head -c 300 "$tmp/err")"
	fi
	hp_set 0 0
	echo "    qemu-vfio: $(($(date +%s) - t0))s of QEMU starts"
}

# ---- memory-only: node 2 has memory, no CPU; served by its nearest node -------
memory_only() {
	near=$(cpu_node_of 2)
	if [ "$(nodes_online)" = "0 1 2 " ] && [ -z "$(node_cpus 2)" ] && [ "$near" = 1 ]; then
		pass "topology: node 2 has no CPU, nearest node with CPUs is 1"
	else
		fail topology "nodes [$(nodes_online)], node 2 cpus [$(node_cpus 2)], nearest $near"
	fi
	for n in 0 1 2; do hp_set "$n" 48; done
	if [ "$(hp_get 2)" = 48 ]; then
		pass "hugepages: 48 x 2M reserved on node 2"
	else
		fail hugepages "node 2 nr_hugepages=$(hp_get 2), want 48"
	fi
	[ "$have_cli" = 1 ] || return

	if prealloc info --json >"$tmp/info.json" 2>"$tmp/err"; then
		idx=$(json_node_index "$tmp/info.json" 2)
		cn=$(vm_json_get "$tmp/info.json" "nodes/$idx/cpu_node")
		cpus=$(vm_json_get "$tmp/info.json" "nodes/$idx/cpus")
		if [ "$cn" = "$near" ] && [ -n "$cpus" ] && subset_of "$cpus" "$(node_cpus "$near")"; then
			pass "info: node 2 cpu_node=$cn cpus [$cpus]"
		else
			fail info "node 2 cpu_node=$cn cpus [$cpus], want cpu_node $near"
		fi
	else
		fail info "prealloc info --json exited $?: $(head -c 300 "$tmp/err")"
	fi
	create_check "2M memory-only node" 2M 2 "2:$((64 * M))" -- --node 2 64M
	create_check "4k memory-only node" 4k 2 "2:$((32 * M))" -- --node 2 32M
	create_check "2M three nodes" 2M 0,1,2 "0:$((32 * M)) 1:$((32 * M)) 2:$((32 * M))" -- \
		--node 0,1,2 96M
}

# libvirt-two-node: the host's root (9p, read-only) under a tmpfs overlay,
# the tree's `meson install` (/dest) copied on top, the guest's own /proc,
# /sys, /dev, /run and /tmp; guest-libvirt.sh runs chrooted in it.
libvirt_two_node() {
	lr=/newroot
	mkdir -p /host /ovl "$lr"
	if ! mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 \
		hostroot /host; then
		fail libvirt-root "cannot mount the host's root (9p tag hostroot)"
		return
	fi
	mount -t tmpfs -o size=1G,mode=755 tmpfs /ovl
	mkdir -p /ovl/upper /ovl/work
	if ! mount -t overlay overlay -o lowerdir=/host,upperdir=/ovl/upper,workdir=/ovl/work "$lr"; then
		fail libvirt-root "cannot lay an overlay over the host's root"
		return
	fi
	# -f: a host that has prealloc installed already (a meson install in
	# /usr/local) has the same names in the lower layer; busybox cp -a
	# refuses to replace a link there ("File exists") without it.
	cp -af /dest/. "$lr/" || { fail libvirt-root "cannot copy the installed tree"; return; }
	mount -t proc proc "$lr/proc"
	mount -t sysfs sysfs "$lr/sys"
	mount -t devtmpfs devtmpfs "$lr/dev"
	mkdir -p "$lr/dev/pts" "$lr/dev/shm"
	mount -t devpts devpts "$lr/dev/pts"
	for d in run tmp dev/shm; do mount -t tmpfs -o mode=755 tmpfs "$lr/$d"; done
	chmod 1777 "$lr/tmp" "$lr/dev/shm"
	mkdir -p "$lr/tmp/rig"
	cp /tests/guest-libvirt.sh /tests/guest-libvirt-vfio.sh /tests/libvirt.env /bin/vm_json_get \
		/bin/vm_placement_check "$lr/tmp/rig/"
	chroot "$lr" /bin/bash /tmp/rig/guest-libvirt.sh
}

case "$variant" in
two-node|arm64-two-node) two_node ;;
memory-only) memory_only ;;
qemu-vfio) qemu_vfio ;;
libvirt-two-node) libvirt_two_node ;;
*) fail variant "unknown variant '$variant'" ;;
esac
echo "VM-DONE"
