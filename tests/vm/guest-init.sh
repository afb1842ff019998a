#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# /init of the VM rig's guest: mount the basics, run the tests, power off.
# The kernel passes unknown key=value boot parameters (prealloc_vm_variant,
# prealloc_vm_break) to us as environment variables.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /dev/hugepages
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp

sh /tests/guest-tests.sh
echo "VM-EXIT: $?"
sync
poweroff -f
