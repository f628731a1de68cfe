#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The dmabuf pin path on a machine with an NVIDIA GPU (no kernel module
# needed: the simulated card stands in for gpuasync.ko).
#
#   tests/gpu/gpu_dmabuf.sh BUILD_DIR
#
# 1. gpu-helper dmabuf: does GPU 0 export dma-bufs
#    (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED); an allocation of each size
#    exports as an fd whose lseek(SEEK_END) is the size, whose fdinfo names
#    the exporter, that fstat()s and closes; no fd stays open; cuMemFree
#    afterwards works.
# 2. gpuasyncfs --sim -o pin=dmabuf on GPU memory: device/pin says dmabuf,
#    memory_note why, every line of device/pinned says dmabuf with offset 0;
#    a pushed frame lands and reads back; mkdir/rmdir leave the daemon's fd
#    count and the GPU's free memory as they were.
# Exits 77 (skipped) without a GPU or FUSE, and with the attribute's value
# printed when the GPU does not export dma-bufs (then pin=dmabuf must be
# refused, which is checked first).
set -u
# shellcheck source=tests/gpu/common.sh
. "$(dirname "$0")/common.sh"
[ -x "$H" ] || skip "no gpu-helper (built without CUDA)"
GPU=$("$H" name 2>&1) || fail "gpu-helper name: $GPU"
echo "GPU: $GPU"

mount_dir gpuasync-dmabuf
CLEAN+=("$MNT.frame" "$MNT.err")

CASE=export
OUT=$("$H" dmabuf 65536 2097152 67108864 1073741824)
RC=$?
echo "$OUT"
if [ $RC = 3 ]; then
	CASE=refused
	"$FS" --sim -o config=/dev/null -o pin=dmabuf "$MNT" 2>"$MNT.err" && fail "pin=dmabuf mounted"
	grep -q "DMA_BUF_SUPPORTED" "$MNT.err" || fail "pin=dmabuf: $(cat "$MNT.err")"
	echo "pin=dmabuf refused: $(cat "$MNT.err")"
	skip "GPU 0 does not export dma-bufs"
fi
[ $RC = 0 ] || fail "gpu-helper dmabuf exit $RC"

CASE=mount
FREE0=$(free_mib)
"$FS" --sim "$MNT" -f -o config=/dev/null -o pin=dmabuf,buffers.size=2M &
PID=$!
for _ in $(seq 100); do [ -r "$MNT/device/version" ] && break; sleep 0.1; done
[ -r "$MNT/device/version" ] || fail "mount did not come up"
[ "$(cat "$MNT/device/memory")" = gpu ] || fail "memory $(cat "$MNT/device/memory")"
[ "$(cat "$MNT/device/pin")" = dmabuf ] || fail "device/pin $(cat "$MNT/device/pin")"
echo "memory_note: $(tr '\n' '|' < "$MNT/device/memory_note")"
sed -n 2p "$MNT/device/memory_note" | grep -q "^pin=dmabuf: buffers are registered as dma-bufs (GPU 0 exports" || fail "memory_note"

CASE=buffers
FDS0=$(ls /proc/$PID/fd | wc -l)
FREE1=$(free_mib)
for round in 1 2 3; do
	for i in 0 1 2 3; do mkdir "$MNT/buffers/$i" || fail "mkdir buffers/$i"; done
	mkdir "$MNT/read_buffers/0" || fail "mkdir read_buffers/0"
	[ "$(awk 'NR > 1 { print $3, $9 }' "$MNT/device/pinned" | sort -u)" = "0x0 dmabuf" ] || fail "pinned: $(cat "$MNT/device/pinned")"
	[ "$(wc -l < "$MNT/device/pinned")" = 6 ] || fail "pinned lines"
	[ "$(ls /proc/$PID/fd | wc -l)" = "$FDS0" ] || fail "daemon fds $FDS0 -> $(ls /proc/$PID/fd | wc -l) with 5 buffers"
	for i in 3 2 1 0; do rmdir "$MNT/buffers/$i" || fail "rmdir buffers/$i"; done
	rmdir "$MNT/read_buffers/0" || fail "rmdir read_buffers/0"
done
[ "$(ls /proc/$PID/fd | wc -l)" = "$FDS0" ] || fail "daemon fds $FDS0 -> $(ls /proc/$PID/fd | wc -l)"
FREE2=$(free_mib_at_least $((FREE1 - 2)))
[ $((FREE1 - FREE2)) -le 2 ] && [ $((FREE2 - FREE1)) -le 2 ] || fail "GPU memory $FREE1 -> $FREE2 MiB after 3 rounds"
echo "3 rounds of 5 dma-buf buffers: daemon fds $FDS0 -> $(ls /proc/$PID/fd | wc -l), GPU free $FREE1 -> $FREE2 MiB"

CASE=frame
mkdir "$MNT/buffers/0" || fail "mkdir"
echo 1 > "$MNT/buffers/0/write_enable" || fail "arm"
echo 1 > "$MNT/registers/write_enable" || fail "enable"
# one write is one frame: 120000 bytes go in one write(2) of cat
head -c 120000 /dev/urandom > "$MNT.frame"
cat "$MNT.frame" > "$MNT/sim/push" || fail "push"
grep -q "size=120000 result=0" "$MNT/buffers/0/header" || fail "header: $(cat "$MNT/buffers/0/header")"
cmp -s "$MNT.frame" "$MNT/buffers/0/data" || fail "payload differs"
echo 0 > "$MNT/registers/write_enable"
echo "frame: 120000 bytes landed in a dma-buf registered GPU buffer and read back"

CASE=exit
fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" || fail "unmount"
wait "$PID"
PID=
FREE3=$(free_mib)
[ $((FREE0 - FREE3)) -le 2 ] && [ $((FREE3 - FREE0)) -le 2 ] || fail "GPU memory not back: $FREE0 -> $FREE3 MiB"
echo "gpu_dmabuf: OK"
