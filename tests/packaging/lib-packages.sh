# SPDX-License-Identifier: MIT
# Sourced by the packaging tests (test-packages.sh, test-systemd.sh): a
# session of their own, TAP, the .debs built from a copy of the tree at its
# version and at VERSION+pkgtest1 (for the upgrade), and a Debian 12 root
# (make-root.sh, cached) under an overlay at $mnt. Every mount is made in a
# mount namespace of the test's own, so it goes with the test however the
# test ends. Usage: . lib-packages.sh SOURCE_ROOT. Root.
set -u
export LC_ALL=C

# A session of its own under a forwarder (tests/lib/session.sh), in a mount
# namespace of its own: meson's SIGTERM reaches the test, which still gets
# to clean up.
. "$(dirname "${BASH_SOURCE[0]}")/../lib/session.sh"
own_session PKGTEST_SESSION unshare --mount --propagation private -- "$@"

src=${1:?usage: $0 SOURCE_ROOT}
here=$(cd "$(dirname "$0")" && pwd)
count=0 fails=0
ok() { count=$((count + 1)); echo "ok $count - $*"; }
fail() { count=$((count + 1)); fails=$((fails + 1)); echo "not ok $count - $*"; }
skip() { count=$((count + 1)); echo "ok $count # SKIP $*"; }
# check DESC CMD...: ok or not ok, and the verdict.
check() { local d=$1; shift; if "$@"; then ok "$d"; else fail "$d"; return 1; fi; }
diag() { sed 's/^/# /'; }
all_of() { eval "$1"; }
finish() { echo "1..$count"; [ "$fails" = 0 ]; exit $?; }
bail() { fail "$*"; finish; }

[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root (dpkg-buildpackage, debootstrap, chroot)"; exit 0; }

tmp=$(mktemp -d /tmp/prealloc-packaging.XXXXXX) || exit 1
mnt=$tmp/root
arch=$(dpkg --print-architecture)

# copy_tree DIR: the tree's files (git's view where there is one: tracked and
# untracked, not ignored; build directories never).
copy_tree() {
	mkdir -p "$1"
	if git -C "$src" rev-parse --git-dir > /dev/null 2>&1; then
		(cd "$src" && git ls-files -co --exclude-standard -z | tar --null -T - -cf -) | tar -C "$1" -xf -
	else
		# A scratch copy (the mutation harness's): its build directories left out.
		local d excludes=(--exclude=./obj-*)
		for d in "$src"/*/; do
			[ -d "$d/meson-private" ] && excludes+=("--exclude=./$(basename "$d")")
		done
		tar -C "$src" "${excludes[@]}" -cf - . | tar -C "$1" -xf -
	fi
}

# build DIR: dpkg-buildpackage, its log kept; the .debs land in DIR/..
build() {
	(cd "$1" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" \
		dpkg-buildpackage -us -uc -b > ../build.log 2>&1)
}

# build_both: the packages at the tree's $version in $tmp/v1 and at $newer
# in $tmp/v2 (bails out where either build fails); two TAP points.
build_both() {
	local start=$SECONDS deps
	mkdir -p "$tmp/v1" "$tmp/v2"
	copy_tree "$tmp/v1/src"
	version=$(cd "$tmp/v1/src" && dpkg-parsechangelog -S Version)
	if ! deps=$(cd "$tmp/v1/src" && dpkg-checkbuilddeps 2>&1); then
		echo "$deps" | diag
		bail "the build dependencies are installed (apt-get build-dep ./; setup.sh installs them)"
	fi
	build "$tmp/v1/src" || { tail -n 30 "$tmp/v1/build.log" | diag; bail "dpkg-buildpackage -us -uc -b"; }
	debs=$(cd "$tmp/v1" && find . -maxdepth 1 -name '*.deb' ! -name '*-dbgsym_*' -printf '%f ' | sort)
	ok "dpkg-buildpackage -us -uc -b from a copy of the tree: $debs($((SECONDS - start)) s)"
	copy_tree "$tmp/v2/src"
	newer=$version+pkgtest1
	{ printf 'prealloc (%s) UNRELEASED; urgency=medium\n\n  * The packaging test'"'"'s upgrade.\n\n -- %s  %s\n\n' \
		"$newer" "$(cd "$tmp/v2/src" && dpkg-parsechangelog -S Maintainer)" "$(date -R)"
	  cat "$tmp/v2/src/debian/changelog"; } > "$tmp/v2/changelog" &&
		mv "$tmp/v2/changelog" "$tmp/v2/src/debian/changelog"
	build "$tmp/v2/src" || { tail -n 30 "$tmp/v2/build.log" | diag; bail "dpkg-buildpackage of $newer"; }
	ok "rebuilt at $newer ($((SECONDS - start)) s)"
}

# lay_root: a fresh Debian 12 root (make-root.sh) under an overlay at $mnt,
# the .debs apt downloads kept in the cache's apt-archives; sets $base, $cache.
lay_root() {
	base=$("$here/make-root.sh") || bail "a fresh Debian 12 root (make-root.sh)"
	cache=$(dirname "$base")
	mkdir -p "$mnt" "$tmp/upper" "$tmp/work" "$cache/apt-archives/partial"
	mount -t overlay overlay -o "lowerdir=$base,upperdir=$tmp/upper,workdir=$tmp/work" "$mnt" ||
		bail "overlay over $base"
	cp /etc/resolv.conf "$mnt/etc/resolv.conf"
}

# in_root CMD...: CMD chrooted in the root, apt without questions.
in_root() { chroot "$mnt" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
	HOME=/root LC_ALL=C.UTF-8 "$@"; }

# apt_install ARGS...: apt-get install in the root (the built .debs and their
# dependencies; gcc and pkg-config for test-packages.sh's C program, removed
# after it; systemd-sysv, test-systemd.sh's init); the lists fetched again
# once if stale.
apt_install() {
	# apt-packages: gcc pkg-config systemd-sysv (and the built .debs, in the tests' root only)
	in_root apt-get install -y -q --no-install-recommends "$@" > "$tmp/apt.log" 2>&1 && return 0
	in_root apt-get update -qq >> "$tmp/apt.log" 2>&1 &&
		# apt-packages: gcc pkg-config systemd-sysv (as above)
		in_root apt-get install -y -q --no-install-recommends "$@" >> "$tmp/apt.log" 2>&1
}
