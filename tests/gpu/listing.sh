#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Run a build's ctests and list every one: passed, failed or skipped, with
# the reason a skipped or failed test printed (its "SKIP:"/"FAILED:" line,
# else its last line).  For the GPU machine (issue 30 item 6), where a run
# must show what it ran and what it did not, and why:
#
#   GA_REQUIRE_GPU=1 tests/gpu/listing.sh BUILD_DIR [CTEST_ARGS...]
#
# Exits with ctest's status.  The whole verbose log is BUILD_DIR/ctest-listing.log.
set -u
b=${1:?usage: listing.sh BUILD_DIR [CTEST_ARGS...]}
shift
log=$b/ctest-listing.log
(cd "$b" && ctest -V "$@") >"$log" 2>&1
rc=$?
echo "GA_REQUIRE_GPU=${GA_REQUIRE_GPU:-} in $b ($(grep -c 'Test *#' "$log") tests, log $log)"
# "N/M Test #K: name ....   Passed|***Failed|***Skipped  t sec"; a test's
# own lines are "K: text".
awk '
	match($0, /^[0-9]+: /) { k = substr($0, 1, RLENGTH - 2); l = substr($0, RLENGTH + 1)
		if (l ~ /^(SKIP|FAILED|FAIL)[: ]/ && !(k in why)) why[k] = l
		if (l != "") last[k] = l; next }
	/Test +#[0-9]+: / {
		k = $0; sub(/.*Test +#/, "", k); sub(/:.*/, "", k)
		name = $0; sub(/.*Test +#[0-9]+: /, "", name); sub(/ .*/, "", name)
		res = $0 ~ /Passed/ ? "passed" : $0 ~ /Skipped|Not Run/ ? "skipped" : "FAILED"
		r = res == "passed" ? "" : (k in why ? why[k] : last[k])
		printf "%-8s %-32s %s\n", res, name, r
		n[res]++
	}
	END { printf "%d passed, %d skipped, %d failed\n", n["passed"], n["skipped"], n["FAILED"] }
' "$log"
exit $rc
