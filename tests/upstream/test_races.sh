#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools_init.sh's upstream_race, run by busybox's shell as in the guest, on
# recorded failures: the toggle race from a CI run (2026-11-25) and the
# rdmaTestEmu end-of-run race are recognised with the card's evidence; a
# sequence error the card did not cause, a second frame before the disable,
# a frame count off by more than one, or any other failure are not.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
if ! command -v busybox >/dev/null; then
	[ "${CI:-}" = true ] && { echo "FAIL: no busybox (package busybox-static)"; exit 1; }
	echo "SKIP: no busybox"
	exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir "$T/sys"
sed -n '/^upstream_race()/,/^}/p' "$HERE/tools_init.sh" | sed "s#/tmp/out#$T/out#g" >"$T/race.sh"
fail=0

# case NAME TOOL OUT LOG EXPECT: EXPECT is a word the reason must contain,
# or "-" for no reason at all.
case_() {
	printf '%s\n' "$3" >"$T/out"
	printf '%s' "$4" >"$T/sys/up_log"
	got=$(SYS=$T/sys busybox sh -c ". $T/race.sh; upstream_race $2")
	if [ "$5" = - ]; then
		[ -z "$got" ]
	else
		[ "${got#*"$5"}" != "$got" ]
	fi && echo "ok   $1${got:+: $got}" && return
	{
		echo "FAIL $1: got '$got', want ${5/#-/nothing}"
		fail=1
	}
}

TOGGLE='Bad Sequence. exp=32110, got=32111
dmaGpuToggleTest: PRBS mismatch size=65520 buf=0
Bad Sequence. exp=32112, got=32111
dmaGpuToggleTest: PRBS mismatch size=65520 buf=0
dmaGpuToggleTest: maxbuffers pre-reduce frame 0 failed'
CI_LOG='40235:F3=32109 40236:r3 40236:F0=32110 40237:o0 40237:d0 40390:e0 40395:F0=32111 40489:o0 40489:d0'
case_ toggle_ci dmaGpuToggleTest "$TOGGLE" "$CI_LOG" 32110
case_ toggle_two_frames dmaGpuToggleTest "$TOGGLE" \
	'40236:F0=32110 40236:F1=32111 40237:d0 40390:e0' -
case_ toggle_frame_after_enable dmaGpuToggleTest "$TOGGLE" \
	'40236:d0 40390:e0 40395:F0=32110 40396:F1=32111' -
case_ toggle_skip_two dmaGpuToggleTest 'Bad Sequence. exp=32110, got=32112' "$CI_LOG" -
case_ toggle_timeout dmaGpuToggleTest 'dmaGpuToggleTest: rx doorbell timeout buf=2 elapsed=10.0s' \
	"$CI_LOG" -
case_ rdma_one_more rdmaTestEmu_basic 'rdmaTestEmu: counter mismatch rx=101 tx=100 expected=100' '' \
	'one frame more'
case_ rdma_four_more rdmaTestEmu_basic 'rdmaTestEmu: counter mismatch rx=104 tx=100 expected=100' '' -
case_ rdma_tx_short rdmaTestEmu_soak 'rdmaTestEmu: counter mismatch rx=101 tx=99 expected=100' '' -
case_ ioctl_test dmaGpuIoctlTest 'rdmaTestEmu: counter mismatch rx=101 tx=100 expected=100' '' -
exit $fail
