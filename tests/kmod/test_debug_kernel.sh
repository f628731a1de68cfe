#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh's control flow in seconds (a ctest): a stand-in make and a
# stand-in source tarball take the place of the 18-minute kernel build, so a
# bug in the script's own logic (a fresh machine once failed after the build
# because the progress printer was stopped twice under set -e) fails here
# instead of on the first cold CI run.  Cases: a cold build, the cached
# rerun, a failing build, a config line olddefconfig drops, and a new
# source version replacing the old build.
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SCRIPT=$HERE/debug-kernel.sh
W=$(mktemp -d /tmp/ga-debug-kernel-test.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0
passes=0
check() { # DESCRIPTION CONDITION...
	local what=$1
	shift
	if "$@"; then
		passes=$((passes + 1))
	else
		echo "FAIL: $what" >&2
		fails=$((fails + 1))
	fi
}

# The stand-in source: only what the script runs from it.
mkdir -p "$W/src/linux/scripts/kconfig"
cat >"$W/src/linux/scripts/kconfig/merge_config.sh" <<'EOF'
#!/bin/bash
# merge_config.sh -m -O DIR BASE FRAGMENT
cat "$4" "$5" >"$3/.config.new" && mv "$3/.config.new" "$3/.config"
EOF
chmod +x "$W/src/linux/scripts/kconfig/merge_config.sh"
tar cJf "$W/linux.tar.xz" -C "$W/src" linux

# The stand-in make: records each call; the build target waits (bounded)
# for the script's progress line, makes three objects and a bzImage.
cat >"$W/make" <<'EOF'
#!/bin/bash
out=
for a in "$@"; do case $a in O=*) out=${a#O=} ;; esac; done
echo "$*" >>"$FAKE_CALLS"
case " $* " in
*" defconfig "*) : >"$out/.config" ;;
*" olddefconfig "*)
	[ -z "${FAKE_DROP:-}" ] || sed -i "/^$FAKE_DROP\$/d" "$out/.config" ;;
*" bzImage "*)
	mkdir -p "$out/a" "$out/arch/x86/boot"
	touch "$out/a/one.o" "$out/a/two.o" "$out/a/three.o"
	for _ in $(seq 600); do
		grep -q 'of about' "$FAKE_STDERR" && break
		sleep 0.1
	done
	grep -q 'of about' "$FAKE_STDERR" || { echo "no progress line seen" >&2; exit 3; }
	if [ -n "${FAKE_FAIL:-}" ]; then
		echo "fake compiler error: $FAKE_FAIL"
		exit 2
	fi
	touch "$out/arch/x86/boot/bzImage" ;;
esac
exit 0
EOF
chmod +x "$W/make"

export GA_KMOD_CACHE=$W/cache GA_KERNEL_SOURCE=$W/linux.tar.xz MAKE=$W/make
export GA_PROGRESS_SECONDS=1 FAKE_CALLS=$W/calls FAKE_STDERR=$W/err JOBS=1
run() { # VERSION: run the script; sets out, rc
	out=$(GA_KERNEL_SOURCE_VERSION=$1 timeout 120 bash "$SCRIPT" 2>"$W/err")
	rc=$?
}

# 1. Cold cache: builds, prints the build directory alone on stdout, shows
#    progress as a fraction, and exits 0 (it exited 1 here once the build
#    was done, which is what failed every fresh machine).
run 1.0
check "cold build exits 0 (got $rc; stderr: $(tail -3 "$W/err"))" [ "$rc" = 0 ]
check "stdout is one build directory with .complete (got '$out')" \
	[ "$(printf '%s\n' "$out" | wc -l)" = 1 -a -f "$out/.complete" -a -f "$out/arch/x86/boot/bzImage" ]
check "progress is a fraction" grep -qE 'min: [0-9]+ of about [0-9]+ objects \([0-9]+%\)' "$W/err"
check "the object count is remembered for the next estimate" \
	[ "$(cat "$W/cache/objects.last" 2>/dev/null)" = 3 ]
check "the build reports its time" grep -q 'built in [0-9]* s (3 objects)' "$W/err"
check "no failure is logged on success" bash -c "! grep -q FAILED '$W/err'"
first=$out

# 2. Cached: same directory, make not called again.
calls=$(wc -l <"$W/calls")
run 1.0
check "cached rerun exits 0 with the same directory" [ "$rc" = 0 -a "$out" = "$first" ]
check "cached rerun does not build" [ "$(wc -l <"$W/calls")" = "$calls" ]

# 3. A failing build: non-zero, with the reason (the log's end) on stderr,
#    and no .complete left to be trusted later.
FAKE_FAIL=boom run 2.0
check "failing build exits non-zero" [ "$rc" != 0 ]
check "failing build prints the build log's end" grep -q 'fake compiler error: boom' "$W/err"
check "failing build says it failed" grep -q 'FAILED' "$W/err"
check "failing build leaves no .complete" bash -c "! ls '$W'/cache/debug-2.0-*/.complete 2>/dev/null"

# 4. A config line olddefconfig drops: refused, with the line named.
FAKE_DROP=CONFIG_KASAN=y run 3.0
check "dropped config line fails" [ "$rc" != 0 ]
check "dropped config line is named" grep -q 'config lost CONFIG_KASAN=y' "$W/err"

# 5. A new source version builds and removes the older build.
run 4.0
check "new version builds (rc $rc)" [ "$rc" = 0 -a -f "$out/.complete" ]
check "the older build is removed" [ ! -e "$first" ]

echo "debug-kernel.sh control flow: $passes passed, $fails failed"
[ $fails = 0 ]
