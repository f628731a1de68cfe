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

# Upstream's emulator probes for receive buffers for seconds after the
# driver loads when its first look found too few, and logs each probe (the
# driver logs each miss).  Tests that count kernel-log lines start after it.
emu_settled() {
	dmesg | grep -q "emu: init busy-poll complete" || return 1
	dmesg | grep -q "emu: starting RX buffer seed phase" || return 0
	dmesg | grep -q "emu: seed phase complete"
}
i=0
while ! emu_settled && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
emu_settled && ok emulator_settled || bad "emulator_settled (no end of its start-up in 60 s)"

run /t/t_up /dev/datadev_0
if [ -x /t/gpuasyncfs ]; then run /t/fs_up.sh; else echo "KTEST skip fs: ${FS_SKIP:-no daemon}"; fi
# Two lanes, two owners: a GPU owner, a mount and a lanes-only client at once.
if [ -x /t/gpuasyncfs ]; then run /t/lanes_up.sh; else echo "KTEST skip lanes: ${FS_SKIP:-no daemon}"; fi

# The LCLS-II DRP's sequence (tests/drp), as root, unprivileged and beside an
# observer mount.  The emulator sees mapped stores only when it polls, so
# the DRP's back-to-back index reset is missed (issue 25 item 4).  It also
# clears a buffer's free-list word after it has written the frame's size
# word, so a re-arm made as soon as the frame is seen (the DRP's) is
# sometimes wiped and the ring would stall; firmware takes the word first.
# The client re-makes a wiped arm (-w) and reports how many were wiped, so
# the frames are still checked exactly.  Both: known gaps (docs/drp.md).
. /t/guest_drp.sh
drp_suite /dev/datadev_0 /dev/nvidia_p2p_stub_mem index_reset,rearm_kept -w

# Finding out what the driver is must not make upstream log unknown codes.
dmesg | grep -q "Invalid command" && bad "quiet_probe ($(dmesg | grep -c 'Invalid command') unknown ioctls logged)" ||
	ok quiet_probe

# The late-2026 DRP (drp_replay -m late): gpuEnableTx (0x8008) after its
# start-up, which 7.5 has (its /proc has the owner line) and 7.4 does not:
# there the call fails with EPERM (a bare -1) and is logged as unknown, so
# this comes after quiet_probe.  The same known gaps as above.
if grep -q "Owning Process" /proc/datadev_0; then
	DRP_MODE=late DRP_TAG=late_ drp_suite /dev/datadev_0 /dev/nvidia_p2p_stub_mem \
		index_reset,rearm_kept -w
	DRP_MODE=summer DRP_TAG=
else
	drp_late_refused /dev/datadev_0 /dev/nvidia_p2p_stub_mem 1
fi
drp_dmabuf_codes_absent /dev/datadev_0

rmmod datadev && ok unload_datadev || bad unload_datadev
rmmod datadev_emulator && ok unload_emulator || bad unload_emulator
rmmod nvidia_p2p_stub && ok unload_stub || bad unload_stub

guest_down
