#!/usr/bin/env bash
# The test command (README): install what is missing, build the project
# twice (build/: plain, build-asan/: AddressSanitizer + UBSan), run every
# ctest in both, then the kernel module tests (tests/kmod/run.sh) when that
# script exists.  Every step runs even after a failure, so one run shows
# everything that is broken; the summary says PASS or FAIL per step and the
# exit status is non-zero when any step failed.
#
# Environment: BUILD_DIR (default build; the sanitizer build is
# $BUILD_DIR-asan), JOBS (build parallelism, default nproc),
# CTEST_PARALLEL_LEVEL (ctest's own; tests run one at a time by default).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
build=${BUILD_DIR:-build}

results=()
failed=0

# step NAME CMD...: run, time and record one step.
step() {
	local name=$1 start=$SECONDS rc
	shift
	printf '\n=== %s\n' "$name"
	"$@"
	rc=$?
	if [ $rc -eq 0 ]; then
		results+=("PASS  $name ($((SECONDS - start))s)")
	else
		results+=("FAIL  $name (exit $rc, $((SECONDS - start))s)")
		failed=1
	fi
	return $rc
}

skip() {
	printf '\n=== %s: skipped (%s)\n' "$1" "$2"
	results+=("SKIP  $1: $2")
}

# build_and_test DIR CMAKE_ARGS...: configure, build, ctest; later stages
# are skipped (and reported) when an earlier one failed.
build_and_test() {
	local dir=$1
	shift
	if ! step "configure $dir" cmake -S . -B "$dir" "$@"; then
		skip "build $dir" "configure failed"
		skip "ctest $dir" "configure failed"
		return
	fi
	if ! step "build $dir" cmake --build "$dir" -j"$jobs"; then
		skip "ctest $dir" "build failed"
		return
	fi
	step "ctest $dir" bash -c "cd '$dir' && ctest --output-on-failure"
}

step "install packages" tools/install-deps.sh
build_and_test "$build" -DGA_SANITIZE=OFF
build_and_test "$build-asan" -DGA_SANITIZE=ON

if [ -x tests/kmod/run.sh ]; then
	step "kmod tests" tests/kmod/run.sh
elif [ -e tests/kmod/run.sh ]; then
	step "kmod tests" false
	echo "tests/kmod/run.sh exists but is not executable" >&2
else
	skip "kmod tests" "no tests/kmod/run.sh"
fi

printf '\n=== summary\n'
printf '%s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
	printf '\nFAIL\n'
	exit 1
fi
printf '\nPASS\n'
