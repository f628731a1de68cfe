#!/bin/sh
# gpuasyncfs on upstream's datadev driver and emulated card, in the guest of
# tests/upstream/run.sh, driven with cat/echo/mkdir/rmdir.  Served by four
# FUSE threads: on 7.5 every GPU-state ioctl must still come from one owner.
# Prints "KTEST ok|FAIL fs_<step>"; exit status 0 when all passed.
M=/mnt/gpuasync
PREFIX=fs_
. /t/guest.sh

mkdir -p $M
/t/gpuasyncfs -f -o threads=4 /dev/datadev_0 $M >/tmp/fs.log 2>&1 &
fp=$!
if ! wait_file $M/README; then
	bad mount; cat /tmp/fs.log; kill $fp 2>/dev/null; exit 1
fi
ok mount
[ "$(cat $M/device/backend)" = datadev ] && ok backend || bad backend
[ "$(cat $M/device/memory)" = stub ] && ok memory_stub || bad "memory_stub ($(cat $M/device/memory))"
grep -q nvidia_p2p_stub_mem $M/device/memory_note && ok memory_note || bad "memory_note ($(cat $M/device/memory_note))"
# 7.4 and 7.5 have no dma-buf commands (never asked: they would log it) and
# pin by address.
[ "$(cat $M/device/dma_buf) $(cat $M/device/gpudirect)" = "no yes" ] && ok device_gpu_apis ||
	bad "device_gpu_apis ($(cat $M/device/dma_buf) $(cat $M/device/gpudirect))"

mkdir $M/buffers/0 && mkdir $M/buffers/1 && ok mkdir || bad mkdir
echo 1 > $M/buffers/0/write_enable && echo 1 > $M/buffers/1/write_enable && ok arm || bad arm
before=$(cat $M/registers/rx_frame_count)
echo 1 > $M/registers/write_enable && ok enable || bad enable
wait_ge $M/registers/rx_frame_count $((before + 2)) && ok frames_counted || bad frames_counted
max=$(cat $M/registers/write_max_size)
wait_for $M/buffers/0/status READY && ok status_ready || bad "status ($(cat $M/buffers/0/status))"
grep -q "size=$max " $M/buffers/0/header && ok header || bad "header ($(cat $M/buffers/0/header), max $max)"
n=$(od -An -v -tx1 $M/buffers/0/data | tr -s ' \n' '\n\n' | grep -vc '^00$')
[ "$(stat -c %s $M/buffers/0/data)" = "$max" ] && [ "$n" -gt $((max / 2)) ] &&
	ok data || bad "data ($(stat -c %s $M/buffers/0/data) bytes, $n non-zero)"
grep -q "^gpuasync_device_info{.*memory=\"stub\"" $M/metrics && ok metrics || bad metrics

# The last buffer goes on its own (upstream: remove all, re-add the rest).
echo 0 > $M/registers/write_enable
rmdir $M/buffers/1 && ok rmdir_last || bad rmdir_last
[ -d $M/buffers/0 ] && grep -qv ERROR $M/buffers/0/status && ok others_kept || bad others_kept
before=$(cat $M/registers/rx_frame_count)
echo 1 > $M/buffers/0/write_enable && echo 1 > $M/registers/write_enable || bad rearm
wait_ge $M/registers/rx_frame_count $((before + 1)) && wait_for $M/buffers/0/status READY &&
	ok frame_after_rmdir || bad "frame_after_rmdir ($(cat $M/buffers/0/status))"
echo 0 > $M/registers/write_enable
rmdir $M/buffers/0 && ok rmdir || bad rmdir
# Another program removes every buffer: 7.5 refuses it (one owner), 7.4
# lets it, and then ours must say ERROR, errors and metrics must say why,
# rmdir must work and a new buffer must too.
mkdir $M/buffers/0 && mkdir $M/buffers/1 || bad mkdir_for_wipe
if /t/t_up wipe /dev/datadev_0; then
	grep -q ERROR $M/buffers/1/status && ok wiped_status || bad "wiped_status ($(cat $M/buffers/1/status))"
	grep -q "no longer holds our buffers" $M/errors && ok wiped_errors || bad wiped_errors
	grep -q '^gpuasync_registrations_lost_total{.*} 1$' $M/metrics && ok wiped_metrics || bad wiped_metrics
	rmdir $M/buffers/1 && rmdir $M/buffers/0 && ok wiped_rmdir || bad wiped_rmdir
	mkdir $M/buffers/0 && grep -qv ERROR $M/buffers/0/status && ok wiped_mkdir_again ||
		bad "wiped_mkdir_again ($(tail -1 $M/errors))"
	rmdir $M/buffers/0 || bad rmdir_after_wipe
else
	grep -q ERROR $M/buffers/1/status && bad "refused_wipe_kept ($(cat $M/buffers/1/status))" ||
		ok refused_wipe_kept
	grep -q '^gpuasync_registrations_lost_total{.*} 0$' $M/metrics && ok refused_wipe_metrics ||
		bad refused_wipe_metrics
	rmdir $M/buffers/1 && rmdir $M/buffers/0 || bad rmdir_after_refused_wipe
fi

# A second mount of the same card while this one holds buffers (issue 24
# item 11a): its mkdir is refused before anything reaches the card (7.4 has
# no owner to refuse the add; 7.5's would, after the limit was cleared), and
# ours keep working.  Before, 7.4 numbered its buffer after ours, the undo
# cleared that slot and the second mount's exit removed everything.
M2=/mnt/gpuasync2
mkdir -p $M2
mkdir $M/buffers/0 && mkdir $M/buffers/1 || bad mkdir_for_second
max=$(cat $M/registers/write_max_size)
/t/gpuasyncfs -f /dev/datadev_0 $M2 >/tmp/fs2.log 2>&1 &
fp2=$!
if wait_file $M2/README; then
	grep -q "no process of this mount registered (at least 2 write and 0 read)" $M2/errors &&
		ok second_mount_says || bad "second_mount_says ($(cat $M2/errors))"
	mkdir $M2/buffers/0 2>/tmp/mk2.err && bad second_mkdir_refused ||
		{ grep -q "Device or resource busy" /tmp/mk2.err && ok second_mkdir_refused ||
			bad "second_mkdir_refused ($(cat /tmp/mk2.err))"; }
	grep -q "buffers not registered here.*nothing was changed" $M2/errors &&
		ok second_mkdir_errors || bad "second_mkdir_errors ($(tail -1 $M2/errors))"
	umount $M2 || bad second_umount
else
	bad second_mount; cat /tmp/fs2.log; kill $fp2
fi
wait $fp2
[ "$(cat $M/registers/write_max_size)" = "$max" ] && ok second_left_limit || bad second_left_limit
grep -q ERROR $M/buffers/0/status $M/buffers/1/status && bad "second_left_ours ($(cat $M/buffers/1/status))" ||
	ok second_left_ours
rmdir $M/buffers/1 && rmdir $M/buffers/0 && ok second_rmdir_ours || bad second_rmdir_ours
grep -q . $M/errors && { echo "--- errors"; cat $M/errors; }

umount $M && ok umount || bad umount
i=0; while kill -0 $fp 2>/dev/null; do i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05; done
kill -0 $fp 2>/dev/null && { bad daemon_exit; kill -9 $fp; }
wait $fp 2>/dev/null

# kill -9 of a daemon holding buffers (issue 24 item 11c): 7.4 keeps them
# registered.  The next mount says so and how to get out, its mkdir is
# refused (not "rmdir every buffer", which it cannot), and -o reclaim takes
# them back.  7.5 lets go itself when the killed process's memory goes.
/t/gpuasyncfs -f /dev/datadev_0 $M >/tmp/fs3.log 2>&1 &
fp3=$!
wait_file $M/README && mkdir $M/buffers/0 && mkdir $M/buffers/1 && mkdir $M/read_buffers/0 ||
	bad kill9_setup
kill -9 $fp3; wait $fp3 2>/dev/null
umount -l $M 2>/dev/null
owned=; grep -q "Owning Process" /proc/datadev_0 && owned=1
/t/gpuasyncfs -f /dev/datadev_0 $M >/tmp/fs4.log 2>&1 &
fp4=$!
wait_file $M/README || { bad kill9_remount; cat /tmp/fs4.log; }
if grep -q "no process of this mount registered" $M/errors; then
	[ -z "$owned" ] && ok kill9_stale_said || bad "kill9_stale_said (7.5 kept them: $(cat $M/errors))"
	grep -q "at least 2 write and 0 read.*-o reclaim" $M/errors && ok kill9_counts ||
		bad "kill9_counts ($(cat $M/errors))"
	mkdir $M/buffers/0 2>/dev/null && bad kill9_mkdir_refused || ok kill9_mkdir_refused
	tail -1 $M/errors | grep -q "rmdir every buffer" && bad "kill9_no_rmdir_advice ($(tail -1 $M/errors))" ||
		ok kill9_no_rmdir_advice
	umount $M; wait $fp4
	/t/gpuasyncfs -f -o reclaim /dev/datadev_0 $M >/tmp/fs4.log 2>&1 &
	fp4=$!
	wait_file $M/README || { bad kill9_reclaim_mount; cat /tmp/fs4.log; }
	grep -q "reclaim: removed every buffer of the card (at least 2 write" $M/errors && ok kill9_reclaimed ||
		bad "kill9_reclaimed ($(cat $M/errors))"
else
	[ -n "$owned" ] && ok kill9_released_by_driver || bad "kill9_stale_said ($(cat $M/errors))"
fi
mkdir $M/buffers/0 && grep -qv ERROR $M/buffers/0/status && ok kill9_mkdir_after ||
	bad "kill9_mkdir_after ($(tail -1 $M/errors))"
rmdir $M/buffers/0 || bad kill9_rmdir_after
umount $M && ok kill9_umount || bad kill9_umount
wait $fp4
[ $rc = 0 ] || { echo "--- daemon log"; tail -20 /tmp/fs.log; }
exit $rc
