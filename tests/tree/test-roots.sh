#!/bin/bash
# SPDX-License-Identifier: MIT
# Every sysfs and procfs path the library reads goes through the ctx's roots
# (sys_path, proc_path, proc_value: docs/design.md), so admission, growth,
# the store and the CPU's caches are tested over a fake tree without root.
# What no fake tree can stand for is read where it is, and named below with
# its reason: this process's own memory (/proc/self: its maps, numa_maps,
# smaps, pagemap; the memory blocks its pagemap's frames fall in) and the
# CPU it runs on (the cpuid brand's text twin in /proc/cpuinfo, the
# microcode the clear kernels were ranked under, arm64's MIDR_EL1).
#   unrooted: a "/sys..." or "/proc..." string in the library's .c and .h
#             files (prealloc/ but its programs cli/ and hook/, and vfio/)
#             that is neither an argument of sys_path, proc_path or
#             proc_value nor one of the reads named here.
# A self-test plants each kind first.
#
# Usage: test-roots.sh SRCDIR. Prints TAP.
set -u
export LC_ALL=C
src=${1:?source dir}
# shellcheck source=../lib/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"

# FILE|STRING: read where it is, for the reason above.
allowed='prealloc/internal.h|"/sys"
prealloc/internal.h|"/proc"
prealloc/memory/placement.c|"/proc/self/maps"
prealloc/memory/placement.c|"/proc/self/numa_maps"
prealloc/memory/placement.c|"/proc/self/smaps"
prealloc/memory/pagemap.c|"/proc/self/pagemap"
prealloc/memory/pagemap.c|"/sys/devices/system/node"
prealloc/memory/pagemap.c|"/sys/devices/system/memory/block_size_bytes"
prealloc/arch/x86/cpu.c|"/proc/cpuinfo"
prealloc/clear/rank_file.c|"/proc/cpuinfo"
prealloc/arch/arm64/cpu.c|"/sys/devices/system/cpu/cpu0/regs/identification/midr_el1"
prealloc/include/prealloc/ctx.h|"/sys"
prealloc/include/prealloc/ctx.h|"/proc"
prealloc/limits/cgroup.c|"/sys/"
vfio/device.c|"/sys/bus/pci/devices/%s/driver_override, unbind, reprobe)"
vfio/map.c|"/proc/self/fd/%d"'

# findings ROOT: "unrooted: FILE:LINE: STRING" for each such string in ROOT.
findings() {
	(cd "$1" && find prealloc vfio \( -path prealloc/cli -o -path prealloc/hook \) -prune -o \
		-type f \( -name '*.c' -o -name '*.h' \) -print | sort |
		xargs grep -nHoE '(sys_path|proc_path|proc_value)?[^"]*"/(sys|proc)(/[^"]*)?"' 2> /dev/null) |
		while IFS= read -r hit; do
			local file=${hit%%:*} rest=${hit#*:}
			local line=${rest%%:*} text=${rest#*:}
			local str=\"${text#*\"}
			[[ $text =~ (sys_path|proc_path|proc_value)\( ]] && continue
			grep -qxF -- "$file|$str" <<< "$allowed" && continue
			echo "unrooted: $file:$line: $str"
		done
}

planted=$(mktemp -d)
trap 'rm -rf "$planted"' EXIT
mkdir -p "$planted"/prealloc/{limits,cli,memory} "$planted"/vfio
cat > "$planted"/prealloc/limits/a.c <<'EOF'
	proc_value(ctx, "/sys/vm/min_free_kbytes", NULL);
	if (proc_path(ctx, path, sizeof(path), "/sys/vm/compact_memory") == 0)
	f = fopen("/sys/kernel/mm/hugepages", "re");
EOF
echo '	fd = open("/proc/self/pagemap", O_RDONLY);' > "$planted"/prealloc/memory/pagemap.c
echo '	fd = open("/proc/meminfo", O_RDONLY);' > "$planted"/prealloc/memory/b.h
echo '	f = fopen("/proc/mounts", "re");' > "$planted"/prealloc/cli/c.c
echo '	snprintf(p, n, "/proc/%d/stat", pid);' > "$planted"/vfio/d.c
got=$(findings "$planted")
selftest "$got" 'unrooted: prealloc/limits/a.c:3: "/sys/kernel/mm/hugepages"
unrooted: prealloc/memory/b.h:1: "/proc/meminfo"
unrooted: vfio/d.c:1: "/proc/%d/stat"' \
	"paths under a root, a read named here, the CLI's own" \
	'a sysfs path opened directly|unrooted: prealloc/limits/a.c:3: "/sys/kernel/mm/hugepages"' \
	'a procfs path in a header|unrooted: prealloc/memory/b.h:1: "/proc/meminfo"' \
	"another process's procfs file in vfio/|unrooted: vfio/d.c:1: \"/proc/%d/stat\""

found=$(findings "$src")
diag "$(lines unrooted)" "$(none "$(lines unrooted)")" \
	"every sysfs and procfs path of the library goes through the ctx's roots, or is named with its reason"
echo "1..$tap_n"
[ "$tap_fails" -eq 0 ]
