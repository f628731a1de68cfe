#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# ctest python_gpu_ipc: the gpuasync package opens GPU buffers through their
# CUDA IPC handles (Buffer.open_ipc, gpu_bytes: ctypes over libcuda.so.1).
#
#   tests/python/gpu_ipc.sh BUILD_DIR
#
# Mounts `gpuasyncfs --sim` with buffers in GPU memory on a temporary
# directory and runs gpu_ipc.py against it with Debian's Python and this
# tree's package.  Skips (77) only where tests/gpu skip: no GPU (gpu-probe),
# no daemon, no FUSE; under GA_REQUIRE_GPU=1 every skip fails
# (tests/gpu/common.sh).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/gpu/common.sh
. "$here/../gpu/common.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no $PY"

mount_dir gpuasync-py-gpu

CASE=mount
"$FS" --sim "$MNT" -f &
PID=$!
for _ in $(seq 100); do [ -r "$MNT/device/version" ] && break; sleep 0.1; done
[ -r "$MNT/device/version" ] || fail "mount did not come up"

CASE=gpu_ipc.py
PYTHONPATH=$here/../../python "$PY" "$here/gpu_ipc.py" "$MNT" || fail "(its output is above)"

CASE=unmount
fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" || fail "unmount"
wait "$PID" || fail "the daemon exited with $?"
PID=
echo "python_gpu_ipc: OK"
