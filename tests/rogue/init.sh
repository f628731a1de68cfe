#!/bin/sh
# /init of the rogue guest (tests/rogue/run.sh builds the initramfs): the
# host's root over virtio-9p at /host, entered with chroot for Python; for
# each firmware version gpuasync.ko's emulated card, gpuasyncfs mounted on
# it at /host/run/ga, and tests/rogue/card.py run against both.
. /t/guest.sh
guest_up
. /t/env

echo "KTEST guest up: $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpu"
insmod /t/nv_p2p_stub.ko || bad insmod_stub

H=/host
# card_py [ARGS...]: tests/rogue/card.py on the card and its mount, in this
# machine's root.
card_py() {
	chroot $H /usr/bin/env -i PATH=/usr/bin:/bin HOME=/run/rogue TMPDIR=/run/rogue \
		PYTHONPATH="$PYPATH" LD_LIBRARY_PATH="$RG/lib" PYTHONDONTWRITEBYTECODE=1 \
		"$PY" "$CARD_PY" --device /dev/gpuasync_emu0 --mount /run/ga --work /run/rogue \
		--prefix "$PREFIX" "$@"
}
mkdir -p $H
if mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=524288 hostroot $H &&
	[ -x "$H$PY" ]; then
	ok host_root
else
	bad "host_root (no $PY over 9p)"
	guest_down
fi
mount -o bind /dev $H/dev && mount -t proc proc $H/proc && mount -t sysfs sys $H/sys &&
	mount -t tmpfs run $H/run && ok chroot_mounts || bad chroot_mounts

for v in 4 5; do
	PREFIX="v$v:"
	# node_mode 0666: another user may open the card (as upstream's datadev)
	if ! insmod /t/gpuasync.ko emulate=1 emulate_version=$v node_mode=0666; then
		bad insmod_gpuasync
		continue
	fi
	mkdir -p $H/run/ga $H/run/rogue
	/t/gpuasyncfs -f /dev/gpuasync_emu0 $H/run/ga >/tmp/fs$v.log 2>&1 &
	fp=$!
	if wait_file $H/run/ga/pyrogue; then
		ok mount
		# A buffer each way: the latency files pyrogue's index names are
		# buffer 0's.
		mkdir $H/run/ga/buffers/0 $H/run/ga/read_buffers/0 && ok buffers || bad buffers
		# Traffic both ways, so counters and latencies hold more than zeros:
		# one frame in (buffer 0 armed once), one out; then the card is still.
		M=$H/run/ga CARD=/sys/class/gpuasync/gpuasync_emu0
		echo 1 >$M/buffers/0/write_enable && echo 1 >$M/registers/write_enable &&
			echo 1000 >$CARD/gen_size && echo 1 >$CARD/gen_frames &&
			wait_ge $M/registers/rx_frame_count 1 && echo 1 >$M/registers/read_enable &&
			echo 256 >$M/read_buffers/0/send && wait_ge $M/registers/tx_frame_count 1 &&
			ok traffic || bad "traffic (rx $(cat $M/registers/rx_frame_count), tx $(cat $M/registers/tx_frame_count))"
		card_py || bad "card.py (exit $?)"
		# Another user's pyrogue while the mount owns the card: reads, and
		# a refused write the kernel log explains.
		card_py --nonowner 65534 || bad "card.py --nonowner (exit $?)"
		dmesg | grep -q "by pid [0-9]* (python3) refused (EPERM): registers are written by the owner of the card's GPU state (tgid $fp)" &&
			ok nonowner_logged || bad "nonowner_logged ($(dmesg | grep EPERM | tail -2))"
	else
		bad mount
		cat /tmp/fs$v.log
	fi
	echo 0 >$M/registers/write_enable
	echo 0 >$M/registers/read_enable
	rmdir $H/run/ga/buffers/0 $H/run/ga/read_buffers/0 || bad rmdir
	umount $H/run/ga || bad unmount
	wait $fp && ok daemon_exit || bad "daemon_exit ($(tail -3 /tmp/fs$v.log))"
	rm -rf $H/run/rogue
	rmmod gpuasync && ok unload || bad unload
done
PREFIX=
umount $H/run $H/sys $H/proc $H/dev $H || bad host_unmount
guest_down
