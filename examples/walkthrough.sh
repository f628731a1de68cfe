#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# A walk through gpuasyncfs with nothing but a shell: allocate buffers,
# arm them, enable the engine, watch frames arrive (re-arming each buffer
# as a GPU consumer would), then tear everything down.
#
#   gpuasyncfs --sim /mnt/gpuasync
#   examples/walkthrough.sh /mnt/gpuasync [FRAMES]
#
# On a real card, frames come from the detector instead of sim/.
set -eu

M=${1:-/mnt/gpuasync}
FRAMES=${2:-20}
NBUF=4

say() { printf '\n== %s\n' "$*"; }
run() { printf '$ %s\n' "$*"; sh -c "$*"; }

mountpoint -q "$M" || { echo "$M is not mounted (gpuasyncfs --sim $M)" >&2; exit 1; }

say "The card"
run "cat $M/device/backend $M/device/version $M/device/max_buffers"

say "Allocate $NBUF FPGA->GPU buffers (mkdir = allocate, pin, register)"
i=0
while [ $i -lt $NBUF ]; do
	run "mkdir $M/buffers/$i"
	i=$((i + 1))
done
run "cat $M/buffers/0/size $M/buffers/0/gpu_address $M/buffers/0/status"

say "Arm them (put them on the free list) and start the write engine"
i=0
while [ $i -lt $NBUF ]; do
	echo 1 > "$M/buffers/$i/write_enable"
	i=$((i + 1))
done
run "echo 1 > $M/registers/write_enable"
run "cat $M/buffers/0/status"

start=$(cat "$M/registers/rx_frame_count")
if [ -d "$M/sim" ]; then
	say "Simulated card: generate $FRAMES frames of 1 KiB at 200 Hz"
	run "echo 1K > $M/sim/size; echo 200 > $M/sim/rate; echo $FRAMES > $M/sim/remaining; echo 1 > $M/sim/running"
fi

say "Watch frames land; re-arm each READY buffer as a consumer would"
seen=0
tries=0
while [ $seen -lt "$FRAMES" ] && [ $tries -lt 1000 ]; do
	i=0
	while [ $i -lt $NBUF ]; do
		if [ "$(cat "$M/buffers/$i/status")" = READY ]; then
			seen=$((seen + 1))
			if [ $seen -le 3 ] || [ $seen -eq "$FRAMES" ]; then
				printf 'frame %d in buffer %d: %s\n' $seen $i "$(cat "$M/buffers/$i/header")"
			fi
			if [ $seen -eq 1 ]; then
				echo "its first payload bytes (buffers/$i/data):"
				head -c 16 "$M/buffers/$i/data" | od -A d -t x1 | head -1
			fi
			echo 1 > "$M/buffers/$i/write_enable"
		fi
		i=$((i + 1))
	done
	tries=$((tries + 1))
	sleep 0.01
done
now=$(cat "$M/registers/rx_frame_count")
echo "rx_frame_count: $start -> $now ($seen frames consumed)"

say "Tear down: stop the engine, release the buffers (last first)"
run "echo 0 > $M/registers/write_enable"
[ -d "$M/sim" ] && echo 0 > "$M/sim/running"
i=$((NBUF - 1))
while [ $i -ge 0 ]; do
	run "rmdir $M/buffers/$i"
	i=$((i - 1))
done
run "ls $M/buffers"
if [ -n "$(cat "$M/errors")" ]; then
	say "Refused requests (errors)"
	cat "$M/errors"
fi
[ "$seen" -ge "$FRAMES" ]
