#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The RPMs (packaging/): configure and build this tree for RHEL/Rocky 9's layout
# (-DGA_LAYOUT=rpm: /usr/lib64, Python 3.9's site-packages) in a scratch directory, build
# gpuasyncfs and gpuasync-dkms with CPack's RPM generator from the same description as the
# .debs, and check them:
#   - rpmlint with packaging/<package>.rpmlintrc (the findings accepted, each with its
#     reason) reports no error and no warning;
#   - the same files as the .deb: every path of the .deb built from the same description is
#     in the RPM, but for the layout (lib -> lib64, python3/dist-packages ->
#     python3.9/site-packages) and Debian's copyright and changelog (RPM has its License tag
#     and %changelog); gpuasync-dkms's /usr/src tree is the .deb's;
#   - the dependencies: fuse3, inih and python(abi) = 3.9, not libcuda (as the .deb, which
#     only suggests it); the scriptlets: ldconfig, dkms add/install and dkms remove;
#   - installed with Debian's rpm into a private root (its own database; --nodeps, since the
#     root holds no fuse3 or inih packages; --noscripts, since it holds no shell or ldconfig
#     to run them with) and used from there: the daemon says its version and mounts the
#     simulated card, the library loads, the Python package (checked to parse as Python 3.9)
#     reads the mount, the units and the pkg-config file name /usr/bin and /usr/lib64,
#     rpm -V finds everything as packaged, rpm -e removes it all.
# Not tested (no such machine here): installing on RHEL/Rocky with dnf, which resolves the
# dependencies (fuse3-libs, inih from EPEL, the sonames of the libraries this machine built
# against), and the scriptlets run by a real rpm there.  Exit 77 when a tool is missing
# (CI=true: failure).
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/install/common.sh
. "$SRC/tests/install/common.sh"
need_tools cmake cpack rpm rpmbuild rpmlint rpm2cpio dpkg-deb python3 fusermount3
install_scratch gafs-rpm

B=$T/build
nice cmake -S "$SRC" -B "$B" -DCMAKE_INSTALL_PREFIX=/usr -DGA_LAYOUT=rpm -DGA_SANITIZE=OFF \
	>"$T/log" 2>&1 || fail "configure (GA_LAYOUT=rpm) failed"
grep -q '^CMAKE_INSTALL_LIBDIR:PATH=lib64$' "$B/CMakeCache.txt" || fail "GA_LAYOUT=rpm did not pick lib64"
nice cmake --build "$B" -j"$(nproc)" >"$T/log" 2>&1 || fail "build failed"
for g in "" "-D GA_PACKAGE=dkms"; do
	# shellcheck disable=SC2086 # $g is two words or none
	(cd "$B" && cpack --config CPackConfig.cmake -G RPM $g -B "$T/pkg") >"$T/log" 2>&1 ||
		fail "cpack -G RPM $g failed"
	# shellcheck disable=SC2086
	(cd "$B" && cpack --config CPackConfig.cmake -G DEB $g -B "$T/pkg") >"$T/log" 2>&1 ||
		fail "cpack -G DEB $g failed"
done
# A build of Debian's layout must not make an RPM (it would put the library where RHEL's
# loader does not look).
if [ -f "${1:-}/CPackConfig.cmake" ] && grep -q 'CPACK_GA_LAYOUT "deb"' "$1/CPackConfig.cmake"; then
	(cd "$1" && cpack --config CPackConfig.cmake -G RPM -B "$T/debpkg") >"$T/log" 2>&1 &&
		fail "cpack -G RPM made a package of a GA_LAYOUT=deb build"
	grep -q 'GA_LAYOUT=rpm' "$T/log" || fail "the refusal does not say to configure -DGA_LAYOUT=rpm"
fi
rpm_main=$(ls "$T"/pkg/gpuasyncfs-*.x86_64.rpm 2>/dev/null | head -1)
rpm_dkms=$(ls "$T"/pkg/gpuasync-dkms-*.noarch.rpm 2>/dev/null | head -1)
deb_main=$(ls "$T"/pkg/gpuasyncfs_*.deb 2>/dev/null | head -1)
deb_dkms=$(ls "$T"/pkg/gpuasync-dkms_*.deb 2>/dev/null | head -1)
[ -n "$rpm_main" ] && [ -n "$rpm_dkms" ] && [ -n "$deb_main" ] && [ -n "$deb_dkms" ] ||
	fail "not every package was produced: $(ls "$T/pkg")"

for p in "$rpm_main:gpuasyncfs" "$rpm_dkms:gpuasync-dkms"; do
	rpmlint -r "$SRC/packaging/${p##*:}.rpmlintrc" "${p%:*}" >"$T/log" 2>&1
	grep -q ' 0 errors, 0 warnings' "$T/log" || fail "rpmlint: $(grep -E ': [EW]: ' "$T/log" | head -20)"
done
echo "rpmlint: no error, no warning beyond those packaging/*.rpmlintrc accept"

# The same files as the .debs, but for the layout and Debian's own.
deb_files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print $6 }'; }
rpm_files() { rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$1" | awk '$1 !~ /^d/ { print $2 }'; }
deb_files "$deb_main" | sed -e 's#^/usr/lib/python3/dist-packages/#/usr/lib/python3.9/site-packages/#' \
	-e 's#^/usr/lib/\([^/]*\)$#/usr/lib64/\1#' -e 's#^/usr/lib/\(pkgconfig\|cmake\)/#/usr/lib64/\1/#' |
	grep -v '^/usr/share/doc/gpuasyncfs/\(copyright\|changelog.gz\)$' | sort >"$T/deb.files"
rpm_files "$rpm_main" | grep -v '^/usr/lib/.build-id/' | sort >"$T/rpm.files"
diff "$T/deb.files" "$T/rpm.files" >"$T/log" || fail "the RPM's files differ from the .deb's (< deb, > rpm)"
deb_files "$deb_dkms" | grep '^/usr/src/' | sort >"$T/deb.files"
rpm_files "$rpm_dkms" | sort >"$T/rpm.files"
diff "$T/deb.files" "$T/rpm.files" >"$T/log" || fail "gpuasync-dkms: the RPM's files differ from the .deb's"
echo "files: the .debs' (layout aside): $(wc -l <"$T/deb.files") in gpuasync-dkms"

req=$(rpm -qpR "$rpm_main")
for r in fuse3 'fuse3-libs >= 3.10' inih 'python(abi) = 3.9' 'libfuse3.so.3()(64bit)'; do
	grep -qxF "$r" <<<"$req" || fail "gpuasyncfs does not require '$r': $req"
done
! grep -q 'libcuda\|pkgconfig(' <<<"$req" || fail "gpuasyncfs requires $(grep 'libcuda\|pkgconfig(' <<<"$req")"
rpm -qp --scripts "$rpm_main" | grep -q '/sbin/ldconfig' || fail "no ldconfig scriptlet"
grep -qx dkms <(rpm -qpR "$rpm_dkms") || fail "gpuasync-dkms does not require dkms"
s=$(rpm -qp --scripts "$rpm_dkms")
grep -q 'dkms add -m gpuasync' <<<"$s" && grep -q 'dkms install -m gpuasync' <<<"$s" &&
	grep -q 'dkms remove -m gpuasync .*--all' <<<"$s" || fail "gpuasync-dkms scriptlets: $s"
rpm -qp --changelog "$rpm_main" | grep -q 'First package' || fail "no %changelog from packaging/changelog"

# Installed into a private root, and used from there.
R=$T/root
mkdir -p "$R" "$T/mnt"
# Debian's rpm keeps its database in ~/.rpmdb; RHEL's place, inside the root.
RPMR=(rpm --root "$R" --dbpath /var/lib/rpm)
"${RPMR[@]}" --initdb || fail "rpm --initdb failed"
"${RPMR[@]}" -i --nodeps --noscripts "$rpm_main" "$rpm_dkms" >"$T/log" 2>&1 || fail "rpm -i failed"
"${RPMR[@]}" -q gpuasyncfs gpuasync-dkms >"$T/log" 2>&1 || fail "rpm -q does not list both"
"${RPMR[@]}" -V --nodeps gpuasyncfs gpuasync-dkms >"$T/log" 2>&1 || fail "rpm -V: files differ"
U=$R/usr
v=$("$U/bin/gpuasyncfs" --version 2>&1 | head -1)
[ "$v" = "gpuasyncfs $(rpm -qp --qf '%{VERSION}' "$rpm_main") (libgpuasync $(rpm -qp --qf '%{VERSION}' \
	"$rpm_main"))" ] || fail "the installed daemon's --version: $v"
LD_LIBRARY_PATH=$U/lib64 python3 -c 'import ctypes, sys; l = ctypes.CDLL(sys.argv[1]);
l.ga_last_error.restype = ctypes.c_char_p; l.ga_last_error()' "$U/lib64/libgpuasync.so.0" ||
	fail "the installed libgpuasync.so.0 does not load"
grep -q '^libdir=${prefix}/lib64$' "$U/lib64/pkgconfig/gpuasync.pc" ||
	fail "gpuasync.pc: $(grep '^libdir' "$U/lib64/pkgconfig/gpuasync.pc")"
grep -q '^ExecStart=/usr/bin/gpuasyncfs ' "$U/lib/systemd/system/gpuasyncfs@.service" ||
	fail "gpuasyncfs@.service is not in /usr/lib/systemd/system or its ExecStart is not /usr/bin/gpuasyncfs"
# The operator's /etc/gpuasyncfs.conf survives an upgrade.
rpm -qp --qf '[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm_main" | grep -qx 'cn /etc/gpuasyncfs.conf' ||
	fail "/etc/gpuasyncfs.conf is not %config(noreplace): $(rpm -qp --qf \
		'[%{FILEFLAGS:fflags} %{FILENAMES}\n]' "$rpm_main" | grep /etc)"
[ -f "$R/etc/gpuasyncfs.conf" ] || fail "not installed: /etc/gpuasyncfs.conf"
[ -f "$U/src/gpuasync-$(rpm -qp --qf '%{VERSION}' "$rpm_dkms")/dkms.conf" ] ||
	fail "no dkms.conf under /usr/src"
PY=$U/lib/python3.9/site-packages
python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), feature_version=(3, 9))' \
	"$PY/gpuasync/__init__.py" || fail "the Python package does not parse as Python 3.9 (RHEL 9's)"
"$U/bin/gpuasyncfs" --sim "$T/mnt" >"$T/log" 2>&1 || fail "the installed daemon failed"
mountpoint -q "$T/mnt" || fail "nothing mounted"
v=$(PYTHONPATH=$PY python3 -c 'import gpuasync, sys; print(gpuasync.Card(sys.argv[1]).registers.version)' \
	"$T/mnt") || fail "the installed gpuasync package cannot read the mount"
[ "$v" = 4 ] || fail "gpuasync.Card().registers.version is '$v', not 4"
fusermount3 -u "$T/mnt" || fail "cannot unmount"
"${RPMR[@]}" -e --nodeps --noscripts gpuasyncfs gpuasync-dkms >"$T/log" 2>&1 || fail "rpm -e failed"
left=$(find "$R" -path "$R/var" -prune -o -type f -print | head -5)
[ -z "$left" ] || fail "rpm -e left: $left"
echo "PASS: $(basename "$rpm_main") and $(basename "$rpm_dkms"): rpmlint, the .debs' files, installed into a private root, used, removed"
