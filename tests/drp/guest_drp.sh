#!/bin/sh
# Sourced inside the QEMU guests of tests/upstream and tests/kmod after
# /t/guest.sh: the DRP-replay client (drp_replay.c) on a loaded card, as root
# and as an unprivileged user, then beside an observer mount scraped
# continuously.  docs/drp.md has the table these steps back.
#
#   drp_suite DEVICE STUB_NODE KNOWN_GAPS
#
# KNOWN_GAPS (drp_replay -k): steps whose failure is reported as
# "KTEST info" because the driver or emulator does not have them yet (issue
# 25); DRP_STRICT=1 in /t/env makes them failures.  DRP_TAG (optional)
# goes into every step name, for a guest that runs the suite more than once.

DRP_UID=1000
DRP_FRAMES=${DRP_FRAMES:-1000}

drp_suite() {
	dev=$1 stub=$2 gaps=$3
	[ "${DRP_STRICT:-0}" = 1 ] && gaps=
	run /t/drp_replay -n "$DRP_FRAMES" -t "${DRP_TAG:-}root" -k "$gaps" "$dev"

	# An unprivileged DAQ user: the nodes opened to it as an admin would
	# (group or mode); nothing else changes.
	chmod 0666 "$dev" "$stub"
	run /t/drp_replay -n "$DRP_FRAMES" -t "${DRP_TAG:-}user" -u $DRP_UID -k "$gaps" "$dev"

	[ -x /t/gpuasyncfs ] && drp_observed "$dev" "$gaps"
	chmod 0600 "$dev" "$stub"
}

# The client owns the card; an unprivileged observer mount is scraped in a
# loop while it receives.  The client checks its frames (count, order,
# rx_frame_count never going back); here: the mount came up read-only,
# refused a write and a mkdir with EROFS, and the register words the DRP
# set read the same at the end (the client compares them: the observer
# wrote none of them).  The observer runs as another unprivileged user's
# process through the setuid fusermount3 the guest carries.
drp_observed() {
	dev=$1 gaps=$2 mnt=/tmp/obs ready=/tmp/drp.ready
	mkdir -p $mnt && chown $DRP_UID:$DRP_UID $mnt
	chmod 0666 /dev/fuse # as udev leaves it on a distribution
	rm -f $ready /tmp/drp.out
	/t/drp_replay -n "$DRP_FRAMES" -t "${DRP_TAG:-}observed" -u $DRP_UID -k "$gaps" -r $ready "$dev" >/tmp/drp.out 2>&1 &
	cp=$!
	if ! wait_file $ready; then
		bad "drp_${DRP_TAG:-}observer_client_ready"; cat /tmp/drp.out; kill $cp; wait $cp; return
	fi
	/t/as_user $DRP_UID /t/gpuasyncfs -f -o observe "$dev" $mnt >/tmp/obs.out 2>&1 &
	op=$!
	if wait_file $mnt/device/version; then
		ok "drp_${DRP_TAG:-}observer_mounted"
		echo 1 >$mnt/registers/demux_select 2>/tmp/e1 && bad "drp_${DRP_TAG:-}observer_write_refused" ||
			{ grep -q "Read-only file system" /tmp/e1 && ok "drp_${DRP_TAG:-}observer_write_refused" ||
				{ bad "drp_${DRP_TAG:-}observer_write_refused"; cat /tmp/e1; }; }
		mkdir $mnt/buffers/9 2>/tmp/e2 && bad "drp_${DRP_TAG:-}observer_mkdir_refused" ||
			{ grep -q "Read-only file system" /tmp/e2 && ok "drp_${DRP_TAG:-}observer_mkdir_refused" ||
				{ bad "drp_${DRP_TAG:-}observer_mkdir_refused"; cat /tmp/e2; }; }
		[ "$(grep -c EROFS $mnt/errors)" = 2 ] && ok "drp_${DRP_TAG:-}observer_errors_lines" ||
			{ bad "drp_${DRP_TAG:-}observer_errors_lines"; cat $mnt/errors; }
		# The owner's buffers, as the driver publishes them (gpuasync.ko's
		# table; upstream's /proc/datadev_N, with 7.5's owning process).
		cat $mnt/device/pinned
		owners=$(awk '$1 == "write" {print $7}' $mnt/device/pinned | sort -u)
		[ "$(grep -c '^write' $mnt/device/pinned)" = 4 ] &&
			{ [ "$owners" = 0 ] || [ "$owners" = $cp ]; } &&
			ok "drp_${DRP_TAG:-}observer_pinned (owner ${owners})" ||
			bad "drp_${DRP_TAG:-}observer_pinned (owners '$owners', client $cp)"
		rm -f $ready
		scrapes=0
		while kill -0 $cp 2>/dev/null; do
			cat $mnt/metrics $mnt/registers/* $mnt/device/* >/dev/null 2>&1
			cat $mnt/buffers/*/* >/dev/null 2>&1
			scrapes=$((scrapes + 1))
		done
		echo "KTEST info observer scraped $scrapes times while the client ran"
		[ $scrapes -gt 0 ] && ok "drp_${DRP_TAG:-}observer_scraped" || bad "drp_${DRP_TAG:-}observer_scraped"
		grep -q "rx_frame_count" $mnt/metrics && ok "drp_${DRP_TAG:-}observer_metrics" || bad "drp_${DRP_TAG:-}observer_metrics"
		umount $mnt
	else
		bad "drp_${DRP_TAG:-}observer_mounted"; cat /tmp/obs.out; rm -f $ready
	fi
	wait $cp && ok "drp_${DRP_TAG:-}observed_client" || bad "drp_${DRP_TAG:-}observed_client"
	cat /tmp/drp.out
	kill $op 2>/dev/null
	wait $op
}
