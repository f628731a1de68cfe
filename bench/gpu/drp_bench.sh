#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The DRP-shaped consumer against the stream-memop consumer, and its
# per-frame latency, on one mount of the simulated card (GPU memory).
# A measurement, not a test: ctest does not run it.
#
#   bench/gpu/drp_bench.sh BUILD_DIR [FRAMES] [SIZES] [READERS] [OUTDIR]
#
# FRAMES (default 1000000) timing-pattern frames of each size in SIZES
# (default "4096 65000"; a buffer of 64 KiB holds the 32-byte descriptor area
# too), 8 write buffers (GA_DRP_BUFFERS); for each size, in turn:
# gpuasync-consumer (one stream: cuStreamWaitValue32 on the doorbell,
# copy to the host, clear, re-arm by stream write; the CPU checks every
# frame) and gpuasync-drp-consumer with each reader count in READERS
# (default "1 2 4"), each with the GPU re-arming (the DRP's default build)
# and, for READERS' first count, with the CPU re-arming (-H: the DRP's
# HOST_REARMS_DMA build, less its ioctl).  Prints frames/s of each and the ratio, and the DRP
# consumer's latency histogram (card made the frame -> reader saw it);
# with OUTDIR, each run's output and histogram are kept there.
#
# GA_DRP_PACES="1000 10000 100000" (frames/s) adds, after that, the DRP
# consumer with 2 readers on 4096-byte frames paced at each rate (-p;
# GA_DRP_PACED_S seconds of frames each, default 5), each run first
# measuring the floor (-F 2000: a bare doorbell ping-pong, host store into
# pinned memory, GPU thread polling with the readers' back-off) on the idle
# GPU, and printing its latency against it (issue 30 item 4's goal: p50 at
# most 2x, p99 at most 4x the floor's p50).
set -u
B=${1:?usage: drp_bench.sh BUILD_DIR [FRAMES] [SIZES] [READERS] [OUTDIR]}
N=${2:-1000000}
SIZES=${3:-4096 65000}
READERS=${4:-1 2 4}
O=${5:-}
FS=$B/fs/gpuasyncfs
C=$B/examples/cuda/gpuasync-consumer
D=$B/examples/cuda/gpuasync-drp-consumer
for x in "$FS" "$C" "$D"; do [ -x "$x" ] || { echo "no $x"; exit 2; }; done
[ -n "$O" ] && mkdir -p "$O"
# The card's writes by copy engine only (see tests/gpu/gpu_drp.sh);
# GA_DRP_CARD_ENV replaces these settings of the daemon.
CARD_ENV=${GA_DRP_CARD_ENV-GPUASYNC_CUDA_NO_FILL=1 GPUASYNC_CUDA_KCOPY_MAX=0}
echo "card: ${CARD_ENV:-(default memory layer)}"

MNT=$(mktemp -d /tmp/gpuasync-drpbench.XXXXXX)
PID=
cleanup() {
	mountpoint -q "$MNT" && { fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT"; }
	# Wait for it: the next run's daemon must find the GPU given back.
	[ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
	rmdir "$MNT" 2>/dev/null
}
trap cleanup EXIT
env $CARD_ENV "$FS" --sim "$MNT" -f &
PID=$!
for _ in $(seq 100); do [ -r "$MNT/device/version" ] && break; sleep 0.1; done
m=$(cat "$MNT/device/memory" 2>/dev/null)
[ "$m" = gpu ] || { echo "mount not on GPU memory (device/memory: ${m:-unreadable})"; exit 2; }
for i in $(seq 0 $((${GA_DRP_BUFFERS:-8} - 1))); do mkdir "$MNT/buffers/$i" || exit 2; done

rate() { sed -n 's/.*: \([0-9]*\) frames\/s.*/\1/p' <<<"$1" | tail -1; }
for s in $SIZES; do
	out=$("$C" -n "$N" -p timing -g "$s" "$MNT" 2>&1) || { echo "$out"; echo "stream-memop consumer failed"; exit 1; }
	[ -n "$O" ] && echo "$out" >"$O/memop_$s.txt"
	base=$(rate "$out")
	echo "size $s: stream-memop consumer $base frames/s"
	first=${READERS%% *}
	for r in $READERS "$first -H"; do
		set -- $r
		h=/dev/null
		[ -n "$O" ] && h=$O/hist_${s}_r$1${2:-}.txt
		out=$("$D" -n "$N" -r $r -g "$s" -o "$h" "$MNT" 2>&1) || { echo "$out"; echo "DRP consumer failed"; exit 1; }
		[ -n "$O" ] && echo "$out" >"$O/drp_${s}_r$1${2:-}.txt"
		d=$(rate "$out")
		echo "size $s: DRP consumer, $1 readers${2:+, CPU re-arms}: $d frames/s, $(awk -v a="$d" -v b="$base" 'BEGIN{printf "%.2f", a/b}')x"
		grep -E '^(latency|  [<>])|clock offset|timer step' <<<"$out"
	done
done
for p in ${GA_DRP_PACES:-}; do
	n=$((p * ${GA_DRP_PACED_S:-5}))
	h=/dev/null
	[ -n "$O" ] && h=$O/hist_paced_$p.txt
	out=$("$D" -n "$n" -r 2 -g 4096 -p "$p" -F 2000 -o "$h" "$MNT" 2>&1) ||
		{ echo "$out"; echo "DRP consumer paced at $p failed"; exit 1; }
	[ -n "$O" ] && echo "$out" >"$O/drp_paced_$p.txt"
	echo "paced at $p frames/s, 4096 bytes, 2 readers: $(rate "$out") frames/s"
	grep -E '^(floor|latency)' <<<"$out"
done
