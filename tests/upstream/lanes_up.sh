#!/bin/sh
# Two lanes, two owners on upstream's driver (production: a CPU DRP and a
# GPU DRP on different lanes of one card), in the guest of
# tests/upstream/run.sh.  While one process owns the GPU state (a write
# buffer, the engine on, lanes 4-7), a gpuasyncfs mount (plain, then
# -o observe) and a client that makes only non-GPU calls (registers,
# DMA_Set_MaskBytes for lanes 0-3) both work beside it and beside each
# other, and neither disturbs the owner: t_up owner checks at the end that
# it still owns buffer, lanes and GPU state (7.5: the Owning Process) and
# that frames still land.  Prints "KTEST ok|FAIL lanes_<step>".
M=/mnt/lanes
PREFIX=lanes_
DEV=/dev/datadev_0
. /t/guest.sh
rc=0
mkdir -p $M

# start NAME MODE: t_up MODE in the background, fed from a fifo (fd 3 for
# the owner, 4 for the client) until told to go on; wait for its "ready".
mkfifo /tmp/owner.in /tmp/lanes.in
/t/t_up owner $DEV </tmp/owner.in >/tmp/owner.out 2>&1 &
owner=$!
exec 3>/tmp/owner.in
wait_for /tmp/owner.out "owner ready" && ok gpu_owner_up || { bad gpu_owner_up; cat /tmp/owner.out; }
busy() { grep "Owning Process" /proc/datadev_0; }
held=$(busy)

/t/t_up lanes $DEV </tmp/lanes.in >/tmp/lanes.out 2>&1 &
client=$!
exec 4>/tmp/lanes.in
wait_for /tmp/lanes.out "lanes ready" && ok cpu_client_up || { bad cpu_client_up; cat /tmp/lanes.out; }

# mount_beside OPTS TAG: a mount beside both: it reads the card, refuses
# to take the owner's card for a buffer, and leaves everything as it was.
mount_beside() {
	/t/gpuasyncfs -f $1 $DEV $M >/tmp/lanes_fs.log 2>&1 &
	fp=$!
	if ! wait_file $M/README; then
		bad "${2}_mount"; cat /tmp/lanes_fs.log; kill $fp; return
	fi
	v=$(cat $M/device/version)
	[ "$v" = 4 ] || [ "$v" = 5 ] && ok "${2}_version" || bad "${2}_version ($v)"
	n=$(cat $M/registers/rx_frame_count) && [ "$n" -ge 1 ] && ok "${2}_registers" ||
		bad "${2}_registers ($n)"
	mkdir $M/buffers/0 2>/tmp/lanes_mkdir.err && bad "${2}_mkdir_refused" || ok "${2}_mkdir_refused"
	# The plain mount says why in errors (another process's buffers: EBUSY);
	# an observer is mounted read-only, so the kernel refuses it (EROFS).
	if [ "$2" = observe ]; then
		grep -q "Read-only file system" /tmp/lanes_mkdir.err && ok "${2}_read_only" ||
			bad "${2}_read_only ($(cat /tmp/lanes_mkdir.err))"
	else
		grep -q "Device or resource busy" /tmp/lanes_mkdir.err && [ -s $M/errors ] &&
			ok "${2}_errors_say_why" || bad "${2}_errors_say_why ($(cat /tmp/lanes_mkdir.err))"
	fi
	[ "$(busy)" = "$held" ] && ok "${2}_owner_kept" || bad "${2}_owner_kept ($(busy))"
	umount $M && ok "${2}_umount" || bad "${2}_umount"
	wait $fp
}
mount_beside "-o threads=2" plain
mount_beside "-o observe" observe

echo go >&4
exec 4>&-
wait $client && ok cpu_client || bad cpu_client
cat /tmp/lanes.out
# A new client takes lanes 0-3 again (the first one's went with its file),
# with an observer mount up.
/t/gpuasyncfs -f -o observe $DEV $M >/tmp/lanes_fs.log 2>&1 &
fp=$!
wait_file $M/README || bad observe_again_mount
echo go | /t/t_up lanes $DEV >/tmp/lanes2.out 2>&1 && ok cpu_client_again || bad cpu_client_again
grep -v KTEST /tmp/lanes2.out
umount $M; wait $fp

echo go >&3
exec 3>&-
wait $owner && ok gpu_owner_undisturbed || bad gpu_owner_undisturbed
cat /tmp/owner.out
rm -f /tmp/owner.in /tmp/lanes.in
exit $rc
