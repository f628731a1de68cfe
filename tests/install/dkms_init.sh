#!/bin/sh
# /init of tests/install/dkms.sh's guest: the modules Debian's dkms built and installed, in
# /lib/modules/<kernel>/updates/dkms with the modules.dep depmod wrote, loaded by name as a
# machine loads them.  One "KTEST ok|FAIL <step>" line per step (tests/kmod/guest.sh).
. /t/guest.sh
guest_up
. /t/env
K=$(uname -r)
echo "KTEST guest up: $K"
if modprobe gpuasync; then
	ok dkms_modprobe
else
	bad dkms_modprobe
fi
grep -q '^nv_p2p_stub ' /proc/modules && ok dkms_dependency_loaded || bad dkms_dependency_loaded
[ "$(cat /sys/module/gpuasync/version 2>/dev/null)" = "$VERSION" ] && ok dkms_module_version ||
	bad "dkms_module_version ($(cat /sys/module/gpuasync/version 2>/dev/null))"
# The packages build the driver without emulated cards (kmod/Kbuild, GA_EMU).
P=/sys/module/gpuasync/parameters
[ -e $P/bind_pci ] && [ -z "$(ls $P | grep '^emulate')" ] && ok dkms_no_emulator_parameters ||
	bad "dkms_no_emulator_parameters ($(ls $P | tr '\n' ' '))"
n=$(grep -c '\[gpuasync\]' /proc/kallsyms)
e=$(grep '\[gpuasync\]' /proc/kallsyms | grep -c 'ga_emu\|ga_trap\|ga_model')
[ "$n" -gt 100 ] && [ "$e" = 0 ] && ok "dkms_no_emulator_symbols ($n symbols)" ||
	bad "dkms_no_emulator_symbols ($n symbols, $e of the emulator)"
[ -c /dev/nv_p2p_stub ] && [ ! -e /dev/gpuasync_emu0 ] && ok dkms_device_nodes || bad dkms_device_nodes
rmmod gpuasync && rmmod nv_p2p_stub && ok dkms_unload || bad dkms_unload
guest_down
