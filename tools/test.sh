#!/usr/bin/env bash
# The test command (README): install what is missing, build the project
# twice (build/: plain, make; build-asan/: AddressSanitizer + UBSan, Ninja), run every
# ctest in both, the kernel module tests (tests/kmod/run.sh), the DKMS
# package (tests/install/dkms.sh), the platform doctor against QEMU's PCIe
# topologies (tests/platform/run.sh), and the
# upstream suites (tests/upstream: our library and filesystem on SLAC's
# driver and emulator, upstream's GPU tools on gpuasync.ko) and rogue's
# pyrogue on gpuasync.ko (tests/rogue).  Every step
# runs even after a failure, so one run shows everything that is broken.
#
# The summary gives each step PASS, FAIL or SKIP with its step counts (run,
# passed, skipped) and, for a failed step, the lines that say why.  A step
# whose counts fall below its floor in tests/floors.txt fails, so a test
# that silently stops running is caught; under CI=true nothing may be
# skipped beyond what that file allows (the GPU tests, without a GPU), and
# a missing upstream source is a failure, not a skip.
#
# Environment: BUILD_DIR (default build; the sanitizer build is
# $BUILD_DIR-asan), JOBS (build parallelism, default nproc),
# CTEST_PARALLEL_LEVEL (ctest's own; tests run one at a time by default),
# GA_KMOD_CACHE (debug kernel and upstream source cache, default
# /var/cache/gpuasync-kmod), GA_UPSTREAM_SRC (upstream's source: see
# upstream_source below), GA_UPSTREAM_TOOL_RUNS (runs of each upstream tool;
# default 20, under CI=true $CI_TOOL_RUNS), GA_ROGUE_SRC, GA_AXIPCIE_SRC,
# GA_SURF_SRC (rogue and the python trees: see rogue_sources), GA_TEST_LOGS (where each step's
# output is kept; default a temp dir).
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
build=${BUILD_DIR:-build}
ci=${CI:-}
cache=${GA_KMOD_CACHE:-/var/cache/gpuasync-kmod}
logs=${GA_TEST_LOGS:-$(mktemp -d /tmp/gpuasync-test.XXXXXX)}
mkdir -p "$logs"
floors=tests/floors.txt
start_all=$SECONDS

# Runs of each upstream GPU tool under CI: the whole test command on a fresh
# 2-core machine with a cold kernel cache must stay well inside CI's 90
# minutes (docs/testing.md has the measured figures).  The release check
# is 20 runs (GA_UPSTREAM_TOOL_RUNS=20 tests/upstream/tools.sh), by hand.
CI_TOOL_RUNS=3

results=()
why=()
failed=0

# counts KEY: "ok fail skip" lines of step KEY, one per part ("PART ok
# fail skip"), from what the step wrote to $logs/KEY.counts.
# floor_check KEY: every part against tests/floors.txt ("KEY/PART min_ok
# max_skip"); prints the problems, returns 1 if any.  A part named in the
# floors that did not run at all is a problem too.
floor_check() {
	local key=$1 bad=0 part ok fail skip want_ok max_skip line
	while read -r line; do
		set -- $line
		[ $# -ge 3 ] || continue
		case $1 in "$key"/*) ;; *) continue ;; esac
		part=${1#"$key"/} want_ok=$2 max_skip=$3
		line=$(awk -v p="$part" '$1 == p' "$logs/$key.counts" 2>/dev/null | tail -1)
		if [ -z "$line" ]; then
			echo "$key/$part: did not run (tests/floors.txt expects at least $want_ok steps)"
			bad=1
			continue
		fi
		read -r _ ok fail skip <<<"$line"
		if [ "$ok" -lt "$want_ok" ]; then
			echo "$key/$part: $ok steps passed, fewer than its floor $want_ok (tests/floors.txt): a test stopped running"
			bad=1
		fi
		if [ "$ci" = true ] && [ "$skip" -gt "$max_skip" ]; then
			echo "$key/$part: $skip steps skipped, more than the $max_skip allowed under CI=true (tests/floors.txt)"
			bad=1
		fi
	done < <(sed 's/#.*//' "$floors")
	return $bad
}

# ctest_counts LOG: "ctest ok fail skip" from ctest's own closing lines.
ctest_counts() {
	local total fail skip
	total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$1" | tail -1)
	fail=$(sed -n 's/.*tests passed, \([0-9]*\) tests failed.*/\1/p' "$1" | tail -1)
	skip=$(grep -c '(Skipped)$' "$1" || true)
	[ -n "$total" ] || return 0
	echo "ctest $((total - fail - skip)) $fail $skip"
}

# step NAME KEY CMD...: run, time and record one step; its output goes to
# the terminal and to $logs/KEY.log.  Exit 77 is a skip (a failure under
# CI=true); counts are checked against the floors.
step() {
	local name=$1 key=$2 t0=$SECONDS rc problems=
	shift 2
	printf '\n=== %s\n' "$name"
	: >"$logs/$key.counts"
	GA_STEP_COUNTS=$logs/$key.counts "$@" 2>&1 | tee "$logs/$key.log"
	rc=${PIPESTATUS[0]}
	case $key in ctest*) ctest_counts "$logs/$key.log" >>"$logs/$key.counts" ;; esac
	if [ $rc = 0 ] || [ $rc = 77 ]; then
		problems=$(floor_check "$key")
	fi
	local counts
	counts=$(awk '{ printf "%s%s %d passed, %d failed, %d skipped", (NR > 1 ? "; " : ""), $1, $2, $3, $4 }' \
		"$logs/$key.counts")
	counts=${counts:+  [$counts]}
	if [ $rc = 0 ] && [ -z "$problems" ]; then
		results+=("PASS  $name ($((SECONDS - t0))s)$counts")
		return 0
	fi
	if [ $rc = 77 ] && [ -z "$problems" ] && [ "$ci" != true ]; then
		results+=("SKIP  $name: $(grep -m1 -o 'SKIP: .*' "$logs/$key.log" || echo 'see its output')")
		return 77
	fi
	[ $rc = 77 ] && problems="${problems:+$problems
}skipped (exit 77), which CI=true does not allow: $(grep -m1 -o 'SKIP: .*' "$logs/$key.log")"
	results+=("FAIL  $name (exit $rc, $((SECONDS - t0))s)$counts")
	failed=1
	# Why: the floor problems, else the step's own failure lines, else its end.
	[ -n "$problems" ] || problems=$(grep -E 'FAIL|FAILED|Error|error:|\*\*\*' "$logs/$key.log" |
		grep -v '^PASS' | tail -12)
	[ -n "$problems" ] || problems=$(tail -12 "$logs/$key.log")
	why+=("--- $name failed: ($logs/$key.log)" "$problems")
	return 1
}

skip() {
	printf '\n=== %s: skipped (%s)\n' "$1" "$2"
	results+=("SKIP  $1: $2")
}

# build_and_test DIR KEY CMAKE_ARGS...: configure, build, ctest; later
# stages are skipped (and reported) when an earlier one failed.
build_and_test() {
	local dir=$1 key=$2
	shift 2
	if ! step "configure $dir" "configure-$key" cmake -S . -B "$dir" "$@"; then
		skip "build $dir" "configure failed"
		skip "ctest $dir" "configure failed"
		return
	fi
	if ! step "build $dir" "build-$key" cmake --build "$dir" -j"$jobs"; then
		skip "ctest $dir" "build failed"
		return
	fi
	step "ctest $dir" "ctest-$key" bash -c "cd '$dir' && ctest --output-on-failure"
}

step "install packages" install tools/install-deps.sh
build_and_test "$build" plain -DGA_SANITIZE=OFF
# The sanitizer build with Ninja, so both generators stay working (issue 30
# item 5); a directory configured by the other generator starts afresh.
grep -qs '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$build-asan/CMakeCache.txt" ||
	rm -rf "$build-asan/CMakeCache.txt" "$build-asan/CMakeFiles"
build_and_test "$build-asan" asan -G Ninja -DGA_SANITIZE=ON

step "kmod tests" kmod tests/kmod/run.sh
# The DKMS package: installed with dpkg, built by Debian's dkms, loaded in QEMU, removed.
step "DKMS package (QEMU)" dkms tests/install/dkms.sh "$build"
# The platform doctor's verdicts against real PCIe topologies QEMU builds.
step "platform doctor (QEMU)" platform tests/platform/run.sh

# Upstream's source (aes-stream-drivers; never part of this tree), first of:
# GA_UPSTREAM_SRC (a checkout or a git directory), the bundle in the shared
# folder beside the checkout, GitHub.  The bundle and GitHub go into a git
# directory in the cache, where the two tested commits get the branch names
# the suites test ("main": 7.4, firmware V4; "pre-release": 7.5, V5).
UPSTREAM_URL=https://github.com/slaclab/aes-stream-drivers
UPSTREAM_BUNDLE=../shared/upstream/aes-stream-drivers.bundle
UPSTREAM_TESTED="main=7685fa2e5510c9d8112004db50f75a74af38d9e6 pre-release=a824d759a0131abd46cf96e8d1d1afd722c7f624"
upstream_source() { # sets src, refs, src_from; returns 1 when none is had
	local dir=$cache/aes-stream-drivers.git pair name commit missing=
	refs=${GA_UPSTREAM_REFS:-}
	if [ -n "${GA_UPSTREAM_SRC:-}" ]; then
		src=$GA_UPSTREAM_SRC src_from="GA_UPSTREAM_SRC=$GA_UPSTREAM_SRC"
		return 0
	fi
	mkdir -p "$cache" && { [ -d "$dir" ] || git init -q --bare "$dir"; } || return 1
	have_tested() {
		for pair in $UPSTREAM_TESTED; do
			git --git-dir="$dir" cat-file -e "${pair#*=}^{commit}" 2>/dev/null || return 1
		done
	}
	if ! have_tested && [ -f "$UPSTREAM_BUNDLE" ]; then
		git --git-dir="$dir" fetch -q "$UPSTREAM_BUNDLE" '+refs/heads/*:refs/bundle/*' ||
			echo "upstream: the bundle $UPSTREAM_BUNDLE could not be read" >&2
		have_tested && src_from="the bundle $(cd "$(dirname "$UPSTREAM_BUNDLE")" && pwd)/$(basename "$UPSTREAM_BUNDLE")"
	fi
	if ! have_tested; then
		for pair in $UPSTREAM_TESTED; do
			commit=${pair#*=}
			git --git-dir="$dir" cat-file -e "$commit^{commit}" 2>/dev/null && continue
			timeout 300 git --git-dir="$dir" fetch -q --depth 1 "$UPSTREAM_URL" "$commit" ||
				missing="$missing ${pair%%=*}"
		done
		[ -z "$missing" ] || return 1
		src_from=$UPSTREAM_URL
	fi
	[ -n "${src_from:-}" ] || src_from="the cache $dir"
	for pair in $UPSTREAM_TESTED; do
		name=${pair%%=*} commit=${pair#*=}
		git --git-dir="$dir" update-ref "refs/heads/$name" "$commit" || return 1
	done
	src=$dir refs=${refs:-main pre-release}
}
printf '\n=== upstream source\n'
if upstream_source; then
	echo "upstream: using $src_from (refs: ${refs:-the checkout})"
	export GA_UPSTREAM_SRC=$src GA_UPSTREAM_REFS=$refs
	[ "$ci" = true ] && export GA_UPSTREAM_TOOL_RUNS=${GA_UPSTREAM_TOOL_RUNS:-$CI_TOOL_RUNS}
	# Our library and filesystem on upstream's driver and emulator.
	step "upstream conformance" upstream tests/upstream/run.sh
	# Upstream's GPU tools on our driver and emulated card.
	step "upstream tools on gpuasync.ko (${GA_UPSTREAM_TOOL_RUNS:-20} runs each)" uptools \
		tests/upstream/tools.sh
else
	reason="no aes-stream-drivers source: GA_UPSTREAM_SRC is unset, $UPSTREAM_BUNDLE holds no tested commits, and $UPSTREAM_URL could not be fetched"
	if [ "$ci" = true ]; then
		results+=("FAIL  upstream conformance: $reason")
		results+=("FAIL  upstream tools on gpuasync.ko: $reason")
		failed=1
	else
		skip "upstream conformance" "$reason"
		skip "upstream tools on gpuasync.ko" "$reason"
	fi
fi

# rogue (slaclab/rogue) and axi-pcie-core's and surf's python trees, never
# part of this tree either: GA_ROGUE_SRC, GA_AXIPCIE_SRC and GA_SURF_SRC,
# else the snapshots in the shared folder beside the checkout.
ROGUE_SHARED=../shared/upstream
rogue_sources() { # exports the three; returns 1 naming what is missing
	local v glob missing=
	for v in GA_ROGUE_SRC=rogue-*.tar.gz GA_AXIPCIE_SRC=axi-pcie-core-*.tar.gz \
		GA_SURF_SRC=surf-*.tar.gz; do
		glob=${v#*=} v=${v%%=*}
		[ -n "${!v:-}" ] || printf -v "$v" '%s' "$(ls "$ROGUE_SHARED"/$glob 2>/dev/null | sort | tail -1)"
		if [ -n "${!v}" ]; then export "${v?}"; else missing="$missing $v"; fi
	done
	[ -z "$missing" ] || { reason="no rogue source:$missing unset and no $ROGUE_SHARED/{rogue,axi-pcie-core,surf}-*.tar.gz"; return 1; }
}
printf '\n=== rogue source\n'
if rogue_sources; then
	echo "rogue: using $GA_ROGUE_SRC, $GA_AXIPCIE_SRC, $GA_SURF_SRC"
	# pyrogue's AxiPcieCore over rogue's AxiMemMap on gpuasync.ko's card.
	step "rogue on gpuasync.ko (QEMU)" rogue tests/rogue/run.sh
elif [ "$ci" = true ]; then
	results+=("FAIL  rogue on gpuasync.ko: $reason")
	failed=1
else
	skip "rogue on gpuasync.ko" "$reason"
fi

printf '\n=== summary (%d s)\n' $((SECONDS - start_all))
printf '%s\n' "${results[@]}"
if [ ${#why[@]} -gt 0 ]; then
	printf '\n'
	printf '%s\n' "${why[@]}"
fi
if [ $failed -ne 0 ]; then
	printf '\nFAIL (each step'"'"'s output is kept in %s)\n' "$logs"
	exit 1
fi
printf '\nPASS\n'
[ -n "${GA_TEST_LOGS:-}" ] || rm -rf "$logs"
