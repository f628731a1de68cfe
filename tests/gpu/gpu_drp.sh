#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The DRP-shaped CUDA consumer against a mounted simulated card, on a
# machine with an NVIDIA GPU.
#
#   tests/gpu/gpu_drp.sh BUILD_DIR
#
# Mounts `gpuasyncfs --sim` with 8 write buffers and runs examples/cuda's
# gpuasync-drp-consumer: readers that are CUDA graphs launched from the
# device (tail launch), polling size words with __nanosleep, re-arming
# with stores into the mapped register block, handing descriptor and
# TimingHeader to the CPU through pinned rings.  By default as the
# late-2026 DRP (index reset through the mapping then the engine enable,
# 32-bit re-arms, 64 KiB aligned buffers, the descriptor error mask); one
# run as the summer-2026 DRP (one-byte re-arms, -m summer).  The card generates the
# timing pattern.  The consumer fails on any frame lost, duplicated or out
# of order (pulse ID +1, evtCounter = frame number, buffer k % 8), any bad
# payload word or a card counter that disagrees.  Runs: 2 readers x 50000
# frames of 4 KiB, 4 readers x 20000 frames of ~64 KiB, 1 reader x 20000
# frames of 33 bytes (odd length, header and one word), 2 readers x 20000
# frames of 4 KiB with the CPU re-arming (-H), 2 readers x 20000 frames of
# 4 KiB as the summer DRP, the generator paced at 10 kHz (-p), recorded
# runs replayed and compared byte for byte (-f, below); then 20 consumers killed with SIGKILL at random
# points, each followed by a run that must be OK.  Exits 77 without
# a GPU or FUSE, or where the GPU cannot launch graphs from the device.
set -u
# shellcheck source=tests/gpu/common.sh
. "$(dirname "$0")/common.sh"
D=$B/examples/cuda/gpuasync-drp-consumer
[ -x "$D" ] || skip "no gpuasync-drp-consumer (built without nvcc)"
OUT=$("$H" name 2>&1) || fail "gpu-helper name: $OUT"

# The card writes with the copy engines only, as a real card's DMA does:
# patterns made on the CPU, no copy kernels.  A kernel of the daemon's own
# CUDA context would run only when the GPU's time slicing switches to it,
# and the readers keep one resident all the time (as the DRP's graphs do),
# so each frame would wait up to a time slice (docs/gpu.md).
CARD_ENV=${GA_DRP_CARD_ENV-GPUASYNC_CUDA_NO_FILL=1 GPUASYNC_CUDA_KCOPY_MAX=0}

mount_dir gpuasync-drp

CASE=mount
env $CARD_ENV "$FS" --sim "$MNT" -f &
PID=$!
for _ in $(seq 100); do [ -r "$MNT/device/version" ] && break; sleep 0.1; done
[ -r "$MNT/device/version" ] || fail "mount did not come up"
[ "$(cat "$MNT/device/memory")" = gpu ] || fail "not GPU memory: $(cat "$MNT/device/memory_note")"
for i in $(seq 0 7); do
	mkdir "$MNT/buffers/$i" || fail "mkdir $i"
done

# run CASE ARGS...: the consumer must say OK, and have checked every frame.
run() {
	CASE=$1
	shift
	local rc
	OUT=$("$D" "$@" "$MNT" 2>&1)
	rc=$?
	echo "$OUT"
	[ $rc -eq 3 ] && skip "device graph launch unavailable: $(grep unavailable <<<"$OUT")"
	[ $rc -eq 0 ] || fail "consumer exit $rc"
	grep -q '^drp: OK$' <<<"$OUT" || fail "no OK"
	grep -qE "^drp: $2 frames, 0 bad .* 0 extra" <<<"$OUT" || fail "frame count line"
}
run readers2_4k -n 50000 -r 2 -g 4096
# The mount's frame watcher beside a GPU consumer that re-arms at once:
# it sees what it can, and its counters never report a loss that did not
# happen (every frame reached the consumer, which checked them all).
CASE=frames_beside
for f in pulse_id_gaps pulse_ids_missed pulse_id_backwards pulse_id_duplicates; do
	v=$(cat "$MNT/frames/$f") || fail "no frames/$f"
	[ "$v" = 0 ] || fail "frames/$f reads $v beside a consumer that lost nothing"
done
SEEN=$(cat "$MNT/frames/seen")
[ "$SEEN" -gt 0 ] || fail "frames/seen 0 after 50000 frames"
echo "frames beside the consumer: seen $SEEN, not_seen $(cat "$MNT/frames/not_seen"), not_compared $(cat "$MNT/frames/not_compared")"
run readers4_64k -n 20000 -r 4 -g 65000
run reader1_odd -n 20000 -r 1 -g 33
# The DRP's HOST_REARMS_DMA path: the CPU re-arms, the GPU never writes
# the registers; the same checks hold.
run host_rearm -n 20000 -r 2 -g 4096 -H
# The summer-2026 DRP, still in the field: one-byte re-arm stores.
run summer -n 20000 -r 2 -g 4096 -m summer
# The generator paced (-p): every frame checked, and no faster than asked
# (a generous bound: the pace is the card's, not this machine's).
# With the floor measured first (-F) and the latency given against it.
run paced_10k -n 5000 -r 2 -g 4096 -p 10000 -F 500
fps=$(sed -n 's/^drp: 5000 frames, .* s: \([0-9]*\) frames\/s.*/\1/p' <<<"$OUT")
[ -n "$fps" ] && [ "$fps" -le 11000 ] || fail "paced at 10 kHz, ran at '$fps' frames/s"
grep -qE '^floor: 500 doorbell ping-pongs, one-way: min [0-9.]+ p50 [0-9.]+' <<<"$OUT" ||
	fail "no floor line"
grep -qE '^latency against the floor \(its p50\): p50 [0-9.]+x, p99 [0-9.]+x' <<<"$OUT" ||
	fail "no latency against the floor"
# Recorded runs played into the consumer (docs/record.md): synthesised
# Jungfrau- and EpixUHR-shaped runs with a pulse-ID gap, a duplicate and
# a corrupt batch, each frame compared byte for byte with the file's and
# its size and TUSER bytes with the file's descriptor, over 3 plays.
SYNTH=$B/lib/gpuasync-synth
[ -x "$SYNTH" ] || fail "no $SYNTH"
RUNS=$(mktemp -d /tmp/gpuasync-drp-runs.XXXXXX)
CLEAN+=("$RUNS")
CASE=synth
"$SYNTH" -o "$RUNS/jf.gar" -p jungfrau -s 32K -n 1000 -r 1000 -g 100:3 -d 200 -e 300:corrupt ||
	fail "gpuasync-synth jungfrau"
"$SYNTH" -o "$RUNS/epix.gar" -p epixuhr -s 60000 -n 400 -g 50:2 -d 80 || fail "gpuasync-synth epixuhr"
run replay_jungfrau -n 3000 -r 2 -f "$RUNS/jf.gar"
grep -q "jf.gar: 1000 frames" <<<"$OUT" || fail "the file's frames not loaded"
grep -q "^drp: replay held 1" <<<"$OUT" || fail "not played from its copy in GPU memory (hold=auto)"
run replay_epixuhr -n 1200 -r 4 -f "$RUNS/epix.gar"
run replay_paced -n 2000 -r 2 -f "$RUNS/jf.gar" -p 5000
# Played from the file's copy in GPU memory (hold, the default there) and
# read from the file as it plays: the same bytes either way.
run replay_held -n 1500 -r 2 -f "$RUNS/jf.gar" -w hold=1
grep -q "^drp: replay held 1" <<<"$OUT" || fail "hold=1 not held"
run replay_streamed -n 1500 -r 2 -f "$RUNS/jf.gar" -w hold=0
grep -q "^drp: replay held 0" <<<"$OUT" || fail "hold=0 held"
# The check can fail: live=1 rewrites each frame's TimingHeader as it
# plays, so no frame is the file's byte for byte, and the consumer says so.
CASE=replay_live_differs
OUT=$("$D" -n 200 -r 2 -f "$RUNS/jf.gar" -w live=1 "$MNT" 2>&1) &&
	fail "a live replay passed as the file's bytes: $OUT"
grep -q "bad payload (not the file's, byte for byte)" <<<"$OUT" ||
	fail "no payload difference reported: $OUT"
# A consumer killed with SIGKILL at a random point (CUDA start-up, the
# start-up sequence, mid-run) leaves the generator running and the ring
# wherever it was: the next consumer, late or summer (which has no index
# reset of its own), must still get every frame in order.  20 kills: even
# ones after a random delay of up to 1.5 s, odd ones once the card has
# delivered a random number of frames.
for i in $(seq 20); do
	"$D" -n 100000000 -r 2 -g 4096 "$MNT" >/dev/null 2>&1 &
	CP=$!
	if [ $((i % 2)) = 0 ]; then
		sleep "$((RANDOM % 2)).$((RANDOM % 10))"
	else
		want=$((1 + RANDOM % 50000))
		for _ in $(seq 300); do
			n=$(cat "$MNT/registers/rx_frame_count" 2>/dev/null || echo 0)
			[ "$n" -ge "$want" ] 2>/dev/null && break
			kill -0 $CP 2>/dev/null || break
			sleep 0.1
		done
	fi
	kill -9 $CP 2>/dev/null
	wait $CP 2>/dev/null
	if [ $((i % 2)) = 0 ]; then
		run "after_kill_$i" -n 5000 -r 2 -g 4096
	else
		run "after_kill_$i" -n 5000 -r 2 -g 4096 -m summer
	fi
done
echo "gpu_drp: 20 consumers killed at random points, the next one OK each time"
# Under compute-sanitizer's memcheck: no error, with one reader.  (With
# two, the tool ran the readers' resident kernels one at a time on the
# H200 and the second reader's first frame never came: docs/gpu.md.)
CASE=memcheck
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$CS" ]; then
	OUT=$(timeout 300 "$CS" --tool memcheck --error-exitcode 9 "$D" -n 10 -r 1 -g 4096 -t 60 \
		"$MNT" 2>&1) || fail "memcheck, one reader: exit $?: $(tail -n 20 <<<"$OUT")"
	grep -q "ERROR SUMMARY: 0 errors" <<<"$OUT" || fail "memcheck: $(tail -n 5 <<<"$OUT")"
	grep -q '^drp: OK$' <<<"$OUT" || fail "memcheck: no OK"
	echo "memcheck: one reader, 10 frames, 0 errors"
	# Two readers cannot both run there: the consumer must say so and
	# end by itself, well inside the timeout (frames 30 s, stop 30 s).
	OUT=$(timeout 600 "$CS" --tool memcheck "$D" -n 10 -r 2 -g 4096 -t 30 "$MNT" 2>&1)
	rc=$?
	[ "$rc" = 124 ] && fail "memcheck, two readers: still running after 600 s"
	[ "$rc" = 0 ] && grep -q '^drp: OK$' <<<"$OUT" && echo "memcheck: two readers ran side by side"
	[ "$rc" != 0 ] && { grep -q '^drp: FAIL: ' <<<"$OUT" ||
		fail "memcheck, two readers: exit $rc without a reason: $(tail -n 5 <<<"$OUT")"; }
	[ "$rc" != 0 ] && echo "memcheck: two readers: exit $rc in bounded time: $(grep -m1 '^drp: FAIL: ' <<<"$OUT")"
	run after_memcheck -n 5000 -r 2 -g 4096
elif [ "${GA_REQUIRE_GPU:-0}" = 1 ]; then
	fail "no compute-sanitizer (GA_REQUIRE_GPU=1)"
else
	echo "memcheck: not run (no compute-sanitizer)"
fi
CASE=stride
# 3 readers cannot share 8 buffers: refused before anything starts.
OUT=$("$D" -n 10 -r 3 "$MNT" 2>&1) && fail "3 readers over 8 buffers accepted"
grep -q "do not divide" <<<"$OUT" || fail "no reason given: $OUT"
echo "gpu_drp: OK"
