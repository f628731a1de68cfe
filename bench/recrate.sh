#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The rate a recording keeps up with, sustained (docs/record.md): a
# gpuasyncfs --sim mount with N write buffers of S bytes, a consumer
# re-arming them through the registers, and for each rate in RATES the
# generator running T seconds while frames/record writes everything the
# mount sees to a file in OUT (removed after each rate); gafs-recrate
# prints a line per rate.
#
#   bench/recrate.sh [BUILD_DIR]   N=256 S=65536 T=5 OUT=/tmp RATES="1000 ... 0" OPTS=
#
# OPTS: more mount options (use_gpu=1: the buffers in GPU memory).  The
# pattern is prbs, which CUDA memory makes on the GPU.
set -eu
cd "$(dirname "$0")/.."
B=${1:-build}
G=$B/fs/gpuasyncfs
N=${N:-256} S=${S:-65536} T=${T:-5} OUT=${OUT:-/tmp} OPTS=${OPTS:-}
RATES=${RATES:-"1000 5000 10000 20000 50000 100000 0"}
M=$(mktemp -d /tmp/recrate.XXXXXX)
"$G" -f --sim "$M" -o config=/dev/null,version=4${OPTS:+,$OPTS} 2>/dev/null &
P=$!
trap 'fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" 2>/dev/null; wait $P; rmdir "$M"' EXIT
for _ in $(seq 200); do mountpoint -q "$M" && break; sleep 0.05; done
mountpoint -q "$M" || { echo "recrate: no mount" >&2; exit 1; }
echo $(((S + 128 + 65535) / 65536 * 65536)) >"$M/buffers/alloc_size"
for i in $(seq 0 $((N - 1))); do mkdir "$M/buffers/$i"; done
echo prbs >"$M/sim/pattern"
echo "$S" >"$M/sim/size"
echo "recrate: $N buffers of $S bytes, $T s a rate, ${OPTS:-host memory}, files in $OUT"
# shellcheck disable=SC2086
"$B/bench/gafs-recrate" "$M" "$OUT" "$T" $RATES
