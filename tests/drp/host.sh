#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host side of the DRP-replay steps (sourced by tests/upstream/run.sh and
# tests/kmod/run.sh after tests/kmod/qemu.sh, with ROOT set).
#
# drp_build DIR: drp_replay, as_user and code_probe, static, plus guest_drp.sh, in DIR.
# drp_root ROOTDIR: the host's setuid fusermount3 and the libraries it
# loads, so an unprivileged user in the guest can mount gpuasyncfs.
drp_build() {
	gcc -static -O2 -Wall -Wextra -Werror -I"$ROOT/core/include" -I"$ROOT/core" \
		-I"$ROOT/kmod/nv_p2p_stub" -o "$1/drp_replay" "$ROOT/tests/drp/drp_replay.c" \
		"$ROOT/core/regs.c" "$ROOT/core/prbs.c" &&
		gcc -static -O2 -Wall -Wextra -Werror -o "$1/as_user" "$ROOT/tests/drp/as_user.c" &&
		gcc -static -O2 -Wall -Wextra -Werror -o "$1/code_probe" "$ROOT/tests/drp/code_probe.c" &&
		cp "$ROOT/tests/drp/guest_drp.sh" "$1/"
}

drp_root() {
	local f lib
	f=$(command -v fusermount3) || return 0
	mkdir -p "$1/usr/bin"
	cp "$f" "$1/usr/bin/fusermount3"
	chmod 4755 "$1/usr/bin/fusermount3"
	ln -sf /usr/bin/fusermount3 "$1/bin/fusermount3"
	# fusermount3 names the user (passwd) and reads /etc/mtab.
	mkdir -p "$1/etc"
	printf 'root:x:0:0::/:/bin/sh\ndaq:x:1000:1000::/tmp:/bin/sh\nmon:x:1001:1001::/tmp:/bin/sh\n' \
		>"$1/etc/passwd"
	printf 'root:x:0:\ndaq:x:1000:\nmon:x:1001:\n' >"$1/etc/group"
	ln -sf /proc/mounts "$1/etc/mtab"
	for lib in $(ldd "$f" | grep -o '/[^ ]*'); do
		mkdir -p "$1$(dirname "$lib")"
		cp -L "$lib" "$1$lib"
	done
}
