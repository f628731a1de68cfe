#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) a debug kernel for the kmod suite: KASAN, lockdep
# (PROVE_LOCKING), sleep-in-atomic checks, kmemleak, list debugging, FUSE and
# DEVTMPFS built in.  It comes from Debian's linux-source-6.1, takes about
# 18 minutes on two idle cores (50 under load), and is cached OUTSIDE the checkout, keyed by the
# source package version and this script's config fragment, so CI pays for
# it once per runner and a kernel security update rebuilds it.
#
# Prints the build directory (bzImage at arch/x86/boot/bzImage; usable as
# the kbuild tree for out-of-tree modules) on stdout; logs go to stderr.
# Any failure says which command failed and where, on stderr.
# Env: GA_KMOD_CACHE (default /var/cache/gpuasync-kmod), JOBS (nproc).
# For tests/kmod/test_debug_kernel.sh, which runs this script's control flow
# in seconds: GA_KERNEL_SOURCE (a source tarball instead of Debian's
# linux-source-6.1; no packages are installed then) with
# GA_KERNEL_SOURCE_VERSION, MAKE (a stand-in make), GA_PROGRESS_SECONDS
# (the progress line's period, default 60).
set -Eeuo pipefail

CACHE=${GA_KMOD_CACHE:-/var/cache/gpuasync-kmod}
JOBS=${JOBS:-$(nproc)}
MAKE=${MAKE:-make}
TICK=${GA_PROGRESS_SECONDS:-60}
TARBALL=${GA_KERNEL_SOURCE:-/usr/src/linux-source-6.1.tar.xz}
log() { echo "debug-kernel: $*" >&2; }
trap 'log "FAILED (exit $?) at line $LINENO: $BASH_COMMAND"' ERR

# What the build needs, installed as tools/test.sh installs its packages
# (waiting for another apt's lock instead of failing).
if [ -z "${GA_KERNEL_SOURCE:-}" ]; then
	"$(dirname "$0")/../../tools/install-deps.sh" \
		<(printf '%s\n' linux-source-6.1 bison flex libelf-dev bc) >&2
fi

# The config fragment: what the debug run exists to catch, and what the
# dma-buf tests need (Debian's stock kernel has neither udmabuf nor move
# notify; SYNC_FILE is there to select DMA_SHARED_BUFFER without DRM).
FRAGMENT='CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_PROVE_LOCKING=y
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_DEBUG_LIST=y
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN=n
CONFIG_DEBUG_OBJECTS=y
CONFIG_DEBUG_OBJECTS_FREE=y
CONFIG_DEBUG_OBJECTS_TIMERS=y
CONFIG_DEBUG_FS=y
CONFIG_DEBUG_INFO_NONE=y
CONFIG_FUSE_FS=y
CONFIG_DEVTMPFS=y
CONFIG_SYNC_FILE=y
CONFIG_UDMABUF=y
CONFIG_DMABUF_MOVE_NOTIFY=y
CONFIG_DMABUF_DEBUG=y
CONFIG_HUGETLBFS=y
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
CONFIG_MODULE_SIG=n
CONFIG_SYSTEM_TRUSTED_KEYRING=n
CONFIG_DRM=n
CONFIG_SOUND=n
CONFIG_WIRELESS=n
CONFIG_WLAN=n
CONFIG_USB_SUPPORT=n'

if [ -n "${GA_KERNEL_SOURCE:-}" ]; then
	srcver=${GA_KERNEL_SOURCE_VERSION:?GA_KERNEL_SOURCE needs GA_KERNEL_SOURCE_VERSION}
else
	srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
fi
key=$(printf '%s\n%s\n' "$srcver" "$FRAGMENT" | sha256sum | cut -c1-12)
B=$CACHE/debug-$srcver-$key
if [ -f "$B/.complete" ]; then
	echo "$B"
	exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if [ -f "$B/.complete" ]; then
	echo "$B"
	exit 0
fi

S=$CACHE/src-$srcver
if [ ! -f "$S/.unpacked" ]; then
	log "unpacking linux-source $srcver"
	rm -rf "$S" && mkdir -p "$S"
	tar xaf "$TARBALL" -C "$S" --strip-components=1
	touch "$S/.unpacked"
fi

rm -rf "$B" && mkdir -p "$B"
printf '%s\n' "$FRAGMENT" > "$B/debug.config"
log "configuring in $B"
"$MAKE" -C "$S" O="$B" defconfig >&2
"$MAKE" -C "$S" O="$B" kvm_guest.config >&2
(cd "$S" && scripts/kconfig/merge_config.sh -m -O "$B" "$B/.config" "$B/debug.config") >&2
"$MAKE" -C "$S" O="$B" olddefconfig >&2
# olddefconfig drops what a dependency refuses without a word: check.
while IFS= read -r want; do
	case $want in *=y) grep -qx "$want" "$B/.config" || { log "config lost $want"; exit 1; } ;; esac
done <<<"$FRAGMENT"
# About how many objects a full build makes: what the last build here made,
# else what this configuration made from Debian's linux-source 6.1.192-2.
expect=$(cat "$CACHE/objects.last" 2>/dev/null || echo 2324)
log "building with $JOBS jobs (about 18 minutes on 2 idle cores, 50 under load; about $expect objects)"
t0=$(date +%s)
# make runs quietly into build.log: a line a minute shows it is moving
# (stderr only: stdout is the caller's $(...), which must not wait for it).
objects() { find "$B" -name '*.o' | wc -l; }
# The sleep is waited for, not run in the foreground, so that stopping the
# ticker stops it too (an orphaned sleep would hold the caller's pipe).
(trap 'kill $nap 2>/dev/null; exit 0' TERM
while sleep "$TICK" & nap=$! && wait $nap; do
	n=$(objects)
	log "$(( ($(date +%s) - t0) / 60 )) min: $n of about $expect objects ($((n * 100 / expect))%)"
done) >&2 &
ticker=$!
# The ticker is stopped exactly once, whichever way the script ends; a
# ticker already gone is no failure (set -e in a trap would make it one).
stop_ticker() {
	[ -n "$ticker" ] || return 0
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	ticker=
}
trap stop_ticker EXIT
if ! nice -n 10 "$MAKE" -C "$S" O="$B" -j"$JOBS" bzImage modules >"$B/build.log" 2>&1; then
	stop_ticker
	log "FAILED: the kernel build failed; the end of $B/build.log:"
	tail -30 "$B/build.log" >&2
	exit 1
fi
stop_ticker
objects >"$CACHE/objects.last"
log "built in $(( $(date +%s) - t0 )) s ($(cat "$CACHE/objects.last") objects)"
touch "$B/.complete"
# Older builds (another source version or fragment) are 2+ GiB each: drop them.
for old in "$CACHE"/debug-* "$CACHE"/src-*; do
	[ "$old" = "$B" ] || [ "$old" = "$S" ] || rm -rf "$old"
done
echo "$B"
