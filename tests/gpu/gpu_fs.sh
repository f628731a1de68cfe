#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# GPU buffers through the filesystem, on a machine with an NVIDIA GPU.
#
#   tests/gpu/gpu_fs.sh BUILD_DIR
#
# Mounts `gpuasyncfs --sim` on a temporary directory and checks that:
# device/memory is gpu and device/gpu names GPU 0; mkdir allocates GPU
# memory (cuMemGetInfo drops by the buffer sizes); gpu_address is a 64 KiB
# aligned pointer; ipc_handle opens in another process (gpu-helper, and
# CuPy when python3 has it) as device memory of the buffer's size; bytes
# written through read_buffers/<i>/data are the bytes another process sees
# through the handle and vice versa; a pushed frame's payload reads back
# from buffers/<i>/data and through the handle; rmdir and daemon exit give
# the memory back; metrics' GPU link end is the GPU's PCI function.  Exits
# 77 (skipped) without a GPU or FUSE.
set -u
# shellcheck source=tests/gpu/common.sh
. "$(dirname "$0")/common.sh"
[ -x "$H" ] || skip "no gpu-helper (built without CUDA)"
GPU=$("$H" name 2>&1) || fail "gpu-helper name: $GPU"

mount_dir gpuasync-gpu
TMP=$(mktemp -d /tmp/gpuasync-gpu-data.XXXXXX)
CLEAN+=("$TMP")

CASE=baseline
FREE0=$(free_mib)
echo "GPU: $GPU, free $FREE0 MiB before mounting"

CASE=mount
"$FS" --sim "$MNT" -f -o buffers.size=64M &
PID=$!
for _ in $(seq 100); do [ -r "$MNT/device/version" ] && break; sleep 0.1; done
[ -r "$MNT/device/version" ] || fail "mount did not come up"

CASE=device
[ "$(cat "$MNT/device/memory")" = gpu ] || fail "device/memory: $(cat "$MNT/device/memory") ($(cat "$MNT/device/memory_note" 2>/dev/null))"
grep -qF "$GPU" "$MNT/device/gpu" || fail "device/gpu '$(cat "$MNT/device/gpu")' does not name '$GPU'"
echo "device/gpu: $(cat "$MNT/device/gpu")"

CASE=pcie_link
# The GPU end of the link metrics: the PCI address CUDA gives, an NVIDIA
# function in sysfs, its link files' values as metrics shows them.
M=$(grep '^gpuasync_pcie_' "$MNT/metrics")
BDF=$(printf '%s\n' "$M" | sed -n 's/^gpuasync_pcie_link_readable{.*end="gpu",pci="\([^"]*\)"} 1$/\1/p')
[ -n "$BDF" ] || fail "no readable gpu end in metrics: $M"
[ "$(cat "/sys/bus/pci/devices/$BDF/vendor")" = 0x10de ] || fail "metrics' GPU $BDF is no NVIDIA function"
W=$(cat "/sys/bus/pci/devices/$BDF/current_link_width")
MW=$(cat "/sys/bus/pci/devices/$BDF/max_link_width")
printf '%s\n' "$M" | grep -q "^gpuasync_pcie_current_link_width{.*end=\"gpu\",pci=\"$BDF\"} $W\$" ||
	fail "current_link_width $W not in metrics: $M"
printf '%s\n' "$M" | grep -q "^gpuasync_pcie_max_link_width{.*end=\"gpu\",pci=\"$BDF\"} $MW\$" ||
	fail "max_link_width $MW not in metrics: $M"
printf '%s\n' "$M" | grep -q '^gpuasync_pcie_link_readable{.*end="card",pci=""} 0$' ||
	fail "the simulated card's link is not 'could not tell': $M"
if command -v nvidia-smi >/dev/null && [ "$(nvidia-smi -L | wc -l)" = 1 ]; then
	NB=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader | tr 'A-F' 'a-f')
	[ "${NB: -12}" = "$BDF" ] || fail "nvidia-smi says the GPU is $NB, metrics $BDF"
fi
echo "link: GPU $BDF x$W of x$MW, $(cat "/sys/bus/pci/devices/$BDF/current_link_speed")"

CASE=mkdir
FREE1=$(free_mib)
for i in 0 1 2 3; do mkdir "$MNT/buffers/$i" || fail "mkdir buffers/$i"; done
echo 64M > "$MNT/read_buffers/alloc_size"
mkdir "$MNT/read_buffers/0" || fail "mkdir read_buffers/0"
FREE2=$(free_mib)
echo "free: after mount $FREE1 MiB, after 5 x 64 MiB buffers $FREE2 MiB"
[ $((FREE1 - FREE2)) -ge 320 ] || fail "GPU memory fell by $((FREE1 - FREE2)) MiB, expected >= 320"

CASE=gpu_address
for i in 0 1 2 3; do
	A=$(cat "$MNT/buffers/$i/gpu_address")
	[[ $A =~ ^0x[0-9a-f]+$ ]] || fail "buffers/$i/gpu_address '$A'"
	[ $(( A % 65536 )) -eq 0 ] || fail "buffers/$i/gpu_address $A not 64 KiB aligned"
	[ "$(cat "$MNT/buffers/$i/size")" = 67108864 ] || fail "buffers/$i/size"
done

CASE=ipc_handle
HX=$(cat "$MNT/buffers/0/ipc_handle")
[[ $HX =~ ^[0-9a-f]{128}$ ]] || fail "ipc_handle '$HX'"
OUT=$("$H" ipc "$HX") || fail "cuIpcOpenMemHandle in another process"
[ "$OUT" = "type=device size=67108864" ] || fail "IPC mapping: $OUT"
echo "ipc: $OUT"
if python3 -c 'import cupy' 2>/dev/null; then
	CASE=cupy
	python3 - "$HX" <<'EOF' || fail "CuPy could not open the handle"
import sys, cupy
h = bytes.fromhex(sys.argv[1])
p = cupy.cuda.runtime.ipcOpenMemHandle(h)
m = cupy.cuda.UnownedMemory(p, 64 << 20, None)
a = cupy.ndarray((64 << 20,), dtype=cupy.uint8, memptr=cupy.cuda.MemoryPointer(m, 0))
print("cupy: opened, sum of the header area =", int(a[:32].sum()))
cupy.cuda.runtime.ipcCloseMemHandle(p)
EOF
else
	echo "cupy: not installed, checked with gpu-helper only"
fi

CASE=data_read_buffer
RH=$(cat "$MNT/read_buffers/0/ipc_handle")
DDB=$(cat "$MNT/device/dma_data_bytes")
head -c 1000000 /dev/urandom > "$TMP/in"
dd if="$TMP/in" of="$MNT/read_buffers/0/data" bs=64k conv=notrunc status=none || fail "write data"
"$H" read "$RH" "$DDB" 1000000 > "$TMP/ipc" || fail "read through the handle"
cmp -s "$TMP/in" "$TMP/ipc" || fail "bytes written through data differ in the other process"
head -c 4096 /dev/urandom > "$TMP/in2"
"$H" write "$RH" "$DDB" < "$TMP/in2" || fail "write through the handle"
head -c 4096 "$MNT/read_buffers/0/data" > "$TMP/back"
cmp -s "$TMP/in2" "$TMP/back" || fail "bytes written through the handle differ in data"
echo "data: 1000000 bytes data->IPC and 4096 bytes IPC->data identical"

CASE=frame
echo 1 > "$MNT/buffers/0/write_enable" || fail "arm"
echo 1 > "$MNT/registers/write_enable" || fail "enable"
head -c 50000 /dev/urandom > "$TMP/frame"
cat "$TMP/frame" > "$MNT/sim/push" || fail "push"
grep -q "size=50000 result=0" "$MNT/buffers/0/header" || fail "header: $(cat "$MNT/buffers/0/header")"
# data's st_size is the frame's (cmp -s trusts stat sizes): compare the
# mount directly, then a copy for the diagnostics.
[ "$(stat -c %s "$MNT/buffers/0/data")" = 50000 ] || fail "st_size of data: $(stat -c %s "$MNT/buffers/0/data")"
cat "$MNT/buffers/0/data" > "$TMP/frame_fs"
cmp -s "$TMP/frame" "$MNT/buffers/0/data" && cmp -s "$TMP/frame" "$TMP/frame_fs" || fail "buffers/0/data differs from the pushed frame: $(cmp "$TMP/frame" "$TMP/frame_fs" 2>&1; wc -c < "$TMP/frame_fs"; od -A d -t x1 "$TMP/frame" | head -2; od -A d -t x1 "$TMP/frame_fs" | head -2)"
"$H" read "$HX" "$DDB" 50000 > "$TMP/frame_ipc" || fail "read frame through the handle"
cmp -s "$TMP/frame" "$TMP/frame_ipc" || fail "frame through the handle differs"
echo 0 > "$MNT/registers/write_enable"
echo "frame: 50000-byte frame identical in data and through the handle"

CASE=rmdir
rmdir "$MNT/read_buffers/0" || fail "rmdir read_buffers/0"
for i in 3 2; do rmdir "$MNT/buffers/$i" || fail "rmdir buffers/$i"; done
FREE3=$(free_mib_at_least $((FREE2 + 190)))
echo "free after rmdir of 3 buffers: $FREE3 MiB"
[ $((FREE3 - FREE2)) -ge 190 ] || fail "rmdir gave back $((FREE3 - FREE2)) MiB, expected >= 192"

CASE=exit
fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" || fail "unmount"
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$PID" 2>/dev/null && fail "daemon still running after unmount"
wait "$PID"
PID=
FREE4=$(free_mib)
echo "free after daemon exit: $FREE4 MiB (before mount: $FREE0 MiB)"
[ $((FREE0 - FREE4)) -le 2 ] && [ $((FREE4 - FREE0)) -le 2 ] || fail "GPU memory not back: $FREE0 -> $FREE4 MiB"
CASE=gpu_index
# A GPU index that does not exist: host memory, and the reason is shown.
"$FS" --sim "$MNT" -f -o gpu=7 &
PID=$!
for _ in $(seq 100); do [ -r "$MNT/device/version" ] && break; sleep 0.1; done
[ "$(cat "$MNT/device/memory")" = host ] || fail "gpu=7: device/memory $(cat "$MNT/device/memory")"
grep -q "out of range" "$MNT/device/memory_note" || fail "gpu=7: memory_note '$(cat "$MNT/device/memory_note")'"
echo "gpu=7: host memory, memory_note: $(cat "$MNT/device/memory_note")"
fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" || fail "unmount"
wait "$PID"
PID=
echo "gpu_fs: OK"
