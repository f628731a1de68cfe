#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# rogue itself on gpuasync.ko: SLAC's rogue (C++ core + pyrogue) built from
# Debian's packages, and axi-pcie-core's AxiPcieCore tree (useGpu) over
# rogue's AxiMemMap on the emulated card, in a QEMU guest, beside a
# gpuasyncfs mount of the same card.  What the guest checks
# (tests/rogue/card.py): pyrogue reads every variable of the tree; each
# value agrees with the mount's file for it (the mount's `pyrogue` index)
# and with its state.yaml; SaveConfig then LoadConfig round trips; the
# mount's settings.yaml loads in pyrogue, and pyrogue's SaveConfig file
# loads in the mount.  Firmware V4 and V5, judged from the serial console
# like tests/kmod (any kernel warning fails).
#
# The guest is tests/kmod's busybox initramfs; Python, rogue and the
# Debian libraries come from this machine's root, exported read-only to
# the guest over virtio-9p and entered with chroot.
#
# rogue's source is never part of this project: name it.
#   GA_ROGUE_SRC=PATH     slaclab/rogue: a checkout or a .tar.gz of one
#   GA_AXIPCIE_SRC=PATH   slaclab/axi-pcie-core (its python/ is enough): dir or .tar.gz
#   GA_SURF_SRC=PATH      slaclab/surf (its python/ is enough): dir or .tar.gz
#   GA_ROGUE_VERSION=V   the version rogue reports when its source has no git
#                         tags to describe (a tarball): default v6.14.0, the
#                         newest release the shared snapshot's docs name
#                         (surf checks rogue's version at import)
#   GA_KMOD_CACHE=DIR     where the rogue build is kept, keyed by its source
#                         and Debian's boost and Python (default
#                         /var/cache/gpuasync-kmod)
#   GA_ROGUE_OUT=DIR      builds and logs (default: a temp dir, kept on failure)
#   GA_KMOD_TIMEOUT=S     per boot (default 900)
# Exit: 0 pass, 1 fail, 77 skipped (a source not named, or not root and
# packages missing).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/rogue
CACHE=${GA_KMOD_CACHE:-/var/cache/gpuasync-kmod}
log() { echo "rogue: $*"; }

for v in GA_ROGUE_SRC GA_AXIPCIE_SRC GA_SURF_SRC; do
	if [ -z "${!v:-}" ]; then
		log "SKIP: $v is not set (GA_ROGUE_SRC: slaclab/rogue; GA_AXIPCIE_SRC, GA_SURF_SRC: axi-pcie-core's and surf's python trees; a directory or a .tar.gz each)"
		exit 77
	fi
	[ -e "${!v}" ] || { log "FAIL: $v=${!v} does not exist"; exit 1; }
done

# shellcheck source=tests/kmod/qemu.sh
. "$ROOT/tests/kmod/qemu.sh"
qemu_out "${GA_ROGUE_OUT:-}" gpuasync-rogue
TIMEOUT=${GA_KMOD_TIMEOUT:-900}

# ---- packages: the guest, rogue's build, pyrogue's imports ---------------------
qemu_packages linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static cpio kmod \
	cmake g++ libzmq3-dev libbz2-dev libboost-python-dev libboost-thread-dev \
	libboost-system-dev python3-dev python3-numpy python3-yaml python3-zmq python3-click \
	python3-parse python3-jsonpickle python3-sqlalchemy python3-serial
KVER=$(guest_kver) || { log "FAIL: no Debian kernel with headers in /lib/modules"; exit 1; }
PY=/usr/bin/python3

# unpack PATH DIR: a .tar.gz into DIR (its one top folder), or DIR -> PATH.
unpack() {
	rm -rf "$2"
	if [ -d "$1" ]; then
		ln -s "$(cd "$1" && pwd)" "$2"
	else
		mkdir -p "$2" && tar xzf "$1" -C "$2" --strip-components=1
	fi
}

# ---- rogue, built once per source, boost and Python -----------------------------
src_id() { # PATH: a content hash of a tarball or a directory
	if [ -d "$1" ]; then
		(cd "$1" && git rev-parse HEAD 2>/dev/null) ||
			(cd "$1" && find . -path ./build -prune -o -type f -print0 | sort -z |
				xargs -0 sha256sum | sha256sum | cut -c1-40)
	else
		sha256sum "$1" | cut -c1-40
	fi
}
# A tarball carries no tags for rogue's version (it would say v0.0.0).
version=()
[ -d "$GA_ROGUE_SRC/.git" ] || version=(-DROGUE_VERSION="${GA_ROGUE_VERSION:-v6.14.0}")
key=$( {
	src_id "$GA_ROGUE_SRC"
	echo "${version[@]}"
	dpkg-query -W -f='${Version}' libboost-python-dev libzmq3-dev python3-dev python3-numpy
} | sha256sum | cut -c1-12)
RG=$CACHE/rogue-$key
if [ -f "$RG/.complete" ]; then
	log "rogue: cached build $RG"
else
	log "rogue: building from $GA_ROGUE_SRC into $RG (a few minutes per core)"
	rm -rf "$RG"
	unpack "$GA_ROGUE_SRC" "$OUT/rogue-src"
	t0=$SECONDS
	# ROGUE_INSTALL=custom puts the library, pyrogue and the rogue module
	# under one prefix; NO_ROCEV2: Debian's rdma-core is not needed here.
	if ! (cmake -S "$OUT/rogue-src" -B "$OUT/rogue-build" -DCMAKE_BUILD_TYPE=Release \
		-DROGUE_INSTALL=custom -DROGUE_DIR="$RG" -DNO_ROCEV2=ON \
		-DPython3_EXECUTABLE=$PY "${version[@]}" &&
		cmake --build "$OUT/rogue-build" -j"$(nproc)" &&
		cmake --install "$OUT/rogue-build") >"$OUT/rogue-build.log" 2>&1; then
		log "FAIL: rogue does not build (log $OUT/rogue-build.log):"
		grep -E 'error|Error' "$OUT/rogue-build.log" | head -20
		rm -rf "$RG"
		exit 1
	fi
	log "rogue: built in $((SECONDS - t0)) s"
	touch "$RG/.complete"
	rm -rf "$OUT/rogue-build"
fi
unpack "$GA_AXIPCIE_SRC" "$OUT/axi-pcie-core"
unpack "$GA_SURF_SRC" "$OUT/surf"
PYPATH=$RG/python:$OUT/axi-pcie-core/python:$OUT/surf/python
# On this machine first: a rogue that does not import here will not in the guest.
if ! env PYTHONPATH="$PYPATH" LD_LIBRARY_PATH="$RG/lib" PYTHONDONTWRITEBYTECODE=1 \
	$PY -c 'import rogue, pyrogue, axipcie, surf.axi' >"$OUT/import.log" 2>&1; then
	log "FAIL: rogue, pyrogue or the python trees do not import:"
	tail -20 "$OUT/import.log"
	exit 1
fi

# ---- the guest -----------------------------------------------------------------
log "kernel $KVER, output in $OUT"
build_modules "/lib/modules/$KVER/build" "$OUT/stock" || exit 1
mkdir -p "$OUT/t"
guest_gpuasyncfs "$OUT/t/gpuasyncfs" >"$OUT/fs.log" 2>&1 ||
	{ log "FAIL: gpuasyncfs does not build statically (see $OUT/fs.log)"; exit 1; }
# Debian's modules the guest loads, deps first: FUSE, virtio PCI, 9p.
KMODS=$(for m in fuse virtio_pci 9pnet_virtio 9p; do
	modprobe -S "$KVER" --show-depends "$m" 2>/dev/null | awk '$1=="insmod"{print $2}'
done | awk '!seen[$0]++')
R=$OUT/root
guest_root "$R"
cp "$OUT"/t/* "$R/t/"
cp "$OUT/stock/kmod/gpuasync.ko" "$OUT/stock/kmod/nv_p2p_stub/nv_p2p_stub.ko" "$R/t/"
# What the guest needs of this machine's paths (the same inside its chroot).
printf 'RG=%q\nPYPATH=%q\nCARD_PY=%q\nPY=%q\n' "$RG" "$PYPATH" "$HERE/card.py" "$PY" >"$R/t/env"
cp "$HERE/init.sh" "$R/init"
guest_initramfs "$R" "$KMODS" "$OUT/rogue.cpio.gz"
# This machine's root, read-only: multidevs=remap keeps inode numbers of
# its several filesystems apart.
BOOT_QEMU_ARGS=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
status=0
boot rogue "/boot/vmlinuz-$KVER" "$OUT/rogue.cpio.gz" 1536 || status=1

if [ $status = 0 ]; then
	log "PASS"
	[ "$KEEP" = 1 ] || rm -rf "$OUT"
else
	log "FAIL (output kept in $OUT)"
fi
exit $status
