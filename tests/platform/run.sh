#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The platform doctor (gpuasyncfs --check) on real PCIe topologies: QEMU's
# q35 machine with its own PCIe parts (root ports, a switch, a second root
# complex on another NUMA node, a link forced to Gen1 x1, an IOMMU on and
# off), Debian's kernel under TCG, and a static gpuasyncfs run in the guest
# against the guest's real /sys.  init.sh (the guest's /init) checks every
# verdict against what this script built and prints one "KTEST ok|FAIL"
# line per step; boot() (tests/kmod/qemu.sh) judges the console.
#
# The machine (the same for every boot; BDFs as the guest enumerates them):
#   pcie.0 -- rp1 (00:02.0) -- switch up 01:00.0 -+- down 02:00.0 -- e1000e 03:00.0   card A
#          |                                      +- down 02:01.0 -- ivshmem 04:00.0  GPU A, 512M BAR
#          -- rp2 (00:03.0) -- e1000e 05:00.0                                         card B
#          -- rp3 (00:04.0) -- ivshmem 06:00.0                                        GPU B, 64M BAR
#          -- rp4 (00:05.0, x-speed=2_5 x-width=1) -- nvme 07:00.0                    card C, Gen1 x1
#          -- pxb-pcie (root complex pci0000:80, NUMA node 1) -+- rp5 -- ivshmem 81:00.0  GPU C
#                                                               +- rp6 -- e1000e 82:00.0   card D
# Boots: "off" (no IOMMU), "dma" (intel-iommu, intel_iommu=on: DMA groups,
# ACS redirect on the ports), "pt" (the same with iommu=pt: identity).
# Card C is QEMU's NVMe controller (a PCIe endpoint) with a 16 MiB RAM
# "persistent memory region" as BAR4: in the off boot standin.c writes a
# register image there and gpuasync.ko binds it (driver_override,
# reg_bar=4), a real PCI function in front of which the driver runs.
#
# Environment: GA_PLATFORM_OUT=DIR (default: a temp dir, removed on pass),
# GA_PLATFORM_BOOTS="off dma pt", GA_PLATFORM_TIMEOUT=S per boot (600).
# Exit: 0 pass, 1 fail, 77 skipped (packages missing and not root).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/platform
# shellcheck source=tests/kmod/qemu.sh
. "$ROOT/tests/kmod/qemu.sh"
qemu_out "${GA_PLATFORM_OUT:-}" gpuasync-platform
TIMEOUT=${GA_PLATFORM_TIMEOUT:-600}
BOOTS=${GA_PLATFORM_BOOTS:-off dma pt}
log() { echo "platform: $*"; }

qemu_packages linux-image-amd64 qemu-system-x86 busybox-static cpio
KVER=$(guest_kver) || { log "FAIL: no Debian kernel in /lib/modules"; exit 1; }

# The checker, static, as installed: the daemon's --check.
guest_gpuasyncfs "$OUT/gpuasyncfs" >"$OUT/build.log" 2>&1 ||
	{ log "FAIL: gpuasyncfs does not build statically"; tail -20 "$OUT/build.log"; exit 1; }

# gpuasync.ko's emulated card for the card_driver and stale checks (a
# GpuAsyncCore behind a real driver, read through the library), and a
# helper that leaves an address in its registers.
PKGS_KMOD="linux-headers-amd64"
KMOD=
if dpkg-query -W -f='${Status}' $PKGS_KMOD 2>/dev/null | grep -q 'ok installed' &&
	build_modules "/lib/modules/$KVER/build" "$OUT/kmod"; then
	KMOD=$OUT/kmod/kmod
	guest_lib_program "$OUT/poke" "$HERE/poke.c" >"$OUT/poke.log" 2>&1 ||
		{ log "FAIL: poke does not build"; tail -20 "$OUT/poke.log"; exit 1; }
	guest_lib_program "$OUT/standin" "$HERE/standin.c" >"$OUT/standin.log" 2>&1 ||
		{ log "FAIL: standin does not build"; tail -20 "$OUT/standin.log"; exit 1; }
	# kt hold: a live process with buffers registered (tests/kmod/kt.c).
	guest_kt "$OUT/kt" || { log "FAIL: kt does not build"; exit 1; }
elif [ "${CI:-}" = true ]; then
	log "FAIL: gpuasync.ko does not build (under CI=true nothing may be skipped)"
	exit 1
fi

R=$OUT/root
guest_root "$R"
cp "$OUT/gpuasyncfs" "$R/t/"
if [ -n "$KMOD" ]; then
	cp "$KMOD/gpuasync.ko" "$KMOD/nv_p2p_stub/nv_p2p_stub.ko" "$OUT/poke" "$OUT/standin" \
		"$OUT/kt" "$R/t/"
fi
cp "$HERE/init.sh" "$R/init"
FUSE=$(modprobe -S "$KVER" --show-depends fuse 2>/dev/null | awk '$1=="insmod"{print $2}' || true)
guest_initramfs "$R" "$FUSE" "$OUT/platform.cpio.gz"

machine() { # the topology above, as QEMU arguments
	# Two sockets, one CPU each: NUMA nodes must not split a socket.
	BOOT_QEMU_ARGS=(-machine q35 -smp 2,sockets=2,cores=1,threads=1
		-object memory-backend-ram,id=m0,size=512M -numa node,nodeid=0,cpus=0,memdev=m0
		-object memory-backend-ram,id=m1,size=512M -numa node,nodeid=1,cpus=1,memdev=m1
		-device pcie-root-port,id=rp1,bus=pcie.0,addr=0x2,chassis=1,slot=1
		-device x3130-upstream,id=up1,bus=rp1
		-device xio3130-downstream,id=dn1,bus=up1,chassis=2,slot=0
		-device xio3130-downstream,id=dn2,bus=up1,chassis=3,slot=1
		-device e1000e,bus=dn1,addr=0
		-object memory-backend-ram,id=bigbar,size=512M,share=on
		-device ivshmem-plain,memdev=bigbar,bus=dn2,addr=0
		-device pcie-root-port,id=rp2,bus=pcie.0,addr=0x3,chassis=4,slot=2
		-device e1000e,bus=rp2,addr=0
		-device pcie-root-port,id=rp3,bus=pcie.0,addr=0x4,chassis=5,slot=3
		-object memory-backend-ram,id=bar2,size=64M,share=on
		-device ivshmem-plain,memdev=bar2,bus=rp3,addr=0
		-device pcie-root-port,id=rp4,bus=pcie.0,addr=0x5,chassis=6,slot=4,x-speed=2_5,x-width=1
		-object memory-backend-ram,id=cardregs,size=16M
		-device nvme,serial=gpuasync-standin,pmrdev=cardregs,bus=rp4,addr=0
		-device pxb-pcie,id=pxb1,bus_nr=0x80,numa_node=1,bus=pcie.0,addr=0x6
		-device pcie-root-port,id=rp5,bus=pxb1,addr=0x0,chassis=7,slot=5
		-object memory-backend-ram,id=bar3,size=64M,share=on
		-device ivshmem-plain,memdev=bar3,bus=rp5,addr=0
		-device pcie-root-port,id=rp6,bus=pxb1,addr=0x1,chassis=8,slot=6
		-device e1000e,bus=rp6,addr=0)
}

status=0
for b in $BOOTS; do
	machine
	case $b in
	off) BOOT_APPEND="intel_iommu=off ga_platform=off" ;;
	dma) BOOT_QEMU_ARGS+=(-device intel-iommu)
	     BOOT_APPEND="intel_iommu=on iommu.passthrough=0 ga_platform=dma" ;;
	pt) BOOT_QEMU_ARGS+=(-device intel-iommu)
	    BOOT_APPEND="intel_iommu=on iommu.passthrough=1 ga_platform=pt" ;;
	*) log "FAIL: unknown boot '$b'"; exit 1 ;;
	esac
	boot "platform-$b" "/boot/vmlinuz-$KVER" "$OUT/platform.cpio.gz" 1024 || status=1
done
BOOT_QEMU_ARGS=()
BOOT_APPEND=

qemu_exit $status "PASS"
