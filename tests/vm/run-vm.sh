#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot a QEMU TCG guest with several NUMA nodes and a device bound to vfio-pci,
# run guest-tests.sh inside it, and turn its results into an exit code:
# 0 all passed, 1 something failed (or the guest did not finish), 77 skipped
# (only when the rig cannot be built here, with the reason printed).
#
#   run-vm.sh [--variant two-node|memory-only|qemu-vfio|arm64-two-node|libvirt-two-node]
#             [--source DIR] [--static-build DIR] [--build DIR] [--timeout SECONDS]
#             [--keep] [--rig-kernel]
#
#   two-node     2 nodes x 768M, one CPU each, intel-iommu + edu device:
#                placement, worker CPUs, clear, per-node pools, VFIO.
#   memory-only  3 nodes x 512M, node 2 has memory but no CPU and is nearest
#                to node 1: it must be served by node 1's CPUs.
#   qemu-vfio    2 nodes x 1.5G, intel-iommu + edu, and QEMU itself in the image:
#                the guest times an inner QEMU start with -device vfio-pci
#                over a file prealloc prepared vs over a fresh file (its own
#                meson test: the image is about 20x bigger).
#   arm64-two-node  two-node's placement, worker CPUs, clear and pools in an
#                aarch64 TCG guest (-M virt -cpu max,pauth-impdef=on), no VFIO:
#                Debian's arm64 kernel and busybox, the cross-built static
#                prealloc (tests/cross/install.sh --rig fetches them).
#   libvirt-two-node  2 nodes x 1.5G on the rig kernel (always): this host's
#                root shared read-only over 9p under a tmpfs overlay, the
#                build's `meson install` (--build DIR, default
#                SOURCE/build) on top; Debian's libvirtd with prealloc's
#                hook starts TCG L2 guests through virsh (guest-libvirt.sh).
#
# Environment: PREALLOC_VM_BREAK=placement makes one guest check expect the
# wrong node (to prove a failure inside reaches the exit code);
# PREALLOC_VM_KERNEL=/boot/vmlinuz-X picks the guest kernel; --rig-kernel
# boots the kernel tests/vm/build-kernel.sh builds (6.12 with IOMMUFD and
# VFIO_DEVICE_CDEV, everything built in; cached after the first build);
# PREALLOC_VM_QEMU_MB=N sets qemu-vfio's inner guest RAM (default 512);
# PREALLOC_CACHE_ROOT (default /var/cache) holds the caches: the arm64 rig's
# files in prealloc-cross/rig, the rig kernel in prealloc-rig.
# shellcheck disable=SC2054 # the commas in arrays belong to QEMU's option values
set -u -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
variant=two-node
source_dir=$(cd "$here/../.." && pwd)
static_build=
build_dir=
qemu_timeout=
keep=0
rig_kernel=0

while [ $# -gt 0 ]; do
	case "$1" in
	--variant) variant=$2; shift ;;
	--source) source_dir=$2; shift ;;
	--static-build) static_build=$2; shift ;;
	--build) build_dir=$2; shift ;;
	--timeout) qemu_timeout=$2; shift ;;
	--keep) keep=1 ;;
	--rig-kernel) rig_kernel=1 ;;
	*) echo "usage: $0 [--variant two-node|memory-only|qemu-vfio|arm64-two-node|libvirt-two-node]" \
		"[--source DIR] [--static-build DIR] [--build DIR] [--timeout S] [--keep] [--rig-kernel]" >&2
		exit 1 ;;
	esac
	shift
done
[ -n "$static_build" ] || static_build=$source_dir/build-vm-static
[ -n "$build_dir" ] || build_dir=$source_dir/build
case "$variant" in
two-node|memory-only|qemu-vfio|arm64-two-node) ;;
libvirt-two-node) rig_kernel=1 ;;	# overlayfs, cgroups: Debian's 6.1 is modular
*) echo "unknown variant '$variant'" >&2; exit 1 ;;
esac
# libvirtd, QEMU and an L2 QEMU's starts under nested TCG: minutes.
[ -n "$qemu_timeout" ] || { [ "$variant" = libvirt-two-node ] && qemu_timeout=540 || qemu_timeout=140; }

work=
qemu_pid=
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
	if [ -n "$work" ]; then
		if [ "$keep" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

step() { printf '[%5.1fs] %s\n' "$SECONDS" "$*"; }
SECONDS=0

# ---- packages ------------------------------------------------------------
arch=x86_64
[ "$variant" = arm64-two-node ] && arch=aarch64
# aarch64: the cross toolchain, qemu-system-arm, the arm64 kernel and busybox.
if [ "$arch" = aarch64 ]; then
	rig=$(realpath -m -- "${PREALLOC_CACHE_ROOT:-/var/cache}")/prealloc-cross/rig
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		step "cross toolchain, qemu-system-aarch64, arm64 kernel and busybox"
		"$source_dir/tests/cross/install.sh" --rig ||
			{ echo "FAIL: tests/cross/install.sh --rig"; exit 1; }
	else
		missing=
		{ [ -x "$rig/busybox" ] && [ -s "$rig/vmlinuz" ]; } ||
			missing="$missing the arm64 kernel and busybox in $rig"
		command -v qemu-system-aarch64 >/dev/null || missing="$missing qemu-system-arm"
		command -v aarch64-linux-gnu-gcc >/dev/null || missing="$missing gcc-aarch64-linux-gnu"
		if [ -n "$missing" ]; then
			echo "SKIP: the aarch64 rig needs$missing, and this is not root on Debian" \
				"to fetch them (tests/cross/install.sh --rig)"
			exit 77
		fi
	fi
fi
# What the x86 rig needs, as "command package" pairs; installed from Debian if
# missing (CI machines start fresh).
missing=
[ "$arch" = x86_64 ] && for pair in qemu-system-x86_64:qemu-system-x86 busybox:busybox-static \
	    modprobe:kmod cpio:cpio gzip:gzip; do
	command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
done
[ "$arch" = x86_64 ] && ! ls /boot/vmlinuz-* >/dev/null 2>&1 && missing="$missing linux-image-amd64"
# libvirt-two-node runs the host's own libvirtd: setup.sh installs it.
if [ "$variant" = libvirt-two-node ]; then
	for c in libvirtd virsh; do
		command -v "$c" >/dev/null 2>&1 || {
			echo "SKIP: libvirt-two-node runs this host's $c, which is not installed" \
				"(setup.sh installs libvirt-daemon-system)"
			exit 77
		}
	done
	[ "$(id -u)" = 0 ] || { echo "SKIP: libvirt-two-node shares this host's root: root only"; exit 77; }
fi
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "SKIP: the VM rig needs$missing, and this is not root on Debian to install them"
		exit 77
	fi
	step "installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get update -q >/dev/null ||
		! apt-get install -y -q --no-install-recommends \
			qemu-system-x86 linux-image-amd64 busybox-static kmod cpio gzip >/dev/null; then
		echo "FAIL: apt-get install$missing failed"
		exit 1
	fi
fi

# The guest kernel: the newest installed image with vfio-pci as a module.
kernel=${PREALLOC_VM_KERNEL:-}
if [ "$rig_kernel" = 1 ]; then
	[ "$arch" = x86_64 ] || { echo "FAIL: --rig-kernel is an x86-64 kernel"; exit 1; }
	step "the rig kernel (tests/vm/build-kernel.sh)"
	if ! kernel=$("$here/build-kernel.sh"); then
		if [ "$(id -u)" != 0 ]; then
			echo "SKIP: the rig kernel is not built" \
				"(${PREALLOC_CACHE_ROOT:-/var/cache}/prealloc-rig), and building it needs root"
			exit 77
		fi
		echo "FAIL: tests/vm/build-kernel.sh"
		exit 1
	fi
fi
[ "$arch" = aarch64 ] && [ -z "$kernel" ] && kernel=$rig/vmlinuz
if [ -z "$kernel" ]; then
	# shellcheck disable=SC2045 # ls -v: version order; the names have no spaces
	for k in $(ls -v /boot/vmlinuz-* 2>/dev/null); do
		v=${k#/boot/vmlinuz-}
		[ -n "$(find "/lib/modules/$v/kernel/drivers/vfio/pci" -name 'vfio-pci.ko*' \
			2>/dev/null)" ] && kernel=$k
	done
fi
if [ -n "$kernel" ] && [ ! -r "$kernel" ] && [ "$(id -u)" != 0 ]; then
	echo "SKIP: $kernel is readable by root only, and this is not root"
	exit 77
fi
if [ -z "$kernel" ] || [ ! -r "$kernel" ]; then
	echo "FAIL: no readable /boot/vmlinuz-* with vfio-pci modules (install linux-image-amd64)"
	exit 1
fi
kver=${kernel#/boot/vmlinuz-}
[ "$rig_kernel" = 1 ] && kver="rig $(basename "$kernel")"
[ "$arch" = aarch64 ] && kver=$(cat "$rig/kernel-package")

# ---- static binaries -----------------------------------------------------
# A second meson build dir of the same source, linked statically; a lock keeps
# two variants started at once from building it together.
# The aarch64 one is a cross build (tests/cross/aarch64-linux-gnu.ini: static too).
static_opts=(--default-library=static -Dprefer_static=true -Dc_link_args=-static)
if [ "$arch" = aarch64 ]; then
	static_build=$static_build-arm64
	static_opts=(--cross-file "$source_dir/tests/cross/aarch64-linux-gnu.ini"
		-Dlibvirt_hook=disabled -Dlibvirt_domain=disabled -Dman=disabled)
fi
mkdir -p "$static_build" || exit 1
exec 9>"$static_build.lock"
flock 9
if [ ! -f "$static_build/build.ninja" ]; then
	step "configuring static build in $static_build"
	meson setup "$static_build" "$source_dir" "${static_opts[@]}" -Dbuildtype=debugoptimized \
		>"$static_build.log" 2>&1 ||
		{ cat "$static_build.log"; echo "FAIL: meson setup of the static build"; exit 1; }
fi
checkers="tests/vm/vm_placement_check tests/vm/vm_json_get tests/vm/vm_vfio_check tests/vm/vm_membind
	tests/vm/vm_iommufd_check
	tests/vm/vm_vfio_bench tests/vm/vm_as_user tests/vm/vm_qemu_start"
step "building static binaries"
# shellcheck disable=SC2086 # a list of targets
ninja -C "$static_build" $checkers >"$static_build.log" 2>&1 ||
	{ cat "$static_build.log"; echo "FAIL: static build of the VM checkers"; exit 1; }
cli=
# (the list goes through a file: grep -q closing the pipe early would fail it)
ninja -C "$static_build" -t targets all >"$static_build.targets" 2>&1
if ! grep -q '^prealloc/cli/prealloc:' "$static_build.targets"; then
	echo "FAIL: the static build defines no prealloc/cli/prealloc target"
	exit 1
fi
ninja -C "$static_build" prealloc/cli/prealloc >"$static_build.log" 2>&1 ||
	{ cat "$static_build.log"; echo "FAIL: static build of the CLI"; exit 1; }
cli=$static_build/prealloc/cli/prealloc
flock -u 9
for b in $checkers ${cli:+prealloc/cli/prealloc}; do
	if readelf -l "$static_build/$b" 2>/dev/null | grep -q 'Requesting program interpreter'; then
		echo "FAIL: $static_build/$b is dynamically linked; the guest has no libc"
		exit 1
	fi
done

# ---- initramfs -------------------------------------------------------------
work=$(mktemp -d /tmp/prealloc-vm.XXXXXX) || exit 1
root=$work/root
mkdir -p "$root"/{bin,dev,proc,sys,tmp,lib/modules,tests} || exit 1
busybox=$(command -v busybox)
[ "$arch" = aarch64 ] && busybox=$rig/busybox
cp "$busybox" "$root/bin/busybox" || exit 1
if readelf -l "$root/bin/busybox" 2>/dev/null | grep -q 'program interpreter'; then
	echo "FAIL: $busybox is not static (install busybox-static)"
	exit 1
fi
# Every program in the image is built for the guest's architecture.
for b in "$root/bin/busybox" "$static_build/prealloc/cli/prealloc"; do
	m=$(readelf -h "$b" 2>/dev/null | awk -F: '/Machine:/ { gsub(/^ +/, "", $2); print $2 }')
	case "$arch:$m" in
	x86_64:*X86-64*|aarch64:AArch64) ;;
	*) echo "FAIL: $b is for '$m', not the $arch guest"; exit 1 ;;
	esac
done
cp "$here/guest-init.sh" "$root/init" && chmod 755 "$root/init" || exit 1
cp "$here/guest-tests.sh" "$root/tests/guest-tests.sh" || exit 1
for b in $checkers; do cp "$static_build/$b" "$root/bin/" || exit 1; done
[ -n "$cli" ] && { cp "$cli" "$root/bin/prealloc" || exit 1; }
# libvirt-two-node: the build installed as a user would (`meson install
# --destdir`: the programs carry an absolute RUNPATH to their library), and
# where the guest finds each; the guest lays it over the host's root.
if [ "$variant" = libvirt-two-node ]; then
	if ! meson install -C "$build_dir" --destdir "$root/dest" --no-rebuild --quiet \
		>"$work/install.log" 2>&1; then
		cat "$work/install.log"
		echo "FAIL: meson install -C $build_dir --destdir (build it first: ninja -C $build_dir)"
		exit 1
	fi
	cp "$here/guest-libvirt.sh" "$here/guest-libvirt-vfio.sh" "$root/tests/" || exit 1
	: >"$root/tests/libvirt.env"
	for p in bin/prealloc bin/prealloc-domain libexec/prealloc/prealloc-libvirt-hook; do
		f=$(cd "$root/dest" && find . -path "*/$p" -type f | head -n1)
		[ -n "$f" ] || { echo "FAIL: meson install put no $p"; exit 1; }
		v=$(basename "$p" | tr a-z- A-Z_)
		[ "$v" = PREALLOC_LIBVIRT_HOOK ] && v=HOOK
		echo "$v=${f#.}" >>"$root/tests/libvirt.env"
	done
	f=$(grep ^PREALLOC= "$root/tests/libvirt.env")
	echo "PREFIX=${f#PREALLOC=}" | sed 's|/bin/prealloc$||' >>"$root/tests/libvirt.env"
fi

# vfio-pci and what it needs, in load order, decompressed for busybox insmod
# (x86: the aarch64 guest has no VFIO device).
: >"$root/modules.list"
[ "$arch" = aarch64 ] || [ "$rig_kernel" = 1 ] || for ko in $(modprobe -S "$kver" --show-depends vfio-pci | awk '$1 == "insmod" { print $2 }' |
	    awk '!seen[$0]++'); do
	name=$(basename "$ko")
	name=${name%.xz}; name=${name%.zst}; name=${name%.gz}
	case "$ko" in
	*.xz) xz -dc "$ko" ;;
	*.zst) zstd -qdc "$ko" ;;
	*.gz) gzip -dc "$ko" ;;
	*) cat "$ko" ;;
	esac >"$root/lib/modules/$name" || { echo "FAIL: cannot unpack $ko"; exit 1; }
	echo "$name" >>"$root/modules.list"
done
if [ "$arch" = x86_64 ] && [ "$rig_kernel" = 0 ] && ! grep -q '^vfio-pci.ko$' "$root/modules.list"; then
	echo "FAIL: modprobe -S $kver --show-depends vfio-pci listed no vfio-pci.ko"
	exit 1
fi

# qemu-vfio: this host's QEMU, to run inside the guest. Only what an inner
# `-machine q35 -nodefaults -accel tcg -bios qboot.rom -device vfio-pci` needs:
# the binary, every library ldd lists (at the same paths, the loader too), the
# TCG accelerator module (Debian builds accelerators as modules; QEMU looks
# for them in its configured module directory, kept here) and qboot.
if [ "$variant" = qemu-vfio ]; then
	qemu_bin=$(command -v qemu-system-x86_64)
	accel=$(find /usr/lib /usr/lib64 -name accel-tcg-x86_64.so 2>/dev/null | head -n1)
	if [ ! -r /usr/share/qemu/qboot.rom ]; then
		echo "FAIL: no /usr/share/qemu/qboot.rom for the inner QEMU"
		exit 1
	fi
	mkdir -p "$root/usr/bin" "$root/usr/share/qemu" || exit 1
	cp "$qemu_bin" "$root/usr/bin/qemu-system-x86_64" &&
		cp /usr/share/qemu/qboot.rom "$root/usr/share/qemu/" || exit 1
	# (one ldd per file: given two, it prints a "FILE:" header for each)
	libs=$(for f in "$qemu_bin" ${accel:+"$accel"}; do ldd "$f"; done |
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' |
		sort -u)
	[ -n "$accel" ] && libs="$libs $accel"
	for lib in $libs; do
		if ! mkdir -p "$root$(dirname "$lib")" || ! cp -L "$lib" "$root$lib"; then
			echo "FAIL: cannot copy $lib for the inner QEMU"
			exit 1
		fi
	done
	if [ ! -e "$root/lib64/ld-linux-x86-64.so.2" ]; then
		echo "FAIL: ldd $qemu_bin named no /lib64/ld-linux-x86-64.so.2"
		exit 1
	fi
	step "inner QEMU: $qemu_bin, $(wc -w <<<"$libs") libraries and modules"
fi
# The QEMU image stays uncompressed: gunzip of it under TCG takes longer than
# reading it.
if [ "$variant" = qemu-vfio ]; then
	initrd=$work/initramfs.cpio
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$initrd" || exit 1
else
	initrd=$work/initramfs.cpio.gz
	(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$initrd" || exit 1
fi
step "initramfs $(($(stat -c %s "$initrd") / 1024)) KiB, kernel $kver"

# ---- boot ------------------------------------------------------------------
if [ "$arch" = aarch64 ]; then
	# pauth-impdef: QEMU's own pointer-authentication hash, far faster under
	# TCG than the architected QARMA; GICv3 for two CPUs and their NUMA nodes.
	machine=(-accel tcg,thread=multi -cpu max,pauth-impdef=on -machine virt,gic-version=3
		-smp 2)
else
	machine=(-accel tcg,thread=multi -cpu max -machine q35 -smp 2,sockets=2,cores=1,threads=1)
fi
# two_nodes MIB: two nodes of MIB MiB each, one CPU each.
two_nodes() {
	machine+=(-m $(($1 * 2))M
		-object memory-backend-ram,id=m0,size=$1M
		-object memory-backend-ram,id=m1,size=$1M
		-numa node,nodeid=0,cpus=0,memdev=m0
		-numa node,nodeid=1,cpus=1,memdev=m1)
}
case "$variant" in
two-node|arm64-two-node)
	two_nodes 768
	;;
libvirt-two-node)
	# Per node: the kernel's share, libvirtd's and two L2 QEMUs' RSS (their
	# binaries and libraries are page cache of the 9p share), the overlay's
	# tmpfs, and at most 192 MiB of hugepages (a cell, a warm file).
	two_nodes 1536
	;;
qemu-vfio)
	# Node 0 holds the prepared file and the fresh one (2 x 512M of 2M
	# pages) beside the kernel and the 60 MB image.
	two_nodes 1536
	;;
memory-only)
	# Node 2: memory, no CPU; nearer to node 1 (15) than to node 0 (30).
	machine+=(-m 1536M
		-object memory-backend-ram,id=m0,size=512M
		-object memory-backend-ram,id=m1,size=512M
		-object memory-backend-ram,id=m2,size=512M
		-numa node,nodeid=0,cpus=0,memdev=m0
		-numa node,nodeid=1,cpus=1,memdev=m1
		-numa node,nodeid=2,memdev=m2
		-numa dist,src=0,dst=1,val=20
		-numa dist,src=0,dst=2,val=30
		-numa dist,src=1,dst=2,val=15)
	;;
esac
[ "$arch" = x86_64 ] &&
	machine+=(-device intel-iommu,intremap=on -device edu,dma_mask=0xffffffffffff)
# This host's root, read-only (QEMU, running as root, passes its owners and
# modes through: security_model=none); its own mounts (/proc, /run...) get
# inode numbers of their own (multidevs=remap). The TCG cache: libvirtd, its
# QEMU capability probe and two L2 QEMUs are far more code than the other
# variants run (QEMU's default for a system guest is 1 GiB; 512 MiB keeps
# what it translated without a flush in these runs).
if [ "$variant" = libvirt-two-node ]; then
	machine[1]=tcg,thread=multi,tb-size=512
	machine+=(-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot)
fi
# A second IOMMU group holding two devices: a PCIe-to-PCI bridge aliases the
# requester IDs behind it. Its edu goes to vfio-pci, its serial port keeps
# the 8250 driver (built into the kernel): that group is not viable.
[ "$variant" = two-node ] && machine+=(-device pcie-pci-bridge,id=br0,bus=pcie.0
	-device edu,bus=br0,addr=1 -device pci-serial,bus=br0,addr=2)
[ "$arch" = x86_64 ] && [ -r /usr/share/qemu/qboot.rom ] &&
	machine+=(-bios /usr/share/qemu/qboot.rom)
append="console=ttyS0 panic=-1 intel_iommu=on iommu=pt quiet prealloc_vm_variant=$variant"
[ "$rig_kernel" = 1 ] && append="$append prealloc_vm_iommufd=1"
qemu_system=qemu-system-x86_64
if [ "$arch" = aarch64 ]; then
	append="console=ttyAMA0 panic=-1 quiet prealloc_vm_variant=$variant"
	qemu_system=qemu-system-aarch64
fi
[ -n "${PREALLOC_VM_BREAK:-}" ] && append="$append prealloc_vm_break=$PREALLOC_VM_BREAK"
[ -n "${PREALLOC_VM_QEMU_MB:-}" ] && append="$append prealloc_vm_qemu_mb=$PREALLOC_VM_QEMU_MB"

console=$work/console.log
step "booting $variant guest (timeout ${qemu_timeout}s)"
timeout --kill-after=5 "$qemu_timeout" "$qemu_system" "${machine[@]}" \
	-display none -nodefaults -no-reboot -serial "file:$console" -monitor none \
	-kernel "$kernel" -initrd "$initrd" -append "$append" \
	</dev/null >"$work/qemu.log" 2>&1 &
qemu_pid=$!
wait "$qemu_pid"
qemu_rc=$?
qemu_pid=
step "guest exited (qemu rc $qemu_rc)"

# ---- results -------------------------------------------------------------
tr -d '\r' <"$console" | sed 's/^/guest| /'
[ -s "$work/qemu.log" ] && sed 's/^/qemu| /' "$work/qemu.log"
results=$(tr -d '\r' <"$console" | grep -E '^VM-(TEST|DONE)')
passed=$(grep -c '^VM-TEST: PASS' <<<"$results")
failed=$(grep -c '^VM-TEST: FAIL' <<<"$results")
skipped=$(grep -c '^VM-TEST: SKIP' <<<"$results")
if ! grep -q '^VM-DONE' <<<"$results"; then
	if [ "$qemu_rc" = 124 ] || [ "$qemu_rc" = 137 ]; then
		echo "FAIL: guest did not finish within ${qemu_timeout}s"
	else
		echo "FAIL: guest stopped before its tests finished (qemu rc $qemu_rc)"
	fi
	failed=$((failed + 1))
fi
echo
grep -E '^VM-TEST: (FAIL|SKIP)' <<<"$results"
echo "$variant: $passed passed, $failed failed, $skipped skipped (${SECONDS}s)"
if [ "$failed" -gt 0 ]; then
	exit 1
elif [ "$passed" -eq 0 ]; then
	echo "nothing ran"
	exit 1
fi
exit 0
