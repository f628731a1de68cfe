#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# gpuasyncfs@.service under a real systemd: a private one, PID 1 of its own
# PID and mount namespace (unshare), with a cgroup2 tree of its own and
# SYSTEMD_UNIT_PATH holding only this test's units, so the machine's own
# systemd is not touched.  The unit is the installed template as it is
# (its hardening included), an instance "sim" with four lines changed: the
# build's daemon with --sim on a scratch mountpoint, no device to bind to,
# and a short watchdog.  Checked, each with a bounded wait for the event:
#   - the start completes (READY=1), the mount is live, STATUS= names the
#     card and the mountpoint;
#   - the daemon runs in systemd's mount namespace (no option of the unit
#     makes one of its own), while a drop-in with ProtectHome=yes does make
#     one and hides the mount from systemd's side (why the unit has none);
#   - a stalled daemon (SIGSTOP) misses its watchdog pings: systemd kills it
#     and starts a new one (another pid, the mount live again);
#   - systemctl stop unmounts; a clean stop sends STOPPING=1 (seen on a
#     socket of the test's own: systemd forgets it once the unit is down).
# The private systemd is killed with SIGKILL at the end (as PID 1 of its
# namespace it ignores SIGTERM from outside).  Without cgroup2 or
# namespaces: SKIP (exit 77).
#
#   tests/install/units.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
# shellcheck source=tests/install/common.sh
. "$here/common.sh"
build=$(cd "${1:?usage: units.sh BUILD_DIR}" && pwd)
GAFS=$build/fs/gpuasyncfs
[ -x "$GAFS" ] || fail "no daemon at $GAFS"
need_tools unshare nsenter mountpoint fusermount3
[ -x /lib/systemd/systemd ] || skip "no /lib/systemd/systemd"
command -v systemctl >/dev/null || skip "no systemctl"
[ "$(id -u)" = 0 ] || skip "needs root (a private systemd, mounts)"

T=$(mktemp -d /tmp/units.XXXXXX)
SD=
cleanup() {
	[ -n "$SD" ] && kill -KILL "$SD" 2>/dev/null
	[ -n "${UNSHARE:-}" ] && wait "$UNSHARE" 2>/dev/null
	[ -n "${GA_KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

# Wait up to $1 seconds for the command to succeed (polling its answer).
within() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -ge $end ] && return 1
		sleep 0.2
	done
}

MNT=$T/mnt
U=$T/units
mkdir -p "$MNT" "$U"
# The template as installed, for an instance without a device node.  A
# sanitized daemon (build-asan) runs without LeakSanitizer here: its check at
# exit stops the threads with ptrace, which the unit's SystemCallFilter
# refuses ("LeakSanitizer has encountered a fatal error", exit 1); the other
# suites check the daemon for leaks.
sed -E -e "s#^ExecStart=.*#ExecStart=$GAFS -f --sim $MNT#" \
	-e "s#/run/gpuasyncfs/%i#$MNT#g" -e '/^BindsTo=/d' -e 's# dev-%i\.device##' \
	-e 's#^WatchdogSec=.*#WatchdogSec=2s#' -e 's#^TimeoutAbortSec=.*#TimeoutAbortSec=1s#' \
	-e 's#^RestartSec=.*#RestartSec=100ms#' \
	-e "/^ExecStart=/a StandardOutput=append:$T/daemon.log\nStandardError=append:$T/daemon.log" \
	-e "/^ExecStart=/a Environment=ASAN_OPTIONS=detect_leaks=0" \
	"$src/examples/gpuasyncfs@.service" >"$U/gpuasyncfs@.service"
for l in "ExecStart=$GAFS -f --sim $MNT" WatchdogSec=2s NoNewPrivileges=yes DevicePolicy=closed \
	'SystemCallFilter=@system-service @mount'; do
	grep -qxF "$l" "$U/gpuasyncfs@.service" || fail "the test's unit lacks $l"
done
# A service's default dependencies (sysinit.target, basic.target,
# shutdown.target), empty here: nothing else of a system is started.
for t in units-test sysinit basic shutdown local-fs; do
	printf '[Unit]\nDescription=%s (gpuasyncfs units test)\n' "$t" >"$U/$t.target"
done

# The private systemd, with a /run of its own (its sockets, the units' state)
# and a /dev/shm (the simulated card's file is named by pid, which repeats
# in a new PID namespace: a daemon killed there leaves it behind).  The
# namespace starts with a copy of every mount there is: FUSE mounts of
# anything else running are detached from it first, or their copies here
# would keep them alive after their own unmount (the daemon waiting on
# /dev/fuse until this systemd ends).
unshare --pid --fork --mount --mount-proc sh -c \
	"awk '\$3 ~ /^fuse/ {print \$2}' /proc/self/mounts | while read -r m; do umount -l \"\$m\"; done
	 mount -t cgroup2 none /sys/fs/cgroup || exit 77
	 mount -t tmpfs none /run && mount -t tmpfs none /dev/shm || exit 77
	 SYSTEMD_UNIT_PATH=$U exec /lib/systemd/systemd --system --unit=units-test.target" >"$T/out" 2>&1 &
UNSHARE=$!
find_sd() {
	SD=$(cat "/proc/$UNSHARE/task/$UNSHARE/children" 2>/dev/null)
	SD=${SD%% *}
	[ -n "$SD" ] && [ "$(cat "/proc/$SD/comm" 2>/dev/null)" = systemd ] &&
		[ -S "/proc/$SD/root/run/systemd/private" ]
}
if ! within 20 find_sd; then
	wait "$UNSHARE"
	rc=$?
	[ $rc = 77 ] && skip "cannot mount cgroup2 in a new namespace"
	kill -0 "$UNSHARE" 2>/dev/null || skip "no private systemd here (exit $rc): $(tail -3 "$T/out")"
	fail "the private systemd did not come up"
fi
# Everything below looks from inside its namespaces.
in_ns() { nsenter -t "$SD" -m -p "$@"; }
sctl() { in_ns timeout 30 systemctl "$@"; }
prop() { sctl show -p "$2" --value "$1"; }
live() { in_ns mountpoint -q "$MNT" && [ "$(in_ns timeout 5 cat "$MNT/device/backend")" = sim ]; }
within 20 sh -c "[ \"\$(nsenter -t $SD -m -p systemctl is-system-running 2>/dev/null)\" != starting ]" ||
	fail "the private systemd is still starting"

echo "== start: READY=1, a live mount, STATUS= naming the card"
I=gpuasyncfs@sim.service
sctl start "$I" >"$T/out" 2>&1 || fail "systemctl start $I: $(cat "$T/out"); $(sctl status "$I")"
[ "$(prop "$I" ActiveState)" = active ] || fail "$I is $(prop "$I" ActiveState)"
live || fail "no live mount at $MNT after the start"
status_named() { [[ "$(prop "$I" StatusText)" == "sim on $MNT: "* ]]; }
within 10 status_named || fail "STATUS= does not name the card: '$(prop "$I" StatusText)'"
rate_said() { [[ "$(prop "$I" StatusText)" =~ ": "[0-9]+" frames/s"$ ]]; }
within 10 rate_said || fail "STATUS= gives no frame rate: '$(prop "$I" StatusText)'"
echo "   $(prop "$I" StatusText)"
# Frames flowing (the simulated card at 500 Hz into a buffer): the rate says so.
in_ns sh -c "mkdir $MNT/buffers/0 $MNT/buffers/1 && echo 1 >$MNT/buffers/1/write_enable &&
	echo 500 >$MNT/sim/rate && echo 1 >$MNT/sim/running" || fail "cannot start frames"
rate_up() { [[ "$(prop "$I" StatusText)" =~ ": "[1-9][0-9]*" frames/s"$ ]]; }
within 10 rate_up || fail "STATUS= shows no frames: '$(prop "$I" StatusText)'"
echo "   $(prop "$I" StatusText)"
pid=$(prop "$I" MainPID)
[ "$pid" -gt 1 ] || fail "no MainPID"

echo "== no mount namespace of its own (and ProtectHome= would make one)"
[ "$(in_ns readlink /proc/1/ns/mnt)" = "$(in_ns readlink "/proc/$pid/ns/mnt")" ] ||
	fail "the daemon runs in a mount namespace of its own"
# The same unit with ProtectHome=yes (which the unit once had), on a second
# mountpoint: the daemon mounts in its own namespace, systemd's side sees
# nothing there.
MNT2=$T/mnt2
mkdir -p "$MNT2" "$U/gpuasyncfs-private@x.service.d"
sed "s#$MNT#$MNT2#g" "$U/gpuasyncfs@.service" >"$U/gpuasyncfs-private@.service"
printf '[Service]\nProtectHome=yes\n' >"$U/gpuasyncfs-private@x.service.d/home.conf"
sctl daemon-reload || fail "daemon-reload"
P=gpuasyncfs-private@x.service
sctl start "$P" >"$T/out" 2>&1 || fail "systemctl start $P: $(cat "$T/out")"
ppid=$(prop "$P" MainPID)
[ "$(in_ns readlink /proc/1/ns/mnt)" != "$(in_ns readlink "/proc/$ppid/ns/mnt")" ] ||
	fail "ProtectHome=yes did not give the daemon a mount namespace"
in_ns grep -q " $MNT2 .* - fuse" "/proc/$ppid/mountinfo" || fail "the ProtectHome daemon has no mount"
! in_ns mountpoint -q "$MNT2" || fail "ProtectHome=yes: the mount is visible outside after all"
sctl stop "$P" || fail "systemctl stop $P"

echo "== a stalled daemon: the watchdog kills it, systemd starts a new one"
# The pings arrive: systemd's time of the last one moves on.
w0=$(prop "$I" WatchdogTimestampMonotonic)
pinged() {
	[ "$(prop "$I" WatchdogTimestampMonotonic)" != "$w0" ] && [ "$(prop "$I" MainPID)" = "$pid" ]
}
within 10 pinged || fail "no WATCHDOG=1 within 10 s (WatchdogSec=2s)"
restarts=$(prop "$I" NRestarts)
in_ns kill -STOP "$pid" || fail "kill -STOP $pid"
restarted() {
	local p
	p=$(prop "$I" MainPID)
	[ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$pid" ] && [ "$(prop "$I" ActiveState)" = active ]
}
# WatchdogSec=2s, then SIGABRT and SIGKILL TimeoutAbortSec=1s later, a restart.
within 30 restarted || fail "no new daemon within 30 s: $(prop "$I" ActiveState), MainPID $(prop "$I" MainPID)"
[ "$(prop "$I" NRestarts)" -gt "$restarts" ] || fail "NRestarts did not grow"
in_ns kill -0 "$pid" 2>/dev/null && fail "the stalled daemon $pid is still there"
within 10 live || fail "no live mount after the restart"
newpid=$(prop "$I" MainPID)
echo "   daemon $pid stalled, daemon $newpid serves"
status_named || fail "the new daemon's STATUS=: '$(prop "$I" StatusText)'"

echo "== systemctl stop: unmounted"
sctl stop "$I" || fail "systemctl stop $I"
[ "$(prop "$I" ActiveState)" = inactive ] ||
	fail "$I is $(prop "$I" ActiveState) after stop ($(prop "$I" Result), status $(prop "$I" ExecMainStatus)); the daemon's log: $(tail -5 "$T/daemon.log")"
[ "$(prop "$I" Result)" = success ] || fail "stop result: $(prop "$I" Result)"
in_ns mountpoint -q "$MNT" && fail "still mounted after the stop"

# What systemd no longer shows once the unit is stopped: the daemon's last
# words.  A socket of our own as $NOTIFY_SOCKET and the daemon stopped as
# systemd stops it (SIGTERM): STOPPING=1 comes before it exits.
cat >"$T/listen.py" <<'EOF'
import os, signal, socket, subprocess, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
d = subprocess.Popen(sys.argv[2:], env=dict(os.environ, NOTIFY_SOCKET=sys.argv[1]))
got = []
try:
    while not got or not got[-1].startswith('STOPPING=1'):
        got.append(s.recv(4096).decode())
        if got[-1] == 'READY=1':
            d.send_signal(signal.SIGTERM)
except socket.timeout:
    pass
rc = d.wait(timeout=20)
print(' | '.join(got).replace('\n', ' '))
sys.exit(0 if rc == 0 and 'READY=1' in got and got[-1].startswith('STOPPING=1') else 1)
EOF
echo "== a clean stop sends STOPPING=1"
out=$(python3 "$T/listen.py" "$T/notify" "$GAFS" -f --sim "$MNT" 2>&1) || fail "no STOPPING=1: $out"
echo "   $out"
mountpoint -q "$MNT" && fail "still mounted after SIGTERM"
echo "PASS"
