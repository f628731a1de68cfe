#!/bin/busybox sh
# /init of tests/upstream/tools.sh's guest: upstream's GPU tools, unmodified,
# on gpuasync.ko's emulated card in upstream mode, RUNS times each (a run
# that lost one of upstream's own races with the card's tick is run again,
# and said); then the card's own account (every GPU->FPGA frame was PRBS),
# the stub's (no pin left) and a clean unload.
. /t/guest.sh
. /t/env
guest_up
echo "KTEST guest up: $(uname -r), tools of upstream $UPSTREAM, firmware V$VERSION, tick ${POLL} us"
insmod /t/nv_p2p_stub.ko || bad insmod_stub
insmod /t/gpuasync.ko emulate=1 emulate_upstream=1 emulate_version="$VERSION" \
	emulate_poll_us="$POLL" || bad insmod_gpuasync
DEV=/dev/gpuasync_emu0
SYS=/sys/class/gpuasync/gpuasync_emu0
[ -c $DEV ] && [ -c /dev/nvidia_p2p_stub_mem ] && ok device_nodes || bad device_nodes
[ "$(stat -c %a /dev/nvidia_p2p_stub_mem)" = 600 ] && ok stub_mem_mode || bad stub_mem_mode

# dmaGpuToggleTest judges the kernel log with util-linux dmesg and wants lines.
n=$(/bin/sh -c 'dmesg --ctime --level=emerg,alert,crit,err,warn | wc -l')
[ "$n" -gt 0 ] && ok "dmesg_works ($n lines)" || bad "dmesg_works ($n lines)"

# upstream_race NAME: print why the failed run in /tmp/out lost a race that
# upstream's tool itself runs against the card's free-running tick, with the
# card's evidence; print nothing for any other failure.
#  - dmaGpuToggleTest stops the preamble right after re-arming and only then
#    disables writes; a tick in between lands frame S in an armed buffer, the
#    tool wipes it on resume and reports "Bad Sequence. exp=S, got=S+1".  The
#    card must show F..=S as its last frame before it saw the disable.
#  - rdmaTestEmu re-arms every buffer on its last frame and only then clears
#    the free list: a tick in between delivers exactly one frame more than
#    asked (rx = expected + 1, tx = expected), as its own comment says.
upstream_race() {
	case $1 in
	dmaGpuToggleTest)
		s=$(sed -n 's/^Bad Sequence\. exp=\([0-9]*\), got=\([0-9]*\)$/\1 \2/p' /tmp/out | head -1)
		[ -n "$s" ] || return 0
		set -- $s
		[ "$2" = $(($1 + 1)) ] || return 0
		cat $SYS/up_log | tr ' ' '\n' | awk -v s="$1" -F'[:=]' '
			found && /:[Fe]/ { exit }
			found && /:d/ { ok = 1; exit }
			!found && $2 ~ /^F/ && $3 == s { found = 1 }
			END { if (ok) print "the card delivered frame " s \
				" after the tool'"'"'s last preamble frame, before its disable" }'
		;;
	rdmaTestEmu_*)
		sed -n 's/.*counter mismatch rx=\([0-9]*\) tx=\([0-9]*\) expected=\([0-9]*\).*/\1 \2 \3/p' \
			/tmp/out | head -1 | awk '$1 == $3 + 1 && $2 == $3 {
			print "one frame more than asked (rx " $1 ", tx " $2 "): a tick between " \
				"the last re-arm and the free-list clear" }'
		;;
	esac
}

# stall_watch PID SECONDS: kill PID after SECONDS; and when no frame moved
# either way for 3 s while it runs, write into /tmp/stall what the card and
# the tool each see: the card's state and events, and the first words
# (descriptor, doorbell) of every page of /dev/nvidia_p2p_stub_mem the tool
# has mapped, read from its memory.  A stalled run's evidence is taken
# while the tool still holds its buffers, not after it gave them up.
stall_watch() {
	t=0 same=0 last=""
	while [ -d /proc/$1 ]; do
		sleep 1
		t=$((t + 1))
		[ $t -lt "$2" ] || { echo "killed after $2 s" >>/tmp/out; kill -9 $1; return; }
		now="$(cat $SYS/up_frames) $(cat $SYS/tx_frames)"
		[ "$now" = "$last" ] && same=$((same + 1)) || same=0
		last=$now
		[ $same = 3 ] || continue
		{
			echo "--- stalled at $t s: card: $(cat $SYS/up_state)"
			echo "--- events: $(cat $SYS/up_log)"
			grep nvidia_p2p_stub_mem /proc/$1/maps | while read -r range rest; do
				a=$((0x${range%-*}))
				printf -- '--- tool %x: %s\n' $a "$(dd if=/proc/$1/mem bs=8 count=1 \
					skip=$((a / 8)) 2>/dev/null | od -An -tu4)"
			done
		} >/tmp/stall 2>&1
	done
}

# tool NAME SECONDS CMD...: RUNS runs; every one must pass.  A run that
# lost one of upstream's own races (upstream_race) is run again, at most
# 1 + RUNS/10 times per tool, and counted on the KTEST line; any other
# failure fails the tool.
tool() {
	name=$1 secs=$2
	shift 2
	n=0 pass=0 again=0 t0=$(date +%s)
	while [ $n -lt "$RUNS" ]; do
		n=$((n + 1))
		rm -f /tmp/stall
		"$@" >/tmp/out 2>&1 &
		pid=$!
		stall_watch $pid "$secs" &
		watch=$!
		wait $pid && pass=$((pass + 1)) ok=1 || ok=""
		kill $watch 2>/dev/null
		wait $watch 2>/dev/null
		[ -z "$ok" ] || continue
		why=$(upstream_race "$name")
		if [ -n "$why" ] && [ $again -lt $((1 + RUNS / 10)) ]; then
			again=$((again + 1)) n=$((n - 1))
			echo "--- $name run $((n + 1)) lost upstream's own race, run again: $why"
			grep -m 3 -e 'Bad Sequence' -e 'counter mismatch' /tmp/out
			continue
		fi
		echo "--- $name run $n failed:"
		tail -15 /tmp/out
		# What the card saw: its state and its last events.
		echo "--- card: $(cat $SYS/up_state 2>/dev/null)"
		echo "--- events: $(cat $SYS/up_log 2>/dev/null)"
		cat /tmp/stall 2>/dev/null
	done
	extra=""
	[ $again = 0 ] || extra="; $again run again after upstream's own race"
	echo "KTEST $( [ $pass = "$RUNS" ] && echo ok || echo FAIL ) runs $name: $pass of $RUNS passed ($(($(date +%s) - t0)) s$extra)"
	[ $pass = "$RUNS" ] || rc=1
	tail -3 /tmp/out
}

tool dmaGpuIoctlTest 30 /up/dmaGpuIoctlTest -p $DEV
tool rdmaTestEmu_basic 60 /up/rdmaTestEmu -d $DEV
tool rdmaTestEmu_sweep 120 /up/rdmaTestEmu -d $DEV -c 100 --sweep
before=$(cat $SYS/up_frames)
t0=$(date +%s)
tool rdmaTestEmu_soak 60 /up/rdmaTestEmu -d $DEV -c 10000 -s 65536
echo "KTEST ok rate soak: $(( ($(cat $SYS/up_frames) - before) / ($(date +%s) - t0 + 1) )) frames/s of 64 KiB"
tool dmaGpuToggleTest 30 /up/dmaGpuToggleTest -p $DEV

# The card's own account: frames flowed both ways, all GPU->FPGA ones PRBS.
up=$(cat $SYS/up_frames) tx=$(cat $SYS/tx_frames) bad=$(cat $SYS/tx_prbs_errors)
echo "KTEST info card: up_frames=$up tx_frames=$tx tx_prbs_errors=$bad"
[ "$up" -gt 0 ] && [ "$tx" -gt 0 ] && [ "$bad" = 0 ] && ok card_account || bad card_account

rmmod gpuasync && ok unload_gpuasync || bad unload_gpuasync
rmmod nv_p2p_stub && ok unload_stub || bad unload_stub
guest_down
