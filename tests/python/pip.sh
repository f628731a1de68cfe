#!/bin/bash
# ctest python_pip: the gpuasync package installs with pip, offline, into a
# fresh venv (as rogue users' environments take it) from a copy of the
# tree's python/, and its __version__ is the project's ($1, CMakeLists.txt).
# Needs Debian's python3-venv and python3-wheel; without them skipped (77),
# a failure under CI.
set -u
want=$1
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
if ! $py -c 'import ensurepip, wheel, setuptools' 2>/dev/null; then
	echo "SKIP: no venv or wheel for $py (Debian: python3-venv, python3-wheel)"
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
T=$(mktemp -d /tmp/gpuasync-pip.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}
cp -r "$here/../../python" "$T/src" # the build writes beside its sources
# Debian's setuptools and wheel build it (no index to fetch them from);
# the package itself must still come from the venv (checked below).
$py -m venv --system-site-packages "$T/env" || fail "python3 -m venv"
"$T/env/bin/pip" install -q --no-index --no-build-isolation "$T/src" || fail "pip install"
cd "$T" || exit 1
got=$("$T/env/bin/python" -c 'import gpuasync; print(gpuasync.__version__)') || fail "import"
[ "$got" = "$want" ] || fail "gpuasync.__version__ is '$got', the project is $want"
"$T/env/bin/pip" show gpuasync | grep -qx "Version: $want" || fail "pip show: no Version: $want"
where=$("$T/env/bin/python" -c 'import gpuasync; print(gpuasync.__file__)')
case $where in "$T/env/"*) ;; *) fail "imported from $where, not the venv" ;; esac
"$T/env/bin/pip" uninstall -q -y gpuasync || fail "pip uninstall"
! "$T/env/bin/python" -c 'import gpuasync' 2>/dev/null || fail "still importable after uninstall"
echo "PASS: pip installed gpuasync $got into a fresh venv, offline, and removed it"
