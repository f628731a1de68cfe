#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# How fast the frame watcher reads a burst of frames with and without
# frames/record (docs/record.md): the simulated card's generator, at full
# speed, fills N armed write buffers of host memory at once, and the time
# from its start until frames/seen has counted all N is taken, alternately
# without and with a recording (drops printed), ROUNDS times each.
#
#   bench/recburst.sh [BUILD_DIR]      N=1024 S=65536 ROUNDS=5 Q=64M OPTS=
#
# OPTS: more mount options (use_gpu=1: the buffers in GPU memory).
#
# The time includes the generator's and the shell's polling of frames/seen:
# a lower bound on the watcher's rate, not its limit.
set -eu
cd "$(dirname "$0")/.."
G=${1:-build}/fs/gpuasyncfs
N=${N:-1024} S=${S:-65536} ROUNDS=${ROUNDS:-5} OPTS=${OPTS:-}
M=$(mktemp -d /tmp/recburst.XXXXXX)
D=$(mktemp -d /tmp/recburst-runs.XXXXXX)
"$G" -f --sim "$M" -o config=/dev/null${OPTS:+,$OPTS} 2>/dev/null &
P=$!
trap 'fusermount3 -u "$M" 2>/dev/null || fusermount3 -uz "$M" 2>/dev/null; wait $P; rmdir "$M"; rm -rf "$D"' EXIT
for _ in $(seq 200); do mountpoint -q "$M" && break; sleep 0.05; done
echo $(((S + 128 + 65535) / 65536 * 65536)) >"$M/buffers/alloc_size"
for i in $(seq 0 $((N - 1))); do mkdir "$M/buffers/$i"; done
echo timing >"$M/sim/pattern"
echo "$S" >"$M/sim/size"
echo 0 >"$M/sim/rate"
burst() {
	for i in $(seq 0 $((N - 1))); do echo 1 >"$M/buffers/$i/write_enable"; done
	s0=$(cat "$M/frames/seen")
	[ "$1" = record ] && echo "$D/r$2.gar queue=${Q:-64M}" >"$M/frames/record"
	echo 1 >"$M/registers/write_enable"
	t0=$(date +%s%N)
	echo "$N" >"$M/sim/remaining"
	echo 1 >"$M/sim/running"
	while [ $(($(cat "$M/frames/seen") - s0)) -lt "$N" ]; do :; done
	t1=$(date +%s%N)
	drops=-
	if [ "$1" = record ]; then
		echo stop >"$M/frames/record"
		drops=$(sed -n 's/^drops //p' "$M/frames/record_status")
	fi
	echo 0 >"$M/registers/write_enable"
	echo "$1 $N x $S B: $(((t1 - t0) / 1000)) us, $((N * 1000000000 / (t1 - t0))) frames/s, drops $drops"
}
for r in $(seq "$ROUNDS"); do
	burst plain "$r"
	burst record "$r"
done
