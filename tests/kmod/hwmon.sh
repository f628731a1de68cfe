#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Sourced by init.sh with gpuasync.ko unloaded; leaves it unloaded.  The
# BAR0 memory-map version and the SysMon as hwmon (kmod/README.md
# "Telemetry", docs/firmware.md §2.6) on cards the emulator builds
# otherwise than the default: a map version above the newest known is
# refused at load with a dmesg line and EPFNOSUPPORT; map version 0 and an
# image without GEN_SYSMON_G get no hwmon; the default card's hwmon is what
# lm-sensors' `sensors` shows, and goes with the module.

# hwmon devices named datadev, one per line (none: empty).
datadev_hwmons() {
	for n in /sys/class/hwmon/hwmon*/name; do
		[ -e "$n" ] && [ "$(cat "$n")" = datadev ] && echo "${n%/name}"
	done
}

if insmod /t/gpuasync.ko emulate=1 emulate_map_version=2 2>/tmp/insmod.err; then
	bad map_v2_refused
	rmmod gpuasync
else
	# insmod reports the errno's text: EPFNOSUPPORT
	grep -q 'Protocol family not supported' /tmp/insmod.err && ok map_v2_refused ||
		bad "map_v2_refused ($(cat /tmp/insmod.err))"
	dmesg | grep -q 'gpuasync_emu0: memory-map version 2 refused: .*newer than the newest' &&
		ok map_v2_dmesg || bad map_v2_dmesg
fi

for variant in "emulate_map_version=0" "emulate_sysmon=0"; do
	name=no_hwmon_${variant#emulate_}
	if insmod /t/gpuasync.ko emulate=1 $variant; then
		[ -c /dev/gpuasync_emu0 ] && [ -z "$(datadev_hwmons)" ] && ok "$name" || bad "$name"
		rmmod gpuasync || bad "unload_$name"
	else
		bad "load_$name"
	fi
done

if insmod /t/gpuasync.ko emulate=2; then
	# one per card, each under its own platform device
	[ "$(datadev_hwmons | wc -l)" = 2 ] && ok hwmon_per_card || bad "hwmon_per_card ($(datadev_hwmons))"
	run /t/kt -d /dev/gpuasync_emu1 hwmon
	if [ -x /usr/bin/sensors ]; then
		echo 101000 >/sys/class/gpuasync/gpuasync_emu1/fpga_temperature
		/usr/bin/sensors >/tmp/sensors.txt 2>&1
		# "datadev-isa-0001" (a platform device), then its lines
		grep -q '^datadev-' /tmp/sensors.txt && grep -q '^Temperature: *+101\.0' /tmp/sensors.txt &&
			grep -q '^VccInt:' /tmp/sensors.txt && ok sensors_datadev ||
			{ bad sensors_datadev; cat /tmp/sensors.txt; }
	else
		echo "KTEST skip sensors_datadev: no lm-sensors in the guest"
	fi
	rmmod gpuasync || bad unload_hwmon
	[ -z "$(datadev_hwmons)" ] && ok hwmon_gone_with_module || bad hwmon_gone_with_module
else
	bad load_hwmon
fi
