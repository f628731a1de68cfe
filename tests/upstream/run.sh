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
# shellcheck source=tests/upstream/common.sh
. "$ROOT/tests/upstream/common.sh"
upstream_setup upstream gpuasync-upstream 900
upstream_kver

# ---- the trees to test ---------------------------------------------------------
upstream_trees

# ---- our guest programs ------------------------------------------------------------
mkdir -p "$OUT/t"
guest_lib_program "$OUT/t/t_up" "$HERE/t_up.c" >"$OUT/t_up.log" 2>&1 ||
	{ log "FAIL: t_up does not build"; tail -20 "$OUT/t_up.log"; exit 1; }
FS_SKIP=
guest_gpuasyncfs "$OUT/t/gpuasyncfs" >"$OUT/fs.log" 2>&1 ||
	{ log "FAIL: gpuasyncfs does not build statically"; tail -20 "$OUT/fs.log"; exit 1; }
cp "$HERE/fs_up.sh" "$HERE/lanes_up.sh" "$OUT/t/"
# shellcheck source=tests/drp/host.sh
. "$ROOT/tests/drp/host.sh"
drp_build "$OUT/t" >"$OUT/drp.log" 2>&1 ||
	{ log "FAIL: tests/drp does not build"; tail -20 "$OUT/drp.log"; exit 1; }
FUSE=$(modprobe -S "$KVER" --show-depends fuse 2>/dev/null | awk '$1=="insmod"{print $2}' || true)

status=0
for name in "${names[@]}"; do
	log "$name: building upstream's modules for $KVER"
	R=$OUT/root-$name
	upstream_root "$name" "$R" || { status=1; continue; }
	cp "$OUT"/t/* "$R/t/"
	drp_root "$R"
	upstream_name "$name" >"$R/t/upstream_name"
	printf 'FS_SKIP=%q\nDRP_STRICT=%q\n' "$FS_SKIP" "${GA_DRP_STRICT:-0}" >"$R/t/env"
	cp "$HERE/init.sh" "$R/init"
	guest_initramfs "$R" "$FUSE" "$OUT/$name.cpio.gz"
	boot "$name" "/boot/vmlinuz-$KVER" "$OUT/$name.cpio.gz" 1024 || status=1
done

qemu_exit $status "PASS (${names[*]})"
