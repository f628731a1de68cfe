#!/bin/sh
# /init of tests/upstream/rate.sh's guest: one boot, three cards one after
# the other, ROUNDS times, the same consumer (/t/rate) on each, for every
# frame size:
#   theirs    upstream's nvidia_p2p_stub + datadev_emulator (tick UP_POLL us,
#             upstream CI's) + datadev
#   ours      our nv_p2p_stub + gpuasync.ko's emulated card, its generator
#             (gen_frames) sending frames of the size (tick: the default)
#   ours-up   the same card in upstream mode (emulate_upstream=1, tick
#             UP_POLL us): upstream's one-frame-per-tick source, for reference
#   copy      no card: memcpy of the frame size, the most frames/s a card
#             that writes every payload once can reach in this guest
# Each run prints "RATE_ROW <card> <size> frames=... fps=..."; rate.sh
# makes the table (medians over the rounds).
. /t/guest.sh
. /t/env
guest_up
echo "KTEST guest up: $(uname -r), upstream $UPSTREAM, firmware V$VERSION, $(nproc) vCPUs"

# measure CARD DEV [GEN_DIR]: every size, SECS seconds each.
measure() {
	card=$1 dev=$2 gen=${3:-}
	for size in $SIZES; do
		if [ "$card" = copy ]; then
			set -- copy "$SECS" "$size"
		else
			set -- "$dev" "$SECS" "$size" "$BUFS" $gen
		fi
		if out=$(/t/rate "$@" 2>&1); then
			ok "rate $card $size"
		else
			bad "rate $card $size"
		fi
		echo "$out" | sed -n "s/^RATE /RATE_ROW $card $size /p"
		echo "$out" | grep -v '^RATE ' || true
	done
}

# ROUNDS rounds, each card in turn, so that a machine whose load changes
# (other guests beside this one) weighs on every card alike.
r=0
while [ $r -lt "$ROUNDS" ]; do
	r=$((r + 1))
	insmod /up/nvidia_p2p_stub.ko || bad insmod_up_stub
	insmod /up/datadev_emulator.ko emu_gpu_poll_interval_us="$UP_POLL" || bad insmod_emulator
	insmod /up/datadev.ko cfgTxCount=64 cfgRxCount=64 cfgSize=65536 cfgMode=2 || bad insmod_datadev
	measure theirs /dev/datadev_0
	rmmod datadev && rmmod datadev_emulator && rmmod nvidia_p2p_stub && ok unload_upstream ||
		bad unload_upstream

	insmod /t/nv_p2p_stub.ko || bad insmod_stub
	insmod /t/gpuasync.ko emulate=1 emulate_version="$VERSION" || bad insmod_gpuasync
	[ $r = 1 ] && echo "KTEST info ours: tick $(cat /sys/module/gpuasync/parameters/emulate_poll_us) us"
	measure ours /dev/gpuasync_emu0 /sys/class/gpuasync/gpuasync_emu0
	rmmod gpuasync && ok unload_gpuasync || bad unload_gpuasync

	insmod /t/gpuasync.ko emulate=1 emulate_upstream=1 emulate_version="$VERSION" \
		emulate_poll_us="$UP_POLL" || bad insmod_gpuasync_up
	measure ours-up /dev/gpuasync_emu0
	rmmod gpuasync && ok unload_gpuasync_up || bad unload_gpuasync_up
	rmmod nv_p2p_stub && ok unload_stub || bad unload_stub
	measure copy
done
guest_down
