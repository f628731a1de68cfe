#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The fleet rules of examples/gpuasyncfs.rules.yml under promtool test rules
# (alerts_health.yml, alerts_sysmon.yml), then the same tests against copies
# whose GpuAsyncGpuGone, GpuAsyncTargetDown, GpuAsyncFpgaOverheated or
# GpuAsyncFpgaVoltageOutOfRange (either side) watches the wrong value: each must fail, so the expectations are known to bite.  Skipped (77) without promtool, except
# under CI=true.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v promtool >/dev/null 2>&1; then
	[ "${CI:-}" = true ] && { echo "FAIL: promtool missing (Debian package prometheus)"; exit 1; }
	echo "SKIP: promtool missing (Debian package prometheus)"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tests/fleet" "$tmp/examples"
cp "$here/alerts_health.yml" "$here/alerts_sysmon.yml" "$tmp/tests/fleet/"
cp "$here/../../examples/gpuasyncfs.rules.yml" "$tmp/examples/"
for t in alerts_health.yml alerts_sysmon.yml; do
	promtool test rules "$tmp/tests/fleet/$t" || { echo "FAIL: $t"; exit 1; }
done
for broken in 's/gpuasync_gpu_present == 0/gpuasync_gpu_present == 2/' \
	's/up{job=~"gpuasyncfs.\*"} == 0/up{job=~"gpuasyncfs.*"} == 2/' \
	's/gpuasync_fpga_temperature_celsius > /gpuasync_fpga_temperature_celsius < /' \
	's/gpuasync_fpga_voltage_volts < gpuasync_fpga_voltage_min_volts/gpuasync_fpga_voltage_volts <= 0/' \
	's/gpuasync_fpga_voltage_volts > gpuasync_fpga_voltage_max_volts/gpuasync_fpga_voltage_volts > 3/'; do
	sed "$broken" "$here/../../examples/gpuasyncfs.rules.yml" > "$tmp/examples/gpuasyncfs.rules.yml"
	if cmp -s "$tmp/examples/gpuasyncfs.rules.yml" "$here/../../examples/gpuasyncfs.rules.yml"; then
		echo "FAIL: '$broken' changed nothing"
		exit 1
	fi
	if promtool test rules "$tmp/tests/fleet/alerts_health.yml" >/dev/null 2>&1 &&
		promtool test rules "$tmp/tests/fleet/alerts_sysmon.yml" >/dev/null 2>&1; then
		echo "FAIL: a rule broken with '$broken' still passed"
		exit 1
	fi
	echo "ok: broken with '$broken', the test fails"
done
echo PASS
