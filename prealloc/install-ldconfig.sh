#!/bin/sh
# SPDX-License-Identifier: MIT
# meson install's last step: refresh the loader's cache, so that a program
# linked against libprealloc (a VMM, examples/embed.c) finds the library
# under a prefix the cache did not list yet (/usr/local on Debian). Our own
# binaries carry an absolute RUNPATH and need no cache. Skipped for a
# staged install (DESTDIR: the files are not where they will run) and
# when not root (ldconfig could not write the cache).
[ -n "${DESTDIR:-}" ] && exit 0
[ "$(id -u)" -eq 0 ] || exit 0
PATH=$PATH:/sbin:/usr/sbin
command -v ldconfig > /dev/null 2>&1 || exit 0
exec ldconfig
