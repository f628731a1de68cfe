#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) a debug kernel for the kmod suite: KASAN, lockdep
# (PROVE_LOCKING), sleep-in-atomic checks, kmemleak, list debugging, FUSE and
# DEVTMPFS built in.  It comes from Debian's linux-source-6.1, takes about
# 11 minutes on two cores, and is cached OUTSIDE the checkout, keyed by the
# source package version and this script's config fragment, so CI pays for
# it once per runner and a kernel security update rebuilds it.
#
# Prints the build directory (bzImage at arch/x86/boot/bzImage; usable as
# the kbuild tree for out-of-tree modules) on stdout; logs go to stderr.
# Env: GA_KMOD_CACHE (default /var/cache/gpuasync-kmod), JOBS (nproc).
set -euo pipefail

CACHE=${GA_KMOD_CACHE:-/var/cache/gpuasync-kmod}
JOBS=${JOBS:-$(nproc)}
log() { echo "debug-kernel: $*" >&2; }

need=()
for p in linux-source-6.1 bison flex libelf-dev bc; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || { log "need root to install ${need[*]}"; exit 1; }
	log "installing ${need[*]}"
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
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

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
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
	tar xaf /usr/src/linux-source-6.1.tar.xz -C "$S" --strip-components=1
	touch "$S/.unpacked"
fi

rm -rf "$B" && mkdir -p "$B"
printf '%s\n' "$FRAGMENT" > "$B/debug.config"
log "configuring in $B"
make -C "$S" O="$B" defconfig >&2
make -C "$S" O="$B" kvm_guest.config >&2
(cd "$S" && scripts/kconfig/merge_config.sh -m -O "$B" "$B/.config" "$B/debug.config") >&2
make -C "$S" O="$B" olddefconfig >&2
# olddefconfig drops what a dependency refuses without a word: check.
while IFS= read -r want; do
	case $want in *=y) grep -qx "$want" "$B/.config" || { log "config lost $want"; exit 1; } ;; esac
done <<<"$FRAGMENT"
log "building with $JOBS jobs (about 11 minutes on 2 cores)"
t0=$(date +%s)
# make runs quietly into build.log: a line a minute shows it is moving
# (stderr only: stdout is the caller's $(...), which must not wait for it).
(while sleep 60; do
	log "$(( ($(date +%s) - t0) / 60 )) min: $(find "$B" -name '*.o' | wc -l) objects compiled"
done) >&2 &
ticker=$!
trap 'kill $ticker 2>/dev/null' EXIT
nice -n 10 make -C "$S" O="$B" -j"$JOBS" bzImage modules >"$B/build.log" 2>&1 ||
	{ tail -30 "$B/build.log" >&2; exit 1; }
kill $ticker
log "built in $(( $(date +%s) - t0 )) s"
touch "$B/.complete"
# Older builds (another source version or fragment) are 2+ GiB each: drop them.
for old in "$CACHE"/debug-* "$CACHE"/src-*; do
	[ "$old" = "$B" ] || [ "$old" = "$S" ] || rm -rf "$old"
done
echo "$B"
