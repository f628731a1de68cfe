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

daemon=$(cd "$build" && pwd)/fs/gpuasyncfs
pid=$(pgrep -nf -- "fs/gpuasyncfs --sim $mnt\$" 2>/dev/null) || pid=
cat <<WHERE

The simulated GpuAsyncCore card is mounted on $mnt.
The daemon is $daemon${pid:+ (pid $pid)}: built here, not installed
(sudo cmake --install $build puts it on the PATH).  Stop it by unmounting:
  fusermount3 -u $mnt

The README's five-minute tour, with M=$mnt:

WHERE
# One tour: the README's, so the two cannot differ.
awk -v m="$mnt" '
	/^## A five-minute tour/ { tour = 1; next }
	tour && /^```/ { if (inblock) exit; inblock = 1; next }
	inblock { sub(/^M=\/tmp\/gpuasync$/, "M=" m); print "  " $0 }
' README.md
