#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Upstream's GPU tools on OUR driver: build gpuasync.ko and nv_p2p_stub.ko
# for the Debian kernel tests/kmod boots, and, from a checkout of SLAC's
# aes-stream-drivers, its dmaGpuIoctlTest, rdmaTestEmu and dmaGpuToggleTest
# (unmodified, linked statically); boot QEMU with the emulated card in
# upstream mode (emulate_upstream=1: version 4 for main, 5 for the 7.5
# pre-release) and run each tool GA_UPSTREAM_TOOL_RUNS times (default 20):
# the ioctl test, rdmaTestEmu's basic run, --sweep and 10,000-frame soak
# (upstream CI's arguments), and the toggle test.  Every run must pass; a
# run that lost one of the tools' own races with the card's tick (the card's
# event log shows it delivered as it should: tools_init.sh's upstream_race,
# tested by test_races.sh) is run again and counted, at most 1 + runs/10
# times per tool.  Judged from the serial console as tests/kmod does.
#
#   GA_UPSTREAM_SRC, GA_UPSTREAM_REFS, GA_UPSTREAM_OUT: as tests/upstream/run.sh
#   GA_UPSTREAM_TOOL_RUNS=N   runs of each tool (default 20)
#   GA_UPSTREAM_POLL_US=U     the emulated card's tick (default 1000, as
#                             upstream's emulator)
#   GA_KMOD_TIMEOUT=S         per boot (default 3600)
# Exit: 0 pass, 1 fail, 77 skipped (no source named).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/upstream/common.sh
. "$ROOT/tests/upstream/common.sh"
upstream_setup upstream-tools gpuasync-uptools 3600
upstream_kver
RUNS=${GA_UPSTREAM_TOOL_RUNS:-20}
POLL=${GA_UPSTREAM_POLL_US:-1000}
command -v g++ >/dev/null || { log "FAIL: no g++ (build-essential)"; exit 1; }

upstream_trees

log "building gpuasync.ko for $KVER"
build_modules "/lib/modules/$KVER/build" "$OUT/ours" || { log "FAIL: our modules do not build"; exit 1; }

# dmaGpuToggleTest runs `dmesg --ctime --level=...` through popen(): that
# takes util-linux's dmesg, and a /bin/sh that finds it on PATH (busybox's
# shell would run its own applet); the guest's /init keeps busybox's shell.
guest_dmesg() { # ROOTDIR
	local lib bin
	rm -f "$1/bin/dmesg" "$1/bin/sh"
	cp /usr/bin/dmesg "$1/bin/dmesg"
	cp /bin/dash "$1/bin/sh"
	for bin in /usr/bin/dmesg /bin/dash; do
		for lib in $(ldd "$bin" | grep -o '/[^ ]*'); do
			mkdir -p "$1$(dirname "$lib")"
			cp -L "$lib" "$1$lib"
		done
	done
}

status=0
for name in "${names[@]}"; do
	tree=$OUT/src-$name
	version=4
	grep -q 'expected 5' "$tree/data_dev/app/src/dmaGpuIoctlTest.cpp" && version=5
	log "$name: building upstream's tools (firmware version $version)"
	mkdir -p "$OUT/bin-$name"
	for tool in dmaGpuIoctlTest rdmaTestEmu dmaGpuToggleTest; do
		g++ -static -O2 -std=c++17 -w -I"$tree/include" -I"$tree/common/app_lib" \
			-I"$tree/emulator/gpu_stub/src" -DDEFAULT_AXI_DEVICE=\"/dev/datadev_0\" \
			-o "$OUT/bin-$name/$tool" "$tree/data_dev/app/src/$tool.cpp" \
			"$tree"/common/app_lib/*.cpp -lpthread >>"$OUT/$name.tools.log" 2>&1 ||
			{ log "FAIL: $name: $tool does not build (see $OUT/$name.tools.log)"; status=1; continue 2; }
	done
	R=$OUT/root-$name
	guest_root "$R"
	guest_dmesg "$R"
	mkdir -p "$R/up"
	cp "$OUT/bin-$name"/* "$R/up/"
	cp "$OUT/ours/kmod/gpuasync.ko" "$OUT/ours/kmod/nv_p2p_stub/nv_p2p_stub.ko" "$R/t/"
	printf 'VERSION=%s\nRUNS=%s\nPOLL=%s\nUPSTREAM=%q\n' "$version" "$RUNS" "$POLL" \
		"$(upstream_name "$name")" >"$R/t/env"
	cp "$HERE/tools_init.sh" "$R/init"
	guest_initramfs "$R" "" "$OUT/$name.tools.cpio.gz"
	boot "$name-tools" "/boot/vmlinuz-$KVER" "$OUT/$name.tools.cpio.gz" 1024 || status=1
done

qemu_exit $status "PASS (${names[*]}, $RUNS runs of each tool)"
