#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Conformance on SLAC's upstream driver (aes-stream-drivers): build its
# nvidia_p2p_stub, datadev_emulator and GPU-enabled datadev for the Debian
# kernel tests/kmod boots, boot it under QEMU with them, and run our library
# (t_up.c) and filesystem (fs_up.sh) suites against the emulated card,
# judged from the serial console like tests/kmod (any WARNING, oops, KASAN
# or lockdep report fails; upstream's stub warns at unload when a page
# table leaked).  Upstream's source is never part of this project: name a
# checkout, or its git directory and the refs to test.
#
#   GA_UPSTREAM_SRC=DIR    a checkout, or a git directory (bare or not)
#   GA_UPSTREAM_REFS=...   with a git directory: refs to test
#                          (default "main pre-release": 7.4/V4 and 7.5/V5)
#   GA_UPSTREAM_OUT=DIR    builds and logs (default: a temp dir, kept on failure)
#   GA_KMOD_TIMEOUT=S      per boot (default 900)
# Exit: 0 pass, 1 fail, 77 skipped (no source named, or not root and
# packages missing).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/upstream
log() { echo "upstream: $*"; }
SRC=${GA_UPSTREAM_SRC:-}
if [ -z "$SRC" ]; then
	log "SKIP: GA_UPSTREAM_SRC is not set (a checkout of github.com/slaclab/aes-stream-drivers, or its git directory)"
	exit 77
fi
[ -e "$SRC" ] || { log "FAIL: GA_UPSTREAM_SRC=$SRC does not exist"; exit 1; }
OUT=${GA_UPSTREAM_OUT:-}
KEEP=1
if [ -z "$OUT" ]; then
	OUT=$(mktemp -d /tmp/gpuasync-upstream.XXXXXX)
	KEEP=0
fi
mkdir -p "$OUT"
TIMEOUT=${GA_KMOD_TIMEOUT:-900}
# shellcheck source=tests/kmod/qemu.sh
. "$ROOT/tests/kmod/qemu.sh"

for p in linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static cpio kmod; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' && continue
	if [ "$(id -u)" != 0 ]; then
		log "SKIP: need root to install $p"
		exit 77
	fi
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends linux-headers-amd64 linux-image-amd64 qemu-system-x86 \
		busybox-static cpio kmod >"$OUT/apt.log" 2>&1 || { tail -20 "$OUT/apt.log"; exit 1; }
	break
done
KVER=$(guest_kver) || { log "FAIL: no Debian kernel with headers in /lib/modules"; exit 1; }

# ---- the trees to test ---------------------------------------------------------
names=()
if [ -d "$SRC/emulator" ] && [ -d "$SRC/data_dev" ]; then
	mkdir -p "$OUT/src-checkout"
	cp -a "$SRC/." "$OUT/src-checkout/"
	names+=(checkout)
else
	gitdir=$SRC
	[ -d "$SRC/.git" ] && gitdir=$SRC/.git
	for ref in ${GA_UPSTREAM_REFS:-main pre-release}; do
		mkdir -p "$OUT/src-$ref"
		git --git-dir="$gitdir" archive "$ref" | tar x -C "$OUT/src-$ref" ||
			{ log "FAIL: cannot export $ref from $gitdir"; exit 1; }
		names+=("$ref")
	done
fi

# ---- our guest programs ------------------------------------------------------------
mkdir -p "$OUT/t"
guest_lib_program "$OUT/t/t_up" "$HERE/t_up.c" >"$OUT/t_up.log" 2>&1 ||
	{ log "FAIL: t_up does not build"; tail -20 "$OUT/t_up.log"; exit 1; }
FS_SKIP=
guest_gpuasyncfs "$OUT/t/gpuasyncfs" >"$OUT/fs.log" 2>&1 ||
	{ log "FAIL: gpuasyncfs does not build statically"; tail -20 "$OUT/fs.log"; exit 1; }
cp "$HERE/fs_up.sh" "$OUT/t/"
FUSE=$(modprobe -S "$KVER" --show-depends fuse 2>/dev/null | awk '$1=="insmod"{print $2}' || true)

status=0
for name in "${names[@]}"; do
	tree=$OUT/src-$name
	log "$name: building upstream's modules for $KVER"
	if ! (make -C "$tree/emulator/gpu_stub" KVER="$KVER" &&
		make -C "$tree/emulator/driver" KVER="$KVER" &&
		make -C "$tree/data_dev/driver" KVER="$KVER" \
			NVIDIA_DRIVERS="$tree/emulator/gpu_stub" GITV=gpuasync-conformance) \
		>"$OUT/$name.build.log" 2>&1; then
		log "FAIL: $name does not build (see $OUT/$name.build.log)"
		tail -20 "$OUT/$name.build.log"
		status=1
		continue
	fi
	R=$OUT/root-$name
	guest_root "$R"
	mkdir -p "$R/up"
	cp "$tree/emulator/gpu_stub/nvidia_p2p_stub.ko" "$tree/emulator/driver/datadev_emulator.ko" \
		"$tree/data_dev/driver/datadev.ko" "$R/up/"
	cp "$OUT"/t/* "$R/t/"
	echo "$name $(git --git-dir="${gitdir:-/nonexistent}" rev-parse --short "$name" 2>/dev/null || true)" \
		>"$R/t/upstream_name"
	printf 'FS_SKIP=%q\n' "$FS_SKIP" >"$R/t/env"
	cp "$HERE/init.sh" "$R/init"
	guest_initramfs "$R" "$FUSE" "$OUT/$name.cpio.gz"
	boot "$name" "/boot/vmlinuz-$KVER" "$OUT/$name.cpio.gz" 1024 || status=1
done

if [ $status = 0 ]; then
	log "PASS (${names[*]})"
	[ $KEEP = 1 ] || rm -rf "$OUT"
else
	log "FAIL (logs kept in $OUT)"
fi
exit $status
