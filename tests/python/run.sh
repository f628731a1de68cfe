#!/bin/bash
# ctest python_gpuasync: the gpuasync package's pytest suite, with Debian's
# Python (where python3-pytest and python3-numpy install).  Without pytest
# it is skipped (77), except under CI=true, where that is a failure.
# GA_PYTHON names another Python; else Debian's, else the first python3 on
# PATH with pytest (the GPU machine's /usr/bin/python3 has none, the one on
# its PATH has; with it the suite passed 13/13 there).
here=$(cd "$(dirname "$0")" && pwd)
py=${GA_PYTHON:-}
if [ -z "$py" ]; then
	for c in /usr/bin/python3 "$(command -v python3)"; do
		if [ -n "$c" ] && "$c" -c 'import pytest' 2>/dev/null; then
			py=$c
			break
		fi
	done
fi
if [ -z "$py" ] || ! "$py" -c 'import pytest' 2>/dev/null; then
	echo "SKIP: no pytest for ${py:-/usr/bin/python3 or python3 on PATH} (Debian: python3-pytest)"
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
echo "python: $py"
export PYTHONPATH=$here/../../python${PYTHONPATH:+:$PYTHONPATH}
exec "$py" -m pytest -q -p no:cacheprovider "$here"
