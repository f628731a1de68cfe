#!/bin/sh
# /init of the upstream conformance guest (tests/upstream/run.sh): loads
# upstream's p2p stub, emulator and datadev driver, runs our library and
# filesystem suites against /dev/datadev_0, unloads everything (upstream's
# stub warns at unload when a page table leaked), then prints the kernel log,
# the taint mask and "KTEST EXIT <rc>".
. /t/guest.sh
. /t/env
guest_up

echo "KTEST guest up: $(uname -r), upstream $(cat /t/upstream_name)"
insmod /up/nvidia_p2p_stub.ko || bad insmod_stub
insmod /up/datadev_emulator.ko emu_gpu_poll_interval_us=200 || bad insmod_emulator
insmod /up/datadev.ko cfgTxCount=16 cfgRxCount=16 cfgSize=65536 cfgMode=2 || bad insmod_datadev
[ -c /dev/datadev_0 ] && [ -c /dev/nvidia_p2p_stub_mem ] && ok device_nodes || bad device_nodes
sed -n '/DataGPU State/,/^$/p' /proc/datadev_0

run /t/t_up /dev/datadev_0
if [ -x /t/gpuasyncfs ]; then run /t/fs_up.sh; else echo "KTEST skip fs: ${FS_SKIP:-no daemon}"; fi

# The LCLS-II DRP's sequence (tests/drp), as root, unprivileged and beside an
# observer mount.  The emulator sees mapped stores only when it polls, so
# the DRP's back-to-back index reset is reported, not judged (issue 25 item 4).
# Upstream's emulator clears a buffer's free-list word after it has written
# the frame's size word, so a consumer that re-arms as soon as it sees the
# frame (the DRP) sometimes has its arm wiped and waits for ever: the
# round-robin stall is reported, not judged (firmware takes the word first).
# Not yet part of the default run (GA_DRP_SUITE=1 runs it; docs/drp.md).
if [ "${DRP_SUITE:-0}" = 1 ]; then
	. /t/guest_drp.sh
	drp_suite /dev/datadev_0 /dev/nvidia_p2p_stub_mem index_reset,round_robin
fi

# Finding out what the driver is must not make upstream log unknown codes.
dmesg | grep -q "Invalid command" && bad "quiet_probe ($(dmesg | grep -c 'Invalid command') unknown ioctls logged)" ||
	ok quiet_probe

rmmod datadev && ok unload_datadev || bad unload_datadev
rmmod datadev_emulator && ok unload_emulator || bad unload_emulator
rmmod nvidia_p2p_stub && ok unload_stub || bad unload_stub

guest_down
