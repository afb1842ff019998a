# SPDX-License-Identifier: MIT
# Sourced FIRST by a test that must run what a user installs, the way a
# user's machine runs it: the build is installed with `meson install
# --destdir`, that tree is laid over the real prefix in a private mount
# namespace (an overlay: the rest of the machine stays as it is, the host's
# /usr/local is never written), and the script runs again in there under a
# clean environment: no LD_LIBRARY_PATH or LD_PRELOAD from `meson test`, no
# loader cache entry for libprealloc. The installed programs then find their
# library as they would on a machine where `meson install` just ran, or not
# at all. Afterwards PREALLOC, HOOK and PREALLOC_DOMAIN name the installed
# programs; daemons the test starts inherit the namespace and the clean
# environment.
#
# Needs from meson: BUILD_ROOT, PREFIX, BINDIR, LIBEXECDIR (absolute).
# INSTALLED_KEEP: names of further variables to carry into the clean
# environment.
if [ -z "${PREALLOC_INSTALLED_DEST:-}" ]; then
	: "${BUILD_ROOT:?}" "${PREFIX:?}" "${BINDIR:?}" "${LIBEXECDIR:?}"
	if [ "$(id -u)" -ne 0 ]; then
		echo "needs root: a private mount namespace shows the installed tree at $PREFIX"
		exit 77
	fi
	grep -qw overlay /proc/filesystems || modprobe overlay 2> /dev/null
	if ! grep -qw overlay /proc/filesystems; then
		echo "this kernel has no overlay filesystem (not in /proc/filesystems, no module):"
		echo "the installed tree cannot be shown at $PREFIX without writing there"
		exit 77
	fi
	if [ ! -d "$PREFIX" ]; then
		echo "Bail out! the prefix $PREFIX does not exist: nothing to lay the install over"
		exit 1
	fi
	dest=$(mktemp -d /tmp/prealloc-installed.XXXXXX) || exit 1
	if ! meson install -C "$BUILD_ROOT" --destdir "$dest" --no-rebuild --quiet \
		> "$dest.log" 2>&1; then
		sed 's/^/# /' "$dest.log"
		rm -rf "$dest" "$dest.log"
		echo "Bail out! meson install --destdir failed"
		exit 1
	fi
	rm -f "$dest.log"
	keep=()
	for v in BUILD_ROOT PREFIX BINDIR LIBEXECDIR PREALLOC_TEST_SESSION ${INSTALLED_KEEP:-}; do
		[ -n "${!v+x}" ] && keep+=("$v=${!v}")
	done
	# The mount is undone with the namespace, when its last process (the
	# test, a daemon it started) is gone.
	exec unshare --mount --propagation private -- \
		env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root LANG=C.UTF-8 PREALLOC_INSTALLED_DEST="$dest" "${keep[@]}" \
		bash -c 'mount -t overlay overlay \
			-o "lowerdir=$PREALLOC_INSTALLED_DEST$PREFIX:$PREFIX" "$PREFIX" || {
				echo "Bail out! cannot lay the installed tree over $PREFIX"
				rm -rf "$PREALLOC_INSTALLED_DEST"; exit 1; }
			exec "$@"' bash "$0" "$@"
fi
export PREALLOC=$BINDIR/prealloc
export HOOK=$LIBEXECDIR/prealloc/prealloc-libvirt-hook
export PREALLOC_DOMAIN=$BINDIR/prealloc-domain
# installed_cleanup: for lib.sh's on_exit: the overlay off, the staged tree gone.
installed_cleanup() {
	umount "$PREFIX" 2> /dev/null
	rm -rf --one-file-system "${PREALLOC_INSTALLED_DEST:?}"
}
