#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What the QEMU suites share (sourced by tests/kmod/run.sh and
# tests/upstream/run.sh): the kernel to boot, static guest builds of
# libgpuasync programs and of gpuasyncfs, and one boot judged from the
# serial console.  The caller sets ROOT, OUT, TIMEOUT and defines log().

# qemu_out GIVEN PREFIX: OUT=GIVEN when set (kept), else a new temp dir
# /tmp/PREFIX.XXXXXX that a passing run removes (KEEP=0) and a failing one
# keeps.
qemu_out() {
	OUT=$1
	KEEP=1
	if [ -z "$OUT" ]; then
		OUT=$(mktemp -d "/tmp/$2.XXXXXX")
		KEEP=0
	fi
	mkdir -p "$OUT"
}

# qemu_exit STATUS WORDS...: log WORDS and remove a temp OUT when STATUS is
# 0, else log FAIL and where the logs are kept; exit STATUS.
qemu_exit() {
	local status=$1
	shift
	if [ "$status" = 0 ]; then
		log "$*"
		[ "$KEEP" = 1 ] || rm -rf "$OUT"
	else
		log "FAIL (logs kept in $OUT)"
	fi
	exit "$status"
}

# qemu_packages PKG...: install the missing ones (tools/install-deps.sh);
# not root with some missing: SKIP (exit 77); an install that fails: exit 1.
qemu_packages() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	if [ "$(id -u)" != 0 ]; then
		log "SKIP: need root to install ${missing[*]}"
		exit 77
	fi
	log "installing ${missing[*]}"
	"$ROOT/tools/install-deps.sh" <(printf '%s\n' "${missing[@]}") >"$OUT/apt.log" 2>&1 ||
		{ tail -20 "$OUT/apt.log"; exit 1; }
}

# The newest Debian kernel that has both its image and its headers (never
# uname -r: the host kernel is not the one we boot).
guest_kver() {
	local k kver=
	for k in $(ls /lib/modules | sort -V); do
		[ -e "/lib/modules/$k/build/Makefile" ] && [ -f "/boot/vmlinuz-$k" ] && kver=$k
	done
	[ -n "$kver" ] && echo "$kver"
}

# build_modules KDIR DIR [GA_EMU]: gpuasync.ko and nv_p2p_stub.ko for the kernel
# tree KDIR, in DIR/kmod; a warning fails the build.  GA_EMU (kmod/Kbuild) is 1,
# emulated cards built in, unless given: 0 builds the packages' module.
# Sources are copied so kbuild's outputs never land in the checkout and the
# stock and debug builds cannot mix.
prepare_src() { # DIR
	rm -rf "$1" && mkdir -p "$1"
	(cd "$ROOT" && tar cf - --exclude='*.o' --exclude='*.ko' --exclude='.*.cmd' \
		kmod core) | tar xf - -C "$1"
}

build_modules() {
	prepare_src "$2"
	make -C "$2/kmod" KDIR="$1" GA_EMU="${3:-1}" >"$2/build.log" 2>&1 ||
		{ tail -40 "$2/build.log"; return 1; }
	if grep -E 'warning:|error:' "$2/build.log"; then
		log "FAIL: the modules build with warnings"
		return 1
	fi
}

# libgpuasync's sources and include paths, for static guest builds.
mapfile -t LIB_SRCS < <(find "$ROOT/lib/src" "$ROOT/core" -name '*.c' | sort)
mapfile -t LIB_INCS < <(find "$ROOT/lib/src" -type d | sed 's/^/-I/')
LIB_INCS=(-I"$ROOT/core/include" -I"$ROOT/core" -I"$ROOT/lib/include" "${LIB_INCS[@]}")

# guest_kt OUT: tests/kmod's kt (every kt_*.c), static, warnings fatal.
guest_kt() {
	gcc -static -O2 -Wall -Wextra -Werror -I"$ROOT/core/include" -I"$ROOT/core" \
		-I"$ROOT/lib/include" -I"$ROOT/kmod/nv_p2p_stub" -o "$1" "$ROOT"/tests/kmod/kt.c \
		"$ROOT"/tests/kmod/kt_*.c "$ROOT/core/regs.c" "$ROOT/core/prbs.c" \
		"$ROOT/core/axiversion.c" -lpthread
}

# guest_lib_program OUT SRC [CFLAGS...]: a static program on libgpuasync.
guest_lib_program() {
	local out=$1 src=$2
	shift 2
	gcc -static -O2 -w "${LIB_INCS[@]}" "$@" -o "$out" "$src" "${LIB_SRCS[@]}" \
		-l:libinih.a -lpthread -ldl -lrt
}

# guest_gpuasyncfs OUT: the daemon, static.
guest_gpuasyncfs() {
	local fuse_cflags
	read -ra fuse_cflags <<<"$(pkg-config --cflags fuse3)" || return 1
	gcc -static -O2 -w -DFUSE_USE_VERSION=314 -D_GNU_SOURCE "${fuse_cflags[@]}" \
		"${LIB_INCS[@]}" -I"$ROOT/fs" -o "$1" "$ROOT"/fs/*.c "${LIB_SRCS[@]}" \
		-l:libfuse3.a -l:libinih.a -lpthread -ldl -lrt
}

# guest_initramfs ROOT KMODS OUT_CPIO: add the Debian modules KMODS (deps
# first) and the shared guest helpers to ROOT, then pack it.
guest_initramfs() {
	local ko
	: >"$1/kmods/order"
	for ko in $2; do
		cp "$ko" "$1/kmods/"
		basename "$ko" >>"$1/kmods/order"
	done
	cp "$ROOT/tests/kmod/guest.sh" "$1/t/"
	chmod +x "$1/init"
	(cd "$1" && find . | cpio -o -H newc --quiet | gzip -1) >"$3"
}

# guest_root DIR: a busybox root with the usual mount points.
guest_root() {
	local a
	rm -rf "$1" && mkdir -p "$1"/{bin,proc,sys,dev,tmp,mnt,t,kmods}
	cp /bin/busybox "$1/bin/"
	for a in $(/bin/busybox --list); do
		[ "$a" = busybox ] || ln -sf busybox "$1/bin/$a"
	done
}

# One boot; sets VERDICT_LOG.  Returns 0 on pass.
boot() { # NAME KERNEL CPIO MEM
	local name=$1 serial=$OUT/$1.serial.log txt=$OUT/$1.serial.txt t0 rc taint
	t0=$(date +%s)
	# BOOT_QEMU_ARGS (array) and BOOT_APPEND: a caller's machine and
	# devices (tests/platform/run.sh builds PCIe topologies).
	# An emulator that printed nothing at all in GA_BOOT_SILENT_S (300 s;
	# a debug kernel's guest is up in about 40) is hung, not slow: seen
	# once here (no output, no CPU for 900 s; the same boot then passed).
	# It is booted once more, and says so; a guest that printed anything
	# is judged as it ran.
	local try q waited
	for try in 1 2; do
		timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -smp 2 -m "$4" \
			"${BOOT_QEMU_ARGS[@]}" -kernel "$2" -initrd "$3" \
			-append "console=ttyS0 quiet panic=-1 oops=panic panic_on_warn=0 loglevel=4 ${BOOT_APPEND:-}" \
			-display none -monitor none -serial stdio -nic none -no-reboot \
			</dev/null >"$serial" 2>&1 &
		q=$!
		waited=0
		while [ ! -s "$serial" ] && kill -0 "$q" 2>/dev/null &&
			[ $waited -lt "${GA_BOOT_SILENT_S:-300}" ]; do
			sleep 1
			waited=$((waited + 1))
		done
		if [ ! -s "$serial" ] && kill -0 "$q" 2>/dev/null; then
			kill "$q" 2>/dev/null
			wait "$q" 2>/dev/null
			log "$name: QEMU printed nothing in $waited s: hung emulator, boot $try of 2"
			continue
		fi
		# A guest that then goes quiet for GA_BOOT_STALL_S (600 s; no
		# step of any suite is quiet for more than a few minutes, even on
		# a loaded debug kernel) is hung: stopped there and named, rather
		# than waiting out TIMEOUT (seen: a TCG guest spinning on both
		# vCPUs, tests/kmod/t_lib.c says why).
		local size last=-1 quiet=0
		while kill -0 "$q" 2>/dev/null; do
			size=$(stat -c %s "$serial" 2>/dev/null || echo 0)
			if [ "$size" = "$last" ]; then
				quiet=$((quiet + 1))
			else
				quiet=0
				last=$size
			fi
			if [ $quiet -ge "${GA_BOOT_STALL_S:-600}" ]; then
				log "$name: the guest printed nothing for $quiet s after '$(tr -d '\r' <"$serial" | tail -1)': hung, stopped"
				kill "$q" 2>/dev/null
				break
			fi
			sleep 1
		done
		wait "$q" 2>/dev/null || true
		break
	done
	tr -d '\r' <"$serial" >"$txt"
	log "$name: boot + suite took $(($(date +%s) - t0)) s, log $txt"
	sed '/KTEST DMESG-BEGIN/,/KTEST DMESG-END/d' "$txt" | grep -E '^KTEST (ok|FAIL|skip)' |
		sed "s/^/  [$name] /" || true
	rc=$(sed -n 's/^KTEST EXIT //p' "$txt")
	taint=$(sed -n 's/^KTEST TAINT //p' "$txt")
	local ok=1
	# Taint: B(32) bad page, D(128) oops, W(512) warning, L(16384) soft
	# lockup; O(4096) and E(8192) are expected for an unsigned out-of-tree module.
	[ "$rc" = 0 ] || { log "$name: exit marker '${rc:-missing}'"; ok=0; }
	if [ -z "$taint" ] || [ $((taint & 17056)) != 0 ]; then
		log "$name: taint '${taint:-missing}'"
		ok=0
	fi
	if grep -q '^KTEST FAIL' "$txt"; then
		ok=0
	fi
	if grep -nE 'BUG:|WARNING:|Oops|KASAN|Call Trace|circular locking|possible recursive locking|sleeping function called|inconsistent lock state|Kernel panic|general protection' "$txt" |
		head -40; then
		log "$name: kernel reported a problem (above)"
		ok=0
	fi
	# Step counts for tools/test.sh's summary and floors (tests/floors.txt).
	local n_ok n_fail n_skip
	local steps
	steps=$(sed '/KTEST DMESG-BEGIN/,/KTEST DMESG-END/d' "$txt")
	n_ok=$(grep -c '^KTEST ok' <<<"$steps" || true)
	n_fail=$(grep -c '^KTEST FAIL' <<<"$steps" || true)
	n_skip=$(grep -c '^KTEST skip' <<<"$steps" || true)
	log "$name: steps: $n_ok ok, $n_fail failed, $n_skip skipped"
	[ -z "${GA_STEP_COUNTS:-}" ] || echo "$name $n_ok $n_fail $n_skip" >>"$GA_STEP_COUNTS"
	if [ $ok = 1 ]; then
		log "$name: PASS ($n_ok steps ok)"
		return 0
	fi
	log "$name: FAIL"
	return 1
}

