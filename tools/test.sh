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

# Upstream conformance (tests/upstream): needs aes-stream-drivers' source.
# GA_UPSTREAM_SRC names a checkout or git directory; otherwise the two
# tested commits are fetched from GitHub when it can be reached.  Without
# either the step says SKIP and why (the source is never part of this tree).
UPSTREAM_URL=https://github.com/slaclab/aes-stream-drivers
UPSTREAM_COMMITS="7685fa2e5510c9d8112004db50f75a74af38d9e6 a824d759a0131abd46cf96e8d1d1afd722c7f624"
upstream_source() {
	local dir=${GA_KMOD_CACHE:-/var/cache/gpuasync-kmod}/aes-stream-drivers.git c
	mkdir -p "$(dirname "$dir")" && git init -q --bare "$dir" 2>/dev/null || return 1
	for c in $UPSTREAM_COMMITS; do
		git --git-dir="$dir" cat-file -e "$c^{commit}" 2>/dev/null && continue
		timeout 300 git --git-dir="$dir" fetch -q --depth 1 "$UPSTREAM_URL" "$c" >&2 || return 1
	done
	echo "$dir"
}
# upstream_step NAME SCRIPT: one suite of tests/upstream on that source.
upstream_step() {
	local start=$SECONDS rc
	printf '\n=== %s\n' "$1"
	GA_UPSTREAM_SRC=$src GA_UPSTREAM_REFS=$refs "$2"
	rc=$?
	if [ $rc = 0 ]; then
		results+=("PASS  $1 ($((SECONDS - start))s)")
	elif [ $rc = 77 ]; then
		skip "$1" "see its output above"
	else
		results+=("FAIL  $1 (exit $rc, $((SECONDS - start))s)")
		failed=1
	fi
}
if [ -x tests/upstream/run.sh ]; then
	src=${GA_UPSTREAM_SRC:-}
	refs=${GA_UPSTREAM_REFS:-}
	if [ -z "$src" ] && src=$(upstream_source); then
		refs=$UPSTREAM_COMMITS
	fi
	if [ -n "$src" ]; then
		# Our library and filesystem on upstream's driver and emulator.
		upstream_step "upstream conformance" tests/upstream/run.sh
		# Upstream's GPU tools on our driver and emulated card.
		upstream_step "upstream tools on gpuasync.ko" tests/upstream/tools.sh
	else
		why="no aes-stream-drivers source: set GA_UPSTREAM_SRC (a checkout, or its git directory); $UPSTREAM_URL could not be fetched"
		skip "upstream conformance" "$why"
		skip "upstream tools on gpuasync.ko" "$why"
	fi
fi

printf '\n=== summary\n'
printf '%s\n' "${results[@]}"
if [ $failed -ne 0 ]; then
	printf '\nFAIL\n'
	exit 1
fi
printf '\nPASS\n'
