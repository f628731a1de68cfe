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
grep -q . $M/errors && { echo "--- errors"; cat $M/errors; }

umount $M && ok umount || bad umount
i=0; while kill -0 $fp 2>/dev/null; do i=$((i+1)); [ $i -gt 200 ] && break; sleep 0.05; done
kill -0 $fp 2>/dev/null && { bad daemon_exit; kill -9 $fp; }
wait $fp 2>/dev/null
[ $rc = 0 ] || { echo "--- daemon log"; tail -20 /tmp/fs.log; }
exit $rc
