#!/bin/sh
# Sourced inside the QEMU guests of tests/upstream and tests/kmod after
# /t/guest.sh: the DRP-replay client (drp_replay.c) on a loaded card, as root
# and as an unprivileged user, then beside an observer mount scraped
# continuously.  docs/drp.md has the table these steps back.
#
#   drp_suite DEVICE STUB_NODE KNOWN_GAPS [CLIENT_OPTIONS]
#
# KNOWN_GAPS (drp_replay -k): steps whose failure is reported as
# "KTEST info" because the driver or emulator cannot do what firmware does
# (docs/drp.md says why); DRP_STRICT=1 in /t/env makes them failures.
# CLIENT_OPTIONS go to every drp_replay run (-w on upstream's emulator).
# DRP_TAG (optional) goes into every step name, for a guest that runs the
# suite more than once.  DRP_MODE: summer (default: lcls2 4e09af765) or
# late (the late-2026 DRP: gpuEnableTx at each Configure, 32-bit re-arms,
# 64 KiB aligned buffers, the descriptor error mask); late runs as root and
# beside the observer, which then also checks each Configure (below).
# DRP_ROOT_OPTS go to the root run only (-x: gpuasync.ko's generator).

DRP_UID=1000
# Not a multiple of the ring's 4 buffers: the index-reset check starts from
# a ring index that is not 0.
DRP_FRAMES=${DRP_FRAMES:-1002}

drp_suite() {
	dev=$1 stub=$2 gaps=$3 copts="-m ${DRP_MODE:-summer} ${4:-}"
	[ "${DRP_STRICT:-0}" = 1 ] && gaps=
	# shellcheck disable=SC2086 # copts: options, split on purpose
	run /t/drp_replay -n "$DRP_FRAMES" -t "${DRP_TAG:-}root" -k "$gaps" -s "$stub" $copts \
		${DRP_ROOT_OPTS:-} "$dev"

	# An unprivileged DAQ user: the nodes opened to it as an admin would
	# (group or mode); nothing else changes.  Their modes are restored after.
	modes="$(stat -c %a "$dev") $(stat -c %a "$stub")"
	chmod 0666 "$dev" "$stub"
	# shellcheck disable=SC2086
	[ "${DRP_MODE:-summer}" = late ] ||
		run /t/drp_replay -n "$DRP_FRAMES" -t "${DRP_TAG:-}user" -u $DRP_UID -k "$gaps" \
			-s "$stub" $copts "$dev"

	[ -x /t/gpuasyncfs ] && drp_observed "$dev" "$stub" "$gaps" "$copts"
	# shellcheck disable=SC2086 # two words
	set -- $modes
	chmod "$1" "$dev" && chmod "$2" "$stub"
}

# The card's counts of register writes from user space (gpuasync.ko's
# emulated cards: DMA_Write_Register calls, and stores through mappings
# the card saw), "IOCTL MAPPED"; empty where the driver has none.
# Read after two more ticks of the card, so the stores made so far were seen.
drp_writes() {
	s=/sys/class/gpuasync/$(basename "$1")
	[ -r "$s/user_reg_writes" ] || return 0
	wait_ge "$s/ticks" $(($(cat "$s/ticks") + 2)) || echo "KTEST info the card's ticks stopped" >&2
	echo "$(cat "$s/user_reg_writes") $(cat "$s/mapped_reg_writes")"
}

# The card's count of the write engine's 0->1 transitions (gpuasync.ko's
# emulated cards; empty elsewhere).
drp_rises() {
	s=/sys/class/gpuasync/$(basename "$1")/write_rises
	[ -r "$s" ] && cat "$s"
}

# The late DRP paused after Configure K (1, 2): the observer reads the
# write engine on, and the card (where it counts) saw exactly one 0->1
# since PREV (the count before; empty where there is none).  Sets rises.
drp_configured() {
	we=$(obs "cat $mnt/registers/write_enable")
	[ "$we" = 1 ] && ok "${T}_write_enable_$1 (observer reads 1 after Configure $1's gpuEnableTx)" ||
		bad "${T}_write_enable_$1 (observer reads '$we' after Configure $1)"
	rises=$(drp_rises "$dev")
	if [ -n "$2" ]; then
		[ $((rises - $2)) = 1 ] && ok "${T}_one_rise_$1 (the card saw one 0->1 at Configure $1)" ||
			bad "${T}_one_rise_$1 (the card saw $((rises - $2)) 0->1 at Configure $1)"
	else
		echo "KTEST info ${T}_one_rise_$1: this card does not count enable transitions"
	fi
}

# The observer: another unprivileged user (not the DAQ user, not the owner).
# Only it can reach its mount (FUSE without allow_other bars every other
# user, root included), so what is read there runs as it.
OBS_UID=1001
obs() { /t/as_user $OBS_UID /bin/sh -c "$1"; }
drp_scrape() {
	echo "cat $1/metrics $1/registers/* $1/device/* >/dev/null 2>&1;" \
		"cat $1/buffers/*/* >/dev/null 2>&1;"
}

# The client owns the card; an unprivileged observer mount is scraped in a
# loop while it receives.  The client checks its frames (count, order,
# rx_frame_count never going back) and that the register words it set read
# the same at the end.  Here: the mount came up read-only, refused a
# write and a mkdir with EROFS, listed the client's buffers; where the card counts
# register writes, none came while the observer was mounted and scraped
# with the client paused after its set-up, and while the client received,
# none came by ioctl and no more through mappings than the client made.
# The observer runs through the setuid fusermount3 the guest carries.
drp_observed() {
	dev=$1 stub=$2 gaps=$3 copts=$4 mnt=/tmp/obs ready=/tmp/drp.ready T=drp_${DRP_TAG:-}observer
	mkdir -p $mnt && chown $OBS_UID:$OBS_UID $mnt
	chmod 0666 /dev/fuse # as udev leaves it on a distribution
	rm -f $ready /tmp/drp.out /tmp/obs.stop /tmp/obs.n
	r_before=$(drp_rises "$dev")
	# shellcheck disable=SC2086
	/t/drp_replay -n "$DRP_FRAMES" -t "${DRP_TAG:-}observed" -u $DRP_UID -k "$gaps" -s "$stub" \
		$copts -r $ready "$dev" >/tmp/drp.out 2>&1 &
	cp=$!
	if ! wait_file $ready; then
		bad "${T}_client_ready"; cat /tmp/drp.out; kill $cp; wait $cp; return
	fi
	w0=$(drp_writes "$dev")
	/t/as_user $OBS_UID /t/gpuasyncfs -f -o observe "$dev" $mnt >/tmp/obs.out 2>&1 &
	op=$!
	if obs "i=0; while [ ! -e $mnt/device/version ]; do i=\$((i+1));
		[ \$i -gt 400 ] && exit 1; sleep 0.05; done"; then
		ok "${T}_mounted"
		obs "echo 1 >$mnt/registers/demux_select" 2>/tmp/e1 && bad "${T}_write_refused" ||
			{ grep -q "Read-only file system" /tmp/e1 && ok "${T}_write_refused" ||
				{ bad "${T}_write_refused"; cat /tmp/e1; }; }
		obs "mkdir $mnt/buffers/9" 2>/tmp/e2 && bad "${T}_mkdir_refused" ||
			{ grep -q "Read-only file system" /tmp/e2 && ok "${T}_mkdir_refused" ||
				{ bad "${T}_mkdir_refused"; cat /tmp/e2; }; }
		# a read-only mount: the kernel refused both, no errors line
		awk -v m=$mnt '$2 == m { print $4 }' /proc/mounts | tr , '\n' | grep -qx ro &&
			[ "$(obs "grep -c EROFS $mnt/errors")" = 0 ] && ok "${T}_read_only" ||
			{ bad "${T}_read_only"; grep " $mnt " /proc/mounts; obs "cat $mnt/errors"; }
		# The owner's buffers, as the driver publishes them (gpuasync.ko's
		# table; upstream's /proc/datadev_N, with 7.5's owning process).
		obs "cat $mnt/device/pinned" >/tmp/pinned
		cat /tmp/pinned
		owners=$(awk '$1 == "write" {print $7}' /tmp/pinned | sort -u)
		[ "$(grep -c '^write' /tmp/pinned)" = 4 ] &&
			{ [ "$owners" = 0 ] || [ "$owners" = $cp ]; } &&
			ok "${T}_pinned (owner ${owners})" ||
			bad "${T}_pinned (owners '$owners', client $cp)"
		[ "${DRP_MODE:-summer}" = late ] && drp_configured 1 "$r_before"
		if [ -n "$w0" ]; then
			# The client waits: every write the card sees now is the observer's.
			obs "for i in 1 2 3 4 5 6 7 8 9 10; do $(drp_scrape $mnt) done"
			w1=$(drp_writes "$dev")
			[ "$w1" = "$w0" ] && ok "${T}_no_reg_writes (ioctl, mapped: $w0)" ||
				bad "${T}_no_reg_writes (ioctl, mapped: $w0 before, $w1 after the observer's scrapes)"
		fi
		obs "n=0; while [ ! -e /tmp/obs.stop ]; do $(drp_scrape $mnt) n=\$((n+1)); done;
			grep -q rx_frame_count $mnt/metrics && echo \$n" >/tmp/obs.n &
		sp=$!
		rm -f $ready
		if [ "${DRP_MODE:-summer}" = late ]; then
			# the second Configure, after the frames (5 minutes at most)
			i=0
			while [ ! -e $ready ] && kill -0 $cp 2>/dev/null && [ $i -lt 6000 ]; do
				i=$((i+1)); sleep 0.05
			done
			if [ -e $ready ]; then
				drp_configured 2 "$rises"
				rm -f $ready
			else
				bad "${T}_configure2 (the client did not pause after its second Configure)"
			fi
		fi
		wait $cp && ok "drp_${DRP_TAG:-}observed_client" || bad "drp_${DRP_TAG:-}observed_client"
		touch /tmp/obs.stop
		wait $sp
		scrapes=$(cat /tmp/obs.n 2>/dev/null)
		echo "KTEST info observer scraped ${scrapes:-?} times while the client ran"
		[ "${scrapes:-0}" -gt 0 ] && ok "${T}_scraped (metrics with rx_frame_count)" ||
			bad "${T}_scraped"
		umount $mnt
	else
		bad "${T}_mounted"; cat /tmp/obs.out; rm -f $ready
		wait $cp && ok "drp_${DRP_TAG:-}observed_client" || bad "drp_${DRP_TAG:-}observed_client"
	fi
	cat /tmp/drp.out
	if [ -n "$w0" ]; then
		# While both ran: the client writes by mapping only; the card saw
		# at most its stores (one it did not see: same value, or two to one
		# word between looks).
		w2=$(drp_writes "$dev")
		made=$(sed -n 's/.*mapped_stores=\([0-9]*\).*/\1/p' /tmp/drp.out)
		# shellcheck disable=SC2086 # four numbers
		set -- $w0 $w2
		[ "$3" = "$1" ] && [ -n "$made" ] && [ $(($4 - $2)) -gt 0 ] && [ $(($4 - $2)) -le "$made" ] &&
			ok "${T}_card_writes (ioctl +0, mapped +$(($4 - $2)) of the client's $made stores)" ||
			bad "${T}_card_writes (ioctl $1 -> $3, mapped $2 -> $4, client's stores '$made')"
	fi
	kill $op 2>/dev/null
	wait $op
}

# The late DRP on a driver without gpuEnableTx (upstream 7.4): the ioctl
# fails with ERRNO (7.4 answers -1 to a code it does not know: EPERM) and
# the driver logs the code, 0x8008 = 32776.
drp_late_refused() {
	dev=$1 stub=$2 errno=$3
	run /t/drp_replay -m late -n 8 -t "${DRP_TAG:-}late_refused" -e "$errno" -s "$stub" "$dev"
	dmesg | grep -q "Invalid command=32776" &&
		ok "drp_${DRP_TAG:-}late_refused_logged (the driver logged 0x8008 as unknown)" ||
		bad "drp_${DRP_TAG:-}late_refused_logged (no 'Invalid command=32776' in the kernel log)"
}

# Upstream's dma-buf commands of after 7.5.1 (0x800A-0x800E) on a release
# without them (7.4, 7.5): each answers -1 (EPERM) and the driver logs it
# as unknown (32778..32782); nothing else happens.
drp_dmabuf_codes_absent() {
	/t/code_probe "$1" 0x800A 0x800B 0x800C 0x800D 0x800E >/tmp/codes.out
	cat /tmp/codes.out
	[ "$(awk '$2 == -1 && $3 == "EPERM"' /tmp/codes.out | wc -l)" = 5 ] &&
		ok "drp_dmabuf_codes_absent (0x800A-0x800E: -1, EPERM)" ||
		bad "drp_dmabuf_codes_absent (want -1 EPERM for each)"
	n=0
	for c in 32778 32779 32780 32781 32782; do
		dmesg | grep -q "Invalid command=$c" && n=$((n+1))
	done
	[ $n = 5 ] && ok "drp_dmabuf_codes_logged (each logged as an unknown command)" ||
		bad "drp_dmabuf_codes_logged ($n of 5 in the kernel log)"
}
