#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# What tests/install/try.sh, deb.sh and rpm.sh share, sourced: skip (exit
# 77, a failure under CI=true); need_tools (skip unless every tool and
# /dev/fuse is there); a scratch directory $T, prefixed NAME, whose mount
# point $T/mnt is unmounted and which is removed on exit (install_scratch
# NAME); fail (say why, show $T/log's end, exit 1).
skip() {
	echo "SKIP: $*"
	[ "${CI:-}" = true ] && exit 1
	exit 77
}

need_tools() { # TOOL...
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || skip "no $t"
	done
	[ -c /dev/fuse ] || skip "no /dev/fuse"
}

fail() {
	echo "FAIL: $*"
	[ -f "$T/log" ] && tail -30 "$T/log"
	exit 1
}

install_scratch() {
	T=$(mktemp -d "/tmp/$1.XXXXXX")
	trap 'mountpoint -q "$T/mnt" 2>/dev/null && fusermount3 -u "$T/mnt"; rm -rf "$T"' EXIT
}
