#!/bin/bash
# test_gpu_probe BUILD_DIR: when a GPU test skips (issue 24 item 14).  A
# stand-in libcuda.so.1 (fake_libcuda.c, through LD_LIBRARY_PATH) makes
# cuInit fail in chosen ways on a machine without a GPU; gpu-probe and
# every GPU test program must then fail, not skip, unless the error means
# there is no GPU; GA_REQUIRE_GPU=1 turns every skip into a failure.
set -u
# Each case sets GA_REQUIRE_GPU itself; a GPU machine's run exports it for
# the GPU tests, and the no-GPU cases here must not inherit it.
unset GA_REQUIRE_GPU
B=${1:?usage: test_gpu_probe.sh BUILD_DIR}
P=$B/tests/gpu-probe
FAKE=$B/tests/fake-cuda
CASE=start
fail() { echo "FAILED at $CASE: $*"; exit 1; }
[ -e "$FAKE/libcuda.so.1" ] || fail "no stand-in $FAKE/libcuda.so.1"

# expect RC OUTPUT-PATTERN CMD...: CMD (with the stand-in driver, found
# before any other libcuda) exits RC and prints a line matching OUTPUT-PATTERN.
expect() {
	local want=$1 pat=$2 out rc
	shift 2
	out=$(LD_LIBRARY_PATH=$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@" 2>&1)
	rc=$?
	[ "$rc" = "$want" ] || fail "exit $rc, not $want: $out"
	grep -q -- "$pat" <<<"$out" || fail "no '$pat' in: $out"
	echo "ok $CASE: exit $rc: $(grep -m1 -- "$pat" <<<"$out")"
}
NODE=(env GA_NVIDIA_DEV=/dev/null) # a node that exists, as on a GPU machine

CASE=cuinit-unknown
expect 1 "FAILED: GPU probe: cuInit.*CUDA error 999" "${NODE[@]}" GA_FAKE_CUINIT=999 "$P"
CASE=cuinit-not-initialized
expect 1 "CUDA error 3" "${NODE[@]}" GA_FAKE_CUINIT=3 "$P"
CASE=cuinit-no-device
expect 77 "SKIP: no GPU: the NVIDIA driver finds no CUDA device" \
	"${NODE[@]}" GA_FAKE_CUINIT=100 "$P"
CASE=no-device-counted
expect 77 "SKIP: no GPU" "${NODE[@]}" GA_FAKE_CUINIT=0 GA_FAKE_CUCOUNT=0 "$P"
CASE=no-device-node
expect 77 "SKIP: no GPU: no /nonexistent/nvidiactl" \
	env GA_NVIDIA_DEV=/nonexistent/nvidiactl GA_FAKE_CUINIT=999 "$P"
CASE=library-cannot-open
expect 1 "the library cannot use GPU 0" "${NODE[@]}" GA_FAKE_CUINIT=0 "$P"
CASE=require-gpu
expect 1 "FAILED: GA_REQUIRE_GPU=1 and no GPU" \
	"${NODE[@]}" GA_REQUIRE_GPU=1 GA_FAKE_CUINIT=100 "$P"
CASE=no-libcuda
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
	echo "case no-libcuda not run: this machine has a libcuda.so.1"
else
	expect 77 "SKIP: no GPU: libcuda.so.1" env LD_LIBRARY_PATH= "$P"
	expect 1 "FAILED: GA_REQUIRE_GPU=1" env LD_LIBRARY_PATH= GA_REQUIRE_GPU=1 "$P"
fi

# The GPU test programs themselves: a broken driver fails them.
for t in "test_sim --gpu" "test_pin --gpu" test_mem_cuda; do
	CASE="$t"
	[ -x "$B/tests/${t%% *}" ] || fail "no $B/tests/${t%% *}"
	# shellcheck disable=SC2086
	expect 1 "CUDA error 999" "${NODE[@]}" GA_FAKE_CUINIT=999 $B/tests/$t
	# shellcheck disable=SC2086
	expect 77 "SKIP: no GPU" "${NODE[@]}" GA_FAKE_CUINIT=100 $B/tests/$t
done
for s in "$(dirname "$0")"/../gpu/gpu_*.sh; do
	CASE=$(basename "$s")
	[ -e /dev/fuse ] || { echo "case $CASE not run: no /dev/fuse"; continue; }
	[ -x "$B/fs/gpuasyncfs" ] || { echo "case $CASE not run: no daemon"; continue; }
	expect 1 "CUDA error 999" "${NODE[@]}" GA_FAKE_CUINIT=999 "$s" "$B"
	expect 77 "SKIP: no GPU" "${NODE[@]}" GA_FAKE_CUINIT=100 "$s" "$B"
done
echo "PASS"
