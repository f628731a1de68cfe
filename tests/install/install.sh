#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
#
# Install the build into a fresh prefix and use it from outside the tree,
# the four ways a user would:
#
#   pkg-config shared   cc prog.c $(pkg-config --cflags --libs gpuasync)
#   pkg-config static   libgpuasync.a and what "pkg-config --static" adds
#   CMake shared        find_package(gpuasync) + gpuasync::gpuasync
#   CMake static        find_package(gpuasync COMPONENTS static) + gpuasync::gpuasync_static
#
# and that asking for the static component without inih's pkg-config file
# fails at configure time, naming it.
# Each program loads a config file (inih underneath) naming a simulated card
# at firmware version 3 with 4 buffers (not the defaults), opens that card,
# reads its version register and prints what it found; the test checks that
# output, and which libgpuasync the program really loaded (the prefix's
# libgpuasync.so.0, or none for the static ones).  It also checks the
# installed layout (GNUInstallDirs paths from the build) and runs the
# installed daemon.
#
#   install.sh BUILD_DIR     (ctest passes the rest in the environment:
#                             GA_CMAKE GA_CC GA_SANITIZE GA_{BIN,LIB,INCLUDE,MAN,DOC}DIR)
#
# Exit 77 (skipped) when a tool is missing, except under CI=true.
set -u
build=$1
cmake=${GA_CMAKE:-cmake}
cc=${GA_CC:-cc}

fail() {
	echo "FAILED: $*" >&2
	exit 1
}
skip() {
	if [ "${CI:-}" = true ]; then
		fail "$* (CI=true: no skipping; tools/packages.txt lists it)"
	fi
	echo "SKIP: $*"
	exit 77
}

for tool in "$cmake" "$cc" pkg-config readelf ldd; do
	command -v "$tool" >/dev/null || skip "$tool not found"
done
for d in "$GA_BINDIR" "$GA_LIBDIR" "$GA_INCLUDEDIR" "$GA_MANDIR" "$GA_DOCDIR"; do
	case $d in
	/*) skip "absolute install dir $d: this test installs with --prefix" ;;
	esac
done

tmp=$(mktemp -d /tmp/gpuasync-install.XXXXXX) || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
libdir=$prefix/$GA_LIBDIR

echo "== cmake --install $build --prefix $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log"; fail "cmake --install"; }

echo "== installed layout"
for f in "$GA_BINDIR/gpuasyncfs" \
	"$GA_LIBDIR/libgpuasync.so.0" "$GA_LIBDIR/libgpuasync.a" \
	"$GA_LIBDIR/pkgconfig/gpuasync.pc" \
	"$GA_LIBDIR/cmake/gpuasync/gpuasyncConfig.cmake" \
	"$GA_LIBDIR/cmake/gpuasync/gpuasyncConfigVersion.cmake" \
	"$GA_INCLUDEDIR/gpuasync/gpuasync.h" "$GA_INCLUDEDIR/gpuasync/regs.h" \
	"$GA_MANDIR/man8/gpuasyncfs.8" "$GA_MANDIR/man5/gpuasyncfs.conf.5" \
	"$GA_MANDIR/man3/libgpuasync.3" \
	"$GA_DOCDIR/LICENSE" "$GA_DOCDIR/README.md" \
	lib/systemd/system/gpuasyncfs@.service etc/gpuasyncfs.conf \
	"$GA_DOCDIR/examples/gpuasyncfs.rules.yml"; do
	[ -f "$prefix/$f" ] || fail "not installed: $f"
done
grep -qx "ExecStart=$prefix/$GA_BINDIR/gpuasyncfs -f /dev/%i /run/gpuasyncfs/%i" \
	"$prefix/lib/systemd/system/gpuasyncfs@.service" ||
	fail "the installed unit does not run $prefix/$GA_BINDIR/gpuasyncfs"
"$prefix/$GA_BINDIR/gpuasyncfs" --version >"$tmp/version" 2>&1 ||
	fail "installed gpuasyncfs --version"
grep -q '^gpuasyncfs [0-9]' "$tmp/version" || fail "gpuasyncfs --version: $(cat "$tmp/version")"

# A sanitizer build's library needs the same runtime in its users.
flags=()
if [ "${GA_SANITIZE:-OFF}" = ON ]; then
	flags=("-fsanitize=address,undefined")
fi

mkdir "$tmp/src"
cat >"$tmp/src/prog.c" <<'PROG'
#include <stdio.h>

#include <gpuasync/gpuasync.h>

/* prog CONFIG: open the card CONFIG describes, print its firmware version. */
int main(int argc, char **argv)
{
	struct ga_config cfg;
	struct ga_dev_info info;
	struct ga_dev *dev;
	char err[256], spec[512];
	uint32_t version = 0;
	int rc;

	if (argc != 2)
		return 2;
	ga_config_defaults(&cfg);
	if (ga_config_load(&cfg, argv[1], err, sizeof(err)) < 0) {
		fprintf(stderr, "ga_config_load: %s\n", err);
		return 1;
	}
	rc = ga_config_device_spec(&cfg, spec, sizeof(spec));
	if (rc >= 0)
		rc = ga_dev_open(spec, &dev);
	if (rc < 0) {
		fprintf(stderr, "ga_dev_open: %s\n", ga_last_error());
		return 1;
	}
	rc = ga_reg_read_name(dev, "version", 0, &version);
	if (rc == 0)
		rc = ga_dev_info(dev, &info);
	if (rc < 0) {
		fprintf(stderr, "read: %s\n", ga_last_error());
		ga_dev_close(dev);
		return 1;
	}
	printf("libgpuasync %s: %s card, firmware %u, %u buffers\n", GPUASYNC_VERSION_STRING,
	       info.backend, version, info.max_buffers);
	ga_dev_close(dev);
	return 0;
}
PROG
# Not the defaults (version 4, 1024 buffers), so the output shows the file was
# read through inih and the card opened with it.
printf '[device]\npath = sim\n[sim]\nversion = 3\nmax_buffers = 4\n' >"$tmp/src/test.conf"
want="libgpuasync $(sed -n 's/^Version: //p' "$libdir/pkgconfig/gpuasync.pc"): sim card, firmware 3, 4 buffers"

# check NAME EXE shared|static|static+inih: run EXE with no help from the environment
# (the rpath or static link must find everything) and check what it loaded.
check() {
	local name=$1 exe=$2 kind=$3 out
	out=$(env -u LD_LIBRARY_PATH "$exe" "$tmp/src/test.conf" 2>&1) || fail "$name: $exe exited $?: $out"
	[ "$out" = "$want" ] || fail "$name: printed '$out', want '$want'"
	if [ "$kind" = shared ]; then
		ldd "$exe" | grep -q "libgpuasync.so.0 => $libdir/libgpuasync.so.0" ||
			fail "$name: does not load the installed libgpuasync.so.0: $(ldd "$exe")"
	else
		# libgpuasync.a linked in; "static+inih": libinih.a as well
		# (CMake's static target links inih as the system provides it).
		pat=libgpuasync
		[ "$kind" = static+inih ] && pat='\(libgpuasync\|libinih\)'
		! readelf -d "$exe" | grep -q "NEEDED.*$pat" ||
			fail "$name: not static: $(readelf -d "$exe" | grep NEEDED)"
	fi
	echo "ok: $name: $out"
}

export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
cd "$tmp/src" || fail "cd"

echo "== pkg-config, shared"
pkg-config --exists --print-errors gpuasync || fail "pkg-config gpuasync"
# shellcheck disable=SC2046 # pkg-config output is meant to be split
"$cc" -Wall -Wextra -Werror "${flags[@]}" -o pc-shared prog.c \
	$(pkg-config --cflags --libs gpuasync) -Wl,-rpath,"$libdir" ||
	fail "pkg-config shared: compile/link"
check "pkg-config shared" ./pc-shared shared

echo "== pkg-config --static"
# libgpuasync.a and libinih.a; the C library stays shared.  Every library
# the archive needs must come from gpuasync.pc, or this link fails.
# shellcheck disable=SC2046
"$cc" -Wall -Wextra -Werror "${flags[@]}" -o pc-static prog.c \
	$(pkg-config --static --cflags gpuasync) \
	-Wl,-Bstatic $(pkg-config --static --libs gpuasync) -Wl,-Bdynamic ||
	fail "pkg-config static: compile/link"
check "pkg-config static" ./pc-static static+inih

cat >CMakeLists.txt <<'CML'
cmake_minimum_required(VERSION 3.18)
project(gpuasync_user C)
find_package(gpuasync 0.1 REQUIRED COMPONENTS ${GA_COMPONENT})
add_executable(prog prog.c)
target_compile_options(prog PRIVATE -Wall -Wextra -Werror)
target_link_libraries(prog PRIVATE ${GA_TARGET})
CML
for kind in shared static; do
	target=gpuasync::gpuasync
	[ $kind = static ] && target=gpuasync::gpuasync_static
	echo "== CMake find_package, $kind ($target)"
	"$cmake" -S . -B "cm-$kind" -DCMAKE_PREFIX_PATH="$prefix" -DGA_COMPONENT=$kind \
		-DGA_TARGET=$target -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="${flags[*]}" \
		>"$tmp/cm-$kind.log" 2>&1 || { cat "$tmp/cm-$kind.log"; fail "CMake $kind: configure"; }
	grep -q "gpuasync_DIR:PATH=$libdir/cmake/gpuasync" "cm-$kind/CMakeCache.txt" ||
		fail "CMake $kind: found gpuasync elsewhere: $(grep gpuasync_DIR "cm-$kind/CMakeCache.txt")"
	"$cmake" --build "cm-$kind" >>"$tmp/cm-$kind.log" 2>&1 ||
		{ cat "$tmp/cm-$kind.log"; fail "CMake $kind: build"; }
	check "CMake $kind" "./cm-$kind/prog" $kind
done

# The static target needs inih's pkg-config file: asking for it where there is
# none must fail at configure time, saying why, not at link time.
echo "== CMake find_package, static, without inih's pkg-config file"
if PKG_CONFIG_LIBDIR=$tmp/empty PKG_CONFIG_PATH="" "$cmake" -S . -B cm-noinih \
	-DCMAKE_PREFIX_PATH="$prefix" -DGA_COMPONENT=static -DGA_TARGET=gpuasync::gpuasync_static \
	-DCMAKE_C_COMPILER="$cc" >"$tmp/cm-noinih.log" 2>&1; then
	fail "find_package(gpuasync COMPONENTS static) succeeded without inih"
fi
grep -q "needs inih's pkg-config file" "$tmp/cm-noinih.log" ||
	{ cat "$tmp/cm-noinih.log"; fail "find_package without inih: no reason given"; }
echo "ok: find_package(gpuasync COMPONENTS static) without inih fails, naming it"
echo "PASS"
