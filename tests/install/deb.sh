#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The Debian package (packaging/): build it with CPack in BUILD_DIR, check
# it with lintian (no error), install it with dpkg into a private root
# (its own admin directory: the machine's packages are not touched), and
# use what was installed: the daemon mounts the simulated card, the man
# pages render, the systemd units and the library's pkg-config file are
# there, and the installed units pass systemd-analyze verify with the
# programs they name where the package put them (issue 24 item 9: they
# named /usr/local/bin while the package installs /usr/bin).  Exit 77 when
# a tool is missing (CI=true: failure).
set -u
BUILD=$1
# shellcheck source=tests/install/common.sh
. "$(dirname "$0")/common.sh"
need_tools cpack dpkg dpkg-deb lintian man fusermount3 systemd-analyze
install_scratch gafs-deb

(cd "$BUILD" && cpack --config CPackConfig.cmake -G DEB -B "$T/pkg") >"$T/log" 2>&1 ||
	fail "cpack failed"
deb=$(ls "$T"/pkg/gpuasyncfs_*_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no .deb produced"
info=$(dpkg-deb -f "$deb" Package Depends Section)
grep -q '^Package: gpuasyncfs$' <<<"$info" || fail "package name: $info"
grep -q 'fuse3' <<<"$info" || fail "no dependency on fuse3: $info"
# gpuasync-consumer (when built, with CUDA) needs the NVIDIA driver's libcuda.so.1.
dpkg-deb -c "$deb" >"$T/contents" || fail "dpkg-deb -c failed"
if grep -q '/usr/bin/gpuasync-consumer$' "$T/contents"; then
	dpkg-deb -f "$deb" Suggests | grep -q 'libcuda1' ||
		fail "gpuasync-consumer is packaged but libcuda1 is not suggested"
	dpkg-deb -f "$deb" Description | grep -q 'libcuda.so.1' ||
		fail "the description does not say gpuasync-consumer needs libcuda.so.1"
fi
lintian --fail-on error "$deb" >"$T/log" 2>&1 || fail "lintian reports errors"

mkdir -p "$T/root" "$T/admin/updates" "$T/admin/info" "$T/mnt"
: >"$T/admin/status"
dpkg --instdir="$T/root" --admindir="$T/admin" --force-depends --force-not-root \
	--no-triggers -i "$deb" >"$T/log" 2>&1 || fail "dpkg -i failed"
dpkg --admindir="$T/admin" -s gpuasyncfs 2>/dev/null | grep -q '^Status: install ok installed' ||
	fail "dpkg does not list it as installed"
R=$T/root/usr
for f in bin/gpuasyncfs lib/libgpuasync.so.0 lib/pkgconfig/gpuasync.pc include/gpuasync/gpuasync.h \
	share/doc/gpuasyncfs/copyright share/doc/gpuasyncfs/changelog.gz \
	lib/systemd/system/gpuasyncfs@.service \
	share/man/man8/gpuasyncfs.8.gz share/man/man5/gpuasyncfs.conf.5.gz share/man/man3/libgpuasync.3.gz; do
	[ -e "$R/$f" ] || fail "not installed: /usr/$f"
done
for page in man8/gpuasyncfs.8.gz man5/gpuasyncfs.conf.5.gz man3/libgpuasync.3.gz; do
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$R/share/man/$page" 2>&1 >/dev/null)
	[ -z "$out" ] || fail "man -l $page: $out"
done
LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$R/share/man/man8/gpuasyncfs.8.gz" 2>/dev/null |
	grep -q 'gpuasyncfs' || fail "gpuasyncfs(8) renders empty"

# The installed template unit, where systemd looks, as systemd would read it
# once the package is installed at /: what it runs must be a program the
# package installed (looked up in the private root) or one the system has.
# Nothing else is changed, so a unit naming any other path fails verify.
# /etc/gpuasyncfs.conf is a conffile (kept on upgrade) and sets nothing.
[ "$(dpkg-deb -I "$deb" conffiles)" = /etc/gpuasyncfs.conf ] ||
	fail "conffiles: $(dpkg-deb -I "$deb" conffiles 2>&1)"
[ -f "$T/root/etc/gpuasyncfs.conf" ] || fail "not installed: /etc/gpuasyncfs.conf"
! grep -Ev '^(;.*|\[[a-z]+\]|)$' "$T/root/etc/gpuasyncfs.conf" ||
	fail "/etc/gpuasyncfs.conf sets something (above)"
U=$T/units
mkdir -p "$U"
u=gpuasyncfs@.service
sed -E "s#^(Exec[A-Za-z]*=[-@:+!]*)(/usr/bin/gpuasyncfs)( |\$)#\1$T/root\2\3#" \
	"$R/lib/systemd/system/$u" >"$U/$u"
grep -q "^ExecStart=/usr/bin/gpuasyncfs " "$R/lib/systemd/system/$u" ||
	fail "$u: ExecStart is not the packaged /usr/bin/gpuasyncfs: $(grep '^ExecStart=' \
		"$R/lib/systemd/system/$u")"
ln -s gpuasyncfs@.service "$U/gpuasyncfs@datadev_0.service"
out=$(systemd-analyze verify --man=no "$U/gpuasyncfs@datadev_0.service" 2>&1) ||
	fail "systemd-analyze verify on the installed unit: $out"
[ -z "$out" ] || fail "systemd-analyze verify complains about the installed unit: $out"

# The installed daemon mounts the simulated card.
"$R/bin/gpuasyncfs" --sim "$T/mnt" >"$T/log" 2>&1 || fail "the installed daemon failed"
mountpoint -q "$T/mnt" || fail "nothing mounted"
[ "$(cat "$T/mnt/device/backend")" = sim ] || fail "not the simulated card"
[ "$(cat "$T/mnt/device/version")" = 4 ] || fail "device/version is not 4"
# The installed Python package, where Debian's Python looks under /usr, reads it.
[ -f "$R/lib/python3/dist-packages/gpuasync/__init__.py" ] ||
	fail "the gpuasync Python package is not in /usr/lib/python3/dist-packages"
v=$(PYTHONPATH=$R/lib/python3/dist-packages /usr/bin/python3 -c \
	'import gpuasync, sys; print(gpuasync.Card(sys.argv[1]).registers.version)' "$T/mnt") ||
	fail "the installed gpuasync package cannot read the mount"
[ "$v" = 4 ] || fail "gpuasync.Card().registers.version is '$v', not 4"
fusermount3 -u "$T/mnt" || fail "cannot unmount"
dpkg --instdir="$T/root" --admindir="$T/admin" --force-not-root --no-triggers -r gpuasyncfs \
	>"$T/log" 2>&1 || fail "dpkg -r failed"
[ ! -e "$R/bin/gpuasyncfs" ] || fail "dpkg -r left the daemon"
echo "PASS: $(basename "$deb"): lintian clean of errors, installed, mounted, removed"
