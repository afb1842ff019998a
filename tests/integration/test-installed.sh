#!/bin/bash
# SPDX-License-Identifier: MIT
# What a user installs, run the way a user runs it: `meson install` laid
# over the real prefix with no loader cache entry (lib-installed.sh), and
# each program started with `env -i`, so nothing from the test runner's
# environment can find the library for it. The hook also from its copy
# under /etc, where `prealloc hook install` puts it.
. "$(dirname "$0")/lib-installed.sh"
. "$(dirname "$0")/lib.sh"
on_exit installed_cleanup

out=$(env -i "$PREALLOC" --version 2>&1)
check "env -i $PREALLOC --version: $out" [ "$out" = "prealloc ${VERSION:?}" ]
out=$(env -i "$PREALLOC" info 2>&1)
check "env -i prealloc info runs (exit 0)" [ $? -eq 0 ] || echo "$out" | sed 's/^/# /'

if [ "${HAVE_DOMAIN:-0}" = 1 ]; then
	out=$(env -i "$PREALLOC_DOMAIN" --help 2>&1)
	rc=$?
	check "env -i $PREALLOC_DOMAIN --help: exit 0 and its usage" \
		all_of '[ $rc -eq 0 ] && grep -q "^usage: prealloc-domain" <<< "$out"' ||
		echo "$out" | sed 's/^/# /'
else
	ok "# SKIP prealloc-domain: not built here (meson found no libvirt)"
fi

if [ "${HAVE_HOOK:-0}" = 1 ]; then
	out=$(env -i "$HOOK" x restore begin - < /dev/null 2>&1)
	check "env -i the installed hook at restore begin: exit 0, silent" [ $? -eq 0 -a -z "$out" ] ||
		echo "$out" | sed 's/^/# /'
	R=$TMP/root
	out=$(env -i "$PREALLOC" hook install --root "$R" 2>&1)
	check "env -i prealloc hook install --root: exit 0" [ $? -eq 0 ] || echo "$out" | sed 's/^/# /'
	copy=$R/etc/libvirt/hooks/qemu.d/prealloc
	out=$(env -i -C / "$copy" x restore begin - < /dev/null 2>&1)
	check "env -i the hook's copy under /etc runs: exit 0, silent" [ $? -eq 0 -a -z "$out" ] ||
		echo "$out" | sed 's/^/# /'
else
	ok "# SKIP the libvirt hook: not built here (meson found no libxml2)"
fi

# An embedding program builds against what pkg-config says was installed.
pc=$(dirname "$(find "$PREFIX" -name libprealloc.pc | head -1)")
out=$(env -i PATH="$PATH" PKG_CONFIG_PATH="$pc" sh -c \
	'cc -o "$1" "$2" $(pkg-config --cflags --libs libprealloc)' sh "$TMP/embed" \
	"${SOURCE_ROOT:?}/examples/embed.c" 2>&1)
check "examples/embed.c builds against the installed libprealloc.pc ($pc)" [ $? -eq 0 ] ||
	echo "$out" | sed 's/^/# /'
needed=$(readelf -d "$TMP/embed" 2>&1)
check "it links to the installed libprealloc.so.0" grep -q 'NEEDED.*libprealloc.so.0' <<< "$needed"

# The warm pool's unit: installed under the prefix, Type=notify, starting
# the installed program, and clean for systemd's own checker (PID 1 is not
# systemd here: it is verified, not started). --man=no: man-db may be absent.
unit=$PREFIX/lib/systemd/system/prealloc-warm.service
check "prealloc-warm.service is installed at $unit" [ -f "$unit" ]
check "it is Type=notify and starts the installed $BINDIR/prealloc warm serve" \
	all_of 'grep -qx "Type=notify" "$unit" && grep -qx "ExecStart=$BINDIR/prealloc warm serve" "$unit"'
if command -v systemd-analyze > /dev/null; then
	out=$(cd / && systemd-analyze verify --man=no "$unit" 2>&1)
	rc=$?
	check "systemd-analyze verify finds nothing to say about it (rc $rc)" \
		all_of '[ $rc -eq 0 ] && [ -z "$out" ]' || echo "$out" | sed 's/^/# /'
else
	ok "# SKIP systemd-analyze verify: systemd-analyze is not installed ($(command -v systemctl || echo no systemd))"
fi
finish
