#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# tools/install-deps.sh against stand-in dpkg-query and apt-get (first on
# PATH): --group mount picks only the "@mount" lines; nothing present means
# apt-get update and install of exactly the missing ones, each with a
# dpkg lock timeout (so a held lock is waited for, not a failure); all
# present means no apt-get at all; a package apt-get did not install is
# named and fails the script.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d /tmp/gafs-deps.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() {
	echo "FAIL: $*"
	sed 's/^/  | /' "$T/out" 2>/dev/null | tail -20
	exit 1
}
mkdir -p "$T/bin"
: >"$T/installed"
cat >"$T/bin/dpkg-query" <<EOS
#!/bin/sh
p=\$(eval echo "\\\${\$#}")
grep -qx "\$p" "$T/installed" && echo "install ok installed" || exit 1
EOS
cat >"$T/bin/apt-get" <<EOS
#!/bin/sh
echo "\$*" >>"$T/apt.log"
[ "\$3" = install ] || exit 0
shift 6
for p in "\$@"; do [ "\$p" = never-installs ] || echo "\$p" >>"$T/installed"; done
EOS
chmod +x "$T/bin/"*
cat >"$T/list" <<'EOS'
# a comment
alpha @mount   # needed to mount
beta
gamma @mount
EOS
run() { PATH=$T/bin:$PATH "$SRC/tools/install-deps.sh" "$@" >"$T/out" 2>&1; }

run --group mount "$T/list" || fail "install-deps --group mount failed"
grep -q 'Lock::Timeout=300 update' "$T/apt.log" || fail "no apt-get update with a lock timeout"
grep -q 'Lock::Timeout=300 install -y -q --no-install-recommends alpha gamma$' "$T/apt.log" ||
	fail "not 'install alpha gamma' with a lock timeout: $(cat "$T/apt.log")"
grep -q '^beta$' "$T/installed" && fail "installed beta, which is not in group mount"
: >"$T/apt.log"
run --group mount "$T/list" || fail "second run failed"
[ ! -s "$T/apt.log" ] || fail "apt-get ran with everything present"
grep -q 'all 2 packages present' "$T/out" || fail "did not say all present"
run "$T/list" || fail "the whole list failed"
grep -q 'install -y -q --no-install-recommends beta$' "$T/apt.log" || fail "beta not installed"
echo "never-installs" >>"$T/list"
run "$T/list" && fail "a package apt-get did not install was not reported"
grep -q 'still missing after apt-get: never-installs' "$T/out" || fail "not named"
echo "PASS: groups, lock timeout, no apt-get when complete, missing packages named"
