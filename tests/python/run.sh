#!/bin/bash
# ctest python_gpuasync: the gpuasync package's pytest suite, with Debian's
# Python (where python3-pytest and python3-numpy install).  Without pytest
# it is skipped (77), except under CI=true, where that is a failure.
here=$(cd "$(dirname "$0")" && pwd)
py=/usr/bin/python3
if ! $py -c 'import pytest' 2>/dev/null; then
	echo "SKIP: no pytest for $py (Debian: python3-pytest)"
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
export PYTHONPATH=$here/../../python${PYTHONPATH:+:$PYTHONPATH}
exec $py -m pytest -q -p no:cacheprovider "$here"
