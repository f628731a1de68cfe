# Sourced by the tests/gpu scripts: "$1" is the build directory.  Sets B,
# FS (the daemon) and H (gpu-helper), defines skip (exit 77; a failure
# under GA_REQUIRE_GPU=1, set on the GPU machine) and fail (naming $CASE),
# skips where the daemon or FUSE is missing, then asks gpu-probe: only a
# machine without a GPU skips; a driver that fails otherwise fails the
# test (tests/common/gpu_probe.h).
B=${1:?usage: $(basename "$0") BUILD_DIR}
FS=$B/fs/gpuasyncfs
H=$B/tests/gpu/gpu-helper
CASE=probe
skip() {
	if [ "${GA_REQUIRE_GPU:-}" = 1 ]; then
		echo "FAILED: GA_REQUIRE_GPU=1 and this GPU test would skip: $*"
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}
fail() { echo "FAILED at $CASE: $*"; exit 1; }

[ -x "$FS" ] || skip "no $FS"
[ -e /dev/fuse ] || skip "no /dev/fuse"
[ -x "$B/tests/gpu-probe" ] || fail "no $B/tests/gpu-probe"
PROBE=$("$B/tests/gpu-probe" 2>&1)
case $? in
0) ;;
77) echo "$PROBE"; exit 77 ;;
*) echo "$PROBE"; exit 1 ;;
esac

# mount_dir NAME: a fresh mountpoint in MNT.  On exit it is unmounted, the
# daemon whose pid is in PID stopped, MNT removed, and so is every path the
# script added to CLEAN.
PID=
CLEAN=()
cleanup() {
	if mountpoint -q "$MNT" 2>/dev/null; then
		fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null
	fi
	[ -n "$PID" ] && kill "$PID" 2>/dev/null
	rmdir "$MNT" 2>/dev/null
	[ ${#CLEAN[@]} -eq 0 ] || rm -rf "${CLEAN[@]}"
}
mount_dir() {
	MNT=$(mktemp -d "/tmp/$1.XXXXXX")
	trap cleanup EXIT
}
# MiB of free GPU memory (the helper's own context is there every time).
free_mib() { echo $(( $("$H" meminfo) / 1048576 )); }
# free_mib once it is at least $1 (rmdir hands memory back on the daemon's
# free thread, after the card's queued writes: moments later), or as it is
# after a generous 10 s.
free_mib_at_least() {
	local f
	for _ in $(seq 100); do
		f=$(free_mib)
		[ "$f" -ge "$1" ] && break
		sleep 0.1
	done
	echo "$f"
}
