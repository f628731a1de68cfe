#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The DKMS package (packaging/dkms): gpuasync-dkms's .deb, built with CPack in BUILD_DIR and
# checked with lintian, installed and removed with dpkg as on an operator's machine, its
# maintainer scripts unmodified, with Debian's dkms building gpuasync.ko for the Debian kernel
# the QEMU suites boot (this machine has its headers); then that kernel boots under QEMU with
# the modules DKMS installed and loads them by name.
#
# Nothing of this machine changes: it all runs in a private mount namespace whose /usr (so
# /usr/src and /lib/modules), /etc and dpkg's database are overlays on a tmpfs, and whose
# /var/lib/dkms (DKMS's tree and its module-signing key) is a tmpfs.  The machine's own
# kernel is not in /lib/modules (it is the host's), so Debian's dkms would build for no
# kernel; autoinstall_all_kernels (framework.conf, in the overlay) has it build for every
# kernel there, as it would for the running one on a real machine.
#
# Steps, in the namespace: dpkg -i (postinst: dkms add, build, install for the kernel, depmod);
# dkms remove and add again (the source added, nothing built or installed), then the kernel's
# own hook (/etc/kernel/postinst.d/dkms, run on every kernel install
# or update) must build and install it again (AUTOINSTALL); dpkg -r (prerm: dkms
# remove --all) must leave no module, no DKMS state, no source and nothing in modules.dep.
# In the guest (tests/install/dkms_init.sh): modprobe gpuasync (nv_p2p_stub comes as its
# dependency), the module's version, no emulator in it (no emulate parameters, none of its
# symbols in /proc/kallsyms, no emulated card), the stub's node, rmmod.  Exit 77 when a tool is missing or not root (CI=true: failure).
set -uo pipefail # boot() (tests/kmod/qemu.sh) judges the kernel log with a pipeline
BUILD=$1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/install/common.sh
. "$ROOT/tests/install/common.sh"
log() { echo "dkms: $*"; }
[ "$(id -u)" = 0 ] || skip "not root (dkms and a private mount namespace need it)"
for t in cpack dpkg dpkg-deb lintian dkms unshare qemu-system-x86_64 busybox cpio; do
	command -v "$t" >/dev/null || skip "no $t"
done
[ -x /usr/lib/dkms/common.postinst ] && [ -x /etc/kernel/postinst.d/dkms ] ||
	skip "Debian's dkms without common.postinst or its kernel hook"
# shellcheck source=tests/kmod/qemu.sh
. "$ROOT/tests/kmod/qemu.sh"
qemu_out "${GA_KMOD_OUT:-}" gafs-dkms
T=$OUT
TIMEOUT=${GA_KMOD_TIMEOUT:-900}
fail() {
	log "FAIL: $*"
	[ -f "$T/log" ] && tail -30 "$T/log"
	log "logs kept in $T"
	exit 1
}
KVER=$(guest_kver) || fail "no Debian kernel with headers in /lib/modules"
VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
[ -n "$VERSION" ] || fail "no project version in $BUILD/CMakeCache.txt"

(cd "$BUILD" && cpack --config CPackConfig.cmake -G DEB -D GA_PACKAGE=dkms -B "$T/pkg") \
	>"$T/log" 2>&1 || fail "cpack failed"
deb=$T/pkg/gpuasync-dkms_${VERSION}_all.deb
[ -f "$deb" ] || fail "no $(basename "$deb") produced"
info=$(dpkg-deb -f "$deb" Package Architecture Depends)
grep -q '^Depends: dkms' <<<"$info" || fail "no dependency on dkms: $info"
dpkg-deb -c "$deb" | grep "\./usr/src/gpuasync-$VERSION/dkms.conf\$" >/dev/null ||
	fail "no /usr/src/gpuasync-$VERSION/dkms.conf in the package"
lintian --fail-on error "$deb" >"$T/log" 2>&1 || fail "lintian reports errors"
log "$(basename "$deb"): lintian clean of errors"

# ---- in a private mount namespace: dpkg, dkms, the kernel hook, dpkg -r -------------------
mkdir -p "$T/guest"
cat >"$T/ns.sh" <<'EOF'
set -eu
T=$1 KVER=$2 VERSION=$3 DEB=$4
M=/lib/modules/$KVER
step() { echo "--- $*"; }
die() { echo "NSFAIL: $*"; exit 1; }
mount -t tmpfs gafs-dkms "$T/ovl"
for d in usr etc var/lib/dpkg; do
	n=${d//\//_}
	mkdir -p "$T/ovl/$n/up" "$T/ovl/$n/work"
	mount -t overlay "gafs-$n" -o "lowerdir=/$d,upperdir=$T/ovl/$n/up,workdir=$T/ovl/$n/work" "/$d"
done
mount -t tmpfs gafs-dkms-tree /var/lib/dkms
echo 'autoinstall_all_kernels="y"' >>/etc/dkms/framework.conf

step "dpkg -i $(basename "$DEB")"
dpkg -i "$DEB" || die "dpkg -i failed"
dkms status -m gpuasync -v "$VERSION" -k "$KVER" | grep -q ': installed' ||
	die "dkms does not list gpuasync/$VERSION as installed for $KVER: $(dkms status)"
for ko in gpuasync nv_p2p_stub; do
	ls "$M/updates/dkms/$ko.ko"* >/dev/null 2>&1 || die "no $M/updates/dkms/$ko.ko"
done
grep -q "^updates/dkms/gpuasync.ko[^:]*: updates/dkms/nv_p2p_stub.ko" "$M/modules.dep" ||
	die "modules.dep: $(grep gpuasync "$M/modules.dep")"
[ "$(modinfo -F version "$M/updates/dkms/gpuasync.ko"*)" = "$VERSION" ] ||
	die "the module's version is not the package's $VERSION"
[ "$(modinfo -F vermagic "$M/updates/dkms/gpuasync.ko"* | cut -d' ' -f1)" = "$KVER" ] ||
	die "the module is not built for $KVER"

step "dkms remove, dkms add (source added, nothing built), then the kernel's postinst hook"
dkms remove -m gpuasync -v "$VERSION" --all
! ls "$M/updates/dkms/gpuasync.ko"* >/dev/null 2>&1 || die "dkms remove left gpuasync.ko"
dkms add -m gpuasync -v "$VERSION"
dkms status -m gpuasync -v "$VERSION" | grep -q ': added' ||
	die "after dkms remove and add: $(dkms status -m gpuasync)"
/etc/kernel/postinst.d/dkms "$KVER" || die "the kernel hook failed"
dkms status -m gpuasync -v "$VERSION" -k "$KVER" | grep -q ': installed' ||
	die "the kernel hook did not build and install gpuasync again: $(dkms status)"
cp "$M/updates/dkms/"*.ko* "$M/modules.dep" "$T/guest/"

step "dpkg -r gpuasync-dkms"
dpkg -r gpuasync-dkms || die "dpkg -r failed"
[ -z "$(dkms status -m gpuasync)" ] || die "dkms still lists it: $(dkms status -m gpuasync)"
[ ! -e /var/lib/dkms/gpuasync ] || die "left /var/lib/dkms/gpuasync"
[ ! -e "/usr/src/gpuasync-$VERSION" ] || die "left /usr/src/gpuasync-$VERSION"
! ls "$M/updates/dkms/gpuasync.ko"* "$M/updates/dkms/nv_p2p_stub.ko"* >/dev/null 2>&1 ||
	die "left the modules in $M/updates/dkms"
! grep -q 'gpuasync\|nv_p2p_stub' "$M/modules.dep" || die "modules.dep still names them"
echo "NSPASS"
EOF
mkdir -p "$T/ovl"
log "dpkg and dkms in a private mount namespace, for kernel $KVER"
unshare -m --propagation private bash "$T/ns.sh" "$T" "$KVER" "$VERSION" "$deb" >"$T/log" 2>&1
grep -q '^NSPASS$' "$T/log" || fail "$(grep -m1 '^NSFAIL' "$T/log" || echo 'the namespace script stopped')"
grep '^--- ' "$T/log" | sed 's/^--- /dkms: ok: /'
# The machine's own trees are untouched.
[ ! -e "/usr/src/gpuasync-$VERSION" ] && [ ! -e /var/lib/dkms/gpuasync ] &&
	! ls "/lib/modules/$KVER/updates/dkms/gpuasync.ko"* >/dev/null 2>&1 ||
	fail "this machine's /usr/src, /var/lib/dkms or /lib/modules changed"

# ---- the guest: the Debian kernel with the modules DKMS built, loaded by name --------------
R=$T/root
guest_root "$R"
mkdir -p "$R/lib/modules/$KVER/updates/dkms"
cp "$T"/guest/*.ko* "$R/lib/modules/$KVER/updates/dkms/"
cp "$T/guest/modules.dep" "$R/lib/modules/$KVER/"
printf 'VERSION=%q\n' "$VERSION" >"$R/t/env"
cp "$ROOT/tests/install/dkms_init.sh" "$R/init"
guest_initramfs "$R" "" "$T/dkms.cpio.gz"
boot dkms "/boot/vmlinuz-$KVER" "$T/dkms.cpio.gz" 512 || fail "the guest failed (above)"
log "PASS: $(basename "$deb") installed by dpkg, built by dkms for $KVER, loaded in QEMU, removed"
[ "$KEEP" = 1 ] || rm -rf "$T"
