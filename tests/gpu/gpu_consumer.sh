#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The CUDA consumer example against a mounted simulated card, on a machine
# with an NVIDIA GPU.
#
#   tests/gpu/gpu_consumer.sh BUILD_DIR
#
# Mounts `gpuasyncfs --sim`, creates 8 write and 8 read buffers, and runs
# examples/cuda's gpuasync-consumer: it maps the shared-memory register
# block that device/registers_path names (or -R gives), arms, waits on
# doorbells, clears them and re-arms from the GPU through it,
# loops every payload back through the read path, and checks every frame's
# header and pattern and the card's counters.  Runs: 5000 PRBS frames with
# loopback, 20000 counter frames of ~64 KiB, 10000 PRBS frames with
# loopback at 100 bytes (odd length).  Exits 77 without a GPU or FUSE.
set -u
# shellcheck source=tests/gpu/common.sh
. "$(dirname "$0")/common.sh"
C=$B/examples/cuda/gpuasync-consumer
[ -x "$C" ] || skip "no gpuasync-consumer (built without CUDA)"
OUT=$("$H" name 2>&1) || fail "gpu-helper name: $OUT"

mount_dir gpuasync-cons

CASE=mount
"$FS" --sim "$MNT" -f &
PID=$!
for _ in $(seq 100); do [ -r "$MNT/device/version" ] && break; sleep 0.1; done
[ -r "$MNT/device/version" ] || fail "mount did not come up"
[ "$(cat "$MNT/device/memory")" = gpu ] || fail "not GPU memory: $(cat "$MNT/device/memory_note")"
for i in $(seq 0 7); do
	mkdir "$MNT/buffers/$i" "$MNT/read_buffers/$i" || fail "mkdir $i"
done
CASE=registers_path
# "FILE 0xOFFSET": this daemon's shared-memory register file at offset 0.
REGS=$(cat "$MNT/device/registers_path") || fail "no device/registers_path"
[[ $REGS =~ ^/dev/shm/gpuasync-sim-$PID-[0-9]+\ 0x0$ ]] || fail "registers_path '$REGS'"
RFILE=${REGS% *}
ROFF=${REGS##* }
[ -e "$RFILE" ] || fail "$RFILE does not exist"
echo "device/registers_path: $REGS"

# The consumer finds the register block through device/registers_path;
# counter_64k gives it with -R instead (the override), and a wrong -R
# must make it fail rather than fall back.
CASE=prbs_loopback
"$C" -n 5000 -p prbs -l -g 4000 "$MNT" || fail "consumer"
CASE=counter_64k
"$C" -n 20000 -p counter -g 65000 -R "$RFILE:$ROFF" "$MNT" || fail "consumer"
CASE=prbs_loopback_odd
"$C" -n 10000 -p prbs -l -g 100 "$MNT" || fail "consumer"
CASE=override_used
OUT=$("$C" -n 1 -R /nonexistent-gpuasync-regs "$MNT" 2>&1) && fail "consumer ignored -R"
grep -q nonexistent-gpuasync-regs <<<"$OUT" || fail "no word of the -R path: $OUT"
echo "gpu_consumer: OK"
