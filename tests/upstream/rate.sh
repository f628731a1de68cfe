#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Benchmark, not a test: frames/s of gpuasync.ko's emulated card against
# upstream's datadev_emulator (aes-stream-drivers), in the same QEMU boot,
# with the same consumer.  Per upstream release, one boot of the Debian
# kernel tests/kmod uses, with upstream's nvidia_p2p_stub, datadev_emulator
# and GPU-enabled datadev, and our nv_p2p_stub and gpuasync.ko; the guest
# (rate_init.sh) runs tests/upstream/rate.c against each card for every
# frame size, GA_RATE_ROUNDS times in turn, and this script prints the
# table: the median frames/s of upstream's emulator at upstream CI's tick,
# of our card's generator, of our card in upstream mode at that same tick,
# and of a plain memcpy of the frame size in the guest (the most a card that
# writes every payload once can reach), the ratios of the medians to
# upstream's and the lowest and highest ratio ours/theirs of one round
# (theirs and ours measured seconds apart).
#
#   GA_UPSTREAM_SRC, GA_UPSTREAM_REFS, GA_UPSTREAM_OUT: as tests/upstream/run.sh
#   GA_RATE_SIZES="4096 65536"  frame sizes, bytes (upstream's emulator: <= 64 KiB)
#   GA_RATE_SECONDS=3           per measurement
#   GA_RATE_ROUNDS=3            rounds (every card, every size) per boot
#   GA_RATE_BUFFERS=4           buffers in the ring (upstream mode has 4)
#   GA_RATE_UP_POLL_US=100      upstream's emulator tick: what upstream CI
#                               loads it with (scripts/ci/load-modules-gpu.sh)
#   GA_KMOD_TIMEOUT=S           per boot (default 900)
# Exit: 0 when every measurement ran, 1 otherwise, 77 without a source.
# Not part of tools/test.sh: it measures, it does not judge speed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/upstream/common.sh
. "$ROOT/tests/upstream/common.sh"
upstream_setup upstream-rate gpuasync-rate 900
upstream_kver
SIZES=${GA_RATE_SIZES:-4096 65536}
SECS=${GA_RATE_SECONDS:-3}
ROUNDS=${GA_RATE_ROUNDS:-3}
BUFS=${GA_RATE_BUFFERS:-4}
UP_POLL=${GA_RATE_UP_POLL_US:-100}

upstream_trees

log "building gpuasync.ko and the consumer for $KVER"
build_modules "/lib/modules/$KVER/build" "$OUT/ours" || { log "FAIL: our modules do not build"; exit 1; }
mkdir -p "$OUT/t"
gcc -static -O2 -Wall -Wextra -Werror -I"$ROOT/core/include" -o "$OUT/t/rate" \
	"$HERE/rate.c" "$ROOT/core/regs.c" || { log "FAIL: rate.c does not build"; exit 1; }

# The machine, for the record.
host_facts() {
	echo "host: $(nproc) CPUs ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)), load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "qemu: $(qemu-system-x86_64 --version | head -1), -accel tcg -smp 2 -m 1024, guest kernel $KVER"
}

status=0
tables=()
for name in "${names[@]}"; do
	tree=$OUT/src-$name
	version=4
	grep -q 'expected 5' "$tree/data_dev/app/src/dmaGpuIoctlTest.cpp" && version=5
	log "$name: building upstream's modules (firmware version $version)"
	R=$OUT/root-$name
	upstream_root "$name" "$R" || { status=1; continue; }
	cp "$OUT/ours/kmod/gpuasync.ko" "$OUT/ours/kmod/nv_p2p_stub/nv_p2p_stub.ko" "$OUT/t/rate" "$R/t/"
	printf 'VERSION=%s\nSIZES=%q\nSECS=%s\nROUNDS=%s\nBUFS=%s\nUP_POLL=%s\nUPSTREAM=%q\n' \
		"$version" "$SIZES" "$SECS" "$ROUNDS" "$BUFS" "$UP_POLL" "$(upstream_name "$name")" \
		>"$R/t/env"
	cp "$HERE/rate_init.sh" "$R/init"
	guest_initramfs "$R" "" "$OUT/$name.rate.cpio.gz"
	facts=$(host_facts)
	boot "$name-rate" "/boot/vmlinuz-$KVER" "$OUT/$name.rate.cpio.gz" 1024 || status=1
	tables+=("$(
		echo "== $(upstream_name "$name"), firmware V$version, $BUFS buffers, $ROUNDS rounds of ${SECS} s per card and size"
		echo "$facts"
		echo "theirs: datadev_emulator, tick ${UP_POLL} us (upstream CI); ours: gpuasync.ko generator; ours-up: upstream mode, tick ${UP_POLL} us; copy: memcpy of the size"
		awk -v sizes="$SIZES" -f "$HERE/rate_table.awk" "$OUT/$name-rate.serial.txt"
		grep '^RATE_ROW' "$OUT/$name-rate.serial.txt" | sed 's/^RATE_ROW /  /'
	)")
done

for t in "${tables[@]}"; do
	echo "$t"
done
qemu_exit $status "done (${names[*]})"
