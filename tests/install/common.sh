#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# What tests/install/try.sh and deb.sh share, sourced: skip (exit 77, a
# failure under CI=true), and a scratch directory $T, prefixed NAME, whose
# mount point $T/mnt is unmounted and which is removed on exit.
# install_scratch NAME
skip() {
	echo "SKIP: $*"
	[ "${CI:-}" = true ] && exit 1
	exit 77
}

install_scratch() {
	T=$(mktemp -d "/tmp/$1.XXXXXX")
	trap 'mountpoint -q "$T/mnt" 2>/dev/null && fusermount3 -u "$T/mnt"; rm -rf "$T"' EXIT
}
