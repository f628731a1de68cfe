#!/usr/bin/env bash
# The first command of the README: install what is missing, build, and
# mount the simulated card (no FPGA, no GPU needed) on MOUNTPOINT
# (default /tmp/gpuasync), then say what to try and how to unmount.
# Only what the mount needs: the packages tagged @mount in
# tools/packages.txt (compiler, CMake, libfuse3, inih; no test tools, no
# QEMU or kernel) and the daemon's target, not the tests.
# BUILD_DIR picks the build directory (default build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
mnt=${1:-/tmp/gpuasync}
build=${BUILD_DIR:-build}
say() { printf 'try: %s\n' "$*"; }

say "checking the packages the mount needs (tools/packages.txt, group mount)"
tools/install-deps.sh --group mount
say "configuring in $build/"
cmake -S . -B "$build" >/dev/null
say "building the daemon (target gpuasyncfs)"
cmake --build "$build" --target gpuasyncfs -j"${JOBS:-$(nproc 2>/dev/null || echo 2)}"

if mountpoint -q "$mnt" 2>/dev/null; then
	echo "$mnt is already mounted; unmount it first: fusermount3 -u $mnt" >&2
	exit 1
fi
mkdir -p "$mnt"
say "mounting the simulated card on $mnt"
# Without -f the daemon goes to the background once the mount is up.
"$build/fs/gpuasyncfs" --sim "$mnt"
for _ in $(seq 50); do
	mountpoint -q "$mnt" && break
	sleep 0.1
done
if ! mountpoint -q "$mnt"; then
	echo "gpuasyncfs did not mount $mnt (run it with -f to see why)" >&2
	exit 1
fi

cat <<HINTS

The simulated GpuAsyncCore card is mounted on $mnt.  Try:

  cat $mnt/README                          # every file, one line each
  cat $mnt/device/version                  # firmware version (4)
  mkdir $mnt/buffers/0                     # allocate, pin and register buffer 0
  echo 1 > $mnt/buffers/0/write_enable     # arm it (free list)
  echo 1 > $mnt/registers/write_enable     # start the FPGA->GPU engine
  echo 1 > $mnt/sim/running                # start the simulated frame source
  cat $mnt/registers/rx_frame_count
  cat $mnt/buffers/0/status $mnt/buffers/0/header
  cat $mnt/metrics                         # Prometheus text format
  cat $mnt/errors                          # why the last writes failed, if any
  ls $mnt/sim/                             # generator rate/size/pattern, fault injection

Unmount with:  fusermount3 -u $mnt
HINTS
