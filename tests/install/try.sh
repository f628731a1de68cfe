#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# The README's first command (tools/try.sh) from this tree, into a fresh
# build directory: it must say what it does, build only the daemon (no
# tests, no library test programs), and leave the simulated card mounted,
# answering; then it is unmounted (the daemon exits with its mount).
# Exit 77 without /dev/fuse or fusermount3 (CI=true: failure).
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/install/common.sh
. "$(dirname "$0")/common.sh"
[ -c /dev/fuse ] && command -v fusermount3 >/dev/null || skip "needs /dev/fuse and fusermount3"
install_scratch gafs-try
fail() {
	echo "FAIL: $*"
	sed 's/^/  | /' "$T/out" | tail -30
	exit 1
}

BUILD_DIR=$T/build "$SRC/tools/try.sh" "$T/mnt" >"$T/out" 2>&1 || fail "tools/try.sh exited $?"
for said in "checking the packages the mount needs" "building the daemon (target gpuasyncfs)" \
	"mounting the simulated card on $T/mnt"; do
	grep -qF "try: $said" "$T/out" || fail "it did not say: $said"
done
[ -x "$T/build/fs/gpuasyncfs" ] || fail "no daemon built"
built=$(find "$T/build" -type f -perm -u+x -name 'test_*' | head -3)
[ -z "$built" ] || fail "it built tests too: $built"
mountpoint -q "$T/mnt" || fail "nothing mounted on $T/mnt"
[ "$(cat "$T/mnt/device/version")" = 4 ] || fail "device/version is not 4"
[ "$(cat "$T/mnt/device/backend")" = sim ] || fail "not the simulated card"
grep -qF "fusermount3 -u $T/mnt" "$T/out" || fail "it did not say how to unmount"
# where the daemon is, and that it is that process
grep -qF "The daemon is $T/build/fs/gpuasyncfs (pid " "$T/out" || fail "it did not say where the daemon is"
pid=$(sed -n 's/^The daemon is .* (pid \([0-9]*\)).*/\1/p' "$T/out")
[ "$(readlink "/proc/$pid/exe")" = "$T/build/fs/gpuasyncfs" ] || fail "pid $pid is not the daemon"
# one tour: the README's block, line for line, with M= the mountpoint
awk '/^## A five-minute tour/ { t = 1; next } t && /^```/ { if (b) exit; b = 1; next } b' \
	"$SRC/README.md" | sed "s|^M=/tmp/gpuasync\$|M=$T/mnt|; s/^/  /" >"$T/tour"
[ "$(wc -l <"$T/tour")" -gt 10 ] || fail "no tour found in README.md"
grep -qxFf "$T/tour" "$T/out" && [ "$(grep -cxFf "$T/tour" "$T/out")" -ge "$(sort -u "$T/tour" | wc -l)" ] ||
	fail "its tour is not the README's"
fusermount3 -u "$T/mnt" || fail "cannot unmount"
echo "PASS: tools/try.sh built only the daemon and mounted the simulated card"
