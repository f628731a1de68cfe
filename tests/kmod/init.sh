#!/bin/sh
# /init of the kmod test guest (tests/kmod/run.sh builds the initramfs).
# Loads the modules, runs the suites, and prints one "KTEST ok|FAIL <step>"
# line per step, then the kernel log, the taint mask and "KTEST EXIT <rc>".
# /t/env (written by run.sh) says which optional parts are present.
. /t/guest.sh
guest_up
. /t/env
stubstat() { /t/kt stubstat; }

echo "KTEST guest up: $(uname -r), $(grep -c ^processor /proc/cpuinfo) cpu"

insmod /t/nv_p2p_stub.ko || bad insmod_stub
# The packages' gpuasync.ko (kmod/Kbuild without GA_EMU): the driver alone.  emulate=
# is no parameter of it (the kernel ignores it), no card appears, and none of its
# symbols is the emulator's (cards, store trap and its die notifier, firmware model).
if insmod /t/gpuasync_prod.ko emulate=1; then
	P=/sys/module/gpuasync/parameters
	[ -e $P/bind_pci ] && [ -z "$(ls $P | grep '^emulate')" ] && ok production_parameters ||
		bad "production_parameters ($(ls $P | tr '\n' ' '))"
	[ ! -e /dev/gpuasync_emu0 ] && ok production_no_card || bad production_no_card
	n=$(grep -c '\[gpuasync\]' /proc/kallsyms)
	e=$(grep '\[gpuasync\]' /proc/kallsyms | grep -c 'ga_emu\|ga_trap\|ga_model')
	[ "$n" -gt 100 ] && [ "$e" = 0 ] && ok "production_symbols ($n, none of the emulator)" ||
		bad "production_symbols ($n, $e of the emulator)"
	rmmod gpuasync && ok production_unload || bad production_unload
else
	bad production_load
fi
insmod /t/gpuasync.ko emulate=2 || bad insmod_gpuasync
[ -c /dev/gpuasync_emu0 ] && [ -c /dev/gpuasync_emu1 ] && [ -c /dev/nv_p2p_stub ] &&
	ok device_nodes || bad device_nodes
[ "$(stat -c %a /dev/gpuasync_emu0)" = 660 ] && ok device_mode || bad device_mode
run /t/kt perms_closed

# The whole suite on V4 (the default), then the second card on its own.
run /t/kt all
run /t/kt -d /dev/gpuasync_emu1 identity frames kill9

# Library against the module.
if [ -x /t/t_lib ]; then run /t/t_lib /dev/gpuasync_emu0; else echo "KTEST skip t_lib"; fi

# Load/unload cycles with buffers registered: refused while a process holds
# buffers, clean after kill -9, then again after a plain exit.
for cycle in 1 2 3; do
	# The redirection happens in the child: an old file would answer for it.
	rm -f /tmp/hold.out
	/t/kt hold > /tmp/hold.out 2>&1 &
	hp=$!
	if wait_for /tmp/hold.out HOLDING; then
		rmmod gpuasync 2>/dev/null && bad "unload_refused_while_held($cycle)" ||
			ok "unload_refused_while_held($cycle)"
		[ "$(cat /sys/class/gpuasync/gpuasync_emu0/owner_tgid)" = "$hp" ] &&
			ok "owner_is_holder($cycle)" || bad "owner_is_holder($cycle)"
	else
		bad "holder_setup($cycle)"; cat /tmp/hold.out
	fi
	kill -9 $hp; wait $hp 2>/dev/null
	rmmod gpuasync && ok "unload_after_kill($cycle)" || bad "unload_after_kill($cycle)"
	stubstat && ok "stub_clean($cycle)" || bad "stub_clean($cycle)"
	insmod /t/gpuasync.ko emulate=1 || bad "reload($cycle)"
done

# The same with dma-buf buffers (the driver holds the dma-buf references).
rm -f /tmp/hold.out
/t/kt hold_dmabuf > /tmp/hold.out 2>&1 &
hp=$!
if wait_for /tmp/hold.out HOLDING; then
	rmmod gpuasync 2>/dev/null && bad unload_refused_dmabuf || ok unload_refused_dmabuf
	[ "$(cat /sys/class/gpuasync/gpuasync_emu0/live_dmabufs)" = 3 ] && ok dmabuf_holder_attached ||
		bad dmabuf_holder_attached
else
	bad holder_setup_dmabuf; cat /tmp/hold.out
fi
kill -9 $hp; wait $hp 2>/dev/null
rmmod gpuasync && ok unload_after_kill_dmabuf || bad unload_after_kill_dmabuf
stubstat && ok stub_clean_dmabuf || bad stub_clean_dmabuf
insmod /t/gpuasync.ko emulate=1 || bad reload_dmabuf

# The permission model as an unprivileged user (kmod/README.md), on a node
# others may open; the node's mode and group from the parameters.
rmmod gpuasync
if insmod /t/gpuasync.ko emulate=1 node_mode=0666; then
	run /t/kt perms
	rmmod gpuasync || bad unload_perms
else
	bad load_perms
fi
if insmod /t/gpuasync.ko emulate=1 node_mode=0640 node_gid=1234; then
	[ "$(stat -c '%a %g' /dev/gpuasync_emu0)" = "640 1234" ] && ok node_mode_gid ||
		bad "node_mode_gid ($(stat -c '%a %g' /dev/gpuasync_emu0))"
	rmmod gpuasync || bad unload_node_gid
else
	bad load_node_gid
fi
insmod /t/gpuasync.ko emulate=1 node_mode=01777 2>/dev/null && { bad node_mode_range; rmmod gpuasync; } ||
	ok node_mode_range

# Parameters are checked.
insmod /t/gpuasync.ko emulate=99 2>/dev/null && { bad emulate_range; rmmod gpuasync; } || ok emulate_range
insmod /t/gpuasync.ko emulate=1 emulate_version=2 emulate_buffers=17 2>/dev/null &&
	{ bad emulate_v1_buffers; rmmod gpuasync; } || ok emulate_v1_buffers

# A card whose firmware has GPU async disabled.
if insmod /t/gpuasync.ko emulate=1 emulate_gpu_en=0; then
	[ "$(cat /sys/class/gpuasync/gpuasync_emu0/gpu_enabled)" = 0 ] && ok gpu_disabled_reported ||
		bad gpu_disabled_reported
	run /t/kt unsupported
	rmmod gpuasync || bad unload_unsupported
else
	bad load_unsupported
fi

# The memory-map version and the SysMon as hwmon (tests/kmod/hwmon.sh).
. /t/hwmon.sh

# Every other firmware version: V1 layout (1-3) and V5 (active bits).  V3
# also takes the fixed post-stop wait that real cards before V5 get, set
# above the version's 50 ms so a driver that ignored it would wait too little.
for v in 1 3 5; do
	extra=
	[ $v = 3 ] && extra="emulate_dma_barrier=0 quiesce_ms=80"
	if insmod /t/gpuasync.ko emulate=1 emulate_version=$v $extra; then
		run /t/kt identity registers add_bad add_remove too_many arm frames read_path \
			invalidate close_without_remove kill9 dmabuf_frames dmabuf_move dmabuf_upstream \
			enable_pulse proc
		rmmod gpuasync || bad "unload_v$v"
	else
		bad "load_v$v"
	fi
done

# Upstream mode (what upstream's GPU tools need; tests/upstream/tools.sh
# runs the tools themselves), as upstream main (V4) and 7.5 (V5) emulate.
for v in 4 5; do
	if insmod /t/gpuasync.ko emulate=1 emulate_upstream=1 emulate_version=$v; then
		# /proc beside upstream's own text, taken from its emulated card
		# at load (tests/kmod/upstream-proc: main is 7.4 with V4, 7.5 V5).
		ref=main; [ $v = 5 ] && ref=pre-release
		cat /proc/gpuasync_emu0 >/tmp/proc.txt
		run /t/proc_cmp.sh /t/upstream-proc-$ref.txt /tmp/proc.txt "v$v"
		run /t/kt identity upstream_mode kill9
		rmmod gpuasync || bad "unload_upstream_v$v"
	else
		bad "load_upstream_v$v"
	fi
done
# The LCLS-II DRP's sequence (tests/drp) in upstream mode, whose source
# numbers its frames (PRBS), V4 and V5: as root, unprivileged, beside an
# observer mount, with the card's counts of user register writes.  Known
# gaps (KTEST info, failures under GA_DRP_STRICT=1; docs/drp.md): an
# unprivileged process may not map the registers writable before it owns
# buffers (the DRP maps first).  The back-to-back index reset (issue 25
# item 4) is no gap: the card steps every store to its control page.
. /t/guest_drp.sh
# The DRP's production launch line (docs/drp.md): the DAQ user holding
# CAP_SYS_ADMIN alone, ambient, through util-linux's setpriv, as LCLS-II
# starts drp_gpu (there under sudo -E; here init is root already).  It maps
# the registers writable before it owns the card, with no known gap: a
# process with CAP_SYS_ADMIN may (kmod/README.md "Permissions"); the same
# user without it may not (drp_suite's map_before_add above).
drp_setpriv() {
	if [ ! -x /usr/bin/setpriv ]; then
		echo "KTEST skip drp_${3}setpriv: no util-linux setpriv in the guest"
		return
	fi
	modes="$(stat -c %a "$1") $(stat -c %a "$2")"
	chmod 0666 "$1" "$2"
	sp="/usr/bin/setpriv --reuid=$DRP_UID --regid=$DRP_UID --init-groups \
		--securebits=+no_setuid_fixup --inh-caps=-all,+sys_admin --ambient-caps=-all,+sys_admin"
	caps=$($sp /bin/sh -c 'echo $(id -u) $(grep ^CapEff /proc/self/status)')
	[ "$caps" = "$DRP_UID CapEff: 0000000000200000" ] && ok "drp_${3}setpriv_caps ($caps)" ||
		bad "drp_${3}setpriv_caps ($caps)"
	run $sp /t/drp_replay -n "$DRP_FRAMES" -t "${3}setpriv" -k "" -s "$2" "$1"
	# shellcheck disable=SC2086 # two words
	set -- $modes "$1" "$2"
	chmod "$1" "$3" && chmod "$2" "$4"
}
for v in 4 5; do
	if insmod /t/gpuasync.ko emulate=1 emulate_upstream=1 emulate_version=$v; then
		DRP_TAG=v${v}_ drp_suite /dev/gpuasync_emu0 /dev/nv_p2p_stub map_before_add
		drp_setpriv /dev/gpuasync_emu0 /dev/nv_p2p_stub "v${v}_"
		# The late-2026 DRP: gpuEnableTx at each Configure, 32-bit re-arms;
		# as root the card's generator also sends a frame whose TUSER
		# makes it an error under the DRP's mask.
		DRP_MODE=late DRP_TAG=v${v}_late_ DRP_ROOT_OPTS="-x /sys/class/gpuasync/gpuasync_emu0" \
			drp_suite /dev/gpuasync_emu0 /dev/nv_p2p_stub map_before_add
		DRP_MODE=summer DRP_TAG= DRP_ROOT_OPTS=
		rmmod gpuasync || bad "unload_drp_v$v"
	else
		bad "load_drp_v$v"
	fi
done
insmod /t/gpuasync.ko emulate=1 emulate_upstream=1 emulate_version=3 2>/dev/null &&
	{ bad emulate_upstream_v1; rmmod gpuasync; } || ok emulate_upstream_v1

# GpuAsyncCore elsewhere in BAR0 (0xD00000 as the example offset): the
# driver, the suite and the library (which finds the offset in sysfs) follow
# the core_offset parameter; a library told otherwise refuses; bad offsets
# are refused at load.
for v in 1 4; do
	if insmod /t/gpuasync.ko emulate=1 emulate_version=$v core_offset=0xd00000; then
		[ "$(cat /sys/class/gpuasync/gpuasync_emu0/core_offset)" = 0xd00000 ] &&
			ok "core_offset_sysfs_v$v" || bad "core_offset_sysfs_v$v"
		run /t/kt identity registers add_remove arm frames read_path kill9
		# t_lib waits for completion words, which V1 firmware does not write.
		if [ -x /t/t_lib ] && [ $v = 4 ]; then run /t/t_lib /dev/gpuasync_emu0; fi
		if [ -x /t/gpuasyncfs ]; then
			mkdir -p /tmp/mco
			/t/gpuasyncfs /dev/gpuasync_emu0 /tmp/mco -o core_offset=0x28000 \
				>/tmp/co.out 2>&1 && { bad "core_offset_mismatch_v$v"; umount /tmp/mco; } ||
				{ grep -q "at 0xd00000 (module parameter core_offset)" /tmp/co.out &&
					ok "core_offset_mismatch_v$v" || { bad "core_offset_mismatch_v$v"; cat /tmp/co.out; }; }
			/t/gpuasyncfs -f /dev/gpuasync_emu0 /tmp/mco >/tmp/co.out 2>&1 &
			dp=$!
			if wait_file /tmp/mco/device/version; then
				grep -q " 0xd00000$" /tmp/mco/device/registers_path &&
					[ "$(cat /tmp/mco/device/version)" = $v ] &&
					ok "core_offset_mount_v$v" || bad "core_offset_mount_v$v"
				umount /tmp/mco
			else
				bad "core_offset_mount_v$v"; cat /tmp/co.out; kill $dp
			fi
			wait $dp
		fi
		rmmod gpuasync || bad "unload_core_offset_v$v"
	else
		bad "load_core_offset_v$v"
	fi
done
for off in 0x28800 0x20000 0xff9000; do
	insmod /t/gpuasync.ko emulate=1 core_offset=$off 2>/dev/null &&
		{ bad "core_offset_refused($off)"; rmmod gpuasync; } || ok "core_offset_refused($off)"
done

# gpuasyncfs on the emulated card, driven from the shell.
insmod /t/gpuasync.ko emulate=1 || bad reload_for_fs
if [ -x /t/gpuasyncfs ] && [ -x /t/fs_test.sh ]; then
	run /t/fs_test.sh
	# The library's dma-buf path against the driver: host memory through
	# udmabuf (a huge page per buffer), where the kernel has it.
	if [ -c /dev/udmabuf ]; then
		echo 8 > /proc/sys/vm/nr_hugepages
		# The library hands each buffer over as a whole dma-buf: upstream's
		# GPU_DmaBuf_Add_* and GPU_DmaBuf_Remove_Buffers, as the driver counts them.
		if [ -x /t/t_lib ]; then run /t/t_lib dmabuf /dev/gpuasync_emu0; fi
		run /t/fs_test.sh dmabuf
		echo 0 > /proc/sys/vm/nr_hugepages
	else
		echo "KTEST skip fs_test.sh dmabuf: no /dev/udmabuf (this kernel has no CONFIG_UDMABUF)"
	fi
else
	echo "KTEST skip gpuasyncfs: ${FS_SKIP:-daemon not built}"
fi

# Debug kernel: leaks of our modules (kmemleak only reports objects
# unreferenced for a few seconds, i.e. from the earlier steps).
K=/sys/kernel/debug/kmemleak
if [ -w $K ]; then
	echo scan > $K; sleep 1; echo scan > $K
	if grep -qE '\[(gpuasync|nv_p2p_stub)\]|(ga|stub)_[a-z0-9_]+\+0x' $K; then
		bad kmemleak; head -60 $K
	else
		ok "kmemleak ($(grep -c unreferenced $K) unrelated reports)"
	fi
fi

rmmod gpuasync && ok unload_final || bad unload_final
# Its debugfs directory (per-card command counts) goes with it.
[ -d /sys/kernel/debug/block ] && [ ! -e /sys/kernel/debug/gpuasync ] && ok debugfs_removed ||
	bad debugfs_removed
stubstat && ok stub_clean_final || bad stub_clean_final
rmmod nv_p2p_stub && ok unload_stub || bad unload_stub

guest_down
