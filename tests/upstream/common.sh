#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# What tests/upstream/run.sh, tools.sh and rate.sh share, sourced after they set
# ROOT: HERE (this folder), log(), the source they are given
# (GA_UPSTREAM_SRC), their output directory, the kernel to boot
# (tests/kmod/qemu.sh) and the upstream trees to test.  upstream_setup TAG
# PREFIX TIMEOUT defines log() (lines start "TAG: ") and sets SRC, OUT, KEEP
# and TIMEOUT (exit 77 without a source); upstream_kver sets KVER; upstream_trees exports
# every tree to $OUT/src-NAME and sets names[] and gitdir; upstream_build
# TREE LOG builds a tree's p2p stub, emulator and GPU-enabled datadev, and
# upstream_root NAME ROOT a guest root with them.
# shellcheck disable=SC2034 # the variables are for the sourcing script

HERE=$ROOT/tests/upstream

upstream_setup() {
	UPSTREAM_TAG=$1
	shift
	log() { echo "$UPSTREAM_TAG: $*"; }
	SRC=${GA_UPSTREAM_SRC:-}
	if [ -z "$SRC" ]; then
		log "SKIP: GA_UPSTREAM_SRC is not set (a checkout of github.com/slaclab/aes-stream-drivers, or its git directory)"
		exit 77
	fi
	[ -e "$SRC" ] || { log "FAIL: GA_UPSTREAM_SRC=$SRC does not exist"; exit 1; }
	# shellcheck source=tests/kmod/qemu.sh
	. "$ROOT/tests/kmod/qemu.sh"
	qemu_out "${GA_UPSTREAM_OUT:-}" "$1"
	TIMEOUT=${GA_KMOD_TIMEOUT:-$2}
}

# The QEMU packages (installed as root when missing; exit 77 otherwise),
# then the kernel to boot.
upstream_kver() {
	qemu_packages linux-headers-amd64 linux-image-amd64 qemu-system-x86 busybox-static cpio kmod
	KVER=$(guest_kver) || { log "FAIL: no Debian kernel with headers in /lib/modules"; exit 1; }
}

upstream_trees() {
	local ref
	names=()
	gitdir=
	if [ -d "$SRC/emulator" ] && [ -d "$SRC/data_dev" ]; then
		mkdir -p "$OUT/src-checkout"
		cp -a "$SRC/." "$OUT/src-checkout/"
		names+=(checkout)
		return
	fi
	gitdir=$SRC
	[ -d "$SRC/.git" ] && gitdir=$SRC/.git
	for ref in ${GA_UPSTREAM_REFS:-main pre-release}; do
		mkdir -p "$OUT/src-$ref"
		git --git-dir="$gitdir" archive "$ref" | tar x -C "$OUT/src-$ref" ||
			{ log "FAIL: cannot export $ref from $gitdir"; exit 1; }
		names+=("$ref")
	done
}

# upstream_name NAME: "NAME <short commit>" for the guest's first line.
upstream_name() {
	echo "$1 $(git --git-dir="${gitdir:-/nonexistent}" rev-parse --short "$1" 2>/dev/null || true)"
}

# upstream_build TREE LOG: nvidia_p2p_stub.ko, datadev_emulator.ko and a
# GPU-enabled datadev.ko from an exported tree, for $KVER; output in LOG.
upstream_build() {
	(make -C "$1/emulator/gpu_stub" KVER="$KVER" &&
		make -C "$1/emulator/driver" KVER="$KVER" &&
		make -C "$1/data_dev/driver" KVER="$KVER" \
			NVIDIA_DRIVERS="$1/emulator/gpu_stub" GITV=gpuasync-conformance) >"$2" 2>&1
}

# upstream_root NAME ROOT: build upstream release NAME's modules ($OUT/src-NAME)
# and make a guest root ROOT with them in ROOT/up; says why and fails when
# they do not build.
upstream_root() {
	local tree=$OUT/src-$1
	if ! upstream_build "$tree" "$OUT/$1.build.log"; then
		log "FAIL: $1 does not build (see $OUT/$1.build.log)"
		tail -20 "$OUT/$1.build.log"
		return 1
	fi
	guest_root "$2"
	mkdir -p "$2/up"
	cp "$tree/emulator/gpu_stub/nvidia_p2p_stub.ko" "$tree/emulator/driver/datadev_emulator.ko" \
		"$tree/data_dev/driver/datadev.ko" "$2/up/"
}
