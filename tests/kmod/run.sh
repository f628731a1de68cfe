#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# gpuasync.ko in a real kernel: build the modules against a Debian kernel,
# boot that kernel under QEMU (TCG: /dev/kvm on these machines is a PVM
# backend QEMU cannot use) with a busybox initramfs holding the modules and
# static test programs, run tests/kmod/init.sh as /init, and judge the run
# from the serial console: every step's "KTEST ok|FAIL" line, the exit
# marker, the kernel's taint mask, and any oops/BUG/WARNING/KASAN/lockdep
# report in the kernel log.  What it covers: kmod/README.md "Tests".
#
# Modes (environment):
#   (default, =1)             stock Debian kernel, then the same suite on the
#                             debug kernel (KASAN + lockdep + sleep-in-atomic),
#                             built first if not cached (~18 min on 2 idle
#                             cores; cached in $GA_KMOD_CACHE, default
#                             /var/cache/gpuasync-kmod, keyed by its version)
#   GA_KMOD_DEBUG_KERNEL=auto debug pass only if the kernel is already cached
#   GA_KMOD_DEBUG_KERNEL=0    stock kernel only
#   GA_KMOD_OUT=DIR           where builds and logs go (default: a temp dir)
#   GA_KMOD_TIMEOUT=S         per boot (default 1800: the debug kernel
#                             took 922 s on 2 loaded cores)
#   GA_KMOD_INIT=FILE         the guest's /init instead of init.sh (a few
#                             steps while working on them; same helpers)
# Exit: 0 pass, 1 fail, 77 skipped (not root and packages missing).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/kmod
# shellcheck source=tests/kmod/qemu.sh
. "$HERE/qemu.sh"
qemu_out "${GA_KMOD_OUT:-}" gpuasync-kmod
TIMEOUT=${GA_KMOD_TIMEOUT:-1800}
DEBUG=${GA_KMOD_DEBUG_KERNEL:-1}
CACHE=${GA_KMOD_CACHE:-/var/cache/gpuasync-kmod}
log() { echo "kmod: $*"; }
# shellcheck source=tests/drp/host.sh
. "$ROOT/tests/drp/host.sh"

# ---- packages -----------------------------------------------------------------
qemu_packages linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static cpio kmod \
	xz-utils lm-sensors

KVER=$(guest_kver) || { log "FAIL: no Debian kernel with headers in /lib/modules"; exit 1; }

# ---- build ----------------------------------------------------------------------
build_tests() {
	mkdir -p "$OUT/t"
	guest_kt "$OUT/t/kt" || { log "FAIL: kt does not build"; return 1; }
	# libgpuasync, built for the guest: plain C11 + pthread + inih, static.
	if guest_lib_program "$OUT/t/t_lib" "$HERE/t_lib.c" -I"$ROOT/kmod/nv_p2p_stub" \
		>"$OUT/t_lib.log" 2>&1; then
		:
	else
		log "FAIL: libgpuasync does not build for the guest:"
		tail -20 "$OUT/t_lib.log"
		return 1
	fi
	# Recorded runs in the guest: made (gpuasync-synth), played into the
	# emulated card (gpuasync-play; fs_test.sh).
	for p in gpuasync-synth gpuasync-play; do
		guest_lib_program "$OUT/t/$p" "$ROOT/lib/tools/$p.c" >>"$OUT/t_lib.log" 2>&1 || {
			log "FAIL: lib/tools/$p.c does not build for the guest:"
			tail -20 "$OUT/t_lib.log"
			return 1
		}
	done
	# gpuasyncfs, built statically for the guest once the daemon exists.
	FS_SKIP=
	if [ ! -x "$ROOT/build/fs/gpuasyncfs" ] && [ ! -f "$ROOT/fs/main.c" ]; then
		FS_SKIP="fs/ daemon not written yet (no build/fs/gpuasyncfs)"
	elif ! guest_gpuasyncfs "$OUT/t/gpuasyncfs" >"$OUT/fs.log" 2>&1; then
		FS_SKIP="gpuasyncfs does not build statically (see $OUT/fs.log)"
		rm -f "$OUT/t/gpuasyncfs"
		log "note: $FS_SKIP"
	else
		cp "$HERE/fs_test.sh" "$OUT/t/"
	fi
	# /proc text: upstream's, captured from its emulated cards (7.4, 7.5)
	cp "$HERE/proc_cmp.sh" "$OUT/t/"
	cp "$HERE/hwmon.sh" "$OUT/t/"
	for f in "$HERE"/upstream-proc/*.txt; do cp "$f" "$OUT/t/upstream-proc-${f##*/}"; done
	drp_build "$OUT/t" >"$OUT/drp.log" 2>&1 ||
		{ log "FAIL: tests/drp does not build"; tail -20 "$OUT/drp.log"; return 1; }
}

# ---- initramfs + boot ----------------------------------------------------------
make_initramfs() { # KOBJ_DIR KMODS_LIST(debian modules, deps first) OUT_CPIO
	local R=$OUT/root
	guest_root "$R"
	cp "$OUT"/t/* "$R/t/"
	cp "$1/kmod/gpuasync.ko" "$1/kmod/nv_p2p_stub/nv_p2p_stub.ko" "$R/t/"
	cp "$1/prod/kmod/gpuasync.ko" "$R/t/gpuasync_prod.ko"
	printf 'FS_SKIP=%q\nDRP_STRICT=%q\n' "$FS_SKIP" "${GA_DRP_STRICT:-0}" >"$R/t/env"
	drp_root "$R"
	# util-linux's setpriv (busybox's lacks options the DRP's launch line
	# uses) and what it loads: init.sh runs that line as it is.
	local f lib
	if f=$(command -v setpriv) && [ "$(readlink -f "$f")" != /bin/busybox ]; then
		mkdir -p "$R/usr/bin"
		cp "$f" "$R/usr/bin/setpriv"
		for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
			mkdir -p "$R$(dirname "$lib")"
			cp -L "$lib" "$R$lib"
		done
	fi
	# lm-sensors' sensors, its library and configuration: hwmon.sh checks
	# that it shows the card's SysMon.
	if f=$(command -v sensors); then
		mkdir -p "$R/usr/bin" "$R/etc"
		cp "$f" "$R/usr/bin/sensors"
		cp -r /etc/sensors3.conf /etc/sensors.d "$R/etc/" 2>/dev/null || true
		for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
			mkdir -p "$R$(dirname "$lib")"
			cp -L "$lib" "$R$lib"
		done
	elif [ "${CI:-}" = true ]; then
		log "FAIL: no lm-sensors (tools/packages.txt) for hwmon.sh's sensors check"
		return 1
	fi
	cp "${GA_KMOD_INIT:-$HERE/init.sh}" "$R/init"
	guest_initramfs "$R" "$2" "$3"
}

status=0

# build_both KDIR DIR: the test module in DIR/kmod and the packages' one (no
# emulated cards, kmod/Kbuild) in DIR/prod/kmod, whose symbols must hold nothing
# of the emulator: no ga_emu_*, no store trap, no firmware model, no die notifier.
build_both() {
	build_modules "$1" "$2" && build_modules "$1" "$2/prod" 0 || return 1
	local syms
	syms=$(nm "$2/prod/kmod/gpuasync.ko" | grep -E 'ga_emu|ga_trap|ga_model|die_notifier' || true)
	if [ -n "$syms" ]; then
		log "FAIL: the production gpuasync.ko holds emulator symbols:"
		echo "$syms"
		return 1
	fi
	log "production gpuasync.ko: $(nm "$2/prod/kmod/gpuasync.ko" | wc -l) symbols, none of the emulator"
}

# ---- stock kernel -----------------------------------------------------------------
log "kernel $KVER, output in $OUT"
build_both "/lib/modules/$KVER/build" "$OUT/stock" || exit 1
build_tests || exit 1
if [ -n "$FS_SKIP" ] && [ "${CI:-}" = true ]; then
	log "FAIL: $FS_SKIP (under CI=true nothing may be skipped for want of a package)"
	exit 1
fi
FUSE=$(modprobe -S "$KVER" --show-depends fuse 2>/dev/null | awk '$1=="insmod"{print $2}' || true)
make_initramfs "$OUT/stock" "$FUSE" "$OUT/stock.cpio.gz"
boot stock "/boot/vmlinuz-$KVER" "$OUT/stock.cpio.gz" 1024 || status=1

# ---- debug kernel (KASAN + lockdep + sleep-in-atomic) -----------------------------
if [ "$DEBUG" != 0 ]; then
	B=
	if [ "$DEBUG" = 1 ]; then
		B=$(GA_KMOD_CACHE=$CACHE "$HERE/debug-kernel.sh") || { log "FAIL: debug kernel build"; exit 1; }
	else
		# No cache at all is "not cached", not a failed pipeline (pipefail).
		B=$(ls -d "$CACHE"/debug-*/.complete 2>/dev/null | sort -V | tail -1 |
			xargs -r dirname || true)
		[ -n "$B" ] || log "debug kernel not cached: skipped (GA_KMOD_DEBUG_KERNEL=1, the default, builds it)"
	fi
	if [ -n "$B" ]; then
		build_both "$B" "$OUT/debug" || exit 1
		make_initramfs "$OUT/debug" "" "$OUT/debug.cpio.gz" # FUSE is built in
		boot debug "$B/arch/x86/boot/bzImage" "$OUT/debug.cpio.gz" 1536 || status=1
	fi
fi

# ---- checkpatch: every file built into gpuasync.ko, core/ included ------------------
# The kernel's own style checker, from the source the debug kernel was built
# from (in the cache): any ERROR fails the suite (warnings are not judged).
CP=$(ls "$CACHE"/src-*/scripts/checkpatch.pl 2>/dev/null | sort -V | tail -1 || true)
if [ -n "$CP" ]; then
	files=("$ROOT"/kmod/*.[ch] "$ROOT"/kmod/nv_p2p_stub/*.[ch] "$ROOT"/core/*.[ch] \
		"$ROOT"/core/include/gpuasync/*.h "$ROOT"/core/include/gpuasync/*.def)
	errs=$(for f in "${files[@]}"; do
		perl "$CP" --no-tree --file --terse --show-types "$f" 2>&1 | grep ': ERROR:' || true
	done)
	if [ -n "$errs" ]; then
		log "FAIL: checkpatch reports errors:"
		echo "$errs"
		status=1
	else
		log "checkpatch: ${#files[@]} files built into gpuasync.ko, 0 errors"
	fi
elif [ "$DEBUG" = 1 ]; then
	log "FAIL: no checkpatch.pl in $CACHE/src-* after the debug kernel build"
	status=1
else
	log "checkpatch: not run (no kernel source in $CACHE; GA_KMOD_DEBUG_KERNEL=1 brings it)"
fi

qemu_exit $status "PASS"
