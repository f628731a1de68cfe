#!/bin/sh
# Sourced inside the QEMU guests (tests/kmod, tests/upstream): the KTEST
# line helpers and bounded waits, so a broken driver or daemon fails a step
# instead of hanging the guest.  PREFIX (optional) goes before step names.
rc=0
ok() { echo "KTEST ok ${PREFIX:-}$*"; }
bad() { echo "KTEST FAIL ${PREFIX:-}$*"; rc=1; }
run() { "$@" || rc=1; }
# wait_for FILE WORD: until FILE contains WORD (20 s at most)
wait_for() { i=0; while ! grep -q "$2" "$1" 2>/dev/null; do
	i=$((i+1)); [ $i -gt 400 ] && return 1; sleep 0.05; done; return 0; }
# wait_file PATH: until it exists
wait_file() { i=0; while [ ! -e "$1" ]; do i=$((i+1)); [ $i -gt 400 ] && return 1; sleep 0.05; done; }
# wait_ge FILE N: until the number in FILE is at least N
wait_ge() { i=0; while [ "$(cat "$1" 2>/dev/null || echo 0)" -lt "$2" ] 2>/dev/null; do
	i=$((i+1)); [ $i -gt 400 ] && return 1; sleep 0.05; done; }
# The guest's mounts, then the Debian modules run.sh listed (deps first).
guest_up() {
	export PATH=/bin
	mount -t proc proc /proc
	mount -t sysfs sysfs /sys
	mount -t devtmpfs dev /dev
	mount -t tmpfs tmp /tmp
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	while read -r ko; do
		[ -n "$ko" ] && { insmod "/kmods/$ko" || bad "insmod $ko"; }
	done </kmods/order
}
# The kernel log, taint mask and exit marker run.sh judges, then off.
guest_down() {
	echo "KTEST DMESG-BEGIN"
	dmesg
	echo "KTEST DMESG-END"
	echo "KTEST TAINT $(cat /proc/sys/kernel/tainted)"
	echo "KTEST EXIT $rc"
	poweroff -f
}
