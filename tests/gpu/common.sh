# Sourced by the tests/gpu scripts: "$1" is the build directory.  Sets B,
# FS (the daemon) and H (gpu-helper), defines skip (exit 77) and fail
# (naming $CASE), and skips where the daemon or FUSE is missing.
B=${1:?usage: $(basename "$0") BUILD_DIR}
FS=$B/fs/gpuasyncfs
H=$B/tests/gpu/gpu-helper
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAILED at $CASE: $*"; exit 1; }

[ -x "$FS" ] || skip "no $FS"
[ -e /dev/fuse ] || skip "no /dev/fuse"
