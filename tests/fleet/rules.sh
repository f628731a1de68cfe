#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
# The fleet rules of examples/gpuasyncfs.rules.yml under promtool test rules
# (alerts_health.yml), then the same test against copies whose GpuAsyncGpuGone
# or GpuAsyncTargetDown watches the wrong value: each must fail, so the
# expectations are known to bite.  Skipped (77) without promtool, except
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
cp "$here/alerts_health.yml" "$tmp/tests/fleet/"
cp "$here/../../examples/gpuasyncfs.rules.yml" "$tmp/examples/"
promtool test rules "$tmp/tests/fleet/alerts_health.yml" || { echo "FAIL: alerts_health.yml"; exit 1; }
for broken in 's/gpuasync_gpu_present == 0/gpuasync_gpu_present == 2/' \
	's/up{job=~"gpuasyncfs.\*"} == 0/up{job=~"gpuasyncfs.*"} == 2/'; do
	sed "$broken" "$here/../../examples/gpuasyncfs.rules.yml" > "$tmp/examples/gpuasyncfs.rules.yml"
	if cmp -s "$tmp/examples/gpuasyncfs.rules.yml" "$here/../../examples/gpuasyncfs.rules.yml"; then
		echo "FAIL: '$broken' changed nothing"
		exit 1
	fi
	if promtool test rules "$tmp/tests/fleet/alerts_health.yml" >/dev/null 2>&1; then
		echo "FAIL: a rule broken with '$broken' still passed"
		exit 1
	fi
	echo "ok: broken with '$broken', the test fails"
done
echo PASS
