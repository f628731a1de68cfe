#!/usr/bin/env bash
# Install the packages of tools/packages.txt that are missing, with apt-get.
#
# Used by tools/try.sh and tools/test.sh.  Runs apt-get only when something
# is missing (so a machine that has everything needs neither root nor the
# network), as root or through sudo.  Exits non-zero when packages are
# missing and cannot be installed, naming them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
list=${1:-$here/packages.txt}

# Package names: strip comments and blanks.
mapfile -t wanted < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$list" | grep -v '^$')

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${wanted[@]}"; do
	installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#wanted[@]} packages present"
	exit 0
fi

echo "install-deps: missing: ${missing[*]}"
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: no apt-get here; install these by hand: ${missing[*]}" >&2
	exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
	sudo=()
elif command -v sudo >/dev/null 2>&1; then
	sudo=(sudo)
else
	echo "install-deps: not root and no sudo; install these as root: ${missing[*]}" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
	"${missing[@]}"

still=()
for p in "${missing[@]}"; do
	installed "$p" || still+=("$p")
done
if [ ${#still[@]} -ne 0 ]; then
	echo "install-deps: still missing after apt-get: ${still[*]}" >&2
	exit 1
fi
echo "install-deps: installed ${missing[*]}"
