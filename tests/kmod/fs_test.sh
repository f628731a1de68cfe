#!/bin/sh
# gpuasyncfs mounted on gpuasync.ko's emulated card inside the test guest,
# driven with cat/echo/mkdir/rmdir as a user would (docs/guide.md).
#   fs_test.sh [dmabuf]   with dmabuf: mounted with -o pin=dmabuf, so buffers
#                         (host memory through udmabuf) reach the driver by
#                         GA_Add_Dmabuf; else the default (auto: p2p here)
# Prints "KTEST ok|FAIL fs_<step>"; exit status 0 when all passed.
M=/mnt/gpuasync
CARD=/sys/class/gpuasync/gpuasync_emu0
PIN=${1:-p2p}
PREFIX=fs_
OPTS=
if [ "$PIN" = dmabuf ]; then
	PREFIX=fs_dmabuf_
	OPTS="-o pin=dmabuf"
fi
. /t/guest.sh

mkdir -p $M
/t/gpuasyncfs -f /dev/gpuasync_emu0 $M $OPTS >/tmp/fs.log 2>&1 &
fp=$!
if ! wait_file $M/README; then
	bad mount; cat /tmp/fs.log; kill $fp 2>/dev/null; exit 1
fi
ok mount

[ "$(cat $M/device/version)" = "$(cat $CARD/version)" ] && ok device_version || bad device_version
[ "$(cat $M/device/backend)" = datadev ] && ok device_backend || bad device_backend
[ "$(cat $M/device/pin)" = "$PIN" ] && ok device_pin || bad "device_pin ($(cat $M/device/pin))"
# gpuasync.ko takes dma-bufs and pins by address (GPU_Is_Dma_Buf_Supp and
# GPU_Is_GpuDirect_Supp answer 1).
[ "$(cat $M/device/dma_buf) $(cat $M/device/gpudirect)" = "yes yes" ] && ok device_gpu_apis ||
	bad "device_gpu_apis ($(cat $M/device/dma_buf) $(cat $M/device/gpudirect))"
grep -q rx_frame_count $M/README && ok readme || bad readme
# AxiVersion through the driver's register ioctl: the emulated card's identity
grep -qxE '[0-9a-f]{40}' $M/device/firmware/git_hash && ok firmware_git_hash ||
	bad "firmware_git_hash ($(cat $M/device/firmware/git_hash))"
[ "$(cat $M/device/firmware/gpu_enable)" = 1 ] && [ "$(cat $M/device/link)" = up ] &&
	ok firmware_link || bad firmware_link

# The card's SysMon through the driver's register ioctl (the emulated card's
# node has no parent device, so no hwmon is found under it): readings and
# the supplies' limits converted by the library, and the temperature set
# through the card's sysfs reaching health/ and metrics.
if [ "$PIN" != dmabuf ]; then
	case "$(cat $M/device/sysmon/source)" in
	"registers BAR0 0x24000 (UltraScale, SYSMONE1)") ok sysmon_registers ;;
	*) bad "sysmon_registers ($(cat $M/device/sysmon/source))" ;;
	esac
	[ "$(cat $M/device/sysmon/vccint_min) $(cat $M/device/sysmon/vccaux_max)" = "0.902 1.890" ] &&
		[ "$(cat $M/health/fpga_voltage)" = "ok VccInt 0.950 V, VccAux 1.800 V, VccBRAM 0.950 V" ] &&
		ok sysmon_supplies || bad "sysmon_supplies ($(cat $M/health/fpga_voltage))"
	echo 101000 > $CARD/fpga_temperature
	[ "$(cat $M/health/fpga_temperature)" = "over critical 101.0 C (critical 100.0 C)" ] &&
		grep -q '^gpuasync_fpga_overheated{.*} 1$' $M/metrics && ok sysmon_overheated ||
		bad "sysmon_overheated ($(cat $M/health/fpga_temperature))"
	echo 45000 > $CARD/fpga_temperature
fi

# mkdir allocates, pins and registers a buffer: the kernel sees it.
mkdir $M/buffers/0 && ok mkdir || bad mkdir
[ "$(cat $CARD/buffers)" = "1 0" ] && ok kernel_sees_buffer || bad "kernel_sees_buffer ($(cat $CARD/buffers))"
[ "$(cat $CARD/owner_tgid)" = "$fp" ] && ok owner_is_daemon || bad owner_is_daemon

# device/pinned: the driver's table (GA_Get_Buffer_Table), one line per buffer.
[ "$(wc -l < $M/device/pinned)" = 2 ] && ok pinned_lines || bad "pinned_lines ($(cat $M/device/pinned))"
# (a dma-buf buffer's address column is its offset in the dma-buf: 0x0)
set -- $(sed -n 2p $M/device/pinned)
size=$(cat $M/buffers/0/size)
addr=$(cat $M/buffers/0/gpu_address)
[ "$PIN" = dmabuf ] && addr=0x0
[ "$1 $2 $3 $5 $6 $7 $8 $9" = "write 0 $addr $size $((size / 65536)) $fp pinned $PIN" ] &&
	[ "$4" != 0x0 ] && ok pinned_fields || bad "pinned_fields ($*)"
[ "$PIN" != dmabuf ] || [ "$(cat $CARD/live_dmabufs)" = 1 ] && ok driver_attachments ||
	bad "driver_attachments ($(cat $CARD/live_dmabufs))"

# Arm it, start the engine, let the card send one frame.
echo 1 > $M/buffers/0/write_enable && ok arm || bad arm
echo 1 > $M/registers/write_enable && ok enable || bad enable
echo 1000 > $CARD/gen_size
before=$(cat $M/registers/rx_frame_count)
echo 1 > $CARD/gen_frames
wait_ge $M/registers/rx_frame_count $((before + 1)) && ok frame_counted || bad frame_counted
grep -q 'size=1000' $M/buffers/0/header && ok header || bad "header ($(cat $M/buffers/0/header))"
grep -q READY $M/buffers/0/status && ok status_ready || bad "status ($(cat $M/buffers/0/status))"
grep -q '^gpuasync_rx_frame_count' $M/metrics && ok metrics || bad metrics
echo bogus > $M/registers/write_enable 2>/dev/null && bad reject_bad_value || ok reject_bad_value

# rmdir releases it in the kernel too.
echo 0 > $M/registers/write_enable
rmdir $M/buffers/0 && ok rmdir || bad rmdir
[ "$(cat $CARD/buffers)" = "0 0" ] && ok kernel_released || bad "kernel_released ($(cat $CARD/buffers))"
[ "$(cat $M/device/pinned)" = "dir index gpu_address bus_address size pages owner state path" ] &&
	ok pinned_empty || bad "pinned_empty ($(cat $M/device/pinned))"

# Buffers added while frames flow lose none (issue 24 item 10): gpuasync.ko's
# add programs the new slot before the count and stops nothing, so the
# library clears no payload limit and stops no engine for it.  A feeder
# offers frames one at a time (so most buffers wait armed, as on a busy
# card), a consumer re-arms every buffer it finds READY or new, and mkdir
# adds the rest of the write buffers and four read buffers meanwhile.  The
# card's counts and the consumer's must agree exactly: every frame it
# delivered seen whole, none dropped, none cut short.
# (By address only: the dma-buf run has eight huge pages, not 20 buffers.)
if [ "$PIN" != dmabuf ]; then
SZ=1000
consume() { # until /tmp/stop, then one more scan: prints "seen cut"
	seen=0 cut=0 last=
	while :; do
		[ -n "$last" ] && break
		[ -e /tmp/stop ] && last=1
		for d in $M/buffers/*; do
			[ -d $d ] || continue # buffers/alloc_size and the like
			read -r s < $d/status || continue
			case $s in
			READY|ERROR)
				read -r h < $d/header
				case "$h" in "size=$SZ result=0 overflow=0 "*) ;; *) cut=$((cut + 1)) ;; esac
				seen=$((seen + 1))
				echo 1 > $d/write_enable ;;
			IDLE) echo 1 > $d/write_enable ;;
			esac
		done
	done
	echo "$seen $cut"
}
rm -f /tmp/stop /tmp/feed
nb=$(cat $M/device/max_buffers)
for i in 0 1 2 3; do mkdir $M/buffers/$i && echo 1 > $M/buffers/$i/write_enable || bad live_setup; done
echo 1 > $M/registers/write_enable
echo $SZ > $CARD/gen_size
d0=$(cat $CARD/delivered) x0=$(cat $CARD/dropped) o0=$(cat $CARD/overflowed)
consume > /tmp/consumed &
cp=$!
( while [ ! -e /tmp/feed ]; do echo 1 > $CARD/gen_frames; done ) &
feeder=$!
wait_ge $CARD/delivered $((d0 + 20)) || bad "live_flowing ($(cat $CARD/delivered))"
m0=$(cat $CARD/delivered) w0=$(cat $CARD/mapped_reg_writes)
b=4
# Each add waits for a frame after it, so frames surely flow between and
# around the adds (a stopped engine would stop them: live_frames_meanwhile;
# wait_ge uses $i).
while [ $b -lt $nb ]; do
	mkdir $M/buffers/$b || bad "live_mkdir $b ($(tail -1 $M/errors))"
	wait_ge $CARD/delivered $(($(cat $CARD/delivered) + 1)) || break
	b=$((b + 1))
done
for i in 0 1 2 3; do mkdir $M/read_buffers/$i || bad "live_mkdir read $i"; done
m1=$(cat $CARD/delivered) w1=$(cat $CARD/mapped_reg_writes)
touch /tmp/feed; wait $feeder
i=0; while [ "$(cat $CARD/gen_frames)" != 0 ] && [ $i -lt 400 ]; do i=$((i + 1)); sleep 0.05; done
touch /tmp/stop; wait $cp
read -r seen cut < /tmp/consumed
d=$(($(cat $CARD/delivered) - d0)) x=$(($(cat $CARD/dropped) - x0)) o=$(($(cat $CARD/overflowed) - o0))
echo "mkdir while flowing: $((nb - 4))+4 mkdirs, $((m1 - m0)) frames delivered meanwhile," \
	"$d in all, consumer saw $seen ($cut cut), card dropped $x, cut $o;" \
	"$((w1 - w0)) register words changed through the mapping"
[ $((m1 - m0)) -ge $((nb - 4)) ] && ok live_frames_meanwhile || bad "live_frames_meanwhile ($((m1 - m0)))"
[ "$seen" = "$d" ] && [ "$cut" = 0 ] && ok live_consumer_counts || bad "live_consumer_counts ($seen of $d, $cut cut)"
[ "$x" = 0 ] && [ "$o" = 0 ] && ok live_card_counts || bad "live_card_counts ($x dropped, $o cut)"
[ "$(cat $M/registers/write_enable)" = 1 ] && ok live_engine_on || bad live_engine_on
# The frames above cross an add's few microseconds only by chance; the
# card's own count of register stores shows the limit was never lowered
# (the library writes it through the mapping; arms and enables are ioctls).
[ "$w1" = "$w0" ] && ok live_limit_untouched || bad "live_limit_untouched ($((w1 - w0)) stores)"
grep -q '^gpuasync_add_stopped_frames_total{.*} 0$' $M/metrics && ok live_metric ||
	bad "live_metric ($(grep add_stopped $M/metrics))"
echo 0 > $M/registers/write_enable
i=$nb; while [ $i -gt 0 ]; do i=$((i - 1)); rmdir $M/buffers/$i || bad "live_rmdir $i"; done
for i in 3 2 1 0; do rmdir $M/read_buffers/$i || bad "live_rmdir read $i"; done

# A recorded run played into the card (gpuasync-play, docs/record.md): a
# Jungfrau-shaped run of 12 frames, 3 pulse IDs lost before frame 4, frame 8
# repeating frame 7's, into 12 armed buffers while the mount records what
# it sees: frames/ counts the gap and the duplicate, and the recording holds
# the file's frames (payload, TUSER bytes, pulse ID), frame for frame.
/t/gpuasync-synth -o /tmp/run.gar -p jungfrau -s 8K -n 12 -g 4:3 -d 8 >/dev/null &&
	ok replay_synth || bad replay_synth
for i in $(seq 0 11); do mkdir $M/buffers/$i && echo 1 > $M/buffers/$i/write_enable ||
	bad "replay_setup $i"; done
echo /tmp/rec.gar > $M/frames/record && echo 1 > $M/registers/write_enable || bad replay_record
s0=$(cat $M/frames/seen) r0=$(cat $CARD/replayed)
/t/gpuasync-play $CARD /tmp/run.gar > /tmp/play.out 2>&1 && ok replay_played ||
	bad "replay_played ($(cat /tmp/play.out))"
wait_ge $M/frames/seen $((s0 + 12)) && [ "$(cat $CARD/replayed)" = $((r0 + 12)) ] &&
	ok replay_seen || bad "replay_seen ($(cat $M/frames/seen) of $s0 + 12)"
echo stop > $M/frames/record
[ "$(cat $M/frames/pulse_id_gaps) $(cat $M/frames/pulse_ids_missed) $(cat $M/frames/pulse_id_duplicates)" = \
	"1 3 1" ] && ok replay_frames_counts || bad "replay_frames_counts ($(grep -H . $M/frames/pulse_*))"
/t/t_lib same_run /tmp/run.gar /tmp/rec.gar
# a file cut inside a frame: refused naming the frame, nothing reaches the card
head -c 20000 /tmp/run.gar > /tmp/cut.gar
r0=$(cat $CARD/replayed)
/t/gpuasync-play $CARD /tmp/cut.gar > /tmp/play.out 2>&1
[ $? = 1 ] && grep -q "frame 2" /tmp/play.out && [ "$(cat $CARD/replayed)" = "$r0" ] &&
	ok replay_cut_refused || bad "replay_cut_refused ($(cat /tmp/play.out))"
# Plays, counts and pace, as sim/replay's: a 4-frame run at 50 Hz played 3
# times live goes on in pulse ID (one step back only where it starts after
# the run above); 2 plays as recorded step back at each play and take the
# recorded time at least (the last frame is due 0.08 + 0.06 s after the
# first); -n 0 -c 5 plays 5 frames and ends.
rearm() { for i in $(seq 0 11); do echo 1 > $M/buffers/$i/write_enable || bad "replay_rearm $i"; done; }
/t/gpuasync-synth -o /tmp/four.gar -p jungfrau -s 8K -n 4 -r 50 >/dev/null || bad replay_synth4
rearm
b0=$(cat $M/frames/pulse_id_backwards) g0=$(cat $M/frames/pulse_id_gaps) s0=$(cat $M/frames/seen)
/t/gpuasync-play -n 3 -l $CARD /tmp/four.gar > /tmp/play.out 2>&1 &&
	grep -q "^12 frames played in .* (3 plays begun)" /tmp/play.out &&
	wait_ge $M/frames/seen $((s0 + 12)) &&
	[ "$(cat $M/frames/pulse_id_backwards) $(cat $M/frames/pulse_id_gaps)" = "$((b0 + 1)) $g0" ] &&
	ok replay_live_plays || bad "replay_live_plays ($(cat /tmp/play.out); $(grep -H . $M/frames/pulse_id_*))"
rearm
b0=$(cat $M/frames/pulse_id_backwards) s0=$(cat $M/frames/seen)
/t/gpuasync-play -n 2 -r recorded $CARD /tmp/four.gar > /tmp/play.out 2>&1 &&
	t=$(sed -n 's/^8 frames played in \([0-9.]*\) s (2 plays begun)$/\1/p' /tmp/play.out) &&
	[ -n "$t" ] && [ "$(echo "$t" | tr -d .)" -ge 0140 ] && wait_ge $M/frames/seen $((s0 + 8)) &&
	[ "$(cat $M/frames/pulse_id_backwards)" = $((b0 + 2)) ] &&
	ok replay_recorded_pace || bad "replay_recorded_pace ($(cat /tmp/play.out); backwards $(cat $M/frames/pulse_id_backwards) from $b0)"
rearm
r0=$(cat $CARD/replayed)
/t/gpuasync-play -n 0 -c 5 $CARD /tmp/four.gar > /tmp/play.out 2>&1 &&
	grep -q "^5 frames played in .* (2 plays begun)" /tmp/play.out &&
	[ "$(cat $CARD/replayed)" = $((r0 + 5)) ] &&
	ok replay_count || bad "replay_count ($(cat /tmp/play.out))"
echo 0 > $M/registers/write_enable
for i in $(seq 11 -1 0); do rmdir $M/buffers/$i || bad "replay_rmdir $i"; done
fi

# A buffer left behind goes away with the daemon.
mkdir $M/buffers/0 || bad mkdir_again
umount $M && ok umount || bad umount
i=0; while kill -0 $fp 2>/dev/null; do i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05; done
kill -0 $fp 2>/dev/null && { bad daemon_exit; kill -9 $fp; }
wait $fp 2>/dev/null
[ "$(cat $CARD/buffers)" = "0 0" ] && ok released_at_exit || bad released_at_exit
/t/kt stubstat >/dev/null && ok stub_clean || bad stub_clean
[ $rc = 0 ] || { echo "--- daemon log"; tail -20 /tmp/fs.log; }
exit $rc
